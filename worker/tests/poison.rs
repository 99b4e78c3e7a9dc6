//! Rows the decision cannot handle must not stall the queue: data a hand-made
//! fix left contradictory, a constraint that refuses one row, a worker that
//! dies every time it holds a row, and a failure that is nobody's row at all.

mod common;

use std::time::Duration;

use common::{Queue, counts, queue, scrape};
use sqlx::MySqlPool;
use ticket_core::domain::SeatId;
use ticket_core::testing::prometheus_text::value;
use ticket_worker::{Mode, Worker, WorkerConfig};

fn worker_with(pool: &MySqlPool, name: &str, lease: Duration, max_attempts: u32) -> Worker {
    let config = WorkerConfig {
        batch_size: 1000,
        poll_interval: Duration::from_millis(5),
        lease,
        max_attempts,
    };
    Worker::with_config(pool.clone(), name, Mode::Batch, config)
}

/// (status, reason, attempts, reservation id) of a queue row.
async fn row(pool: &MySqlPool, id: u64) -> (String, Option<String>, u32, Option<u64>) {
    sqlx::query_as(
        "SELECT status, reason, attempts, reservation_id FROM reservation_queue WHERE id = ?",
    )
    .bind(id)
    .fetch_one(pool)
    .await
    .unwrap()
}

/// The queue id of the (first) request for `seat`.
async fn request_for(pool: &MySqlPool, seat: SeatId) -> u64 {
    let (id,): (u64,) = sqlx::query_as("SELECT MIN(id) FROM reservation_queue WHERE seat_id = ?")
        .bind(seat)
        .fetch_one(pool)
        .await
        .unwrap();
    id
}

async fn first_seat(q: &Queue) -> SeatId {
    let (id,): (SeatId,) = sqlx::query_as("SELECT MIN(id) FROM seats")
        .fetch_one(&q.pool)
        .await
        .unwrap();
    id
}

/// The reproduction: one seat whose CONFIRMED reservation contradicts
/// its AVAILABLE status, one request for it and 300 for other seats, one
/// worker with a 2 s lease. Before, the batch failed on the unique key on
/// every attempt and nothing was ever decided.
#[tokio::test]
async fn a_seat_sold_behind_its_status_column_is_taken_and_stalls_nothing() {
    let q = queue(301, 301).await;
    let poisoned = first_seat(&q).await;
    let mut conn = q.pool.acquire().await.unwrap();
    let fixer = ticket_core::testing::seed::users(&mut conn, "fixer", 1)
        .await
        .unwrap()[0];
    let fix = sqlx::query(
        "INSERT INTO reservations (user_id, concert_id, seat_id, status, confirmed_at, created_at, updated_at) \
         SELECT ?, concert_id, id, 'CONFIRMED', NOW(6), NOW(6), NOW(6) FROM seats WHERE id = ?",
    )
    .bind(fixer)
    .bind(poisoned)
    .execute(&mut *conn)
    .await
    .unwrap();
    sqlx::query(
        "INSERT INTO reservation_seats (reservation_id, seat_id, concert_id, status) \
         SELECT ?, id, concert_id, 'CONFIRMED' FROM seats WHERE id = ?",
    )
    .bind(fix.last_insert_id())
    .bind(poisoned)
    .execute(&mut *conn)
    .await
    .unwrap();
    drop(conn);

    let w = worker_with(&q.pool, "w", Duration::from_secs(2), 5);
    let cycle = w.process_once().await.unwrap();
    assert_eq!(cycle.claimed, 301);
    assert_eq!(
        (cycle.decided.succeeded, cycle.decided.failed),
        (300, 1),
        "{cycle:?}"
    );
    let (status, reason, _, reservation) = row(&q.pool, request_for(&q.pool, poisoned).await).await;
    assert_eq!(
        (status.as_str(), reason.as_deref(), reservation),
        ("FAILED", Some("SEAT_TAKEN"), None),
        "the request is not linked to the other user's reservation"
    );
    // The hand-made fix's contradictions are still there for an operator to
    // see; the decision added nothing to them.
    let mut conn = q.pool.acquire().await.unwrap();
    let violations =
        ticket_core::db::invariants::check(&mut conn, chrono::Duration::zero(), 5, None)
            .await
            .unwrap();
    let names: Vec<&str> = violations.iter().map(|v| v.invariant).collect();
    assert_eq!(
        names,
        [
            "a seat with a CONFIRMED claim is not RESERVED",
            // Made by hand, the sale has no ticket either.
            "a CONFIRMED seat claim has no valid ticket",
            "a confirmed reservation has no ReservationConfirmed event"
        ],
        "{violations:?}"
    );
}

