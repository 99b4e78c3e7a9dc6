//! The real `ticket-api` executable: migrations, start-up checks, signals.
//!
//! Long because each start-up check and signal is a run of the real
//! executable with its own environment.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use ticket_core::testing::TestDatabase;

use crate::helpers::{ChildLog, SECRET, TestApp};

const BIN: &str = env!("CARGO_BIN_EXE_ticket-api");

fn api(database_url: &str) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.env_clear()
        .env("DATABASE_URL", database_url)
        .env("RUST_LOG", "info")
        .env("TICKET_CODE_KEYS", crate::helpers::TICKET_KEY)
        .stdin(Stdio::null());
    cmd
}

/// Waits for the child to exit, failing the test if it takes longer than `limit`.
fn wait_for_exit(child: &mut Child, limit: Duration) -> std::process::ExitStatus {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if Instant::now() > deadline {
            child.kill().ok();
            panic!("process did not exit within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[tokio::test]
async fn migrate_applies_the_schema_and_is_idempotent() {
    let db = TestDatabase::create().await;
    let url = db.url();
    for _ in 0..2 {
        let out = api(&url).arg("migrate").output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let pool = db.pool(1).await;
    let (tables,): (i64,) = sqlx::query_as(
        "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = DATABASE() \
         AND table_name IN ('users', 'concerts', 'seats', 'reservations', 'reservation_queue', 'outbox')",
    )
    .fetch_one(&pool)
    .await
    .unwrap();
    assert_eq!(tables, 6);
}

#[tokio::test]
async fn migrate_waits_for_a_database_that_is_still_starting() {
    let db = TestDatabase::create().await;
    // A port where the database will appear once migrate has found nothing.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let server_port = ticket_core::testing::server_options().get_port();
    let url = db
        .url()
        .replace(&format!(":{server_port}/"), &format!(":{port}/"));
    let mut child = api(&url)
        .arg("migrate")
        .env("TICKET_DB_WAIT_SECS", "60")
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let log = tokio::task::spawn_blocking(move || {
        let mut log = ChildLog::follow(stderr);
        log.wait_for("database not reachable yet");
        log
    })
    .await
    .unwrap();
    let _database = crate::helpers::DatabaseLink::on_port(port).await;
    let status =
        tokio::task::spawn_blocking(move || wait_for_exit(&mut child, Duration::from_secs(60)))
            .await
            .unwrap();
    assert!(status.success(), "{:?}", log.all());
    let pool = db.pool(1).await;
    let (tables,): (i64,) = sqlx::query_as(
        "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = DATABASE() \
         AND table_name = 'reservation_queue'",
    )
    .fetch_one(&pool)
    .await
    .unwrap();
    assert_eq!(tables, 1);
}

#[tokio::test]
async fn migrate_gives_up_when_its_wait_is_over() {
    let started = Instant::now();
    let out = api("mysql://nobody:nothing@127.0.0.1:1/unused")
        .args(["migrate", "--wait-secs", "1"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("waited up to 1 s"), "{stderr}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn migrate_creates_a_missing_database() {
    let db = TestDatabase::create().await;
    let pool = db.pool(1).await;
    let missing = format!("{}_new", db.name);
    let out = api(&ticket_core::testing::database_url_for(&missing))
        .arg("migrate")
        .output()
        .unwrap();
    let (exists,): (i64,) =
        sqlx::query_as("SELECT COUNT(*) FROM information_schema.schemata WHERE schema_name = ?")
            .bind(&missing)
            .fetch_one(&pool)
            .await
            .unwrap();
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
        "DROP DATABASE IF EXISTS `{missing}`"
    )))
    .execute(&pool)
    .await
    .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(exists, 1);
}

#[test]
fn serving_needs_a_strong_signing_secret() {
    let url = ticket_core::testing::database_url_for("unused");
    let out = api(&url).output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("TICKET_AUTH_SECRET"));
    let out = api(&url)
        .env("TICKET_AUTH_SECRET", "too-short")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("at least 32 bytes"));
}

#[test]
fn help_documents_every_option() {
    let out = Command::new(BIN).arg("--help").output().unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    for option in [
        "DATABASE_URL",
        "TICKET_API_ADDR",
        "TICKET_AUTH_SECRET",
        "TICKET_ADMIN_NICKNAME",
        "TICKET_ADMIN_PASSWORD",
        "TICKET_TOKEN_TTL_SECS",
        "TICKET_DB_MAX_CONNECTIONS",
        "migrate",
    ] {
        assert!(
            help.contains(option),
            "--help does not mention {option}:\n{help}"
        );
    }
}

#[tokio::test]
async fn the_api_stops_gracefully_on_sigterm() {
    let db = TestDatabase::create().await;
    let url = db.url();
    assert!(api(&url).arg("migrate").status().unwrap().success());
    let mut child = api(&url)
        .env("TICKET_API_ADDR", "127.0.0.1:0")
        .env(
            "TICKET_AUTH_SECRET",
            String::from_utf8_lossy(SECRET).as_ref(),
        )
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let addr = ChildLog::follow(child.stderr.take().unwrap()).listening_addr();
    let ready = reqwest::get(format!("http://{addr}/readyz")).await.unwrap();
    assert_eq!(ready.status(), 200);

    let pid = child.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    let status =
        tokio::task::spawn_blocking(move || wait_for_exit(&mut child, Duration::from_secs(10)))
            .await
            .unwrap();
    assert!(status.success(), "exit status after SIGTERM: {status}");
}

#[tokio::test]
async fn json_logs_carry_the_trace_id_of_the_request_they_were_written_in() {
    // Nothing listens on port 1: a request that needs the database answers
    // 503 and logs a warning inside its span.
    let mut child = api("mysql://nobody:nothing@127.0.0.1:1/unused")
        .env("TICKET_API_ADDR", "127.0.0.1:0")
        .env(
            "TICKET_AUTH_SECRET",
            String::from_utf8_lossy(SECRET).as_ref(),
        )
        .env("TICKET_LOG_FORMAT", "json")
        .env("TICKET_DB_ACQUIRE_TIMEOUT_MS", "500")
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut log = ChildLog::follow(child.stderr.take().unwrap());
    let mut next = |what: &str| -> serde_json::Value {
        let line = log.next_line();
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}), {what}: {line}"))
    };
    let listening = next("listening");
    assert_eq!(listening["message"], "listening", "{listening}");
    assert_eq!(listening["level"], "INFO");
    assert!(
        listening.get("trace_id").is_none(),
        "outside any span: {listening}"
    );
    let addr = listening["addr"].as_str().unwrap().to_owned();

    let trace = "5bf92f3577b34da6a3ce929d0e0e4736";
    let answer = crate::helpers::client()
        .get(format!("http://{addr}/api/concerts/1"))
        .header("traceparent", format!("00-{trace}-00f067aa0ba902b7-01"))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 503);
    // The background reads (token revocations) warn too, outside any
    // request: not the line this test is about.
    let warning = loop {
        let line = next("the warning about the failed request");
        if line["target"] != "ticket_api::accounts::security::revocations" {
            break line;
        }
    };
    assert_eq!(warning["message"], "request failed", "{warning}");
    assert_eq!(warning["level"], "WARN", "{warning}");
    assert_eq!(warning["trace_id"], trace, "{warning}");
    assert_eq!(
        warning["span_id"].as_str().map(str::len),
        Some(16),
        "{warning}"
    );
    child.kill().ok();
    child.wait().ok();
}

