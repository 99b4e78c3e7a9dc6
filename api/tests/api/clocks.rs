//! One clock for every deadline: processes whose clocks run apart (Debian's
//! libfaketime, preloaded into the real executables) still agree on when a
//! hold ends and when a sale opens, because both read the database's.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::json;

use crate::helpers::{Running, SECRET, TestApp, executable, spawn_app};

/// libfaketime, as `scripts/faketime.sh` installs it (its path in
/// `TICKET_LIBFAKETIME`), or where Debian's package puts it.
fn libfaketime() -> String {
    let path = std::env::var("TICKET_LIBFAKETIME")
        .unwrap_or_else(|_| "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1".to_owned());
    assert!(
        std::path::Path::new(&path).exists(),
        "{path} is missing: run scripts/faketime.sh (make test does)"
    );
    path
}

/// One of the workspace's executables, its clock `offset` away from this
/// host's (libfaketime's syntax: "+3s", "-3s").
fn skewed(name: &str, database_url: &str, offset: &str) -> Command {
    let mut cmd = executable(name, database_url);
    cmd.env("LD_PRELOAD", libfaketime())
        .env("FAKETIME", offset)
        // Timers and intervals run on the monotonic clock: leave it alone.
        .env("FAKETIME_DONT_FAKE_MONOTONIC", "1")
        .env("TICKET_LOG_FORMAT", "json")
        .env("RUST_LOG", "info")
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    cmd
}

/// A started process, its log lines after the first, and how far its clock
/// is from this host's.
type Started = (
    Running,
    std::sync::mpsc::Receiver<serde_json::Value>,
    f64,
    serde_json::Value,
);

/// Starts `cmd`; returns it with its first log line, the lines after it,
/// and how far its clock is from this host's, read off that first line (so
/// that a preload that did nothing cannot pass for a skewed process).
fn start(mut cmd: Command) -> Started {
    let mut child = cmd.spawn().expect("the executable starts");
    let stderr = child.stderr.take().expect("piped stderr");
    let running = Running(child);
    let (send, lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let Ok(value) = serde_json::from_str::<serde_json::Value>(&line) else {
                continue;
            };
            if send.send(value).is_err() {
                break;
            }
        }
    });
    let first = lines
        .recv_timeout(Duration::from_secs(20))
        .expect("a first log line");
    let logged: DateTime<Utc> = first["timestamp"]
        .as_str()
        .and_then(|t| t.parse().ok())
        .expect("a timestamp on the log line");
    let skew = (logged - Utc::now()).num_milliseconds() as f64 / 1000.0;
    (running, lines, skew, first)
}

/// The database's clock.
async fn database_now(app: &TestApp) -> DateTime<Utc> {
    let mut conn = app.pool.acquire().await.unwrap();
    ticket_core::db::now(&mut conn).await.unwrap()
}

/// Returns once the database's clock has reached `at`.
async fn until_database_time(app: &TestApp, at: DateTime<Utc>) {
    loop {
        let left = at - database_now(app).await;
        if left <= chrono::Duration::zero() {
            return;
        }
        tokio::time::sleep(
            left.to_std()
                .unwrap_or_default()
                .min(Duration::from_millis(50)),
        )
        .await;
    }
}