/// A row whose reservation the database refuses (here a CHECK constraint on
/// its user): the rest of its batch is decided at once, the row is tried
/// again with backoff and set aside after its last attempt, and the next
/// request for its seat, which waited behind it, then gets the seat.
#[tokio::test]
async fn a_row_that_always_fails_is_set_aside_and_the_rest_decided_at_once() {
    let (q, poison, late) = a_queue_with_a_row_that_always_fails().await;
    let max_attempts = 3;
    let w = worker_with(&q.pool, "w", Duration::from_secs(2), max_attempts);
    let first = w.process_once().await.unwrap();
    assert_eq!(first.claimed, 301);
    assert_eq!(
        (first.decided.succeeded, first.decided.failed),
        (299, 0),
        "every other row is decided in the same cycle: {first:?}"
    );
    assert_eq!(row(&q.pool, poison).await.0, "PENDING", "tried again later");
    assert_eq!(
        row(&q.pool, late).await.0,
        "PENDING",
        "the later request for the seat waits behind the earlier one"
    );

    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while !settled(&q.pool, poison, late, deadline).await {
        w.process_once().await.unwrap();
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_set_aside_alone(&q, &w, poison, max_attempts).await;
    assert_eq!(
        row(&q.pool, late).await.2,
        1,
        "waiting behind the earlier request cost the later one no attempt"
    );
}

/// Whether the failing row is set aside and the later request for its seat
/// has won it; fails the test past `deadline`.
async fn settled(pool: &MySqlPool, poison: u64, late: u64, deadline: tokio::time::Instant) -> bool {
    let (poisoned, later) = (row(pool, poison).await, row(pool, late).await);
    assert!(
        tokio::time::Instant::now() < deadline,
        "not settled: {poisoned:?} {later:?}"
    );
    poisoned.0 == "FAILED" && later.0 == "SUCCESS"
}

/// The failing row ended FAILED (PROCESSING_FAILED) after its last attempt,
/// counted as set aside, and every other row was decided.
async fn assert_set_aside_alone(q: &Queue, w: &Worker, poison: u64, max_attempts: u32) {
    let (_, reason, attempts, _) = row(&q.pool, poison).await;
    assert_eq!(
        (reason.as_deref(), attempts),
        (Some("PROCESSING_FAILED"), max_attempts)
    );
    let samples = scrape(w, &q.pool).await;
    assert_eq!(
        value(&samples, "ticket_worker_dead_lettered_total", &[]),
        1.0
    );
    let c = counts(&q.pool).await;
    assert_eq!((c["SUCCESS"], c["FAILED"]), (300, 1), "{c:?}");
    common::assert_invariants(&q.pool).await;
}

/// 300 requests, one of them (`poison`) for a reservation the database
/// refuses (a CHECK constraint on its user), and a later request (`late`)
/// for the same seat.
async fn a_queue_with_a_row_that_always_fails() -> (Queue, u64, u64) {
    let q = queue(300, 300).await;
    let poisoned = first_seat(&q).await;
    let poison = request_for(&q.pool, poisoned).await;
    let (poison_user,): (u64,) =
        sqlx::query_as("SELECT user_id FROM reservation_queue WHERE id = ?")
            .bind(poison)
            .fetch_one(&q.pool)
            .await
            .unwrap();
    let mut conn = q.pool.acquire().await.unwrap();
    let late_user = ticket_core::testing::seed::users(&mut conn, "late", 1)
        .await
        .unwrap()[0];
    ticket_core::testing::seed::requests(&mut conn, &[(late_user, poisoned)])
        .await
        .unwrap();
    let (late,): (u64,) = sqlx::query_as("SELECT id FROM reservation_queue WHERE user_id = ?")
        .bind(late_user)
        .fetch_one(&mut *conn)
        .await
        .unwrap();
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "ALTER TABLE reservations ADD CONSTRAINT ck_test_poison CHECK (user_id <> {poison_user})"
    )))
    .execute(&mut *conn)
    .await
    .unwrap();
    drop(conn);

    (q, poison, late)
}

