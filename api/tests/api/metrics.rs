//! `GET /metrics`: Prometheus text whose counters follow the traffic.

use serde_json::json;
use ticket_core::testing::prometheus_text::value;

use ticket_api::middleware::limits::LimitSettings;
use ticket_api::startup::{Application, Settings};

use crate::helpers::{TestApp, spawn_app, test_settings};

#[tokio::test]
async fn request_counters_and_latencies_follow_the_traffic_by_route_template() {
    let app = spawn_app().await;
    let (_, token) = app.user("metric").await;
    let concert = app.concert(json!({"rows": 1, "seatsPerRow": 2})).await;
    let seat = app.seats(concert["id"].as_u64().unwrap()).await[0]["id"]
        .as_u64()
        .unwrap();
    let before = app.scrape().await;

    let accepted = app.reserve(&token, seat).await;
    let queue_id = accepted.assert_status(201)["queueId"].as_u64().unwrap();
    for _ in 0..3 {
        app.queue_status(&token, queue_id).await;
    }
    app.get("/api/reservations/status/999999999", Some(&token))
        .await
        .assert_status(404);
    app.get("/no/such/route/12345", None)
        .await
        .assert_status(404);
    let after = app.scrape().await;

    let moved = |name: &str, labels: &[(&str, &str)]| {
        value(&after, name, labels) - value(&before, name, labels)
    };
    let post = [
        ("method", "POST"),
        ("route", "/api/reservations"),
        ("status", "201"),
    ];
    let status_ok = [
        ("method", "GET"),
        ("route", "/api/reservations/status/{id}"),
        ("status", "200"),
    ];
    let status_404 = [
        ("method", "GET"),
        ("route", "/api/reservations/status/{id}"),
        ("status", "404"),
    ];
    let unmatched = [("method", "GET"), ("route", "unmatched"), ("status", "404")];
    assert_eq!(moved("http_server_requests_total", &post), 1.0);
    assert_eq!(moved("http_server_requests_total", &status_ok), 3.0);
    assert_eq!(moved("http_server_requests_total", &status_404), 1.0);
    assert_eq!(moved("http_server_requests_total", &unmatched), 1.0);
    assert_eq!(
        moved("http_server_request_duration_seconds_count", &status_ok),
        3.0
    );
    let le_inf: Vec<(&str, &str)> = status_ok.iter().copied().chain([("le", "+Inf")]).collect();
    assert_eq!(
        moved("http_server_request_duration_seconds_bucket", &le_inf),
        3.0
    );
    assert!(moved("http_server_request_duration_seconds_sum", &status_ok) > 0.0);
    // No label carries a raw path or id.
    assert!(
        after
            .keys()
            .all(|k| !k.contains("12345") && !k.contains("999999999")),
        "{after:?}"
    );
    // The pool is in use while it serves.
    assert!(value(&after, "ticket_db_pool_max_connections", &[]) >= 1.0);
    assert!(
        value(&after, "ticket_db_pool_connections", &[("state", "idle")])
            + value(&after, "ticket_db_pool_connections", &[("state", "used")])
            >= 1.0
    );
}

#[tokio::test]
async fn with_a_metrics_port_the_public_port_serves_no_metrics() {
    let app = spawn_app().await;
    let settings = Settings {
        metrics_addr: Some("127.0.0.1:0".parse().unwrap()),
        ..test_settings(None, LimitSettings::OFF)
    };
    let server = Application::build(settings, app.pool.clone())
        .await
        .unwrap();
    let public =
        TestApp::sharing_database(&app, format!("http://{}", server.local_addr().unwrap()));
    let metrics_port = TestApp::sharing_database(
        &app,
        format!("http://{}", server.metrics_addr().unwrap().unwrap()),
    );
    tokio::spawn(server.run_until(std::future::pending()));

    public
        .get("/metrics", None)
        .await
        .assert_problem(404, "ROUTE_NOT_FOUND");
    metrics_port
        .get("/api/concerts", None)
        .await
        .assert_problem(404, "ROUTE_NOT_FOUND");
    let samples = metrics_port.scrape().await;
    assert!(value(&samples, "ticket_db_pool_max_connections", &[]) >= 1.0);
}

