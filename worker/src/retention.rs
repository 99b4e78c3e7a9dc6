//! The sweeper: removes what the retention says is no longer needed
//! (decided requests and delivered events after the retention period,
//! idempotency keys after a day), and whatever serves nothing once ended
//! whatever the retention (spent challenges past their end, entries of fans
//! who left a waiting list), beside the claim loop and never in its way:
//! small batches, short transactions, rows held by anyone skipped.

use std::time::Duration;

use chrono::{DateTime, Utc};
use sqlx::MySqlPool;
use ticket_core::db::retention::{self as kept, Walked};
use ticket_core::db::whole;
use ticket_core::domain::QueueId;
use tokio_util::sync::CancellationToken;

/// How long things are kept; `None`: forever.
#[derive(Debug, Clone, Copy)]
pub struct Retention {
    pub decided: Option<chrono::Duration>,
    pub idempotency_keys: Option<chrono::Duration>,
    /// Whether undelivered events are kept until delivered (a webhook is
    /// configured) or only for the retention period (nobody receives them).
    pub events: kept::EventsKept,
    /// The same for mails: kept until they end when this worker sends
    /// them, else only for the retention period.
    pub mails: kept::EventsKept,
}

/// Rows looked at (and at most removed) per statement.
const BATCH: u32 = 500;
/// Pause between batches while a pass has more to do: at least this, and
/// at least `IDLE_SHARE` times what the batch took, so the sweeper works a
/// tenth of the time whatever the backlog (on a busy database its batches
/// take longer, and it backs off further). A backlog clears slowly; the
/// sale in progress does not notice it.
const BATCH_PAUSE: Duration = Duration::from_millis(50);
const IDLE_SHARE: u32 = 9;
/// Pause between passes.
const PASS_PAUSE: Duration = Duration::from_secs(60);
/// How long the entry of a fan who left a waiting list is kept: it records
/// no decision (an offered entry is kept with its reservation), only a
/// support question's answer for a day.
const LEFT_ENTRIES_KEPT: chrono::Duration = chrono::Duration::days(1);

/// What one batch did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Swept {
    pub requests_deleted: u64,
    pub keys_forgotten: u64,
    pub events_deleted: u64,
    pub mails_deleted: u64,
    /// Spent proof-of-work challenges past their end (useless then).
    pub challenges_forgotten: u64,
    /// Entries of fans who left a waiting list, a day after.
    pub left_entries_forgotten: u64,
    /// The pass has more to look at.
    pub more: bool,
}

impl std::ops::AddAssign for Swept {
    fn add_assign(&mut self, other: Self) {
        self.requests_deleted += other.requests_deleted;
        self.keys_forgotten += other.keys_forgotten;
        self.events_deleted += other.events_deleted;
        self.mails_deleted += other.mails_deleted;
        self.challenges_forgotten += other.challenges_forgotten;
        self.left_entries_forgotten += other.left_entries_forgotten;
        self.more = other.more;
    }
}

pub struct Sweeper {
    pool: MySqlPool,
    retention: Retention,
    /// Where removals are counted (`ticket_worker_retention_removed_total`).
    metrics: Option<std::sync::Arc<crate::WorkerMetrics>>,
    /// Where each walk of the queue (deletions, keys) goes on from; back to
    /// the start after every pass, so rows skipped as held come round again.
    rows_after: QueueId,
    keys_after: QueueId,
}

/// The walked rows older than `cutoff` (a prefix: ids follow time), and
/// whether the walk got past them to younger rows.
fn older_than(rows: &[Walked], cutoff: DateTime<Utc>) -> (&[Walked], bool) {
    let older = rows
        .iter()
        .position(|row| row.created_at >= cutoff)
        .unwrap_or(rows.len());
    (&rows[..older], older < rows.len())
}

/// Whether the row was decided before `cutoff` (never, without one).
fn decided_before(row: &Walked, cutoff: Option<DateTime<Utc>>) -> bool {
    cutoff.is_some_and(|cutoff| row.decided_at.is_some_and(|at| at < cutoff))
}

impl Sweeper {
    pub fn new(pool: MySqlPool, retention: Retention) -> Self {
        Self {
            pool,
            retention,
            metrics: None,
            rows_after: QueueId(0),
            keys_after: QueueId(0),
        }
    }

    /// Counts what it removes in the worker's metrics.
    pub fn counted_in(mut self, metrics: std::sync::Arc<crate::WorkerMetrics>) -> Self {
        self.metrics = Some(metrics);
        self
    }

