//! The worker's metrics (served with `/healthz` on its own port) and the
//! spans that carry each request's trace through the worker.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use axum::Router;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use opentelemetry::trace::{SpanKind, TraceContextExt as _};
use opentelemetry::{Context, KeyValue, StringValue};
use prometheus::{Histogram, IntCounter, IntCounterVec, IntGaugeVec, Registry};
use sqlx::MySqlPool;
use ticket_core::db::queue;
use ticket_core::domain::QueueStatus;
use ticket_core::metrics::{self, PoolGauges};
use ticket_core::telemetry::propagation;
use ticket_core::telemetry::spans::{self, Recorded, db_attributes, messaging_attributes};

use crate::ClaimedBatch;
use crate::decide::Report;
use crate::health::Heartbeat;

/// Batch-size buckets, 1 up to the largest batch allowed.
const BATCH_BUCKETS: &[f64] = &[
    1.0, 2.0, 5.0, 10.0, 25.0, 50.0, 100.0, 250.0, 500.0, 1000.0, 2500.0, 5000.0, 10000.0,
];
/// Enqueue-to-decision buckets, 5 ms to 5 minutes.
const DECISION_BUCKETS: &[f64] = &[
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0,
];
const RECEIVE: &str = "receive reservation_queue";
const PROCESS: &str = "process reservation_queue";

/// Longest a scrape waits for the queue-depth count.
const DEPTH_TIMEOUT: Duration = Duration::from_secs(2);

pub struct WorkerMetrics {
    registry: Registry,
    decisions: IntCounterVec,
    claim_batch: Histogram,
    decision_latency: Histogram,
    reclaimed: IntCounter,
    dead_lettered: IntCounter,
    retention_removed: IntCounterVec,
    holds_expired: IntCounter,
    offers_made: IntCounter,
    webhooks: IntCounterVec,
    mails: IntCounterVec,
    queue_depth: IntGaugeVec,
    outbox: IntGaugeVec,
    mail_backlog: IntGaugeVec,
    pool: PoolGauges,
}

impl WorkerMetrics {
    pub fn new() -> Arc<Self> {
        let registry = Registry::new();
        let metrics = Arc::new(Self {
            decisions: metrics::counter_vec(
                &registry,
                "ticket_decisions_total",
                "Queue rows handled by this worker, by outcome: success, seat_taken, deferred (handed back undecided), or lost to another worker",
                &["outcome"],
            ),
            claim_batch: metrics::histogram(
                &registry,
                "ticket_claim_batch_size",
                "Rows in each non-empty claim",
                BATCH_BUCKETS,
            ),
            decision_latency: metrics::histogram(
                &registry,
                "ticket_decision_latency_seconds",
                "Time from a request's enqueue to its decision's commit",
                DECISION_BUCKETS,
            ),
            reclaimed: metrics::counter(
                &registry,
                "ticket_lease_reclaimed_total",
                "Rows claimed again after another worker's lease on them expired",
            ),
            dead_lettered: metrics::counter(
                &registry,
                "ticket_worker_dead_lettered_total",
                "Requests set aside as FAILED (PROCESSING_FAILED) after their last attempt",
            ),
            retention_removed: metrics::counter_vec(
                &registry,
                "ticket_worker_retention_removed_total",
                "What the sweeper removed past the retention: requests (decided), events (delivered), mails (ended), idempotency_keys (forgotten), challenges (spent, ended), waiting_list_entries (left a day before)",
                &["kind"],
            ),
            holds_expired: metrics::counter(
                &registry,
                "ticket_worker_holds_expired_total",
                "Holds this worker's expiry sweep set EXPIRED (their seats AVAILABLE again)",
            ),
            offers_made: metrics::counter(
                &registry,
                "ticket_worker_waiting_list_offers_total",
                "Offers this worker made to fans on waiting lists (seats held for them)",
            ),
            webhooks: metrics::counter_vec(
                &registry,
                "ticket_webhook_deliveries_total",
                "Webhook deliveries by outcome: delivered, retried (failed, tried again later), failed (given up after the retry period)",
                &["outcome"],
            ),
            mails: metrics::counter_vec(
                &registry,
                "ticket_mail_deliveries_total",
                "Mails by outcome: sent (accepted by the SMTP server), skipped (nothing left to say), retried (not accepted, tried again later), failed (refused for good, or given up after the retry period)",
                &["outcome"],
            ),
            queue_depth: metrics::gauge_vec(
                &registry,
                "ticket_queue_depth",
                "Open requests in the queue by status (PENDING, PROCESSING), counted at scrape time",
                &["status"],
            ),
            outbox: metrics::gauge_vec(
                &registry,
                "ticket_outbox_events",
                "Events in the outbox by state: undelivered (waiting or being retried), failed (given up after the retry period), counted at scrape time",
                &["state"],
            ),
            mail_backlog: metrics::gauge_vec(
                &registry,
                "ticket_mails",
                "Mails by state: unsent (due, waiting for their time, or being retried), failed, counted at scrape time",
                &["state"],
            ),
            pool: PoolGauges::new(&registry),
            registry,
        });
        // Every outcome is listed from the first scrape on, at zero.
        metrics.webhooks(&crate::relay::Round::default());
        metrics.mails(&crate::mail::Round::default());
        for outcome in ["success", "seat_taken", "lost", "deferred"] {
            metrics.decisions.with_label_values(&[outcome]);
        }
        metrics
    }

