//! Offers from the waiting lists: seats that came back (a cancel, an
//! expired hold, an admin's release) and that no open request wants go to
//! the fans waiting for them, in the order they joined, as holds of theirs.
//! Every worker runs it; a list another worker is offering from is skipped,
//! not waited for, and one step touches one concert.

use std::time::Duration;

use sqlx::MySqlPool;
use ticket_core::db::{self, waiting_list, whole};
use ticket_core::domain::ConcertId;
use tokio_util::sync::CancellationToken;

/// Lists read at a time.
const LISTS_PER_PAGE: u32 = 100;
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

    /// One pass over every list with fans waiting and a free seat nobody
    /// in line wants, in concert order, a page of lists at a time: one
    /// offering step each. However many lists have fans waiting, each is
    /// reached every pass (the lists with nothing to offer cost an index
    /// probe each, in the page's one statement). Returns the offers made.
    pub async fn offer_once(&self) -> Result<Vec<waiting_list::Offered>, sqlx::Error> {
        let mut conn = self.pool.acquire().await?;
        let mut made = Vec::new();
        let mut after = ConcertId(0);
        loop {
            let page = waiting_list::needing_offers(&mut conn, after, LISTS_PER_PAGE).await?;
            for &concert in &page {
                let offered = whole::run(&mut conn, async |tx| {
                    let now = db::now(tx).await?;
                    waiting_list::offer_step(tx, concert, now).await
                })
                .await?;
                made.extend(offered);
            }
            match page.last() {
                Some(&last) if page.len() == LISTS_PER_PAGE as usize => after = last,
                _ => break,
            }
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