/// The same row under the worker's own loop, which claims and decides in
/// one transaction: the failed transaction sends the batch to a claim under
/// a lease, which splits it, so the rest is decided and the row's attempts
/// are counted until it is set aside.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_running_loop_sets_a_failing_row_aside_and_decides_the_rest() {
    let (q, poison, late) = a_queue_with_a_row_that_always_fails().await;
    let max_attempts = 3;
    let w = std::sync::Arc::new(worker_with(
        &q.pool,
        "w",
        Duration::from_secs(2),
        max_attempts,
    ));
    let shutdown = tokio_util::sync::CancellationToken::new();
    let running = tokio::spawn({
        let (w, shutdown) = (w.clone(), shutdown.clone());
        async move { w.run(shutdown).await }
    });
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while !settled(&q.pool, poison, late, deadline).await {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    shutdown.cancel();
    running.await.unwrap();
    assert_set_aside_alone(&q, &w, poison, max_attempts).await;
}

/// A row whose worker dies every time it holds it: after its last attempt
/// the next claim sets it aside instead of taking it again.
#[tokio::test]
async fn a_row_whose_lease_runs_out_on_every_attempt_is_set_aside_by_the_claim() {
    let q = queue(5, 5).await;
    let max_attempts = 2;
    let crashing = worker_with(
        &q.pool,
        "crashing",
        Duration::from_millis(200),
        max_attempts,
    );
    let first = crashing.claim_once().await.unwrap();
    assert_eq!(first.ids.len(), 5);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let mut reclaimed = 0;
    let mut dead_lettered = 0;
    while dead_lettered == 0 {
        assert!(tokio::time::Instant::now() < deadline, "never set aside");
        let batch = crashing.claim_once().await.unwrap();
        reclaimed += batch.reclaimed;
        dead_lettered += batch.dead_lettered;
        assert!(batch.reclaimed == 0 || batch.dead_lettered == 0);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!((reclaimed, dead_lettered), (5, 5));
    let rows: Vec<(String, Option<String>, u32)> =
        sqlx::query_as("SELECT status, reason, attempts FROM reservation_queue")
            .fetch_all(&q.pool)
            .await
            .unwrap();
    assert!(
        rows.iter().all(|r| r
            == &(
                "FAILED".to_owned(),
                Some("PROCESSING_FAILED".to_owned()),
                max_attempts
            )),
        "{rows:?}"
    );
    let samples = scrape(&crashing, &q.pool).await;
    assert_eq!(
        value(&samples, "ticket_worker_dead_lettered_total", &[]),
        5.0
    );
    common::assert_invariants(&q.pool).await;
}

/// When every part of a batch fails, the cause is not in the rows (here no
/// reservation can be written at all): nothing is set aside and no attempt
/// is counted; once the cause is gone everything is decided.
#[tokio::test]
async fn a_failure_of_every_row_sets_none_aside() {
    let q = queue(4, 8).await;
    sqlx::query("ALTER TABLE reservations ADD CONSTRAINT ck_test_broken CHECK (seat_id = 0)")
        .execute(&q.pool)
        .await
        .unwrap();
    let w = worker_with(&q.pool, "w", Duration::from_secs(30), 1);
    assert!(w.process_once().await.is_err());
    let rows: Vec<(String, u32)> = sqlx::query_as("SELECT status, attempts FROM reservation_queue")
        .fetch_all(&q.pool)
        .await
        .unwrap();
    assert!(
        rows.iter().all(|r| r == &("PENDING".to_owned(), 0)),
        "{rows:?}"
    );

    sqlx::query("ALTER TABLE reservations DROP CONSTRAINT ck_test_broken")
        .execute(&q.pool)
        .await
        .unwrap();
    let w = &w;
    common::until_drained(&q.pool, Duration::from_secs(10), move || async move {
        w.process_once().await.unwrap();
        tokio::time::sleep(Duration::from_millis(20)).await;
    })
    .await;
    common::assert_each_requested_seat_sold_once(&q.pool, 4, 8).await;
}