    /// One batch of each kind of removal, as of `now`.
    pub async fn sweep_once(&mut self, now: DateTime<Utc>) -> Result<Swept, sqlx::Error> {
        let mut swept = Swept::default();
        let mut conn = self.pool.acquire().await?;
        // A spent challenge is kept only while it could be replayed: until
        // its end, and a minute more for the clocks of the instances.
        swept.challenges_forgotten = ticket_core::db::spent_challenges::forget_ended(
            &mut conn,
            now - chrono::Duration::minutes(1),
            BATCH,
        )
        .await?;
        swept.left_entries_forgotten =
            ticket_core::db::waiting_list::forget_left(&mut conn, now - LEFT_ENTRIES_KEPT, BATCH)
                .await?;
        swept.more |= swept.challenges_forgotten == u64::from(BATCH)
            || swept.left_entries_forgotten == u64::from(BATCH);
        let deletions_cutoff = self.retention.decided.map(|keep| now - keep);
        if let Some(cutoff) = deletions_cutoff {
            let rows = kept::queue_rows_after(&mut conn, self.rows_after, BATCH).await?;
            let (older, reached_younger) = older_than(&rows, cutoff);
            let decided: Vec<QueueId> = older
                .iter()
                .filter(|r| decided_before(r, Some(cutoff)))
                .map(|r| r.id)
                .collect();
            whole::run(&mut conn, async |tx| {
                swept.requests_deleted = kept::delete_decided(tx, &decided, cutoff).await?;
                swept.events_deleted =
                    kept::delete_events(tx, cutoff, self.retention.events, BATCH).await?;
                swept.mails_deleted = ticket_core::db::mails::delete_old(
                    tx,
                    cutoff,
                    self.retention.mails == kept::EventsKept::ForTheRetentionOnly,
                    BATCH,
                )
                .await?;
                Ok::<_, sqlx::Error>(())
            })
            .await?;
            if let Some(last) = older.last() {
                self.rows_after = last.id;
            }
            swept.more |= (!reached_younger && rows.len() == BATCH as usize)
                || swept.events_deleted == u64::from(BATCH)
                || swept.mails_deleted == u64::from(BATCH);
        }
        if let Some(keep) = self.retention.idempotency_keys {
            let cutoff = now - keep;
            let rows = kept::queue_rows_after(&mut conn, self.keys_after, BATCH).await?;
            let (older, reached_younger) = older_than(&rows, cutoff);
            // Rows the deletions will take keep their key until then.
            let keyed: Vec<QueueId> = older
                .iter()
                .filter(|r| r.has_key && !decided_before(r, deletions_cutoff))
                .map(|r| r.id)
                .collect();
            swept.keys_forgotten = whole::run(&mut conn, async |tx| {
                kept::forget_idempotency_keys(tx, &keyed).await
            })
            .await?;
            if let Some(last) = older.last() {
                self.keys_after = last.id;
            }
            swept.more |= !reached_younger && rows.len() == BATCH as usize;
        }
        Ok(swept)
    }

    /// Sweeps until the walks are done, as of `now`: one pass.
    pub async fn pass(&mut self, now: DateTime<Utc>) -> Result<Swept, sqlx::Error> {
        let mut total = Swept::default();
        loop {
            let started = std::time::Instant::now();
            let swept = self.sweep_once(now).await?;
            if let Some(metrics) = &self.metrics {
                metrics.swept(&swept);
            }
            total += swept;
            if !swept.more {
                break;
            }
            tokio::time::sleep(BATCH_PAUSE.max(started.elapsed() * IDLE_SHARE)).await;
        }
        self.rows_after = QueueId(0);
        self.keys_after = QueueId(0);
        Ok(total)
    }

    /// One pass as of the database's clock, which ages are measured by.
    async fn pass_by_the_database(&mut self) -> Result<Swept, sqlx::Error> {
        let now = ticket_core::db::now(&mut *self.pool.acquire().await?).await?;
        self.pass(now).await
    }

    /// A pass every minute until `shutdown`; a failed pass is logged and
    /// the next one starts over. It runs whatever the retention: what ends
    /// for good is removed even when decisions are kept for ever.
    pub async fn run(mut self, shutdown: CancellationToken) {
        loop {
            let pass = tokio::select! {
                () = shutdown.cancelled() => return,
                pass = self.pass_by_the_database() => pass,
            };
            match pass {
                Ok(swept) if swept != Swept::default() => {
                    tracing::info!(?swept, "retention pass removed what had expired");
                }
                Ok(_) => {}
                Err(e) => {
                    tracing::warn!(error = %e, "retention pass failed; trying again later");
                    self.rows_after = QueueId(0);
                    self.keys_after = QueueId(0);
                }
            }
            tokio::select! {
                () = shutdown.cancelled() => return,
                () = tokio::time::sleep(crate::random::jitter(PASS_PAUSE, 0.2)) => {}
            }
        }
    }
}
