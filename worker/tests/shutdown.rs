//! The real `ticket-worker` executable: clean exit on SIGTERM, and a worker
//! killed with SIGKILL mid-batch loses nothing, whether it decides in the
//! claim's transaction or claims under a lease first.

mod common;

use std::time::{Duration, Instant};

use common::process::{expect_line, signal, spawn_worker, wait_for_exit};
use common::{assert_each_requested_seat_sold_once, open_requests, queue, worker};
use ticket_worker::Mode;

#[tokio::test]
async fn the_worker_exits_zero_on_sigterm() {
    let q = queue(1, 1).await;
    let (mut child, lines) = spawn_worker(&q.db.url(), &[]);
    let listening = expect_line(&lines, "health endpoint listening");
    let addr = listening
        .split("addr=")
        .nth(1)
        .expect("no addr in the log line")
        .trim()
        .to_owned();
    expect_line(&lines, "worker started");
    // The loop turns, so liveness holds.
    let health = TcpHealth::get(&addr);
    assert!(health.starts_with("HTTP/1.1 200"), "{health}");
    signal(&child, "-TERM");
    let status = wait_for_exit(&mut child);
    assert!(status.success(), "exit status after SIGTERM: {status}");
    expect_line(&lines, "worker stopped");
}

/// The default: each batch is claimed and decided in one transaction. A
/// kill mid-decision rolls the whole of it back, and its rows are open to
/// any worker at once, with no lease to wait out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_killed_mid_decision_leaves_its_rows_open_at_once() {
    // A backlog long enough for three kills, each seen mid-batch (the
    // check for a batch in flight looks every 150 ms, and a worker decides
    // thousands of requests a second).
    let q = queue(500, 60_000).await;
    for _ in 0..3 {
        let open_before = open_requests(&q.pool).await;
        let (mut child, lines) = spawn_worker(
            &q.db.url(),
            &[
                ("TICKET_WORKER_BATCH_SIZE", "500"),
                // A lease, were one written, would outlive the test.
                ("TICKET_WORKER_LEASE_MS", "3600000"),
            ],
        );
        expect_line(&lines, "worker started");
        // Kill it mid-backlog: after a batch of its own has committed.
        let deadline = Instant::now() + Duration::from_secs(30);
        while open_requests(&q.pool).await == open_before {
            assert!(Instant::now() < deadline, "the worker decided nothing");
        }
        until_decisions_writing(&q.pool, |n| n > 0, "no decision was seen writing").await;
        signal(&child, "-KILL");
        wait_for_exit(&mut child);
        // The server has rolled the killed worker's transaction back.
        until_decisions_writing(&q.pool, |n| n == 0, "the killed decision stayed open").await;
        // Nothing half done, and nothing left under a lease.
        common::assert_invariants(&q.pool).await;
        assert_eq!(common::processing(&q.pool).await, 0);
    }
    assert!(
        open_requests(&q.pool).await > 0,
        "the kills landed before the end"
    );
    // Another worker takes the rest now: with hour-long leases, any row
    // the killed workers had left leased would stall it.
    let rescuer = worker(
        &q.pool,
        "rescuer",
        Mode::Batch,
        1000,
        Duration::from_secs(3600),
    );
    let rescuer = &rescuer;
    common::until_drained(&q.pool, Duration::from_secs(120), move || async move {
        rescuer.claim_and_decide_once().await.unwrap();
    })
    .await;
    assert_each_requested_seat_sold_once(&q.pool, 500, 60_000).await;
}

/// Waits until the number of transactions on this test's database that
/// have changed rows (the worker's decision, between its first write and
/// its commit or rollback) is as `wanted`.
async fn until_decisions_writing(pool: &sqlx::MySqlPool, wanted: fn(i64) -> bool, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !wanted(decisions_writing(pool).await) {
        assert!(Instant::now() < deadline, "{what}");
        // INNODB_TRX is refreshed for a reader at most every 0.1 s.
        tokio::time::sleep(Duration::from_millis(150)).await;
    }
}

async fn decisions_writing(pool: &sqlx::MySqlPool) -> i64 {
    let (n,): (i64,) = sqlx::query_as(
        "SELECT COUNT(*) FROM information_schema.INNODB_TRX t \
         JOIN information_schema.PROCESSLIST p ON p.ID = t.trx_mysql_thread_id \
         WHERE p.DB = DATABASE() AND t.trx_rows_modified > 0",
    )
    .fetch_one(pool)
    .await
    .unwrap();
    n
}

/// `leased-batch`: claims are committed as PROCESSING under a lease, so a
/// killed worker's rows wait for it to run out and are then re-claimed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_killed_holding_leased_rows_loses_nothing() {
    let q = queue(500, 30_000).await;
    let mut reclaimed_somewhere = false;
    // Kill a worker process three times while it holds claimed rows.
    for _ in 0..3 {
        let (mut child, lines) = spawn_worker(
            &q.db.url(),
            &[
                ("TICKET_WORKER_MODE", "leased-batch"),
                ("TICKET_WORKER_BATCH_SIZE", "500"),
                ("TICKET_WORKER_LEASE_MS", "500"),
            ],
        );
        expect_line(&lines, "worker started");
        common::until_rows_are_claimed(&q.pool).await;
        signal(&child, "-KILL");
        wait_for_exit(&mut child);
        reclaimed_somewhere |= common::processing(&q.pool).await > 0;
    }
    assert!(
        reclaimed_somewhere,
        "no kill landed while rows were claimed"
    );
    // Another worker finishes everything, including the dead ones' rows.
    let rescuer = worker(
        &q.pool,
        "rescuer",
        Mode::Batch,
        1000,
        Duration::from_secs(30),
    );
    let rescuer = &rescuer;
    common::until_drained(&q.pool, Duration::from_secs(120), move || async move {
        rescuer.process_once().await.unwrap();
    })
    .await;
    assert_each_requested_seat_sold_once(&q.pool, 500, 30_000).await;
    let (twice,): (i64,) =
        sqlx::query_as("SELECT COUNT(*) FROM reservation_queue WHERE attempts > 1")
            .fetch_one(&q.pool)
            .await
            .unwrap();
    assert!(twice > 0, "the killed workers' rows were re-claimed");
}