#[tokio::test]
async fn check_reports_every_violated_invariant_and_fails() {
    let (db, pool) = TestDatabase::migrated().await;
    let seats = {
        let mut conn = pool.acquire().await.unwrap();
        ticket_core::testing::seed::concert(&mut conn, 1, 3)
            .await
            .unwrap()
    };
    let check = || api(&db.url()).arg("check").output().unwrap();
    let healthy = check();
    assert!(
        healthy.status.success(),
        "{}",
        String::from_utf8_lossy(&healthy.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&healthy.stdout).trim(),
        "all invariants hold"
    );

    // A seat marked sold with nobody's reservation, and a request a crashed
    // worker left PROCESSING an hour ago.
    sqlx::query("UPDATE seats SET status = 'RESERVED' WHERE id = ?")
        .bind(seats[0])
        .execute(&pool)
        .await
        .unwrap();
    let users = {
        let mut conn = pool.acquire().await.unwrap();
        ticket_core::testing::seed::users(&mut conn, "stuck", 1)
            .await
            .unwrap()
    };
    sqlx::query(
        "INSERT INTO reservation_queue (user_id, concert_id, seat_id, status, lease_owner, lease_token, lease_until, \
         created_at, updated_at) \
         VALUES (?, (SELECT concert_id FROM seats WHERE id = ?), ?, 'PROCESSING', 'gone', 1, NOW(6) - INTERVAL 1 HOUR, \
                 NOW(6), NOW(6))",
    )
    .bind(users[0])
    .bind(seats[1])
    .bind(seats[1])
    .execute(&pool)
    .await
    .unwrap();
    ticket_core::testing::seed::seats_of_requests(&mut pool.acquire().await.unwrap())
        .await
        .unwrap();
    // And its line lost: out of the claims' sight, its count reset.
    sqlx::query("UPDATE sale_lines SET in_line = 0, after_entered = 0")
        .execute(&pool)
        .await
        .unwrap();
    let broken = check();
    assert!(!broken.status.success());
    let report = String::from_utf8_lossy(&broken.stdout);
    assert!(
        report.contains("VIOLATED: a RESERVED seat has no CONFIRMED claim (1 rows)"),
        "{report}"
    );
    assert!(
        report.contains("VIOLATED: a PROCESSING request's lease expired long ago (1 rows)"),
        "{report}"
    );
    assert!(
        report
            .contains("VIOLATED: an open request is in a line the claims do not look in (1 rows)"),
        "{report}"
    );
    assert!(
        report.contains(
            "VIOLATED: a request's place in line is beyond what its line has counted (1 rows)"
        ),
        "{report}"
    );
    assert_eq!(report.lines().count(), 4, "{report}");
}

