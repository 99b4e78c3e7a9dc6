//! The expiry sweep: holds that ran out become EXPIRED and their seats
//! AVAILABLE within seconds (decisions already treat them as free the
//! moment they end; this makes statuses, counts and the ReservationExpired
//! event follow). Every worker runs it; holds and seats locked by anyone
//! are skipped, not waited for, and come round in the next sweep.

use std::time::Duration;

use sqlx::MySqlPool;
use ticket_core::db::{self, holds, whole};
use tokio_util::sync::CancellationToken;

/// Holds expired per transaction: a short transaction on one concert.
const BATCH: u32 = 100;
/// Pause between sweeps that found nothing (or less than a batch): holds
/// are seen EXPIRED at most about this long after they end.
const IDLE_PAUSE: Duration = Duration::from_secs(1);
/// Pause between batches while more are due.
const BUSY_PAUSE: Duration = Duration::from_millis(10);

pub struct HoldSweeper {
    pool: MySqlPool,
    metrics: Option<std::sync::Arc<crate::WorkerMetrics>>,
}

/// What one batch did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Expired {
    pub holds: u64,
    /// A full batch was due: sweep again at once.
    pub more: bool,
}

impl HoldSweeper {
    pub fn new(pool: MySqlPool) -> Self {
        Self {
            pool,
            metrics: None,
        }
    }

    /// Counts what it expires in the worker's metrics.
    pub fn counted_in(mut self, metrics: std::sync::Arc<crate::WorkerMetrics>) -> Self {
        self.metrics = Some(metrics);
        self
    }

    /// Expires one batch of the holds that have ended by the database's
    /// clock, of one concert.
    pub async fn sweep_once(&self) -> Result<Expired, sqlx::Error> {
        let mut conn = self.pool.acquire().await?;
        let now = db::now(&mut conn).await?;
        let due = holds::due(&mut conn, now, BATCH).await?;
        if due.is_empty() {
            return Ok(Expired::default());
        }
        let expired = whole::run(&mut conn, async |tx| holds::expire(tx, &due, now).await).await?;
        // A full batch of which nothing could be taken is another sweeper's
        // (or a decision's) right now: wait like an idle sweep rather than
        // spin against it.
        let swept = Expired {
            holds: expired.len() as u64,
            more: due.len() == BATCH as usize && !expired.is_empty(),
        };
        if let Some(metrics) = &self.metrics {
            metrics.holds_expired(swept.holds);
        }
        Ok(swept)
    }

    /// Sweeps until `shutdown`; a failed sweep is logged and tried again.
    pub async fn run(self, shutdown: CancellationToken) {
        loop {
            let swept = tokio::select! {
                () = shutdown.cancelled() => return,
                swept = self.sweep_once() => swept,
            };
            let pause = match swept {
                Ok(swept) if swept.more => BUSY_PAUSE,
                Ok(_) => IDLE_PAUSE,
                Err(e) => {
                    tracing::warn!(error = %e, "expiry sweep failed; trying again");
                    IDLE_PAUSE
                }
            };
            tokio::select! {
                () = shutdown.cancelled() => return,
                () = tokio::time::sleep(crate::random::jitter(pause, 0.2)) => {}
            }
        }
    }
}
