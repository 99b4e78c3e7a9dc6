//! The rates the processes publish for the waits shown in line and the
//! operator's view: summed over the processes that measured them lately,
//! decision times merged (p50 weighted by rate, the highest p99); a stopped
//! process's rows go.

use ticket_core::db::rates::DecisionRate;
use ticket_core::db::{self, rates};
use ticket_core::domain::ConcertId;
use ticket_core::testing::{TestDatabase, seed};

fn measured(rate: f64, p50: f64, p99: f64) -> DecisionRate {
    DecisionRate {
        concert_id: ConcertId(1),
        decisions_per_sec: rate,
        p50_ms: Some(p50),
        p99_ms: Some(p99),
    }
}

#[tokio::test]
async fn decision_rates_are_summed_over_live_workers_and_stale_ones_go() {
    let (_db, pool) = TestDatabase::migrated().await;
    let mut conn = pool.acquire().await.unwrap();
    seed::concert(&mut conn, 1, 2).await.unwrap();
    let now = db::now(&mut conn).await.unwrap();
    rates::publish_decisions(
        &mut conn,
        "stopped",
        &[measured(900.0, 1.0, 2.0)],
        now - chrono::Duration::minutes(5),
    )
    .await
    .unwrap();
    rates::publish_decisions(&mut conn, "other", &[measured(300.0, 10.0, 90.0)], now)
        .await
        .unwrap();
    rates::publish_decisions(&mut conn, "me", &[measured(100.0, 50.0, 60.0)], now)
        .await
        .unwrap();
    // Publishing again replaces a worker's own figure.
    rates::publish_decisions(&mut conn, "me", &[measured(100.0, 30.0, 70.0)], now)
        .await
        .unwrap();
    // A worker that has measured no decision time yet counts for the rate only.
    rates::publish_decisions(
        &mut conn,
        "new",
        &[DecisionRate::new(ConcertId(1), 100.0)],
        now,
    )
    .await
    .unwrap();
    let workers: Vec<(String,)> =
        sqlx::query_as("SELECT worker FROM decision_rates ORDER BY worker")
            .fetch_all(&mut *conn)
            .await
            .unwrap();
    let workers: Vec<&str> = workers.iter().map(|(w,)| w.as_str()).collect();
    assert_eq!(
        workers,
        ["me", "new", "other"],
        "the stopped worker's rows are gone"
    );
    let rates = rates::decisions(&mut conn, now - chrono::Duration::seconds(5))
        .await
        .unwrap();
    assert_eq!(
        rates,
        vec![DecisionRate {
            concert_id: ConcertId(1),
            decisions_per_sec: 500.0,
            p50_ms: Some(15.0),
            p99_ms: Some(90.0),
        }]
    );
}

#[tokio::test]
async fn request_rates_are_summed_over_live_instances_and_stale_ones_go() {
    let (_db, pool) = TestDatabase::migrated().await;
    let mut conn = pool.acquire().await.unwrap();
    seed::concert(&mut conn, 1, 2).await.unwrap();
    let concert = ConcertId(1);
    let now = db::now(&mut conn).await.unwrap();
    rates::publish_requests(
        &mut conn,
        "gone",
        &[(concert, 900.0)],
        now - chrono::Duration::minutes(5),
    )
    .await
    .unwrap();
    rates::publish_requests(&mut conn, "a", &[(concert, 250.0)], now)
        .await
        .unwrap();
    rates::publish_requests(&mut conn, "b", &[(concert, 50.0)], now)
        .await
        .unwrap();
    let since = now - chrono::Duration::seconds(5);
    assert_eq!(
        rates::requests(&mut conn, since).await.unwrap(),
        vec![(concert, 300.0)]
    );
    let (left,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM request_rates")
        .fetch_one(&mut *conn)
        .await
        .unwrap();
    assert_eq!(left, 2, "the stopped instance's row is gone");
}
