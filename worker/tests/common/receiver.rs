//! A real local HTTP receiver for webhooks that misbehaves on demand: it
//! fails the first attempts of every event, is slow now and then, and can
//! go down (connections refused) and come back on the same port. It checks
//! every signature with its own HMAC code, not the relay's.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::post;
use hmac::{Hmac, Mac};
use sha2::Sha256;

pub const SECRET: &str = "whsec_test_receiver";

/// How the receiver treats requests.
#[derive(Debug, Clone, Default)]
pub struct Behaviour {
    /// Answer 500 to this many attempts of each event before accepting it.
    pub fail_first: u32,
    /// Every `n`-th request waits `slow_for` before answering.
    pub slow_every: Option<u32>,
    pub slow_for: Duration,
    /// Answer every request with 500.
    pub always_fail: bool,
    /// Answer 500 to every event of this type.
    pub refuse_type: Option<&'static str>,
}

/// One accepted (200) delivery.
#[derive(Debug, Clone)]
pub struct Accepted {
    pub event_id: u64,
    pub reservation_id: u64,
    pub event_type: String,
}

#[derive(Default)]
struct Log {
    requests: u32,
    attempts: HashMap<u64, u32>,
    accepted: Vec<Accepted>,
    bad_signatures: u32,
}

#[derive(Clone)]
struct Shared {
    behaviour: Arc<Mutex<Behaviour>>,
    log: Arc<Mutex<Log>>,
}

pub struct Receiver {
    pub addr: SocketAddr,
    shared: Shared,
    server: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl Receiver {
    pub async fn start(behaviour: Behaviour) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let shared = Shared {
            behaviour: Arc::new(Mutex::new(behaviour)),
            log: Arc::default(),
        };
        let receiver = Self {
            addr,
            shared,
            server: Mutex::new(None),
        };
        receiver.serve(listener);
        receiver
    }

    pub fn url(&self) -> String {
        format!("http://{}/hooks", self.addr)
    }

    fn serve(&self, listener: tokio::net::TcpListener) {
        let app = Router::new()
            .route("/hooks", post(receive))
            .with_state(self.shared.clone());
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        *self.server.lock().unwrap() = Some(server);
    }

    /// Stops listening: new connections are refused until [`Self::up`].
    pub fn down(&self) {
        if let Some(server) = self.server.lock().unwrap().take() {
            server.abort();
        }
    }

    /// Listens again on the same port.
    pub async fn up(&self) {
        let listener = loop {
            match tokio::net::TcpListener::bind(self.addr).await {
                Ok(listener) => break listener,
                Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
            }
        };
        self.serve(listener);
    }

    pub fn behave(&self, behaviour: Behaviour) {
        *self.shared.behaviour.lock().unwrap() = behaviour;
    }

    pub fn accepted(&self) -> Vec<Accepted> {
        self.shared.log.lock().unwrap().accepted.clone()
    }

    pub fn requests(&self) -> u32 {
        self.shared.log.lock().unwrap().requests
    }

    pub fn bad_signatures(&self) -> u32 {
        self.shared.log.lock().unwrap().bad_signatures
    }
}

/// Checks `Ticket-Signature: t=<unix seconds>,v1=<hex>` the way docs/design.md
/// tells receivers to: HMAC-SHA256 of "<t>.<body>", compared in constant
/// time, and a timestamp no older than five minutes.
pub fn verify(secret: &str, header: &str, body: &[u8]) -> bool {
    let mut t = None;
    let mut v1 = None;
    for part in header.split(',') {
        match part.split_once('=') {
            Some(("t", value)) => t = value.parse::<i64>().ok(),
            Some(("v1", value)) => v1 = Some(value),
            _ => {}
        }
    }
    let (Some(t), Some(v1)) = (t, v1) else {
        return false;
    };
    if (chrono::Utc::now().timestamp() - t).abs() > 300 {
        return false;
    }
    let Ok(expected) = (0..v1.len())
        .step_by(2)
        .map(|i| {
            v1.get(i..i + 2)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
        })
        .collect::<Option<Vec<u8>>>()
        .ok_or(())
    else {
        return false;
    };
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(format!("{t}.").as_bytes());
    mac.update(body);
    mac.verify_slice(&expected).is_ok()
}

async fn receive(
    State(shared): State<Shared>,
    headers: HeaderMap,
    body: Bytes,
) -> impl IntoResponse {
    let behaviour = shared.behaviour.lock().unwrap().clone();
    let signed = headers
        .get("ticket-signature")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|h| verify(SECRET, h, &body));
    let event: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
    let event_id: u64 = event["id"]
        .as_str()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let (request, attempt) = {
        let mut log = shared.log.lock().unwrap();
        log.requests += 1;
        if !signed {
            log.bad_signatures += 1;
        }
        let requests = log.requests;
        let attempt = log.attempts.entry(event_id).or_default();
        *attempt += 1;
        (requests, *attempt)
    };
    if behaviour
        .slow_every
        .is_some_and(|n| request.is_multiple_of(n))
    {
        tokio::time::sleep(behaviour.slow_for).await;
    }
    let close = [(header::CONNECTION, "close")];
    let refused = behaviour
        .refuse_type
        .is_some_and(|refused| event["type"] == refused);
    if !signed || behaviour.always_fail || refused || attempt <= behaviour.fail_first {
        return (StatusCode::INTERNAL_SERVER_ERROR, close);
    }
    shared.log.lock().unwrap().accepted.push(Accepted {
        event_id,
        reservation_id: event["data"]["reservationId"].as_u64().unwrap_or(0),
        event_type: event["type"].as_str().unwrap_or("").to_owned(),
    });
    (StatusCode::OK, close)
}
