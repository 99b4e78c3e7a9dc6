//! Shared set-up for the worker's tests: a fresh database with seats, users
//! and queued requests.
#![allow(dead_code)] // each test file uses a different part of it

use std::collections::HashMap;
use std::time::Duration;

use axum::body::Body;
use http::Request;
use sqlx::MySqlPool;
use ticket_core::domain::{ConcertId, SeatId, UserId};
use ticket_core::testing::prometheus_text::{self, Samples};
use ticket_core::testing::{TestDatabase, seed};
use ticket_worker::{Mode, Worker, WorkerConfig, observability};

pub mod process;
pub mod receiver;
use tower::ServiceExt as _;

pub struct Queue {
    pub db: TestDatabase,
    pub pool: MySqlPool,
}

/// `requests` requests from distinct users, spread round-robin over `seats` seats.
pub async fn queue(seats: u32, requests: usize) -> Queue {
    let (db, pool) = TestDatabase::migrated().await;
    let mut conn = pool.acquire().await.unwrap();
    let seat_ids = seed::concert(&mut conn, 1, seats).await.unwrap();
    let users = seed::users(&mut conn, "u", requests).await.unwrap();
    let pairs: Vec<(UserId, SeatId)> = users
        .iter()
        .enumerate()
        .map(|(i, u)| (*u, seat_ids[i % seat_ids.len()]))
        .collect();
    seed::requests(&mut conn, &pairs).await.unwrap();
    drop(conn);
    Queue { db, pool }
}

pub fn worker(
    pool: &MySqlPool,
    name: &str,
    mode: Mode,
    batch_size: u32,
    lease: Duration,
) -> Worker {
    let config = WorkerConfig {
        batch_size,
        poll_interval: Duration::from_millis(5),
        lease,
        max_attempts: WorkerConfig::DEFAULT_MAX_ATTEMPTS,
    };
    Worker::with_config(pool.clone(), name, mode, config)
}

/// The worker's `/metrics`, parsed.
pub async fn scrape(w: &ticket_worker::Worker, pool: &sqlx::MySqlPool) -> Samples {
    let router = observability::router(w.heartbeat(), w.metrics(), pool.clone());
    let response = router
        .oneshot(Request::get("/metrics").body(Body::empty()).unwrap())
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.headers()["content-type"],
        "text/plain; version=0.0.4; charset=utf-8"
    );
    let bytes = axum::body::to_bytes(response.into_body(), 1 << 20)
        .await
        .unwrap();
    let text = String::from_utf8(bytes.to_vec()).unwrap();
    prometheus_text::parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

/// Runs `n` workers side by side, each with a pool of its own as separate
/// processes would have, until nothing is open (at most two minutes); then
/// how many requests each of them decided.
pub async fn drain_with_workers(
    db: &TestDatabase,
    n: usize,
    batch_size: u32,
    mode: Mode,
) -> Vec<u64> {
    let shutdown = tokio_util::sync::CancellationToken::new();
    let mut handles = Vec::new();
    for i in 0..n {
        let pool = db.pool(4).await;
        let w = worker(
            &pool,
            &format!("w{i}"),
            mode,
            batch_size,
            Duration::from_secs(60),
        );
        let shutdown = shutdown.clone();
        let metrics = w.metrics();
        handles.push((tokio::spawn(async move { w.run(shutdown).await }), metrics));
    }
    let pool = db.pool(1).await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
    while open_requests(&pool).await > 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "not drained: {:?}",
            counts(&pool).await
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    shutdown.cancel();
    let mut decided = Vec::new();
    for (h, metrics) in handles {
        h.await.unwrap();
        decided.push(metrics.decided_count());
    }
    decided
}

pub async fn counts(pool: &MySqlPool) -> HashMap<String, i64> {
    let rows: Vec<(String, i64)> =
        sqlx::query_as("SELECT status, COUNT(*) FROM reservation_queue GROUP BY status")
            .fetch_all(pool)
            .await
            .unwrap();
    rows.into_iter().collect()
}

pub async fn processing(pool: &MySqlPool) -> i64 {
    counts(pool).await.get("PROCESSING").copied().unwrap_or(0)
}

/// Waits (at most 30 s) until some worker holds claimed rows.
pub async fn until_rows_are_claimed(pool: &MySqlPool) {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while processing(pool).await == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "no worker claimed: {:?}",
            counts(pool).await
        );
    }
}

/// Runs `step` until no request is open, failing the test after `within`.
pub async fn until_drained<F, Fut>(pool: &MySqlPool, within: Duration, mut step: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let deadline = std::time::Instant::now() + within;
    while open_requests(pool).await > 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "not drained: {:?}",
            counts(pool).await
        );
        step().await;
    }
}

pub async fn open_requests(pool: &MySqlPool) -> i64 {
    let c = counts(pool).await;
    ["WAITING", "PENDING", "PROCESSING"]
        .iter()
        .map(|s| c.get(*s).copied().unwrap_or(0))
        .sum()
}

pub use ticket_core::testing::assert_invariants;

