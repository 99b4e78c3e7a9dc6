use std::sync::Arc;
use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use sqlx::mysql::{MySqlPool, MySqlPoolOptions};
use ticket_api::accounts::security::TokenKeys;
use ticket_api::middleware::limits::LimitSettings;
use ticket_api::startup::{Application, Settings};
use ticket_core::domain::{NickName, Password};
use ticket_core::testing::TestDatabase;
use ticket_worker::{Mode, Worker, WorkerConfig};
use tokio::sync::Barrier;
use tokio_util::sync::CancellationToken;

pub const SECRET: &[u8] = b"test-secret-that-is-at-least-32-bytes-long";
pub const ADMIN_NICK: &str = "admin";
pub const ADMIN_PASSWORD: &str = "admin-password";
/// Short, so that the slow-client test need not wait long; the test client
/// drops idle connections well before the server would.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(3);
/// As in production; `a_slow_request_body_is_cut_off_with_408` sets its own.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

pub fn client() -> reqwest::Client {
    ticket_core::tls::install_crypto_provider();
    reqwest::Client::builder()
        .pool_idle_timeout(Duration::from_secs(1))
        .build()
        .expect("an HTTP client")
}

pub struct TestApp {
    pub base: String,
    pub client: reqwest::Client,
    /// A pool on the test's own database, for arranging and checking state.
    pub pool: MySqlPool,
    pub admin_token: String,
    /// Held only so the database is dropped with the app.
    _db: Option<TestDatabase>,
}

/// Starts the API against a fresh, migrated database, with an admin account.
pub async fn spawn_app() -> TestApp {
    spawn_app_with_limits(LimitSettings::OFF).await
}

/// [`spawn_app`] with rate limits on; the client address is taken from
/// X-Forwarded-For, so a test can act as several clients.
pub async fn spawn_app_with_limits(limits: LimitSettings) -> TestApp {
    init_test_logs();
    let (db, pool) = TestDatabase::migrated().await;
    let admin = (
        NickName::parse(ADMIN_NICK).unwrap(),
        Password::parse(ADMIN_PASSWORD).unwrap(),
    );
    let app = start_server_limited(pool.clone(), Some(admin), limits).await;
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

/// A TCP relay to the test database server that a test can cut, as if the
/// server went away: it stops listening and drops the open connections.
pub struct DatabaseLink {
    pub port: u16,
    cut: tokio_util::sync::CancellationToken,
}

impl DatabaseLink {
    pub async fn open() -> Self {
        Self::on_port(0).await
    }

    /// A relay listening on `port` (0: any free one).
    pub async fn on_port(port: u16) -> Self {
        let server = ticket_core::testing::server_options();
        let upstream = format!("{}:{}", server.get_host(), server.get_port());
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
            .await
            .unwrap();
        let port = listener.local_addr().unwrap().port();
        let cut = tokio_util::sync::CancellationToken::new();
        let relay = cut.clone();
        tokio::spawn(async move {
            loop {
                let mut client = tokio::select! {
                    () = relay.cancelled() => return,
                    accepted = listener.accept() => match accepted {
                        Ok((client, _)) => client,
                        Err(_) => return,
                    },
                };
                let (relay, upstream) = (relay.clone(), upstream.clone());
                tokio::spawn(async move {
                    let Ok(mut server) = tokio::net::TcpStream::connect(upstream).await else {
                        return;
                    };
                    tokio::select! {
                        () = relay.cancelled() => {}
                        _ = tokio::io::copy_bidirectional(&mut client, &mut server) => {}
                    }
                });
            }
        });
        Self { port, cut }
    }

    pub fn cut(&self) {
        self.cut.cancel();
    }
}

/// A child process's log, read on a thread of its own that drains the pipe
/// to the end, so that a full pipe never blocks the child.
pub struct ChildLog {
    lines: std::sync::mpsc::Receiver<String>,
    pub seen: Vec<String>,
}

impl ChildLog {
    pub fn follow(stderr: std::process::ChildStderr) -> Self {
        use std::io::BufRead as _;
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stderr)
                .lines()
                .map_while(Result::ok)
            {
                // Nobody listening any more: keep draining all the same.
                let _ = tx.send(line);
            }
        });
        Self {
            lines,
            seen: Vec::new(),
        }
    }

    /// The next line (30 s at most).
    pub fn next_line(&mut self) -> String {
        let line = self
            .lines
            .recv_timeout(Duration::from_secs(30))
            .unwrap_or_else(|_| panic!("no further log line after:\n{}", self.seen.join("\n")));
        self.seen.push(line.clone());
        line
    }

    /// The first line from here on that contains `marker`.
    pub fn wait_for(&mut self, marker: &str) -> String {
        loop {
            let line = self.next_line();
            if line.contains(marker) {
                return line;
            }
        }
    }

    /// The API's bound address: only the log line announcing it tells.
    pub fn listening_addr(&mut self) -> String {
        let line = self.wait_for("listening addr=");
        line.split("listening addr=")
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .unwrap_or_default()
            .to_owned()
    }

    /// Every line, once the child has exited (its pipe closed).
    pub fn all(mut self) -> Vec<String> {
        self.seen.extend(self.lines.iter());
        self.seen
    }
}

