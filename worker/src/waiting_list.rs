//! Offers from the waiting lists: seats that came back (a cancel, an
//! expired hold, an admin's release) and that no open request wants go to
//! the fans waiting for them, in the order they joined, as holds of theirs.
//! Every worker runs it; a list another worker is offering from is skipped,
//! not waited for, and one step touches one concert.

use std::time::Duration;

use sqlx::MySqlPool;
use ticket_core::db::{self, waiting_list, whole};
use tokio_util::sync::CancellationToken;

/// Lists looked at per pass.
const LISTS_PER_PASS: u32 = 100;
/// Pause between passes: seats that come back are offered within about
/// this long (plus the expiry sweep's second for a hold that ran out).
const PAUSE: Duration = Duration::from_secs(1);

pub struct Offers {
    pool: MySqlPool,
    metrics: Option<std::sync::Arc<crate::WorkerMetrics>>,
}

impl Offers {
    pub fn new(pool: MySqlPool) -> Self {
        Self {
            pool,
            metrics: None,
        }
    }

    /// Counts the offers it makes in the worker's metrics.
    pub fn counted_in(mut self, metrics: std::sync::Arc<crate::WorkerMetrics>) -> Self {
        self.metrics = Some(metrics);
        self
    }

    /// One pass over the lists with fans waiting: for each that has a free
    /// seat nobody in line wants, one offering step. Returns the offers made.
    pub async fn offer_once(&self) -> Result<Vec<waiting_list::Offered>, sqlx::Error> {
        let mut conn = self.pool.acquire().await?;
        let mut made = Vec::new();
        for concert in waiting_list::with_fans_waiting(&mut conn, LISTS_PER_PASS).await? {
            if !waiting_list::has_free_seat(&mut conn, concert).await? {
                continue;
            }
            let offered = whole::run(&mut conn, async |tx| {
                let now = db::now(tx).await?;
                waiting_list::offer_step(tx, concert, now).await
            })
            .await?;
            made.extend(offered);
        }
        if let Some(metrics) = &self.metrics {
            metrics.offers_made(made.len() as u64);
        }
        Ok(made)
    }

    /// Offers until `shutdown`; a failed pass is logged and tried again.
    pub async fn run(self, shutdown: CancellationToken) {
        loop {
            let passed = tokio::select! {
                () = shutdown.cancelled() => return,
                passed = self.offer_once() => passed,
            };
            if let Err(e) = passed {
                tracing::warn!(error = %e, "offering from the waiting lists failed; trying again");
            }
            tokio::select! {
                () = shutdown.cancelled() => return,
                () = tokio::time::sleep(PAUSE) => {}
            }
        }
    }
}
