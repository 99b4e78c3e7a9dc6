use anyhow::Context;
use clap::Parser;
use ticket_api::config::{Cli, Command};
use ticket_api::startup::{Application, Settings};
use ticket_core::domain::{NickName, Password};
use ticket_core::{db, secret, telemetry};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let telemetry = telemetry::init("ticket-api");
    let result = run(cli).await;
    if let Err(e) = &result {
        tracing::error!(error = format!("{e:#}"), "ticket-api failed");
    }
    telemetry.shutdown();
    result
}

/// Waits until the server accepts connections (a database deployed beside
/// the API may still be starting), backing off from 0.5 s to 5 s, for at
/// most `wait`; then creates the database if it does not exist yet (as
/// `sqlx database create` would), leaving an existing one as is.
async fn wait_for_database(url: &str, wait: std::time::Duration) -> anyhow::Result<()> {
    use sqlx::migrate::MigrateDatabase;
    let deadline = std::time::Instant::now() + wait;
    let mut pause = std::time::Duration::from_millis(500);
    let exists = loop {
        match sqlx::MySql::database_exists(url).await {
            Ok(exists) => break exists,
            Err(e) if db::is_unavailable(&e) && std::time::Instant::now() + pause < deadline => {
                tracing::info!(error = %e, retry_in = ?pause, "database not reachable yet; waiting");
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(std::time::Duration::from_secs(5));
            }
            Err(e) => {
                return Err(e).with_context(|| {
                    format!("reaching the database (waited up to {} s)", wait.as_secs())
                });
            }
        }
    };
    if !exists {
        sqlx::MySql::create_database(url)
            .await
            .context("creating the database")?;
        tracing::info!("database created");
    }
    Ok(())
}

async fn run(cli: Cli) -> anyhow::Result<()> {
    let pool = cli.database.lazy_pool()?;
    match cli.command.unwrap_or(Command::Serve) {
        Command::Migrate { wait_secs } => {
            let url = cli.database.database_url()?;
            wait_for_database(url.expose(), std::time::Duration::from_secs(wait_secs)).await?;
            db::migrate(&pool).await.context("applying migrations")?;
            tracing::info!("migrations applied");
            Ok(())
        }
        Command::Check {
            stuck_after_secs,
            max_attempts,
            retention_days,
        } => {
            let mut conn = pool.acquire().await.context("connecting to the database")?;
            let stuck_after = chrono::Duration::seconds(stuck_after_secs.into());
            let events_kept_for = chrono::Duration::try_days(retention_days.into());
            let violations =
                db::invariants::check(&mut conn, stuck_after, max_attempts, events_kept_for)
                    .await
                    .context("checking the invariants")?;
            for v in &violations {
                println!("VIOLATED: {} ({} rows)", v.invariant, v.rows);
            }
            if violations.is_empty() {
                println!("all invariants hold");
                return Ok(());
            }
            anyhow::bail!("{} invariants violated", violations.len())
        }
        Command::Serve => {
            let server = cli.server;
            let secret = secret::required("TICKET_AUTH_SECRET")?;
            let ticket_keys = match secret::from_env("TICKET_CODE_KEYS")? {
                Some(keys) => Some(
                    ticket_core::domain::ticket_code::TicketKeys::parse(keys.expose())
                        .context("TICKET_CODE_KEYS")?,
                ),
                None => {
                    tracing::warn!(
                        "TICKET_CODE_KEYS is not set: tickets cannot be shown or checked in"
                    );
                    None
                }
            };
            let admin = match (
                server.admin_nickname,
                secret::from_env("TICKET_ADMIN_PASSWORD")?,
            ) {
                (Some(nick), Some(pass)) => {
                    let nickname = NickName::parse(&nick).context("TICKET_ADMIN_NICKNAME")?;
                    let password =
                        Password::parse(pass.expose()).context("TICKET_ADMIN_PASSWORD")?;
                    if let Some(weakness) = password.weakness_for_admin(&nickname) {
                        anyhow::ensure!(
                            server.dev_mode,
                            "TICKET_ADMIN_PASSWORD is too weak for an administrator ({weakness}); \
                             choose another, or set TICKET_DEV_MODE=true on a developer machine"
                        );
                        tracing::warn!(weakness, "weak admin password accepted in dev mode");
                    }
                    Some((nickname, password))
                }
                (None, None) => None,
                _ => anyhow::bail!(
                    "TICKET_ADMIN_NICKNAME and TICKET_ADMIN_PASSWORD go together: set both or neither"
                ),
            };
            let stripe = cli.stripe.stripe()?;
            if stripe.is_none() {
                tracing::debug!(
                    "no TICKET_STRIPE_SECRET_KEY: holds are confirmed by hand, as before"
                );
            }
            let time_zone = ticket_core::domain::VenueTimeZone::parse(&server.time_zone)
                .map_err(|e| anyhow::anyhow!("TICKET_TIME_ZONE {}", e.message))?;
            let settings = Settings {
                stripe,
                time_zone,
                addr: server.addr,
                metrics_addr: server.metrics_addr,
                auth_secret: secret.expose().as_bytes().to_vec(),
                token_ttl: std::time::Duration::from_secs(server.token_ttl_secs),
                admin,
                ticket_keys,
                max_concurrent_hashes: server.max_concurrent_hashes,
                enqueue_writers: usize::from(server.enqueue_writers),
                request_timeout: std::time::Duration::from_secs(server.request_timeout_secs),
                header_read_timeout: std::time::Duration::from_secs(
                    server.header_read_timeout_secs,
                ),
                limits: ticket_api::middleware::limits::LimitSettings {
                    user_requests_per_sec: server.user_requests_per_sec,
                    anonymous_requests_per_sec: server.anonymous_requests_per_sec,
                    logins_per_minute_per_nickname: server.logins_per_minute_per_nickname,
                    logins_per_minute_per_client: server.logins_per_minute_per_client,
                    signups_per_minute_per_client: server.signups_per_minute_per_client,
                    max_open_requests_per_user: server.max_open_requests_per_user,
                    max_streams_per_user: server.max_streams_per_user,
                    max_streams_per_instance: server.max_streams,
                    caller_sampled_traces_per_sec: server.caller_sampled_traces_per_sec,
                },
                client_address_header: server
                    .client_address_header
                    .map(|name| axum::http::HeaderName::try_from(name.trim().to_ascii_lowercase()))
                    .transpose()
                    .context("TICKET_CLIENT_ADDRESS_HEADER is not a header name")?
                    .map(|name| ticket_api::extract::ProxyHeader {
                        name,
                        trusted_proxies: usize::try_from(server.trusted_proxies).unwrap_or(1),
                    }),
            };
            let app = Application::build(settings, pool).await?;
            app.run_until(ticket_core::shutdown::signal()).await?;
            Ok(())
        }
    }
}
