//! The outbox relay: delivers events as signed webhooks, at least once, in
//! order per reservation. Any number of workers share the outbox: each
//! claims due events under a lease with SKIP LOCKED, posts them, and records
//! the outcome. A worker that dies mid-delivery leaves its lease to run
//! out; the event is then delivered again (receivers deduplicate by the
//! event id, which never changes).
//!
//! Failed deliveries are retried with exponential backoff and full jitter
//! (1 s doubling up to an hour) until `give_up_after` has passed since the
//! event was written; then the event is marked failed, counted, and
//! reported by `ticket-api check`.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use hmac::{Hmac, Mac};
use sha2::Sha256;
use sqlx::MySqlPool;
use ticket_core::db::{
    self,
    outbox::{self, Deliverable, Delivery},
    whole,
};
use ticket_core::secret::Secret;
use tokio_util::sync::CancellationToken;

/// Where events go, and how hard to try.
#[derive(Debug, Clone)]
pub struct WebhookConfig {
    pub url: reqwest::Url,
    /// Signs every delivery (`Ticket-Signature`).
    pub secret: Secret,
    /// One delivery's limit, connection included.
    pub timeout: Duration,
    /// How long an event is retried before it is given up.
    pub give_up_after: Duration,
    /// Events claimed (and posted concurrently) at a time.
    pub batch: u32,
    /// How long a claimed event stays this relay's: beyond every delivery's
    /// timeout, so that only a dead relay's events are taken over.
    pub lease: Duration,
    /// Wait between polls of an outbox with nothing due.
    pub poll_interval: Duration,
    /// First retry's wait, doubled for each further one up to `max_backoff`.
    pub first_backoff: Duration,
    pub max_backoff: Duration,
}

impl WebhookConfig {
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
    /// Three days, as Stripe retries.
    pub const DEFAULT_GIVE_UP_AFTER: Duration = Duration::from_secs(72 * 3600);

    pub fn new(url: reqwest::Url, secret: Secret) -> Self {
        Self {
            url,
            secret,
            timeout: Self::DEFAULT_TIMEOUT,
            give_up_after: Self::DEFAULT_GIVE_UP_AFTER,
            batch: 32,
            lease: Self::DEFAULT_TIMEOUT * 3,
            poll_interval: Duration::from_millis(200),
            first_backoff: Duration::from_secs(1),
            max_backoff: Duration::from_secs(3600),
        }
    }
}

/// The `Ticket-Signature` header for `body` sent at `timestamp` (Unix
/// seconds): `t=<timestamp>,v1=<hex HMAC-SHA256 of "<timestamp>.<body>">`.
pub fn signature(secret: &[u8], timestamp: i64, body: &[u8]) -> String {
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(secret)
        .unwrap_or_else(|_| unreachable!("HMAC takes a key of any length"));
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    let digest = mac.finalize().into_bytes();
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("t={timestamp},v1={hex}")
}

/// What a receiver gets: the event's id, type and time around its data.
pub fn envelope(event: &Deliverable) -> Vec<u8> {
    let data: serde_json::Value =
        serde_json::from_str(&event.payload).unwrap_or(serde_json::Value::Null);
    let body = serde_json::json!({
        "id": event.id.to_string(),
        "type": event.event_type,
        "createdAt": event.created_at.to_rfc3339_opts(chrono::SecondsFormat::Micros, true),
        "data": data,
    });
    serde_json::to_vec(&body).unwrap_or_default()
}

pub struct Relay {
    pool: MySqlPool,
    config: WebhookConfig,
    client: reqwest::Client,
    metrics: Option<Arc<crate::WorkerMetrics>>,
}

/// What one round did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Round {
    pub claimed: usize,
    pub delivered: usize,
    pub retried: usize,
    pub failed: usize,
}

