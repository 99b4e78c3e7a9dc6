//! `GET /api/concerts/{id}/sale`: the operator's view of a sale, from what
//! the API instances and workers measure (line, requests and decisions per
//! second, decision times, seats); admins only.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use ticket_worker::Mode;
use tokio_util::sync::CancellationToken;

use crate::helpers::{TestApp, spawn_app};

/// Asks until `done` holds for the answer (the figures are published about
/// once a second); fails after 20 s with the last answer.
async fn sale_until(
    app: &TestApp,
    concert: u64,
    what: &str,
    done: impl Fn(&Value) -> bool,
) -> Value {
    let started = Instant::now();
    loop {
        let reply = app
            .get(
                &format!("/api/concerts/{concert}/sale"),
                Some(&app.admin_token),
            )
            .await;
        let body = reply.assert_status(200).clone();
        if done(&body) {
            return body;
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "waited for {what}: {body}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn the_sale_view_counts_the_line_the_rates_and_the_decision_times() {
    let app = spawn_app().await;
    let (concert, seats) = app
        .concert_and_seats(json!({"rows": 1, "seatsPerRow": 10}))
        .await;
    let quiet = sale_until(&app, concert, "the line read", |b| {
        !b["lineLength"].is_null()
    })
    .await;
    assert_eq!(quiet["lineLength"], 0);
    assert_eq!(quiet["requestsPerSec"], 0.0);
    assert_eq!(quiet["decisionMs"], Value::Null);
    assert_eq!(
        quiet["seats"],
        json!({"available": 10, "held": 0, "reserved": 0})
    );

    app.one_seat_each("sale", &seats[..8]).await;
    let waiting = sale_until(&app, concert, "8 in line at some rate", |b| {
        b["lineLength"] == 8 && b["requestsPerSec"].as_f64() > Some(0.0)
    })
    .await;
    assert_eq!(waiting["decisionsPerSec"], 0.0);

    let shutdown = CancellationToken::new();
    let worker = app.worker("sale", Mode::Batch, 100, Duration::from_secs(30));
    let running = tokio::spawn({
        let shutdown = shutdown.clone();
        async move { worker.run(shutdown).await }
    });
    let decided = sale_until(&app, concert, "8 decided, timed", |b| {
        b["lineLength"] == 0 && b["seats"]["reserved"] == 8 && !b["decisionMs"].is_null()
    })
    .await;
    shutdown.cancel();
    running.await.unwrap();
    assert!(decided["decisionsPerSec"].as_f64() > Some(0.0), "{decided}");
    let (p50, p99) = (
        decided["decisionMs"]["p50"].as_f64().unwrap(),
        decided["decisionMs"]["p99"].as_f64().unwrap(),
    );
    assert!(p50 > 0.0 && p50 <= p99, "{decided}");
    assert_eq!(
        decided["seats"],
        json!({"available": 2, "held": 0, "reserved": 8})
    );
}

#[tokio::test]
async fn only_admins_see_a_sale_and_only_of_a_concert_that_exists() {
    let app = spawn_app().await;
    let (concert, _) = app
        .concert_and_seats(json!({"rows": 1, "seatsPerRow": 2}))
        .await;
    let path = format!("/api/concerts/{concert}/sale");
    app.get(&path, None)
        .await
        .assert_problem(401, "UNAUTHORIZED");
    let (_, buyer) = app.user("buyer").await;
    app.get(&path, Some(&buyer))
        .await
        .assert_problem(403, "FORBIDDEN");
    app.get("/api/concerts/999999/sale", Some(&app.admin_token))
        .await
        .assert_problem(404, "CONCERT_NOT_FOUND");
    app.get("/api/concerts/x/sale", Some(&app.admin_token))
        .await
        .assert_status(400);
}