    pub(crate) fn claimed(&self, batch: &ClaimedBatch) {
        if !batch.ids.is_empty() {
            self.claim_batch.observe(batch.ids.len() as f64);
        }
        self.reclaimed.inc_by(batch.reclaimed as u64);
        self.dead_lettered.inc_by(batch.dead_lettered as u64);
    }

    /// A row handled after its own failure (retried later or set aside).
    pub(crate) fn set_aside(&self, outcome: crate::Decided) {
        self.dead_lettered.inc_by(outcome.dead_lettered as u64);
        self.decisions
            .with_label_values(&["deferred"])
            .inc_by(outcome.deferred as u64);
    }

    pub(crate) fn swept(&self, swept: &crate::retention::Swept) {
        for (kind, n) in [
            ("requests", swept.requests_deleted),
            ("events", swept.events_deleted),
            ("mails", swept.mails_deleted),
            ("idempotency_keys", swept.keys_forgotten),
            ("challenges", swept.challenges_forgotten),
            ("waiting_list_entries", swept.left_entries_forgotten),
        ] {
            self.retention_removed.with_label_values(&[kind]).inc_by(n);
        }
    }

    pub(crate) fn webhooks(&self, round: &crate::relay::Round) {
        for (outcome, n) in [
            ("delivered", round.delivered),
            ("retried", round.retried),
            ("failed", round.failed),
        ] {
            self.webhooks.with_label_values(&[outcome]).inc_by(n as u64);
        }
    }

    pub(crate) fn mails(&self, round: &crate::mail::Round) {
        for (outcome, n) in [
            ("sent", round.sent),
            ("skipped", round.skipped),
            ("retried", round.retried),
            ("failed", round.failed),
        ] {
            self.mails.with_label_values(&[outcome]).inc_by(n as u64);
        }
    }

    pub(crate) fn holds_expired(&self, n: u64) {
        self.holds_expired.inc_by(n);
    }

    pub(crate) fn offers_made(&self, n: u64) {
        self.offers_made.inc_by(n);
    }

    /// Requests this worker decided (won or refused).
    pub fn decided_count(&self) -> u64 {
        ["success", "seat_taken"]
            .iter()
            .map(|outcome| self.decisions.with_label_values(&[*outcome]).get())
            .sum()
    }

    pub(crate) fn decided(&self, report: &Report) {
        let d = report.decided;
        self.decisions
            .with_label_values(&["success"])
            .inc_by(d.succeeded as u64);
        self.decisions
            .with_label_values(&["seat_taken"])
            .inc_by(d.failed as u64);
        self.decisions
            .with_label_values(&["lost"])
            .inc_by(d.lease_lost as u64);
        self.decisions
            .with_label_values(&["deferred"])
            .inc_by(d.deferred as u64);
        let now = chrono::Utc::now();
        for row in &report.rows {
            let waited = (now - row.requested_at).to_std().unwrap_or_default();
            self.decision_latency.observe(waited.as_secs_f64());
        }
    }

    /// The metrics in the Prometheus text format, with the queue depth and
    /// pool usage read now. A database that does not answer leaves the last
    /// depth in place rather than failing the scrape.
    pub async fn render(&self, pool: &MySqlPool) -> String {
        let depth = tokio::time::timeout(DEPTH_TIMEOUT, async {
            let mut conn = pool.acquire().await?;
            let depth = queue::open_depth(&mut conn).await?;
            let backlog = ticket_core::db::outbox::backlog(&mut conn).await?;
            let mails = ticket_core::db::mails::backlog(&mut conn).await?;
            Ok::<_, sqlx::Error>((depth, backlog, mails))
        })
        .await;
        match depth {
            Ok(Ok((rows, (undelivered, failed), (unsent, mails_failed)))) => {
                self.mail_backlog.with_label_values(&["unsent"]).set(unsent);
                self.mail_backlog
                    .with_label_values(&["failed"])
                    .set(mails_failed);
                self.outbox
                    .with_label_values(&["undelivered"])
                    .set(undelivered);
                self.outbox.with_label_values(&["failed"]).set(failed);
                for status in [
                    QueueStatus::Waiting,
                    QueueStatus::Pending,
                    QueueStatus::Processing,
                ] {
                    let n = rows
                        .iter()
                        .find(|(s, _)| *s == status)
                        .map_or(0, |(_, n)| *n);
                    self.queue_depth
                        .with_label_values(&[status.as_str()])
                        .set(n);
                }
            }
            Ok(Err(e)) => tracing::warn!(error = %e, "queue depth not counted"),
            Err(_) => tracing::warn!("queue depth not counted in time"),
        }
        self.pool.update(pool);
        metrics::render(&self.registry)
    }
}

