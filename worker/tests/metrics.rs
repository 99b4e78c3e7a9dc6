//! The worker's `/metrics`: queue depth, decisions, claim sizes, time to
//! decision and reclaimed leases, moving as the worker works.

mod common;

use std::time::Duration;

use common::{queue, scrape, worker};
use ticket_core::testing::prometheus_text::{Samples, value};
use ticket_worker::Mode;

fn depth(samples: &Samples, status: &str) -> f64 {
    value(samples, "ticket_queue_depth", &[("status", status)])
}

#[tokio::test]
async fn metrics_follow_claims_and_decisions() {
    // 30 requests over 10 seats: 10 succeed, 20 find their seat taken.
    let q = queue(10, 30).await;
    let w = worker(&q.pool, "metered", Mode::Batch, 16, Duration::from_secs(60));
    let start = scrape(&w, &q.pool).await;
    assert_eq!(
        (depth(&start, "PENDING"), depth(&start, "PROCESSING")),
        (30.0, 0.0)
    );

    let batch = w.claim_once().await.unwrap();
    assert_eq!(batch.ids.len(), 16);
    let claimed = scrape(&w, &q.pool).await;
    assert_eq!(
        (depth(&claimed, "PENDING"), depth(&claimed, "PROCESSING")),
        (14.0, 16.0)
    );
    assert_eq!(value(&claimed, "ticket_claim_batch_size_count", &[]), 1.0);
    assert_eq!(value(&claimed, "ticket_claim_batch_size_sum", &[]), 16.0);
    assert_eq!(
        value(&claimed, "ticket_claim_batch_size_bucket", &[("le", "10")]),
        0.0
    );
    assert_eq!(
        value(&claimed, "ticket_claim_batch_size_bucket", &[("le", "25")]),
        1.0
    );

    w.decide(&batch).await.unwrap();
    while w.process_once().await.unwrap().claimed > 0 {}
    let done = scrape(&w, &q.pool).await;
    assert_eq!(
        (depth(&done, "PENDING"), depth(&done, "PROCESSING")),
        (0.0, 0.0)
    );
    let decisions = |outcome| value(&done, "ticket_decisions_total", &[("outcome", outcome)]);
    assert_eq!(
        (
            decisions("success"),
            decisions("seat_taken"),
            decisions("lost")
        ),
        (10.0, 20.0, 0.0)
    );
    assert_eq!(
        value(&done, "ticket_decision_latency_seconds_count", &[]),
        30.0
    );
    assert_eq!(value(&done, "ticket_lease_reclaimed_total", &[]), 0.0);
    assert!(value(&done, "ticket_db_pool_max_connections", &[]) >= 1.0);
}

#[tokio::test]
async fn rows_reclaimed_after_a_lease_expires_are_counted() {
    let q = queue(5, 5).await;
    let crashed = worker(
        &q.pool,
        "crashed",
        Mode::Batch,
        5,
        Duration::from_millis(100),
    );
    assert_eq!(crashed.claim_once().await.unwrap().ids.len(), 5);
    // The crashed worker never decides; another takes the rows once the
    // lease has run out.
    let rescuer = worker(&q.pool, "rescuer", Mode::Batch, 5, Duration::from_secs(60));
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let batch = loop {
        let batch = rescuer.claim_once().await.unwrap();
        if !batch.ids.is_empty() {
            break batch;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the lease never expired"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(batch.reclaimed, 5);
    let samples = scrape(&rescuer, &q.pool).await;
    assert_eq!(value(&samples, "ticket_lease_reclaimed_total", &[]), 5.0);
}