#[test]
fn a_weak_admin_password_is_refused_outside_dev_mode() {
    let url = ticket_core::testing::database_url_for("unused");
    let out = api(&url)
        .env(
            "TICKET_AUTH_SECRET",
            String::from_utf8_lossy(SECRET).as_ref(),
        )
        .env("TICKET_ADMIN_NICKNAME", "root")
        .env("TICKET_ADMIN_PASSWORD", "password1")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("too weak for an administrator (shorter than 16 characters)"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("password1"),
        "the password itself is never logged: {stderr}"
    );
}

#[tokio::test]
async fn dev_mode_accepts_a_weak_admin_password_with_a_warning() {
    let (db, _pool) = TestDatabase::migrated().await;
    let mut child = api(&db.url())
        .env("TICKET_API_ADDR", "127.0.0.1:0")
        .env(
            "TICKET_AUTH_SECRET",
            String::from_utf8_lossy(SECRET).as_ref(),
        )
        .env("TICKET_ADMIN_NICKNAME", "root")
        .env("TICKET_ADMIN_PASSWORD", "password1")
        .env("TICKET_DEV_MODE", "true")
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut log = ChildLog::follow(child.stderr.take().unwrap());
    let listening = !log.listening_addr().is_empty();
    let warned = log
        .seen
        .iter()
        .any(|line| line.contains("weak admin password accepted in dev mode"));
    child.kill().ok();
    child.wait().ok();
    assert_eq!((warned, listening), (true, true), "(warned, listening)");
}

#[tokio::test]
async fn secrets_come_from_files_and_never_from_the_command_line() {
    let flag = Command::new(BIN)
        .args(["--auth-secret", "on-the-command-line-anyone-can-read-it"])
        .output()
        .unwrap();
    assert!(!flag.status.success());
    assert!(String::from_utf8_lossy(&flag.stderr).contains("unexpected argument"));

    let (db, db_pool) = TestDatabase::migrated().await;
    let dir = std::env::temp_dir().join(format!("ticket-secrets-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let admin_password = "a-long-admin-password-from-a-file";
    for (file, content) in [
        ("database-url", format!("{}\n", db.url())),
        (
            "auth-secret",
            format!("{}\n", String::from_utf8_lossy(SECRET)),
        ),
        ("admin-password", format!("{admin_password}\n")),
    ] {
        std::fs::write(dir.join(file), content).unwrap();
    }
    let mut child = Command::new(BIN)
        .env_clear()
        .env("RUST_LOG", "debug")
        .env("DATABASE_URL_FILE", dir.join("database-url"))
        .env("TICKET_AUTH_SECRET_FILE", dir.join("auth-secret"))
        .env("TICKET_ADMIN_PASSWORD_FILE", dir.join("admin-password"))
        .env("TICKET_ADMIN_NICKNAME", "filed")
        .env("TICKET_API_ADDR", "127.0.0.1:0")
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut log = ChildLog::follow(child.stderr.take().unwrap());
    let addr = log.listening_addr();
    let app = TestApp::at(format!("http://{addr}"), db_pool);
    let token = app.login("filed", admin_password).await;
    app.get("/api/concerts", Some(&token))
        .await
        .assert_status(200);
    child.kill().ok();
    child.wait().ok();
    std::fs::remove_dir_all(&dir).ok();
    let log = log.all().join("\n");
    let url = db.url();
    let credentials = url
        .split("://")
        .nth(1)
        .and_then(|rest| rest.split_once('@'))
        .map(|(credentials, _)| format!("{credentials}@"))
        .unwrap();
    for secret in [
        admin_password,
        &String::from_utf8_lossy(SECRET),
        &credentials,
    ] {
        assert!(!log.contains(secret), "a secret reached the log:\n{log}");
    }
}