/// `/healthz` (liveness) and `/metrics` (Prometheus) on the worker's port.
pub fn router(heartbeat: Heartbeat, metrics: Arc<WorkerMetrics>, pool: MySqlPool) -> Router {
    crate::health::router(heartbeat).route(
        "/metrics",
        get(move || async move {
            (
                StatusCode::OK,
                [(header::CONTENT_TYPE, metrics::CONTENT_TYPE)],
                metrics.render(&pool).await,
            )
                .into_response()
        }),
    )
}

/// Records a decided batch's spans: one `receive` span for the claim, linked
/// to every claimed row's trace, and per row a `process` span whose parent is
/// the context stored on the row (so it joins the HTTP request's trace), with
/// the seat decision, the reservation insert and the commit as its children.
pub(crate) fn record_batch(batch: &ClaimedBatch, report: &Report, owner: &str) {
    if report.rows.is_empty() {
        return;
    }
    let tracer = spans::tracer();
    let parents: Vec<Context> = report
        .rows
        .iter()
        .map(|row| propagation::context_of(&row.trace))
        .collect();
    let consumer = [
        KeyValue::new("messaging.consumer.group.name", "ticket-worker"),
        KeyValue::new("messaging.client.id", StringValue::from(owner.to_owned())),
    ];
    let mut receive = Recorded::new(
        RECEIVE,
        SpanKind::Client,
        batch.claim_started,
        batch.claim_finished,
    )
    .attributes(messaging_attributes("receive"))
    .attributes(consumer.clone())
    .attribute(KeyValue::new(
        "messaging.batch.message_count",
        i64::try_from(batch.ids.len()).unwrap_or(i64::MAX),
    ));
    for parent in &parents {
        receive = receive.link(parent.span().span_context().clone());
    }
    let receive = receive.record_with(&tracer, &Context::new());
    let receive_span = receive.span().span_context().clone();

    let started = report.phases.map_or(batch.claim_finished, |p| p.lock.0);
    let ended = report.phases.map_or_else(SystemTime::now, |p| p.commit.1);
    for (row, parent) in report.rows.iter().zip(&parents) {
        let span = parent.span();
        let ids = span.span_context();
        // An unsampled trace stays unsampled: skip the work entirely.
        if ids.is_valid() && !ids.is_sampled() {
            continue;
        }
        let process = Recorded::new(PROCESS, SpanKind::Consumer, started, ended)
            .attributes(messaging_attributes("process"))
            .attributes(consumer.clone())
            .attribute(KeyValue::new(
                "messaging.message.id",
                row.id.get().to_string(),
            ))
            .attribute(KeyValue::new(
                "ticket.seat.id",
                i64::try_from(row.seat_id.get()).unwrap_or(i64::MAX),
            ))
            .attribute(KeyValue::new(
                "ticket.outcome",
                if row.succeeded { "SUCCESS" } else { "FAILED" },
            ))
            .link(receive_span.clone())
            .record_with(&tracer, parent);
        let Some(phases) = report.phases else {
            continue;
        };
        let step =
            |name: &'static str, operation: &'static str, table: &'static str, (from, to)| {
                Recorded::new(name, SpanKind::Client, from, to)
                    .attributes(db_attributes(operation, table))
                    .record_with(&tracer, &process);
            };
        // The seat decision (locking the wanted seats, marking the winners').
        step("UPDATE seats", "UPDATE", "seats", phases.seats);
        if row.succeeded {
            step(
                "INSERT reservations",
                "INSERT",
                "reservations",
                phases.insert,
            );
        }
        Recorded::new("COMMIT", SpanKind::Client, phases.commit.0, phases.commit.1)
            .attributes([
                KeyValue::new("db.system.name", "mysql"),
                KeyValue::new("db.operation.name", "COMMIT"),
            ])
            .record_with(&tracer, &process);
    }
}
