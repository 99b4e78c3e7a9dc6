//! One reservation, one trace: the API's server span continues the caller's
//! `traceparent`, and the worker's process span and its steps join the same
//! trace through the context stored on the queue row. Spans go to an
//! in-memory exporter; a test binary of its own, because the tracing
//! subscriber is global to the process.

#[allow(dead_code)]
#[path = "api/helpers/mod.rs"]
mod helpers;

use opentelemetry::trace::{SpanId, SpanKind, TraceId};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SpanData};
use serde_json::json;

const CALLER_TRACE: &str = "0af7651916cd43dd8448eb211c80319c";
const CALLER_SPAN: &str = "b7ad6b7169203331";

fn named<'a>(spans: &'a [SpanData], name: &str) -> Vec<&'a SpanData> {
    spans.iter().filter(|s| s.name == name).collect()
}

fn only<'a>(spans: &'a [SpanData], name: &str, trace: TraceId) -> &'a SpanData {
    let found: Vec<_> = named(spans, name)
        .into_iter()
        .filter(|s| s.span_context.trace_id() == trace)
        .collect();
    assert_eq!(
        found.len(),
        1,
        "one {name:?} span in trace {trace}: {found:#?}"
    );
    found[0]
}

fn attribute(span: &SpanData, key: &str) -> Option<String> {
    span.attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| kv.value.to_string())
}

#[tokio::test]
async fn one_reservation_is_one_trace_from_the_request_to_the_worker_commit() {
    let exporter = InMemorySpanExporter::default();
    let _telemetry = ticket_core::telemetry::init_with_exporter("ticket-test", exporter.clone());
    let app = helpers::spawn_app().await;
    let (_, token) = app.user("tracy").await;
    let concert = app.concert(json!({"rows": 1, "seatsPerRow": 2})).await;
    let seat = app.seats(concert["id"].as_u64().unwrap()).await[0]["id"]
        .as_u64()
        .unwrap();

    let queue_id = app
        .reserve_traced(&token, seat, &format!("00-{CALLER_TRACE}-{CALLER_SPAN}-01"))
        .await;
    app.drain().await;
    let status = app.queue_status(&token, queue_id).await;
    assert_eq!(status["status"], "SUCCESS");

    let spans = exporter.get_finished_spans().unwrap();
    let trace = TraceId::from_hex(CALLER_TRACE).unwrap();

    // The API: server span under the caller's span, producer span under it,
    // and the row's share of the group INSERT under that.
    let server = only(&spans, "POST /api/reservations", trace);
    assert_eq!(server.span_kind, SpanKind::Server);
    assert_eq!(
        server.parent_span_id,
        SpanId::from_hex(CALLER_SPAN).unwrap()
    );
    assert_eq!(
        attribute(server, "http.route").as_deref(),
        Some("/api/reservations")
    );
    assert_eq!(
        attribute(server, "http.response.status_code").as_deref(),
        Some("201")
    );
    let send = only(&spans, "send reservation_queue", trace);
    assert_eq!(send.span_kind, SpanKind::Producer);
    assert_eq!(send.parent_span_id, server.span_context.span_id());
    assert_eq!(
        attribute(send, "messaging.message.id"),
        Some(queue_id.to_string())
    );
    let insert = only(&spans, "INSERT reservation_queue", trace);
    assert_eq!(insert.span_kind, SpanKind::Client);
    assert_eq!(insert.parent_span_id, send.span_context.span_id());

    // The row carries the producer span's context to the worker.
    let (stored,): (String,) =
        sqlx::query_as("SELECT traceparent FROM reservation_queue WHERE id = ?")
            .bind(queue_id)
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(
        stored,
        format!("00-{CALLER_TRACE}-{}-01", send.span_context.span_id())
    );

    // The worker: process span under the producer span, the decision's steps
    // and the commit under it, all in the caller's trace.
    let process = only(&spans, "process reservation_queue", trace);
    assert_eq!(process.span_kind, SpanKind::Consumer);
    assert_eq!(process.parent_span_id, send.span_context.span_id());
    assert_eq!(
        attribute(process, "messaging.message.id"),
        Some(queue_id.to_string())
    );
    assert_eq!(
        attribute(process, "ticket.outcome").as_deref(),
        Some("SUCCESS")
    );
    for step in ["UPDATE seats", "INSERT reservations", "COMMIT"] {
        let child = only(&spans, step, trace);
        assert_eq!(
            child.parent_span_id,
            process.span_context.span_id(),
            "{step}"
        );
        assert!(
            child.start_time >= process.start_time && child.end_time <= process.end_time,
            "{step}"
        );
    }

    // The batch's receive span is a trace of its own, linked to the row's.
    let receive = named(&spans, "receive reservation_queue")
        .into_iter()
        .find(|r| r.links.iter().any(|l| l.span_context.trace_id() == trace))
        .expect("a receive span linked to the reservation's trace");
    assert_eq!(receive.span_kind, SpanKind::Client);
    assert_ne!(receive.span_context.trace_id(), trace);
    let link = receive
        .links
        .iter()
        .find(|l| l.span_context.trace_id() == trace)
        .unwrap();
    assert_eq!(link.span_context.span_id(), send.span_context.span_id());
    assert!(
        process
            .links
            .iter()
            .any(|l| l.span_context == receive.span_context),
        "the process span links back to its batch"
    );

    // Database work of an ordinary request appears under its server span.
    let status_trace = "1af7651916cd43dd8448eb211c80319c";
    let response = app
        .client
        .get(format!("{}/api/reservations/status/{queue_id}", app.base))
        .bearer_auth(&token)
        .header("traceparent", format!("00-{status_trace}-{CALLER_SPAN}-01"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let spans = exporter.get_finished_spans().unwrap();
    let status_trace = TraceId::from_hex(status_trace).unwrap();
    let server = only(&spans, "GET /api/reservations/status/{id}", status_trace);
    let select = only(&spans, "SELECT reservation_queue", status_trace);
    assert_eq!(select.parent_span_id, server.span_context.span_id());
    assert_eq!(select.span_kind, SpanKind::Client);
    assert_eq!(
        attribute(select, "db.system.name").as_deref(),
        Some("mysql")
    );

    // A caller that did not sample: its context still travels on the row,
    // unsampled, and neither the API nor the worker records a span of it.
    let quiet_trace = "2af7651916cd43dd8448eb211c80319c";
    let seat = app.seats(concert["id"].as_u64().unwrap()).await[1]["id"]
        .as_u64()
        .unwrap();
    let quiet_id = app
        .reserve_traced(&token, seat, &format!("00-{quiet_trace}-{CALLER_SPAN}-00"))
        .await;
    app.drain().await;
    let (stored,): (String,) =
        sqlx::query_as("SELECT traceparent FROM reservation_queue WHERE id = ?")
            .bind(quiet_id)
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert!(
        stored.starts_with(&format!("00-{quiet_trace}-")) && stored.ends_with("-00"),
        "{stored}"
    );
    let quiet_trace = TraceId::from_hex(quiet_trace).unwrap();
    let spans = exporter.get_finished_spans().unwrap();
    let recorded: Vec<_> = spans
        .iter()
        .filter(|s| s.span_context.trace_id() == quiet_trace)
        .collect();
    assert!(recorded.is_empty(), "{recorded:#?}");
}
