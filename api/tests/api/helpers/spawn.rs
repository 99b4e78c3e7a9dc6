//! Starting the API for a test: a fresh database, an admin, limits on or off.

use std::time::Duration;

use sqlx::mysql::{MySqlPool, MySqlPoolOptions};
use ticket_api::accounts::security::TokenKeys;
use ticket_api::middleware::limits::LimitSettings;
use ticket_api::startup::{Application, Settings};
use ticket_core::domain::{NickName, Password};
use ticket_core::testing::TestDatabase;

use super::*;

/// Starts the API against a fresh, migrated database, with an admin account.
pub async fn spawn_app() -> TestApp {
    spawn_app_with_limits(LimitSettings::OFF).await
}

/// [`spawn_app`] with rate limits on; the client address is taken from
/// X-Forwarded-For, so a test can act as several clients.
pub async fn spawn_app_with_limits(limits: LimitSettings) -> TestApp {
    spawn_app_with(test_settings(None, limits)).await
}

/// [`spawn_app`] taking payments through `stripe`.
pub async fn spawn_app_paid(stripe: ticket_core::payments::Stripe) -> TestApp {
    let mut settings = test_settings(None, LimitSettings::OFF);
    settings.stripe = Some(stripe);
    spawn_app_with(settings).await
}

/// [`spawn_app`] with these settings (the admin is always the tests').
pub async fn spawn_app_with(mut settings: Settings) -> TestApp {
    init_test_logs();
    let (db, pool) = TestDatabase::migrated().await;
    let admin = (
        NickName::parse(ADMIN_NICK).unwrap(),
        Password::parse(ADMIN_PASSWORD).unwrap(),
    );
    settings.admin = Some(admin);
    let app = Application::build(settings, pool.clone())
        .await
        .expect("the API failed to start");
    let app_base = format!("http://{}", app.local_addr().unwrap());
    tokio::spawn(app.run_until(std::future::pending()));
    let app = app_base;
    let mut test_app = TestApp {
        base: app,
        client: client(),
        pool,
        admin_token: String::new(),
        _db: Some(db),
    };
    test_app.admin_token = test_app.login(ADMIN_NICK, ADMIN_PASSWORD).await;
    test_app
}

/// `TEST_LOG=1 cargo test …` shows the server's logs; silent otherwise.
fn init_test_logs() {
    if std::env::var_os("TEST_LOG").is_some() {
        // The subscriber is global; nothing to flush for plain logs.
        let _ = ticket_core::telemetry::init("ticket-api-test");
    }
}

/// Starts the API on a pool that points at nothing that answers.
pub async fn spawn_app_without_database() -> TestApp {
    let options = ticket_core::testing::server_options().port(1);
    let pool = MySqlPoolOptions::new()
        .acquire_timeout(Duration::from_secs(1))
        .connect_lazy_with(options);
    let base = start_server_with(pool.clone(), None).await;
    TestApp::at(base, pool)
}

pub async fn start_server_with(pool: MySqlPool, admin: Option<(NickName, Password)>) -> String {
    // Tests sign up and log in hundreds of users from one address; the
    // limits have tests of their own (limits.rs).
    start_server_limited(pool, admin, LimitSettings::OFF).await
}

pub async fn start_server_limited(
    pool: MySqlPool,
    admin: Option<(NickName, Password)>,
    limits: LimitSettings,
) -> String {
    let app = Application::build(test_settings(admin, limits), pool)
        .await
        .expect("the API failed to start");
    let base = format!("http://{}", app.local_addr().unwrap());
    tokio::spawn(app.run_until(std::future::pending()));
    base
}

/// What the test servers run with: port 0, metrics on the public port.
pub fn test_settings(admin: Option<(NickName, Password)>, limits: LimitSettings) -> Settings {
    Settings {
        addr: "127.0.0.1:0".parse().unwrap(),
        metrics_addr: None,
        auth_secret: SECRET.to_vec(),
        token_ttl: Duration::from_secs(3600),
        admin,
        max_concurrent_hashes: 0,
        limits,
        enqueue_writers: 1,
        client_address_header: Some(ticket_api::extract::ProxyHeader {
            name: axum::http::HeaderName::from_static("x-forwarded-for"),
            trusted_proxies: 1,
        }),
        header_read_timeout: HEADER_READ_TIMEOUT,
        request_timeout: REQUEST_TIMEOUT,
        ticket_keys: Some(ticket_keys()),
        stripe: None,
        time_zone: ticket_core::domain::VenueTimeZone::UTC,
    }
}

