//! The decision rates workers publish for the waits shown in line: summed
//! over the workers that measured them lately; a stopped worker's rows go.

use ticket_core::db::{self, line};
use ticket_core::domain::ConcertId;
use ticket_core::testing::{TestDatabase, seed};

#[tokio::test]
async fn rates_are_summed_over_live_workers_and_stale_ones_go() {
    let (_db, pool) = TestDatabase::migrated().await;
    let mut conn = pool.acquire().await.unwrap();
    seed::concert(&mut conn, 1, 2).await.unwrap();
    let concert = ConcertId(1);
    let now = db::now();
    line::publish_rates(
        &mut conn,
        "stopped",
        &[(concert, 900.0)],
        now - chrono::Duration::minutes(5),
    )
    .await
    .unwrap();
    line::publish_rates(&mut conn, "other", &[(concert, 300.0)], now)
        .await
        .unwrap();
    line::publish_rates(&mut conn, "me", &[(concert, 100.0)], now)
        .await
        .unwrap();
    // Publishing again replaces a worker's own figure.
    line::publish_rates(&mut conn, "me", &[(concert, 200.0)], now)
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
        ["me", "other"],
        "the stopped worker's rows are gone"
    );
    let rates = line::decision_rates(&mut conn, now - chrono::Duration::seconds(5))
        .await
        .unwrap();
    assert_eq!(rates, vec![(concert, 500.0)]);
}
