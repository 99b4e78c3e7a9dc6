//! The worker's ConfigMap watch against a mocked Kubernetes API server
//! (tower_test): first load, a live change picked up by the running claim
//! loop, invalid values, deletion, and API errors.

mod common;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http::{Request, Response, StatusCode};
use kube::client::Body;
use serde_json::{Value, json};
use ticket_worker::live_config::{EventTarget, watch_configmap};
use ticket_worker::{Mode, Worker, WorkerConfig};
use tokio::sync::{oneshot, watch};
use tokio_util::sync::CancellationToken;

type Handle = tower_test::mock::Handle<Request<Body>, Response<Body>>;

const NS: &str = "tickets";
const NAME: &str = "ticket-worker";

const START: WorkerConfig = WorkerConfig {
    batch_size: 1000,
    poll_interval: Duration::from_millis(5),
    lease: Duration::from_secs(30),
    max_attempts: 5,
};

fn configmap(version: u32, data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": NAME, "namespace": NS, "resourceVersion": version.to_string()},
           "data": data})
}

/// What the mock API server answers, in order.
enum Reply {
    /// The initial LIST: these ConfigMaps at this resourceVersion.
    List(Vec<Value>, u32),
    /// A failing call (the watcher must back off and retry).
    Error(StatusCode),
    /// A WATCH answered, after `gate` fires, with these events.
    Watch(Option<oneshot::Receiver<()>>, Vec<(&'static str, Value)>),
}

/// Serves the scripted replies to LIST/WATCH requests and echoes Event
/// POSTs, recording each Event's reason. Requests past the script hang, as
/// an idle watch does.
fn serve(mut handle: Handle, script: Vec<Reply>) -> Arc<Mutex<Vec<String>>> {
    let reasons = Arc::new(Mutex::new(Vec::new()));
    let recorded = reasons.clone();
    tokio::spawn(async move {
        let mut script: VecDeque<Reply> = script.into();
        let mut idle = Vec::new();
        let mut posted = std::collections::HashMap::new();
        while let Some((request, send)) = handle.next_request().await {
            let path = request.uri().path().to_owned();
            if path.contains("/events") {
                // A new Event is POSTed; a repeat of one is PATCHed onto it as a series.
                let is_post = request.method() == http::Method::POST;
                let body = request
                    .into_body()
                    .collect_bytes()
                    .await
                    .unwrap_or_default();
                let original = if is_post {
                    let event: Value = serde_json::from_slice(&body).unwrap_or_default();
                    let name = event["metadata"]["name"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned();
                    posted.insert(name, event.clone());
                    event
                } else {
                    let name = path.rsplit('/').next().unwrap_or_default();
                    posted.get(name).cloned().unwrap_or_default()
                };
                recorded
                    .lock()
                    .unwrap()
                    .push(original["reason"].as_str().unwrap_or_default().to_owned());
                let reply = serde_json::to_vec(&original).unwrap();
                send.send_response(
                    Response::builder()
                        .status(if is_post { 201 } else { 200 })
                        .body(Body::from(reply))
                        .unwrap(),
                );
                continue;
            }
            assert!(
                path.ends_with("/namespaces/tickets/configmaps"),
                "unexpected request {path}"
            );
            match script.pop_front() {
                Some(Reply::List(items, version)) => {
                    let list = json!({"apiVersion": "v1", "kind": "ConfigMapList",
                                      "metadata": {"resourceVersion": version.to_string()}, "items": items});
                    send.send_response(
                        Response::builder()
                            .body(Body::from(serde_json::to_vec(&list).unwrap()))
                            .unwrap(),
                    );
                }
                Some(Reply::Error(status)) => {
                    let status_body = json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                                             "message": "scripted failure", "reason": "InternalError", "code": status.as_u16()});
                    send.send_response(
                        Response::builder()
                            .status(status)
                            .body(Body::from(serde_json::to_vec(&status_body).unwrap()))
                            .unwrap(),
                    );
                }
                Some(Reply::Watch(gate, events)) => {
                    tokio::spawn(async move {
                        if let Some(gate) = gate {
                            let _ = gate.await;
                        }
                        let mut lines = Vec::new();
                        for (kind, object) in events {
                            lines.extend(
                                serde_json::to_vec(&json!({"type": kind, "object": object}))
                                    .unwrap(),
                            );
                            lines.push(b'\n');
                        }
                        send.send_response(Response::builder().body(Body::from(lines)).unwrap());
                    });
                }
                None => idle.push(send),
            }
        }
    });
    reasons
}

/// Starts the watch on a mocked API; returns the configuration channel and the recorded Event reasons.
fn start(
    script: Vec<Reply>,
    shutdown: &CancellationToken,
) -> (watch::Receiver<WorkerConfig>, Arc<Mutex<Vec<String>>>) {
    if std::env::var_os("TEST_LOG").is_some() {
        let _ = ticket_core::telemetry::init("live-config-test");
    }
    let (service, handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
    let client = kube::Client::new(service, NS);
    let reasons = serve(handle, script);
    let (sender, receiver) = watch::channel(START);
    let events = EventTarget::for_pod(client.clone(), NS, "ticket-worker-abc");
    let shutdown = shutdown.clone();
    tokio::spawn(
        async move { watch_configmap(client, NS, NAME, sender, Some(events), shutdown).await },
    );
    (receiver, reasons)
}

/// Waits (at most 10 s) until the configuration satisfies `ok`.
async fn until(
    receiver: &mut watch::Receiver<WorkerConfig>,
    ok: impl Fn(&WorkerConfig) -> bool,
) -> WorkerConfig {
    let config = tokio::time::timeout(Duration::from_secs(10), receiver.wait_for(|c| ok(c)))
        .await
        .expect("the configuration never arrived")
        .expect("the watch ended");
    *config
}

async fn until_reason(reasons: &Arc<Mutex<Vec<String>>>, reason: &str) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !reasons.lock().unwrap().iter().any(|r| r == reason) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "no {reason} Event; got {:?}",
            reasons.lock().unwrap()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn first_load_then_a_live_change_reaches_the_running_claim_loop() {
    let q = common::queue(100, 3_000).await;
    let shutdown = CancellationToken::new();
    let (go, gate) = oneshot::channel();
    let (receiver, reasons) = start(
        vec![
            Reply::List(
                vec![configmap(
                    1,
                    json!({"batchSize": "5", "pollIntervalMs": "5", "leaseMs": "30000"}),
                )],
                1,
            ),
            Reply::Watch(
                Some(gate),
                vec![(
                    "MODIFIED",
                    configmap(
                        2,
                        json!({"batchSize": "100", "pollIntervalMs": "5", "leaseMs": "30000"}),
                    ),
                )],
            ),
        ],
        &shutdown,
    );
    let mut probe = receiver.clone();
    assert_eq!(until(&mut probe, |c| c.batch_size == 5).await.batch_size, 5);
    until_reason(&reasons, "ConfigApplied").await;

    // Under leases, so that each batch shows by its lease token.
    let worker = Worker::new(q.pool.clone(), "live", Mode::LeasedBatch, receiver);
    let running = tokio::spawn({
        let shutdown = shutdown.clone();
        async move { worker.run(shutdown).await }
    });
    // Let it work in batches of 5 for a while, then change the ConfigMap.
    let claimed_in = |size: i64| {
        let pool = q.pool.clone();
        async move {
            let (groups,): (i64,) = sqlx::query_as(
                "SELECT COUNT(*) FROM (SELECT lease_token FROM reservation_queue WHERE lease_token IS NOT NULL \
                 GROUP BY lease_token HAVING COUNT(*) = ?) g",
            )
            .bind(size)
            .fetch_one(&pool)
            .await
            .unwrap();
            groups
        }
    };
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while claimed_in(5).await < 3 {
        assert!(tokio::time::Instant::now() < deadline, "no batches of 5");
    }
    go.send(()).unwrap();
    until(&mut probe, |c| c.batch_size == 100).await;
    while claimed_in(100).await == 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the running loop never used the new batch size"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    shutdown.cancel();
    running.await.unwrap();
    let applied = reasons
        .lock()
        .unwrap()
        .iter()
        .filter(|r| *r == "ConfigApplied")
        .count();
    assert_eq!(applied, 2, "one Event per applied change");
}

#[tokio::test]
async fn invalid_values_are_rejected_and_the_last_good_configuration_stays() {
    let shutdown = CancellationToken::new();
    let (go, gate) = oneshot::channel();
    let (mut receiver, reasons) = start(
        vec![
            Reply::List(vec![configmap(1, json!({"batchSize": "7"}))], 1),
            Reply::Watch(
                Some(gate),
                vec![
                    ("MODIFIED", configmap(2, json!({"batchSize": "many"}))),
                    ("MODIFIED", configmap(3, json!({"batchSize": "0"}))),
                    (
                        "MODIFIED",
                        configmap(4, json!({"batchSize": "9", "leaseMs": "1"})),
                    ),
                    ("MODIFIED", configmap(5, json!({"batchSize": "9"}))),
                ],
            ),
        ],
        &shutdown,
    );
    until(&mut receiver, |c| c.batch_size == 7).await;
    go.send(()).unwrap();
    let config = until(&mut receiver, |c| c.batch_size == 9).await;
    assert_eq!(
        config.lease, START.lease,
        "the rejected leaseMs never applied"
    );
    until_reason(&reasons, "ConfigApplied").await;
    let rejected = reasons
        .lock()
        .unwrap()
        .iter()
        .filter(|r| *r == "ConfigRejected")
        .count();
    assert_eq!(rejected, 3);
    shutdown.cancel();
}

#[tokio::test]
async fn a_deleted_configmap_keeps_the_last_good_configuration() {
    let shutdown = CancellationToken::new();
    let cm = configmap(1, json!({"batchSize": "42", "pollIntervalMs": "20"}));
    let (mut receiver, reasons) = start(
        vec![
            Reply::List(vec![cm.clone()], 1),
            Reply::Watch(None, vec![("DELETED", cm)]),
        ],
        &shutdown,
    );
    until(&mut receiver, |c| c.batch_size == 42).await;
    until_reason(&reasons, "ConfigMapDeleted").await;
    let config = *receiver.borrow();
    assert_eq!(
        (config.batch_size, config.poll_interval),
        (42, Duration::from_millis(20))
    );
    shutdown.cancel();
}

#[tokio::test]
async fn api_errors_are_retried_until_the_configuration_loads() {
    let shutdown = CancellationToken::new();
    let (mut receiver, _reasons) = start(
        vec![
            Reply::Error(StatusCode::INTERNAL_SERVER_ERROR),
            Reply::Error(StatusCode::SERVICE_UNAVAILABLE),
            Reply::List(vec![configmap(1, json!({"batchSize": "11"}))], 1),
        ],
        &shutdown,
    );
    assert_eq!(
        *receiver.borrow(),
        START,
        "the start-up settings hold meanwhile"
    );
    until(&mut receiver, |c| c.batch_size == 11).await;
    shutdown.cancel();
}
