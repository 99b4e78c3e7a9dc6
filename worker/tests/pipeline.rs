//! The worker against a real database: many instances at once, leases that
//! expire, fencing of late writers.

mod common;

use std::time::Duration;

use common::{assert_each_requested_seat_sold_once, counts, queue, worker};
use ticket_worker::Mode;
use tokio_util::sync::CancellationToken;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn four_workers_decide_every_request_exactly_once() {
    let q = queue(200, 4_000).await;
    let decided = common::drain_with_workers(&q.db, 4, 250, Mode::Batch).await;
    assert_each_requested_seat_sold_once(&q.pool, 200, 4_000).await;
    // Each decided once: the workers' own counts add up to the requests.
    assert_eq!(decided.iter().sum::<u64>(), 4_000, "{decided:?}");
    assert!(
        decided.iter().filter(|&&n| n > 0).count() > 1,
        "the work was shared, not done by one worker: {decided:?}"
    );
    // Claimed and decided in one transaction: no lease was written.
    let (leased,): (i64,) = sqlx::query_as(
        "SELECT COUNT(*) FROM reservation_queue WHERE attempts > 0 OR lease_owner IS NOT NULL",
    )
    .fetch_one(&q.pool)
    .await
    .unwrap();
    assert_eq!(leased, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn four_workers_claiming_under_leases_decide_every_request_exactly_once() {
    let q = queue(200, 4_000).await;
    let decided = common::drain_with_workers(&q.db, 4, 250, Mode::LeasedBatch).await;
    assert_each_requested_seat_sold_once(&q.pool, 200, 4_000).await;
    // No row was claimed twice: with leases far longer than the test, a
    // second claim would mean two workers shared it.
    let (max_attempts, owners): (u32, i64) =
        sqlx::query_as("SELECT MAX(attempts), COUNT(DISTINCT lease_owner) FROM reservation_queue")
            .fetch_one(&q.pool)
            .await
            .unwrap();
    assert_eq!(max_attempts, 1);
    assert!(
        owners > 1,
        "the work was shared, not done by one worker ({owners}; {decided:?})"
    );
}

/// A worker that decides in the claim's transaction still takes over rows
/// a dead worker left under a lease (`leased-batch`, or a batch it was
/// splitting), once that lease has run out, and everything else meanwhile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_default_loop_takes_over_rows_whose_lease_ran_out() {
    let q = queue(10, 50).await;
    let crashed = worker(
        &q.pool,
        "crashed",
        Mode::LeasedBatch,
        20,
        Duration::from_millis(300),
    );
    assert_eq!(crashed.claim_once().await.unwrap().ids.len(), 20);
    let rescuer = std::sync::Arc::new(worker(
        &q.pool,
        "rescuer",
        Mode::Batch,
        100,
        Duration::from_secs(30),
    ));
    let shutdown = CancellationToken::new();
    let running = tokio::spawn({
        let (w, shutdown) = (rescuer.clone(), shutdown.clone());
        async move { w.run(shutdown).await }
    });
    common::until_drained(&q.pool, Duration::from_secs(20), || {
        tokio::time::sleep(Duration::from_millis(20))
    })
    .await;
    shutdown.cancel();
    running.await.unwrap();
    assert_each_requested_seat_sold_once(&q.pool, 10, 50).await;
    let samples = common::scrape(&rescuer, &q.pool).await;
    assert_eq!(
        ticket_core::testing::prometheus_text::value(&samples, "ticket_lease_reclaimed_total", &[]),
        20.0
    );
}

#[tokio::test]
async fn rows_of_a_crashed_claim_are_reclaimed_after_the_lease_and_the_late_writer_is_fenced() {
    let q = queue(10, 50).await;
    let lease = Duration::from_millis(300);
    let crashed = worker(&q.pool, "crashed", Mode::Batch, 100, lease);
    let stalled = crashed.claim_once().await.unwrap();
    assert_eq!(stalled.ids.len(), 50);
    assert_eq!(counts(&q.pool).await.get("PROCESSING"), Some(&50));

    // While the lease holds, nobody else takes those rows.
    let rescuer = worker(
        &q.pool,
        "rescuer",
        Mode::Batch,
        100,
        Duration::from_secs(30),
    );
    assert_eq!(rescuer.process_once().await.unwrap().claimed, 0);

    // Once it runs out, the next claim takes them all back and decides them.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let cycle = loop {
        let cycle = rescuer.process_once().await.unwrap();
        if cycle.claimed > 0 {
            break cycle;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "lease never expired"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!((cycle.claimed, cycle.reclaimed), (50, 50));
    assert_eq!((cycle.decided.succeeded, cycle.decided.failed), (10, 40));

    // The crashed worker wakes up and tries to finish: its lease is gone.
    let late = crashed.decide(&stalled).await.unwrap();
    assert_eq!((late.succeeded, late.failed, late.lease_lost), (0, 0, 50));
    assert_each_requested_seat_sold_once(&q.pool, 10, 50).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_finishes_the_batch_in_progress_then_stops_claiming() {
    let q = queue(100, 10_000).await;
    // Under leases, so that a claimed batch (and one claimed ahead) shows.
    let w = worker(
        &q.pool,
        "stopping",
        Mode::LeasedBatch,
        200,
        Duration::from_secs(30),
    );
    let shutdown = CancellationToken::new();
    let running = tokio::spawn({
        let shutdown = shutdown.clone();
        async move { w.run(shutdown).await }
    });
    // Ask it to stop while it holds a claimed batch.
    common::until_rows_are_claimed(&q.pool).await;
    shutdown.cancel();
    running.await.unwrap();
    let c = counts(&q.pool).await;
    assert_eq!(
        c.get("PROCESSING"),
        None,
        "the claimed batch was finished, not abandoned: {c:?}"
    );
    assert!(
        c.get("PENDING").copied().unwrap_or(0) > 0,
        "it stopped claiming: {c:?}"
    );
}