/// One of the workspace's executables with a clean environment but its
/// database: both are built by `cargo test --workspace`, the worker's next
/// to the API's.
pub fn executable(name: &str, database_url: &str) -> std::process::Command {
    let path = std::path::PathBuf::from(env!("CARGO_BIN_EXE_ticket-api")).with_file_name(name);
    assert!(
        path.exists(),
        "{} is missing: build the workspace (cargo build --workspace)",
        path.display()
    );
    let mut cmd = std::process::Command::new(path);
    cmd.env_clear()
        .env("DATABASE_URL", database_url)
        .stdin(std::process::Stdio::null());
    cmd
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
        client_address_header: Some(ticket_api::state::ProxyHeader {
            name: axum::http::HeaderName::from_static("x-forwarded-for"),
            trusted_proxies: 1,
        }),
        header_read_timeout: HEADER_READ_TIMEOUT,
        request_timeout: REQUEST_TIMEOUT,
    }
}

/// The same keys the test server signs with, for minting special tokens.
pub fn token_keys(ttl: Duration) -> TokenKeys {
    TokenKeys::new(SECRET, ttl).unwrap()
}

pub struct Reply {
    pub status: StatusCode,
    pub headers: reqwest::header::HeaderMap,
    pub body: Value,
}

impl Reply {
    /// Asserts an RFC 9457 problem with this status and code; returns the body.
    #[track_caller]
    pub fn assert_problem(&self, status: u16, code: &str) -> &Value {
        assert_eq!(
            self.status.as_u16(),
            status,
            "unexpected status; body: {}",
            self.body
        );
        let content_type = self
            .headers
            .get("content-type")
            .and_then(|v| v.to_str().ok());
        assert_eq!(
            content_type,
            Some("application/problem+json"),
            "body: {}",
            self.body
        );
        assert_eq!(self.body["code"], code, "body: {}", self.body);
        assert_eq!(self.body["status"], status);
        assert!(self.body["title"].is_string() && self.body["detail"].is_string());
        &self.body
    }

    #[track_caller]
    pub fn assert_status(&self, status: u16) -> &Value {
        assert_eq!(
            self.status.as_u16(),
            status,
            "unexpected status; body: {}",
            self.body
        );
        &self.body
    }