/// A minimal HTTP GET of /healthz (the worker's tests need no HTTP client).
struct TcpHealth;

impl TcpHealth {
    fn get(addr: &str) -> String {
        use std::io::{Read, Write};
        let mut stream = std::net::TcpStream::connect(addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        write!(
            stream,
            "GET /healthz HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).unwrap();
        response
    }
}

#[tokio::test]
async fn a_worker_killed_while_sweeping_leaves_no_half_done_batch() {
    let q = common::aged_history().await;
    let old = "SELECT COUNT(*) FROM reservation_queue WHERE decided_at < UTC_TIMESTAMP() - INTERVAL 30 DAY";
    assert_eq!(common::scalar(&q.pool, old).await, 1_200);
    let (mut child, _lines) = spawn_worker(&q.db.url(), &[]);
    // Kill it the moment its sweeper has removed something, mid-pass.
    let deadline = Instant::now() + Duration::from_secs(20);
    while common::scalar(&q.pool, old).await == 1_200 {
        assert!(Instant::now() < deadline, "the sweeper never started");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    signal(&child, "-KILL");
    child.wait().unwrap();
    let left = common::scalar(&q.pool, old).await;
    assert!(left < 1_200, "{left}");
    // Whatever the kill interrupted was rolled back whole: every row is
    // either gone or intact, nothing else was touched, and the next sweep
    // finishes the job.
    let everything = "SELECT COUNT(*) FROM reservation_queue";
    assert_eq!(common::scalar(&q.pool, everything).await, left + 300 + 5);
    assert_eq!(
        common::scalar(&q.pool, "SELECT COUNT(*) FROM reservations").await,
        600
    );
    let swept = ticket_worker::retention::Sweeper::new(
        q.pool.clone(),
        ticket_worker::retention::Retention {
            decided: Some(chrono::Duration::days(30)),
            idempotency_keys: Some(chrono::Duration::hours(24)),
            events: ticket_core::db::retention::EventsKept::UntilDelivered,
            mails: ticket_core::db::retention::EventsKept::UntilDelivered,
        },
    )
    .pass(chrono::Utc::now())
    .await
    .unwrap();
    assert_eq!(swept.requests_deleted, u64::try_from(left).unwrap());
    assert_eq!(common::scalar(&q.pool, old).await, 0);
    let mut conn = q.pool.acquire().await.unwrap();
    let violations = ticket_core::db::invariants::check(
        &mut conn,
        chrono::Duration::minutes(5),
        5,
        Some(chrono::Duration::days(30)),
    )
    .await
    .unwrap();
    assert!(violations.is_empty(), "{violations:?}");
}

/// The real worker SIGKILLed while its expiry sweep works through a backlog
/// of ended holds: each hold is either expired whole (status, claims, seats
/// and its one event) or untouched, and the next sweep finishes the rest.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_killed_while_expiring_holds_leaves_each_hold_whole() {
    let q = queue(1_000, 1_000).await;
    common::run(&q.pool, "UPDATE concerts SET hold_seconds = 1").await;
    common::drain_with_workers(&q.db, 1, 1000, Mode::Batch).await;
    let held = "SELECT COUNT(*) FROM reservations WHERE status = 'HELD'";
    assert_eq!(common::scalar(&q.pool, held).await, 1_000);
    tokio::time::sleep(Duration::from_millis(1_100)).await;

    let expired = "SELECT COUNT(*) FROM reservations WHERE status = 'EXPIRED'";
    let (mut child, _lines) = spawn_worker(&q.db.url(), &[]);
    let deadline = Instant::now() + Duration::from_secs(20);
    while common::scalar(&q.pool, expired).await == 0 {
        assert!(Instant::now() < deadline, "the expiry sweep never started");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    signal(&child, "-KILL");
    child.wait().unwrap();
    let done = common::scalar(&q.pool, expired).await;
    assert!(done > 0 && done < 1_000, "killed mid-backlog ({done})");
    // Whole or untouched: an expired hold has its event and free seats; a
    // hold still HELD keeps its claims and HELD seats.
    let events = "SELECT COUNT(*) FROM outbox WHERE event_type = 'ReservationExpired'";
    assert_eq!(common::scalar(&q.pool, events).await, done);
    let freed = "SELECT COUNT(*) FROM seats WHERE status = 'AVAILABLE'";
    assert_eq!(common::scalar(&q.pool, freed).await, done);
    let live = "SELECT COUNT(*) FROM reservation_seats WHERE status = 'HELD'";
    assert_eq!(common::scalar(&q.pool, live).await, 1_000 - done);

    let sweeper = ticket_worker::holds::HoldSweeper::new(q.pool.clone());
    while sweeper.sweep_once().await.unwrap().holds > 0 {}
    assert_eq!(common::scalar(&q.pool, expired).await, 1_000);
    assert_eq!(common::scalar(&q.pool, events).await, 1_000);
    ticket_core::testing::assert_invariants(&q.pool).await;
}