#[tokio::test]
async fn the_alerts_signals_are_read_from_the_database_at_scrape_time() {
    let app = spawn_app().await;
    let quiet = app.scrape().await;
    assert_eq!(
        value(&quiet, "ticket_oldest_open_request_seconds", &[]),
        0.0
    );
    assert_eq!(value(&quiet, "ticket_holds_overdue_seconds", &[]), 0.0);
    let max = value(&quiet, "ticket_db_server_max_connections", &[]);
    let open = value(&quiet, "ticket_db_server_connections", &[]);
    assert!(max >= 1.0 && (1.0..=max).contains(&open), "{open} of {max}");

    let concert = app
        .concert(json!({"rows": 1, "seatsPerRow": 2, "holdSeconds": 600}))
        .await;
    let seats = app.seats(concert["id"].as_u64().unwrap()).await;
    let seat = |i: usize| seats[i]["id"].as_u64().unwrap();
    let (_, holder) = app.user("holder").await;
    app.reserve(&holder, seat(0)).await.assert_status(201);
    // A sale without holds beside it: its seat is sold at once.
    let direct = app.concert(json!({"rows": 1, "seatsPerRow": 3})).await;
    let direct_seat = app.seats(direct["id"].as_u64().unwrap()).await[0]["id"]
        .as_u64()
        .unwrap();
    app.reserve(&holder, direct_seat).await.assert_status(201);
    app.drain().await;
    let (_, waiting) = app.user("waiting").await;
    app.reserve(&waiting, seat(1)).await.assert_status(201);
    // No worker runs now: the request waits, and the hold is made to have
    // ended 40 s ago with no sweep to write it down.
    sqlx::query(
        "UPDATE reservation_queue SET created_at = NOW(6) - INTERVAL 90 SECOND \
         WHERE status = 'PENDING'",
    )
    .execute(&app.pool)
    .await
    .unwrap();
    let held = sqlx::query(
        "UPDATE reservations SET hold_expires_at = NOW(6) - INTERVAL 40 SECOND \
         WHERE status = 'HELD'",
    )
    .execute(&app.pool)
    .await
    .unwrap();
    assert_eq!(held.rows_affected(), 1);

    let busy = fresh_scrape(&app, &quiet).await;
    let oldest = value(&busy, "ticket_oldest_open_request_seconds", &[]);
    assert!((90.0..120.0).contains(&oldest), "{oldest}");
    let overdue = value(&busy, "ticket_holds_overdue_seconds", &[]);
    assert!((40.0..70.0).contains(&overdue), "{overdue}");

    let seats_of = |concert: &serde_json::Value| {
        let id = concert["id"].to_string();
        ["free", "held", "sold"].map(|state| {
            value(
                &busy,
                "ticket_seats",
                &[("concert", id.as_str()), ("state", state)],
            )
        })
    };
    assert_eq!(seats_of(&concert), [1.0, 1.0, 0.0]);
    assert_eq!(seats_of(&direct), [2.0, 0.0, 1.0]);
}

const SIGNAL_READS: &str = "ticket_api_signal_reads_total";

/// A scrape whose database signals were read after those of `before`
/// (they serve every scrape for a second).
async fn fresh_scrape(
    app: &crate::helpers::TestApp,
    before: &ticket_core::testing::prometheus_text::Samples,
) -> ticket_core::testing::prometheus_text::Samples {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let samples = app.scrape().await;
        if value(&samples, SIGNAL_READS, &[]) > value(before, SIGNAL_READS, &[]) {
            return samples;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the signals were not read again in 10 s"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

/// Scrapes as fast as they come read the database once a second at most:
/// `/metrics` on the public port cannot be made to run statements per request.
#[tokio::test]
async fn the_database_signals_are_read_once_a_second_whatever_the_scrapes() {
    let app = spawn_app().await;
    let started = std::time::Instant::now();
    let first = app.scrape().await;
    assert_eq!(value(&first, SIGNAL_READS, &[]), 1.0);
    let mut last = first;
    for _ in 0..30 {
        let scrapes: Vec<_> = (0..5).map(|_| app.scrape()).collect();
        for samples in futures::future::join_all(scrapes).await {
            last = samples;
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    let reads = value(&last, SIGNAL_READS, &[]);
    assert!(
        reads <= seconds.ceil() + 1.0,
        "{reads} reads for 151 scrapes in {seconds:.1} s"
    );
}

/// The metric names an expression uses (ours all begin so).
fn metric_names(text: &str) -> std::collections::BTreeSet<String> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|word| word.starts_with("ticket_") || word.starts_with("http_server_"))
        .map(str::to_owned)
        .collect()
}

#[tokio::test]
async fn every_metric_an_alert_or_a_panel_uses_is_in_a_real_scrape() {
    let app = spawn_app().await;
    // A concert on sale, whose seats the sale's dashboard shows.
    app.concert(json!({"rows": 1, "seatsPerRow": 2})).await;
    app.get("/api/concerts", None).await.assert_status(200);
    let api = app.scrape().await;
    let worker = ticket_worker::WorkerMetrics::new().render(&app.pool).await;
    let worker = ticket_core::testing::prometheus_text::parse(&worker).unwrap();
    let served: std::collections::BTreeSet<&str> = api
        .keys()
        .chain(worker.keys())
        .map(|series| series.split('{').next().unwrap_or(series))
        .collect();
    let charts = concat!(env!("CARGO_MANIFEST_DIR"), "/../charts/ticket");
    for file in ["templates/prometheusrule.yaml", "dashboards/sale.json"] {
        let text = std::fs::read_to_string(format!("{charts}/{file}")).unwrap();
        let used = metric_names(&text);
        assert!(used.len() >= 10, "{file}: {used:?}");
        let missing: Vec<&String> = used
            .iter()
            .filter(|m| !served.contains(m.as_str()))
            .collect();
        assert!(
            missing.is_empty(),
            "{file} uses metrics no process serves: {missing:?}"
        );
    }
}
