//! One cycle of claiming and deciding, in each mode: a batch claimed and
//! decided in one transaction (`batch`, the next claimed while this one is
//! decided), or under a lease first (`leased-batch`, and rows that failed
//! for a reason in them).

use std::sync::atomic::Ordering;
use std::time::{Duration, SystemTime};

use ticket_core::domain::QueueId;

use crate::{
    DecideError, Decided, Mode, Worker, WorkerConfig, decide, observability, random, set_aside,
};

mod in_claim;
mod leased;

/// Rows claimed by one claim transaction, under one lease.
#[derive(Debug)]
pub struct ClaimedBatch {
    pub ids: Vec<QueueId>,
    pub token: u64,
    pub reclaimed: usize,
    /// Expired rows set aside (FAILED, PROCESSING_FAILED) instead of claimed.
    pub dead_lettered: usize,
    /// When the claim transaction began and committed (for its span).
    pub claim_started: SystemTime,
    pub claim_finished: SystemTime,
}

/// A batch claimed while the one before it was being decided.
pub(crate) enum Ahead {
    Leased(ClaimedBatch),
    InDecision(decide::Claimed),
}

/// What one claim-and-decide cycle did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Cycle {
    pub claimed: usize,
    pub reclaimed: usize,
    pub decided: Decided,
}

/// Attempts at claiming or deciding one batch when deadlocks or lock waits
/// get in the way (each attempt starts from a clean rollback).
const DECIDE_ATTEMPTS: u32 = 5;

/// How long a request waits when an earlier request for its seat is still
/// open in another worker's hands: about one batch decision.
const DEFER_FOR: Duration = Duration::from_millis(20);

impl Worker {
    /// A decided batch's metrics, rates and trace.
    pub(crate) fn record(&self, batch: &ClaimedBatch, report: &decide::Report) {
        self.metrics.decided(report);
        self.rates.count(
            report
                .rows
                .iter()
                .map(|row| (row.concert_id, row.requested_at)),
            chrono::Utc::now(),
        );
        observability::record_batch(batch, report, &self.owner);
    }

    /// One cycle of the loop: claimed and decided in one transaction when it
    /// can be, else under a lease (see [`Self::pipelined_cycle`]).
    pub(crate) async fn cycle(
        &self,
        ahead: Option<Ahead>,
        config: WorkerConfig,
    ) -> anyhow::Result<(Cycle, Option<Ahead>)> {
        let in_decision = match ahead {
            Some(Ahead::Leased(batch)) => return self.leased_cycle(Some(batch), config).await,
            Some(Ahead::InDecision(claimed)) => Some(claimed),
            None if self.claims_in_decision().await? => None,
            None => return self.leased_cycle(None, config).await,
        };
        match self.pipelined_in_decision(in_decision).await {
            Ok((cycle, next)) => Ok((cycle, next.map(Ahead::InDecision))),
            Err(e) if e.is_caused_by_rows() => {
                tracing::warn!(
                    error = format!("{e:#}"),
                    "deciding rows failed; claiming them under a lease to split them"
                );
                self.careful.store(true, Ordering::Relaxed);
                self.leased_cycle(None, config).await
            }
            Err(e) => Err(e.into()),
        }
    }

    /// A cycle under a lease. After a full batch the next one is claimed while
    /// this one is decided: a single worker is bound by round trips, not by
    /// CPU, and the two chains overlap. Batches are still decided one after
    /// the other, in queue order.
    pub(crate) async fn pipelined_cycle(
        &self,
        prefetched: Option<ClaimedBatch>,
        config: WorkerConfig,
    ) -> anyhow::Result<(Cycle, Option<ClaimedBatch>)> {
        let batch = match prefetched {
            Some(batch) => batch,
            None => self.claim_once().await?,
        };
        let full = batch.ids.len() >= config.batch_size as usize;
        let (decided, next) = if full {
            let (decided, next) = tokio::join!(self.decide(&batch), self.claim_once());
            (decided, Some(next))
        } else {
            (self.decide(&batch).await, None)
        };
        let next = match next {
            Some(Ok(next)) if !next.ids.is_empty() => Some(next),
            Some(Err(e)) => {
                tracing::debug!(error = %e, "claiming ahead failed; the next cycle claims again");
                None
            }
            _ => None,
        };
        let decided = match decided {
            Ok(decided) => decided,
            Err(e) => {
                // The batch claimed ahead stays ours; decide it next time.
                return match next {
                    Some(next) => {
                        tracing::warn!(error = %e, "deciding a batch failed; its rows wait for their lease");
                        Ok((Cycle::default(), Some(next)))
                    }
                    None => Err(e.into()),
                };
            }
        };
        if batch.reclaimed > 0 {
            tracing::info!(
                reclaimed = batch.reclaimed,
                "re-claimed rows whose lease had expired"
            );
        }
        Ok((
            Cycle {
                claimed: batch.ids.len(),
                reclaimed: batch.reclaimed,
                decided,
            },
            next,
        ))
    }
}