/// The keys the test servers sign ticket codes with.
pub fn ticket_keys() -> ticket_core::domain::ticket_code::TicketKeys {
    ticket_core::domain::ticket_code::TicketKeys::parse(TICKET_KEY).unwrap()
}

/// A fixed Ed25519 seed (base64url), so that a test can verify codes itself.
pub const TICKET_KEY: &str = "dGlja2V0LXRlc3Qta2V5LTMyLWJ5dGVzLWxvbmctISE";

/// The same keys the test server signs with, for minting special tokens.
pub fn token_keys(ttl: Duration) -> TokenKeys {
    TokenKeys::new(SECRET, ttl).unwrap()
}

impl TestApp {
    /// A client for an API on `base` whose database `pool` reaches, with no
    /// admin signed in and no database of its own to drop.
    /// The URL of this app's own database, for another process to use.
    pub fn database_url(&self) -> String {
        self._db
            .as_ref()
            .expect("an app with a database of its own")
            .url()
    }

    pub fn at(base: String, pool: MySqlPool) -> TestApp {
        TestApp {
            base,
            client: client(),
            pool,
            admin_token: String::new(),
            _db: None,
        }
    }

    /// A client of another server on the same database; it does not own
    /// (or drop) the database.
    pub fn sharing_database(other: &TestApp, base: String) -> TestApp {
        TestApp {
            client: other.client.clone(),
            admin_token: other.admin_token.clone(),
            ..TestApp::at(base, other.pool.clone())
        }
    }
}

/// A box office that can be restarted on its address with other settings,
/// as `make run` is (issue 58: an open page must take them). The browser
/// tests' (this module is theirs too).
#[allow(dead_code)]
pub struct Restartable {
    pub app: TestApp,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

/// A box office without payments, restartable.
#[allow(dead_code)]
pub async fn spawn_restartable() -> Restartable {
    init_test_logs();
    let (db, pool) = TestDatabase::migrated().await;
    let admin = Some((
        NickName::parse(ADMIN_NICK).unwrap(),
        Password::parse(ADMIN_PASSWORD).unwrap(),
    ));
    let app = Application::build(test_settings(admin, LimitSettings::OFF), pool.clone())
        .await
        .expect("the API failed to start");
    let base = format!("http://{}", app.local_addr().unwrap());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(app.run_until(async {
        let _ = stopped.await;
    }));
    let mut app = TestApp {
        _db: Some(db),
        ..TestApp::at(base, pool)
    };
    app.admin_token = app.login(ADMIN_NICK, ADMIN_PASSWORD).await;
    Restartable {
        app,
        stop: Some(stop),
    }
}

#[allow(dead_code)]
impl Restartable {
    /// Stops the box office and starts it again on its address, over its
    /// database, taking payments through `stripe`.
    pub async fn restart_paid(&mut self, stripe: ticket_core::payments::Stripe) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let addr = self.app.base.trim_start_matches("http://").parse().unwrap();
        let settings = || {
            let admin = Some((
                NickName::parse(ADMIN_NICK).unwrap(),
                Password::parse(ADMIN_PASSWORD).unwrap(),
            ));
            let mut settings = test_settings(admin, LimitSettings::OFF);
            settings.addr = addr;
            settings.stripe = Some(stripe.clone());
            settings
        };
        // The old one lets go of the address as it stops.
        let started = std::time::Instant::now();
        let app = loop {
            match Application::build(settings(), self.app.pool.clone()).await {
                Ok(app) => break app,
                Err(e) if started.elapsed() < Duration::from_secs(10) => {
                    eprintln!("the address is not free yet: {e:#}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                Err(e) => panic!("the API did not start again on {addr}: {e:#}"),
            }
        };
        tokio::spawn(app.run_until(std::future::pending()));
    }
}