impl Relay {
    pub fn new(pool: MySqlPool, config: WebhookConfig) -> anyhow::Result<Self> {
        let client = reqwest::Client::builder()
            .tls_backend_preconfigured(ticket_core::tls::client_config()?)
            .timeout(config.timeout)
            .connect_timeout(config.timeout)
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("ticket-webhooks/", env!("CARGO_PKG_VERSION")))
            .build()?;
        Ok(Self {
            pool,
            config,
            client,
            metrics: None,
        })
    }

    /// Counts deliveries in the worker's metrics.
    pub fn counted_in(mut self, metrics: Arc<crate::WorkerMetrics>) -> Self {
        self.metrics = Some(metrics);
        self
    }

    /// Claims what is due, posts it all at once and records each outcome.
    pub async fn deliver_once(&self) -> Result<Round, sqlx::Error> {
        let token = crate::random::u64();
        let mut conn = self.pool.acquire().await?;
        let now = db::now(&mut conn).await?;
        let lease_until = now + chrono::Duration::from_std(self.config.lease).unwrap_or_default();
        let events = whole::run(&mut conn, async |tx| {
            outbox::claim_deliverable(tx, token, lease_until, self.config.batch, now).await
        })
        .await?;
        let mut round = Round {
            claimed: events.len(),
            ..Round::default()
        };
        // One event per reservation in a claim: they may go out together.
        let posts = events.iter().map(|event| self.post(event));
        let outcomes = futures::future::join_all(posts).await;
        // Retries are due by the database's clock, as of the posts' end.
        let now = db::now(&mut conn).await?;
        let mut delivered = Vec::with_capacity(events.len());
        for (event, outcome) in events.iter().zip(outcomes) {
            let outcome = self.judge(event, outcome, now);
            match &outcome {
                Delivery::Delivered => {
                    delivered.push(event.id);
                    continue;
                }
                Delivery::Retry { error, .. } => {
                    round.retried += 1;
                    tracing::debug!(
                        event = event.id,
                        attempts = event.attempts,
                        error,
                        "webhook delivery failed; retrying later"
                    );
                }
                Delivery::Failed { error } => {
                    round.failed += 1;
                    tracing::error!(
                        event = event.id,
                        attempts = event.attempts,
                        error,
                        "webhook given up after its retry period"
                    );
                }
            }
            outbox::record_delivery(&mut conn, event.id, token, &outcome, now).await?;
        }
        // The common case, in one statement.
        round.delivered = delivered.len();
        outbox::mark_delivered(&mut conn, &delivered, token, now).await?;
        if let Some(metrics) = &self.metrics {
            metrics.webhooks(&round);
        }
        Ok(round)
    }

    /// Posts one event; `Err` says why it did not arrive.
    async fn post(&self, event: &Deliverable) -> Result<(), String> {
        let body = envelope(event);
        let header = signature(
            self.config.secret.expose().as_bytes(),
            Utc::now().timestamp(),
            &body,
        );
        let response = self
            .client
            .post(self.config.url.clone())
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header("Ticket-Signature", header)
            .header("Ticket-Event-Id", event.id.to_string())
            .header("Ticket-Event-Type", &event.event_type)
            .body(body)
            .send()
            .await
            .map_err(|e| format!("{e}"))?;
        if response.status().is_success() {
            Ok(())
        } else {
            Err(format!("the receiver answered {}", response.status()))
        }
    }

    /// The outcome of a post: delivered, retried later, or given up.
    /// How a post ended, as of `now` (the database's clock, which retries
    /// and the retry period are measured by).
    fn judge(
        &self,
        event: &Deliverable,
        posted: Result<(), String>,
        now: DateTime<Utc>,
    ) -> Delivery {
        let Err(error) = posted else {
            return Delivery::Delivered;
        };
        let give_up_at = event.created_at
            + chrono::Duration::from_std(self.config.give_up_after).unwrap_or_default();
        let wait = backoff(
            event.attempts,
            self.config.first_backoff,
            self.config.max_backoff,
        );
        let at = now + chrono::Duration::from_std(wait).unwrap_or_default();
        if now >= give_up_at {
            Delivery::Failed { error }
        } else {
            Delivery::Retry {
                at: at.min(give_up_at.max(now)),
                error,
            }
        }
    }

    /// Delivers until `shutdown`: at once again while a claim comes back
    /// full, otherwise after the poll interval.
    pub async fn run(self, shutdown: CancellationToken) {
        tracing::info!(url = %redacted(&self.config.url), "delivering events as webhooks");
        loop {
            let round = tokio::select! {
                () = shutdown.cancelled() => return,
                round = self.deliver_once() => round,
            };
            let pause = match round {
                Ok(round) if round.claimed == self.config.batch as usize => Duration::ZERO,
                Ok(_) => self.config.poll_interval,
                Err(e) => {
                    tracing::warn!(error = %e, "webhook relay round failed; trying again");
                    self.config.poll_interval * 5
                }
            };
            tokio::select! {
                () = shutdown.cancelled() => return,
                () = tokio::time::sleep(crate::random::jitter(pause, 0.2)) => {}
            }
        }
    }
}

/// The wait before the next attempt after the `attempts`-th: `first`
/// doubling up to `max`, with full jitter (anywhere from half of it to all
/// of it), so that a receiver coming back is not hit by every retry at once.
pub(crate) fn backoff(attempts: u32, first: Duration, max: Duration) -> Duration {
    crate::random::jitter(backoff_ceiling(attempts, first, max) / 2, 1.0)
}

/// The URL without what could be a credential (user info, query).
fn redacted(url: &reqwest::Url) -> String {
    format!(
        "{}://{}{}",
        url.scheme(),
        url.host_str().unwrap_or(""),
        url.path()
    )
}

/// The longest wait after the `attempts`-th attempt, before jitter.
pub fn backoff_ceiling(attempts: u32, first: Duration, max: Duration) -> Duration {
    first
        .saturating_mul(1 << attempts.saturating_sub(1).min(20))
        .min(max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures_follow_the_documented_recipe() {
        // printf '1700000000.{"a":1}' | openssl dgst -sha256 -hmac whsec_test
        assert_eq!(
            signature(b"whsec_test", 1_700_000_000, br#"{"a":1}"#),
            "t=1700000000,v1=38877139021993b830af32feea6e18a8da83eb2f6e49ee50bd9e4cf4ca4d3789"
        );
    }

    #[test]
    fn retries_back_off_with_jitter_up_to_a_ceiling() {
        let (first, max) = (Duration::from_secs(1), Duration::from_secs(3600));
        for attempts in [1, 2, 5, 30] {
            let ceiling = backoff_ceiling(attempts, first, max);
            let wait = backoff(attempts, first, max);
            assert!(
                wait >= ceiling / 2 && wait <= ceiling,
                "{attempts}: {wait:?}"
            );
        }
        assert_eq!(backoff_ceiling(3, first, max), Duration::from_secs(4));
        assert_eq!(backoff_ceiling(40, first, max), max);
    }

    #[test]
    fn the_url_is_logged_without_credentials() {
        let url = reqwest::Url::parse("https://user:pw@hooks.example/in?token=x").unwrap();
        assert_eq!(redacted(&url), "https://hooks.example/in");
    }
}
