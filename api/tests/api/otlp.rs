//! End to end over real OTLP: the `ticket-api` and `ticket-worker`
//! executables export to a collector this test runs on loopback, and the
//! API's and the worker's spans of one reservation arrive there in one trace.

use std::collections::HashMap;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::routing::post;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value;
use prost::Message as _;
use ticket_core::testing::{TestDatabase, seed};

use crate::helpers::{ChildLog, Running, SECRET, TestApp, executable};

const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";

#[derive(Debug, Clone)]
struct Exported {
    service: String,
    name: String,
    trace_id: String,
    span_id: String,
    parent_span_id: String,
}

/// An OTLP/HTTP (protobuf) trace receiver on loopback.
async fn start_collector() -> (String, Arc<Mutex<Vec<Exported>>>) {
    let spans: Arc<Mutex<Vec<Exported>>> = Arc::default();
    let store = spans.clone();
    let app = axum::Router::new().route(
        "/v1/traces",
        post(move |body: Bytes| async move {
            let request = ExportTraceServiceRequest::decode(body).expect("OTLP protobuf");
            let mut store = store.lock().unwrap();
            for resource in request.resource_spans {
                let service = resource
                    .resource
                    .iter()
                    .flat_map(|r| &r.attributes)
                    .find(|kv| kv.key == "service.name")
                    .and_then(|kv| match kv.value.as_ref()?.value.as_ref()? {
                        Value::StringValue(s) => Some(s.clone()),
                        _ => None,
                    })
                    .unwrap_or_default();
                for span in resource.scope_spans.into_iter().flat_map(|s| s.spans) {
                    store.push(Exported {
                        service: service.clone(),
                        name: span.name,
                        trace_id: hex(&span.trace_id),
                        span_id: hex(&span.span_id),
                        parent_span_id: hex(&span.parent_span_id),
                    });
                }
            }
            // An empty ExportTraceServiceResponse.
            (
                [("content-type", "application/x-protobuf")],
                Vec::<u8>::new(),
            )
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (format!("http://{addr}"), spans)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

impl Running {
    /// SIGTERM, then the exit status (the exporter flushes on the way out).
    fn stop(&mut self) -> std::process::ExitStatus {
        let pid = self.0.id().to_string();
        assert!(
            Command::new("kill")
                .args(["-TERM", &pid])
                .status()
                .unwrap()
                .success()
        );
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(status) = self.0.try_wait().unwrap() {
                return status;
            }
            assert!(Instant::now() < deadline, "process {pid} did not stop");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

fn binary(name: &str, database_url: &str, collector: &str) -> Command {
    let mut cmd = executable(name, database_url);
    cmd.env("OTEL_EXPORTER_OTLP_ENDPOINT", collector)
        .env("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf");
    cmd
}

/// The API executable exporting to `collector`, with `env` on top; returns
/// it with the address it listens on.
async fn start_api(database_url: &str, collector: &str, env: &[(&str, &str)]) -> (Running, String) {
    let mut api = binary("ticket-api", database_url, collector);
    api.env("TICKET_API_ADDR", "127.0.0.1:0")
        .env(
            "TICKET_AUTH_SECRET",
            String::from_utf8_lossy(SECRET).as_ref(),
        )
        .env("RUST_LOG", "info")
        .envs(env.iter().copied())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut api = Running(api.spawn().unwrap());
    let stderr = api.0.stderr.take().unwrap();
    // Blocking reads, off the runtime that serves the collector.
    let addr = tokio::task::spawn_blocking(move || ChildLog::follow(stderr).listening_addr())
        .await
        .unwrap();
    (api, addr)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_binaries_export_one_reservations_spans_in_one_trace() {
    let (collector, spans) = start_collector().await;
    let (db, pool) = TestDatabase::migrated().await;
    let seat = {
        let mut conn = pool.acquire().await.unwrap();
        seed::concert(&mut conn, 1, 1).await.unwrap()[0]
    };

    let (mut api, addr) = start_api(&db.url(), &collector, &[]).await;
    let mut worker = binary("ticket-worker", &db.url(), &collector);
    worker
        .env("TICKET_WORKER_HEALTH_ADDR", "127.0.0.1:0")
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut worker = Running(worker.spawn().unwrap());

    let app = TestApp::at(format!("http://{addr}"), pool.clone());
    let (_, token) = app.user("otlp").await;
    let queue_id = app
        .reserve_traced(
            &token,
            seat.get(),
            &format!("00-{TRACE}-00f067aa0ba902b7-01"),
        )
        .await;
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let status = app.queue_status(&token, queue_id).await;
        if status["status"] == "SUCCESS" {
            break;
        }
        assert!(Instant::now() < deadline, "not decided: {status}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(api.stop().success());
    assert!(worker.stop().success());

    let spans = spans.lock().unwrap().clone();
    let in_trace: Vec<&Exported> = spans.iter().filter(|s| s.trace_id == TRACE).collect();
    let find = |service: &str, name: &str| {
        in_trace
            .iter()
            .find(|s| s.service == service && s.name == name)
            .unwrap_or_else(|| panic!("no {service} span {name:?} in the trace: {in_trace:#?}"))
    };
    let server = find("ticket-api", "POST /api/reservations");
    assert_eq!(server.parent_span_id, "00f067aa0ba902b7");
    let send = find("ticket-api", "send reservation_queue");
    assert_eq!(send.parent_span_id, server.span_id);
    let process = find("ticket-worker", "process reservation_queue");
    assert_eq!(process.parent_span_id, send.span_id);
    let commit = find("ticket-worker", "COMMIT");
    assert_eq!(commit.parent_span_id, process.span_id);
    let by_service: HashMap<&str, usize> = spans.iter().fold(HashMap::new(), |mut m, s| {
        *m.entry(s.service.as_str()).or_default() += 1;
        m
    });
    assert!(
        by_service.contains_key("ticket-worker") && by_service.contains_key("ticket-api"),
        "{by_service:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_callers_sampled_flag_forces_tracing_only_within_its_budget() {
    let (collector, spans) = start_collector().await;
    let (db, pool) = TestDatabase::migrated().await;
    let (mut api, addr) = start_api(
        &db.url(),
        &collector,
        &[
            ("TICKET_CALLER_SAMPLED_TRACES_PER_SEC", "3"),
            ("TICKET_ANONYMOUS_REQUESTS_PER_SEC", "0"),
        ],
    )
    .await;
    let app = TestApp::at(format!("http://{addr}"), pool.clone());

    // Thirty callers' traces, each asking to be sampled, as fast as they go.
    let started = Instant::now();
    let traces: Vec<String> = (0..30)
        .map(|i| format!("{i:032x}").replacen('0', "a", 1))
        .collect();
    for trace in &traces {
        let reply = app
            .client
            .get(format!("{}/api/concerts", app.base))
            .header("traceparent", format!("00-{trace}-00f067aa0ba902b7-01"))
            .send()
            .await
            .unwrap();
        assert_eq!(reply.status(), 200);
    }
    let seconds = started.elapsed().as_secs_f64();
    assert!(api.stop().success());

    let spans = spans.lock().unwrap().clone();
    let traced = traces
        .iter()
        .filter(|t| spans.iter().any(|s| &s.trace_id == *t))
        .count();
    // A burst of three, and three more each second the requests took.
    let budget = 3 + (seconds * 3.0).ceil() as usize;
    assert!(
        (1..=budget).contains(&traced),
        "{traced} of 30 sampled callers traced in {seconds:.2} s; the budget was {budget}"
    );
}