    /// Names of the fields a validation problem lists.
    pub fn error_fields(&self) -> Vec<String> {
        self.body["errors"]
            .as_array()
            .map(|errors| {
                errors
                    .iter()
                    .filter_map(|e| e["field"].as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    }
}

impl TestApp {
    pub async fn request(
        &self,
        method: Method,
        path: &str,
        token: Option<&str>,
        body: Option<Value>,
    ) -> Reply {
        let mut req = self.client.request(method, format!("{}{path}", self.base));
        if let Some(token) = token {
            req = req.bearer_auth(token);
        }
        if let Some(body) = body {
            req = req.json(&body);
        }
        Self::reply(req.send().await.expect("request failed")).await
    }

    pub async fn reply(response: reqwest::Response) -> Reply {
        let status = response.status();
        let headers = response.headers().clone();
        let bytes = response.bytes().await.expect("cannot read the body");
        let body = if bytes.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&bytes)
                .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into()))
        };
        Reply {
            status,
            headers,
            body,
        }
    }

    /// A request with a raw body and content type, for malformed input.
    pub async fn raw(
        &self,
        method: Method,
        path: &str,
        token: Option<&str>,
        content_type: Option<&str>,
        body: Vec<u8>,
    ) -> Reply {
        let mut req = self
            .client
            .request(method, format!("{}{path}", self.base))
            .body(body);
        if let Some(token) = token {
            req = req.bearer_auth(token);
        }
        if let Some(ct) = content_type {
            req = req.header("content-type", ct);
        }
        Self::reply(req.send().await.expect("request failed")).await
    }

    /// A GET of `path` with these headers, the response as it comes (for
    /// caching, encodings and non-JSON bodies).
    pub async fn fetch(&self, path: &str, headers: &[(&str, &str)]) -> reqwest::Response {
        let mut request = self.client.get(format!("{}{path}", self.base));
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        request.send().await.expect("the request failed")
    }

    pub async fn get(&self, path: &str, token: Option<&str>) -> Reply {
        self.request(Method::GET, path, token, None).await
    }
    pub async fn post(&self, path: &str, token: Option<&str>, body: Value) -> Reply {
        self.request(Method::POST, path, token, Some(body)).await
    }
    pub async fn patch(&self, path: &str, token: Option<&str>, body: Value) -> Reply {
        self.request(Method::PATCH, path, token, Some(body)).await
    }
    pub async fn delete(&self, path: &str, token: Option<&str>) -> Reply {
        self.request(Method::DELETE, path, token, None).await
    }

    pub async fn try_login(&self, nick: &str, password: &str) -> Reply {
        self.post(
            "/api/auth/login",
            None,
            json!({"nickName": nick, "password": password}),
        )
        .await
    }

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

    pub async fn login(&self, nick: &str, password: &str) -> String {
        let reply = self.try_login(nick, password).await;
        reply.assert_status(200)["accessToken"]
            .as_str()
            .expect("no accessToken")
            .to_owned()
    }

    /// Signs up a user; returns (id, token).
    pub async fn user(&self, nick: &str) -> (u64, String) {
        let reply = self
            .post(
                "/api/users",
                None,
                json!({"nickName": nick, "password": "password123"}),
            )
            .await;
        let id = reply.assert_status(201)["id"].as_u64().expect("no id");
        (id, self.login(nick, "password123").await)
    }

    /// Creates a concert (as admin) with the given extra fields; returns its JSON.
    pub async fn concert(&self, extra: Value) -> Value {
        let mut body = json!({"title": "IU Live", "venue": "Olympic Hall", "concertDate": "2099-05-01T19:00:00+09:00"});
        if let (Some(body), Some(extra)) = (body.as_object_mut(), extra.as_object()) {
            body.extend(extra.clone());
        }
        let reply = self
            .post("/api/concerts", Some(&self.admin_token), body)
            .await;
        reply.assert_status(201).clone()
    }

    pub async fn seats(&self, concert: u64) -> Vec<Value> {
        let reply = self
            .get(&format!("/api/concerts/{concert}/seats"), None)
            .await;
        reply
            .assert_status(200)
            .as_array()
            .expect("seats must be an array")
            .clone()
    }

    /// Waits until the concert's detail shows these (available, held,
    /// reserved) counts: they come from a snapshot at most about a second
    /// old. Panics with the last counts after five seconds.
    pub async fn seat_counts_become(&self, concert: u64, expected: (u64, u64, u64)) {
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        loop {
            let detail = self.get(&format!("/api/concerts/{concert}"), None).await;
            let body = detail.assert_status(200);
            let counts = ["availableSeats", "heldSeats", "reservedSeats"]
                .map(|field| body[field].as_u64().expect("a count"));
            if (counts[0], counts[1], counts[2]) == expected {
                return;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "counts {counts:?}, expected {expected:?}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// A new concert with the given extra fields: its id and its seat ids,
    /// in order.
    pub async fn concert_and_seats(&self, extra: Value) -> (u64, Vec<u64>) {
        let id = self.concert(extra).await["id"]
            .as_u64()
            .expect("no concert id");
        let seats = self
            .seats(id)
            .await
            .iter()
            .map(|s| s["id"].as_u64().expect("no seat id"))
            .collect();
        (id, seats)
    }

    /// The seat ids, in order, of a new concert with one row of `n` seats.
    pub async fn seat_ids(&self, n: u32) -> Vec<u64> {
        self.concert_and_seats(json!({"rows": 1, "seatsPerRow": n}))
            .await
            .1
    }

    /// Books a seat directly in the database, as a sale without holds
    /// leaves it: the seat RESERVED, a CONFIRMED reservation claiming it
    /// (made by no request) and its ReservationConfirmed event.
    pub async fn book_directly(&self, user: u64, seat: u64) {
        let now = ticket_core::testing::now().naive_utc();
        let mut tx = self.pool.begin().await.unwrap();
        let taken = sqlx::query(
            "UPDATE seats SET status = 'RESERVED' WHERE id = ? AND status = 'AVAILABLE'",
        )
        .bind(seat)
        .execute(&mut *tx)
        .await
        .unwrap();
        assert_eq!(taken.rows_affected(), 1, "seat {seat} was not available");
        let made = sqlx::query(
            "INSERT INTO reservations (user_id, concert_id, seat_id, status, confirmed_at, created_at, updated_at) \
             SELECT ?, concert_id, id, 'CONFIRMED', ?, ?, ? FROM seats WHERE id = ?",
        )
        .bind(user)
        .bind(now)
        .bind(now)
        .bind(now)
        .bind(seat)
        .execute(&mut *tx)
        .await
        .unwrap();
        let id = made.last_insert_id();
        sqlx::query(
            "INSERT INTO reservation_seats (reservation_id, seat_id, concert_id, status) \
             SELECT ?, id, concert_id, 'CONFIRMED' FROM seats WHERE id = ?",
        )
        .bind(id)
        .bind(seat)
        .execute(&mut *tx)
        .await
        .unwrap();
        sqlx::query(
            "INSERT INTO outbox (event_type, aggregate_id, payload, created_at) \
             VALUES ('ReservationConfirmed', ?, '{}', ?)",
        )
        .bind(id)
        .bind(now)
        .execute(&mut *tx)
        .await
        .unwrap();
        tx.commit().await.unwrap();
    }

    pub async fn count(&self, table: &str) -> i64 {
        let (n,): (i64,) =
            sqlx::query_as(sqlx::AssertSqlSafe(format!("SELECT COUNT(*) FROM {table}")))
                .fetch_one(&self.pool)
                .await
                .unwrap();
        n
    }
}

impl TestApp {
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

impl TestApp {
    /// `n` users inserted directly (no password hashing) with tokens minted
    /// by the server's keys: for tests about reservations, not sign-up.
    pub async fn many_users(&self, prefix: &str, n: usize) -> Vec<(u64, String)> {
        let mut conn = self.pool.acquire().await.unwrap();
        let ids = ticket_core::testing::seed::users(&mut conn, prefix, n)
            .await
            .unwrap();
        let keys = token_keys(Duration::from_secs(3600));
        ids.into_iter()
            .map(|id| {
                (
                    id.get(),
                    keys.issue(id, ticket_core::domain::Role::User, chrono::Utc::now())
                        .token,
                )
            })
            .collect()
    }

    /// Sends every (token, seat) request at the same moment; returns the replies in order.
    pub async fn reserve_all_at_once(&self, requests: Vec<(String, u64)>) -> Vec<Reply> {
        let barrier = Arc::new(Barrier::new(requests.len()));
        let tasks: Vec<_> = requests
            .into_iter()
            .map(|(token, seat)| {
                let client = self.client.clone();
                let url = format!("{}/api/reservations", self.base);
                let barrier = barrier.clone();
                tokio::spawn(async move {
                    barrier.wait().await;
                    let response = client
                        .post(url)
                        .bearer_auth(token)
                        .json(&json!({"seatId": seat}))
                        .send()
                        .await
                        .unwrap();
                    TestApp::reply(response).await
                })
            })
            .collect();
        let mut replies = Vec::new();
        for task in tasks {
            replies.push(task.await.unwrap());
        }
        replies
    }

    /// As many new users as `seats`, each asking for one of them, all at
    /// once; every request is accepted.
    pub async fn one_seat_each(&self, prefix: &str, seats: &[u64]) {
        let users = self.many_users(prefix, seats.len()).await;
        let requests = users
            .iter()
            .zip(seats)
            .map(|((_, token), seat)| (token.clone(), *seat))
            .collect();
        for reply in self.reserve_all_at_once(requests).await {
            reply.assert_status(201);
        }
    }

    /// Runs `n` worker loops until the queue has nothing open, then stops them.
    pub async fn run_workers_until_drained(&self, n: usize) {
        let shutdown = CancellationToken::new();
        let workers: Vec<_> = (0..n)
            .map(|i| {
                let worker =
                    self.worker(&format!("w{i}"), Mode::Batch, 100, Duration::from_secs(30));
                let shutdown = shutdown.clone();
                tokio::spawn(async move { worker.run(shutdown).await })
            })
            .collect();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        loop {
            let counts = self.queue_counts().await;
            if ["WAITING", "PENDING", "PROCESSING"]
                .iter()
                .map(|s| counts.get(*s).copied().unwrap_or(0))
                .sum::<i64>()
                == 0
            {
                break;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "queue not drained: {counts:?}"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        shutdown.cancel();
        for w in workers {
            w.await.unwrap();
        }
    }

    /// A worker on this app's database with a fixed configuration.
    pub fn worker(&self, name: &str, mode: Mode, batch_size: u32, lease: Duration) -> Worker {
        let config = WorkerConfig {
            batch_size,
            poll_interval: Duration::from_millis(5),
            lease,
            max_attempts: WorkerConfig::DEFAULT_MAX_ATTEMPTS,
        };
        Worker::with_config(self.pool.clone(), name, mode, config)
    }

    /// Decides everything queued, one batch at a time.
    pub async fn drain(&self) {
        let worker = self.worker("drain", Mode::Batch, 1000, Duration::from_secs(30));
        while worker
            .process_once()
            .await
            .expect("worker cycle failed")
            .claimed
            > 0
        {}
    }

    pub async fn reserve(&self, token: &str, seat: u64) -> Reply {
        self.post("/api/reservations", Some(token), json!({"seatId": seat}))
            .await
    }

    /// Queues a request for `seat` as part of the caller's trace; returns its queue id.
    pub async fn reserve_traced(&self, token: &str, seat: u64, traceparent: &str) -> u64 {
        let response = self
            .client
            .post(format!("{}/api/reservations", self.base))
            .bearer_auth(token)
            .header("traceparent", traceparent)
            .json(&json!({"seatId": seat}))
            .send()
            .await
            .unwrap();
        let reply = TestApp::reply(response).await;
        reply.assert_status(201)["queueId"].as_u64().unwrap()
    }

    pub async fn queue_status(&self, token: &str, queue_id: u64) -> Value {
        let reply = self
            .get(&format!("/api/reservations/status/{queue_id}"), Some(token))
            .await;
        reply.assert_status(200).clone()
    }

    /// `GET /metrics`, parsed (its status and content type checked).
    pub async fn scrape(&self) -> ticket_core::testing::prometheus_text::Samples {
        let response = self.fetch("/metrics", &[]).await;
        assert_eq!(response.status(), 200);
        assert_eq!(
            response.headers()["content-type"],
            "text/plain; version=0.0.4; charset=utf-8"
        );
        let text = response.text().await.unwrap();
        ticket_core::testing::prometheus_text::parse(&text)
            .unwrap_or_else(|e| panic!("{e}\n{text}"))
    }

    /// One unlabelled sample of `/metrics` (0 when absent).
    pub async fn metric(&self, name: &str) -> f64 {
        ticket_core::testing::prometheus_text::value(&self.scrape().await, name, &[])
    }

    /// Fails the test on any violated invariant of seats, reservations and queue.
    pub async fn assert_invariants(&self) {
        ticket_core::testing::assert_invariants(&self.pool).await;
    }

    /// How many queue rows have each status.
    pub async fn queue_counts(&self) -> std::collections::HashMap<String, i64> {
        let rows: Vec<(String, i64)> =
            sqlx::query_as("SELECT status, COUNT(*) FROM reservation_queue GROUP BY status")
                .fetch_all(&self.pool)
                .await
                .unwrap();
        rows.into_iter().collect()
    }
}