/// Every requested seat is sold exactly once; every other request failed.
pub async fn assert_each_requested_seat_sold_once(pool: &MySqlPool, seats: usize, requests: usize) {
    let c = counts(pool).await;
    let sold = seats.min(requests) as i64;
    assert_eq!(c.get("SUCCESS").copied().unwrap_or(0), sold, "{c:?}");
    assert_eq!(
        c.get("FAILED").copied().unwrap_or(0),
        requests as i64 - sold,
        "{c:?}"
    );
    let (confirmed,): (i64,) =
        sqlx::query_as("SELECT COUNT(*) FROM reservations WHERE status = 'CONFIRMED'")
            .fetch_one(pool)
            .await
            .unwrap();
    assert_eq!(confirmed, sold);
    assert_invariants(pool).await;
}

pub async fn scalar(pool: &MySqlPool, sql: &str) -> i64 {
    let (n,): (i64,) = sqlx::query_as(sqlx::AssertSqlSafe(sql.to_owned()))
        .fetch_one(pool)
        .await
        .unwrap();
    n
}

pub async fn run(pool: &MySqlPool, sql: &str) {
    sqlx::query(sqlx::AssertSqlSafe(sql.to_owned()))
        .execute(pool)
        .await
        .unwrap();
}

/// 1,500 requests on 600 seats decided (600 SUCCESS, 900 FAILED, each
/// SUCCESS with its reservation and event), then aged: the first 1,200 by
/// 40 days, the rest by 2 days; then 5 requests left open, 40 days old.
pub async fn aged_history() -> Queue {
    let q = queue(600, 1_500).await;
    drain_with_workers(&q.db, 1, 1000, Mode::Batch).await;
    run(
        &q.pool,
        "UPDATE reservation_queue SET idempotency_key = CONCAT('key-', id)",
    )
    .await;
    run(
        &q.pool,
        "UPDATE reservation_queue SET created_at = created_at - INTERVAL 40 DAY, \
         decided_at = decided_at - INTERVAL 40 DAY ORDER BY id LIMIT 1200",
    )
    .await;
    run(
        &q.pool,
        "UPDATE reservation_queue SET created_at = created_at - INTERVAL 2 DAY, \
         decided_at = decided_at - INTERVAL 2 DAY WHERE created_at > UTC_TIMESTAMP() - INTERVAL 1 DAY",
    )
    .await;
    // The events of the aged reservations: the first 300 were delivered
    // 40 days ago, the rest never.
    run(
        &q.pool,
        "UPDATE outbox SET created_at = created_at - INTERVAL 40 DAY, \
         published_at = UTC_TIMESTAMP(6) - INTERVAL 40 DAY ORDER BY id LIMIT 300",
    )
    .await;
    // Their reservations are as old (`check` expects an event only for
    // reservations made within the retention).
    run(
        &q.pool,
        "UPDATE reservations r JOIN outbox o ON o.aggregate_id = r.id \
         SET r.created_at = r.created_at - INTERVAL 40 DAY WHERE o.published_at IS NOT NULL",
    )
    .await;
    // Five open requests, as old as the oldest decided ones.
    let mut conn = q.pool.acquire().await.unwrap();
    let users = ticket_core::testing::seed::users(&mut conn, "late", 5)
        .await
        .unwrap();
    let seats: Vec<(u64,)> = sqlx::query_as("SELECT id FROM seats ORDER BY id LIMIT 5")
        .fetch_all(&mut *conn)
        .await
        .unwrap();
    for (user, (seat,)) in users.iter().zip(seats) {
        sqlx::query(
            "INSERT INTO reservation_queue (user_id, concert_id, seat_id, status, idempotency_key, created_at, updated_at) \
             VALUES (?, (SELECT concert_id FROM seats WHERE id = ?), ?, 'PENDING', 'open-key', \
                     UTC_TIMESTAMP(6) - INTERVAL 40 DAY, UTC_TIMESTAMP(6))",
        )
        .bind(user)
        .bind(seat)
        .bind(seat)
        .execute(&mut *conn)
        .await
        .unwrap();
    }
    ticket_core::testing::seed::seats_of_requests(&mut conn)
        .await
        .unwrap();
    q
}

/// A concert of one row of `seats` seats; its id and seats.
pub async fn seeded_concert(pool: &MySqlPool, seats: u32) -> (ConcertId, Vec<SeatId>) {
    let mut conn = pool.acquire().await.unwrap();
    let ids = seed::concert(&mut conn, 1, seats).await.unwrap();
    let concert = seed::concerts_of(&mut conn, ids.iter().copied())
        .await
        .unwrap()[&ids[0]];
    (concert, ids)
}

/// Opens `concert`'s waiting list (the row an offer locks).
pub async fn open_waiting_list(pool: &MySqlPool, concert: ConcertId) {
    sqlx::query("INSERT INTO waiting_lists (concert_id, created_at) VALUES (?, UTC_TIMESTAMP(6))")
        .bind(concert)
        .execute(pool)
        .await
        .unwrap();
}