/// The request's decided status and body, once the worker has decided it.
async fn decided(app: &TestApp, token: &str, queue_id: u64) -> serde_json::Value {
    for _ in 0..400 {
        let status = app.queue_status(token, queue_id).await;
        if status["status"] == "SUCCESS" || status["status"] == "FAILED" {
            return status;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("request {queue_id} was not decided within 4 s");
}

#[tokio::test]
async fn a_worker_whose_clock_runs_ahead_gives_away_no_seat_of_a_running_hold() {
    let app = spawn_app().await;
    let (_, seats) = app
        .concert_and_seats(json!({"rows": 1, "seatsPerRow": 2, "holdSeconds": 6}))
        .await;
    let (_worker, _log, skew, _) = start({
        let mut cmd = skewed("ticket-worker", &app.database_url(), "+3s");
        cmd.env("TICKET_WORKER_HEALTH_ADDR", "127.0.0.1:0")
            .env("TICKET_WORKER_POLL_INTERVAL_MS", "10");
        cmd
    });
    assert!(
        skew > 2.5,
        "the worker's clock is {skew} s off, not 3 s ahead"
    );

    let (_, first) = app.user("first").await;
    let (_, second) = app.user("second").await;
    let held = app
        .post("/api/reservations", Some(&first), json!({"seatIds": seats}))
        .await;
    let held = decided(
        &app,
        &first,
        held.assert_status(201)["queueId"].as_u64().unwrap(),
    )
    .await;
    assert_eq!(held["status"], "SUCCESS", "{held}");
    let reservation = held["reservationId"].as_u64().unwrap();
    let (hold_ends,): (DateTime<Utc>,) =
        sqlx::query_as("SELECT hold_expires_at FROM reservations WHERE id = ?")
            .bind(reservation)
            .fetch_one(&app.pool)
            .await
            .unwrap();

    // Inside the last 3 s of the hold: over by the worker's clock, running
    // by the database's and the API's.
    until_database_time(&app, hold_ends - chrono::Duration::milliseconds(2_500)).await;
    let asked = app.reserve(&second, seats[1]).await;
    let asked = decided(
        &app,
        &second,
        asked.assert_status(201)["queueId"].as_u64().unwrap(),
    )
    .await;
    let confirm = app
        .post(
            &format!("/api/reservations/{reservation}/confirm"),
            Some(&first),
            json!({}),
        )
        .await;
    assert!(
        database_now(&app).await < hold_ends,
        "the confirm came after the hold's end: the test ran too slowly to say anything"
    );
    assert_eq!(
        (asked["status"].as_str(), asked["reason"].as_str()),
        (Some("FAILED"), Some("SEAT_TAKEN")),
        "a seat of a running hold went to someone else: {asked}"
    );
    let confirmed = confirm.assert_status(200);
    assert_eq!(confirmed["status"], "CONFIRMED");
    assert_eq!(confirmed["seats"].as_array().map(Vec::len), Some(2));
    app.assert_invariants().await;
}

#[tokio::test]
async fn a_confirm_whose_hold_lost_a_seat_is_refused_and_changes_nothing() {
    let app = spawn_app().await;
    let (_, seats) = app
        .concert_and_seats(json!({"rows": 1, "seatsPerRow": 2, "holdSeconds": 600}))
        .await;
    let (_, token) = app.user("buyer").await;
    let placed = app
        .post("/api/reservations", Some(&token), json!({"seatIds": seats}))
        .await;
    let queue_id = placed.assert_status(201)["queueId"].as_u64().unwrap();
    app.drain().await;
    let reservation = app.queue_status(&token, queue_id).await["reservationId"]
        .as_u64()
        .unwrap();
    // What a decision does to a seat of a hold it takes for over: its claim
    // ends, and the seat goes to someone else (here, to nobody yet).
    sqlx::query(
        "UPDATE reservation_seats SET status = 'EXPIRED' WHERE reservation_id = ? AND seat_id = ?",
    )
    .bind(reservation)
    .bind(seats[1])
    .execute(&app.pool)
    .await
    .unwrap();

    let confirm = app
        .post(
            &format!("/api/reservations/{reservation}/confirm"),
            Some(&token),
            json!({}),
        )
        .await;
    confirm.assert_problem(409, "HOLD_EXPIRED");
    let (status,): (String,) = sqlx::query_as("SELECT status FROM reservations WHERE id = ?")
        .bind(reservation)
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(status, "HELD", "nothing changed");
    let claims: Vec<(u64, String)> = sqlx::query_as(
        "SELECT seat_id, status FROM reservation_seats WHERE reservation_id = ? ORDER BY seat_id",
    )
    .bind(reservation)
    .fetch_all(&app.pool)
    .await
    .unwrap();
    assert_eq!(
        claims,
        [
            (seats[0], "HELD".to_owned()),
            (seats[1], "EXPIRED".to_owned())
        ]
    );
    let (reserved,): (i64,) =
        sqlx::query_as("SELECT COUNT(*) FROM seats WHERE status = 'RESERVED'")
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(reserved, 0, "no seat was sold");
    assert_eq!(app.count("outbox").await, 1, "only the hold's own event");
}

#[tokio::test]
async fn an_api_whose_clock_runs_behind_puts_no_request_after_the_opening_in_the_lottery() {
    let app = spawn_app().await;
    let opens_at = database_now(&app).await + chrono::Duration::seconds(2);
    let (_, seats) = app
        .concert_and_seats(
            json!({"rows": 1, "seatsPerRow": 4, "opensAt": opens_at.to_rfc3339(),
                                   "lotteryWindowSeconds": 60}),
        )
        .await;
    let (_api, log, skew, first) = start({
        let mut cmd = skewed("ticket-api", &app.database_url(), "-3s");
        cmd.env("TICKET_API_ADDR", "127.0.0.1:0").env(
            "TICKET_AUTH_SECRET",
            String::from_utf8_lossy(SECRET).as_ref(),
        );
        cmd
    });
    assert!(
        skew < -2.5,
        "the API's clock is {skew} s off, not 3 s behind"
    );
    let mut line = first;
    while line["message"] != "listening" {
        line = log
            .recv_timeout(Duration::from_secs(20))
            .expect("a log line");
    }
    let addr = line["addr"].as_str().unwrap().to_owned();
    let behind = TestApp::at(format!("http://{addr}"), app.pool.clone());
    let early = behind.user("early").await.1;
    let late = behind.user("late").await.1;

    let lottery = behind.reserve(&early, seats[0]).await;
    assert_eq!(lottery.assert_status(201)["status"], "WAITING");
    until_database_time(&app, opens_at + chrono::Duration::milliseconds(200)).await;
    // The opening has passed by the database's clock; by the API's own it
    // is still nearly 3 s away.
    for seat in &seats[1..] {
        let after = behind.reserve(&late, *seat).await;
        assert_eq!(
            after.assert_status(201)["status"],
            "PENDING",
            "a request after the opening got a lottery place"
        );
    }
    let (lottery_keys,): (i64,) = sqlx::query_as(
        "SELECT COUNT(*) FROM reservation_queue WHERE line_key < 4611686018427387904",
    )
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!(lottery_keys, 1, "only the request before the opening");
}
