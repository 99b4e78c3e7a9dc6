//! The `batch` mode: rows claimed and decided in one transaction, no lease,
//! no PROCESSING write; the next batch claimed while this one is decided.

use std::sync::atomic::Ordering;
use std::time::Duration;

use ticket_core::db::{self, queue};

use super::*;

impl Worker {
    /// Claims a batch to be decided in the claim's own transaction (see
    /// [`decide::claim`]), after the now-and-then work of a claim, which
    /// alone needs a kept connection.
    pub(crate) async fn claim_in_decision(&self) -> Result<Option<decide::Claimed>, DecideError> {
        let errands = self.errands_due();
        if errands.any() {
            let mut conn = self.connections.take().await?;
            let now = db::now(&mut conn).await?;
            self.run_errands(&mut conn, errands, now).await?;
            self.connections.keep(conn);
        }
        decide::claim(self.connections.pool(), self.config().batch_size).await
    }

    /// Decides rows claimed in the decision's transaction.
    pub(crate) async fn decide_in_claim(
        &self,
        claimed: decide::Claimed,
    ) -> Result<Cycle, DecideError> {
        let (claim_started, claim_finished) = claimed.claim_phase();
        let batch = ClaimedBatch {
            ids: claimed.ids().to_vec(),
            token: 0,
            reclaimed: 0,
            dead_lettered: 0,
            claim_started,
            claim_finished,
        };
        self.metrics.claimed(&batch);
        let report = decide::decide_claimed(claimed, DEFER_FOR).await?;
        self.record(&batch, &report);
        Ok(Cycle {
            claimed: batch.ids.len(),
            reclaimed: 0,
            decided: report.decided,
        })
    }

    /// Claims and decides one batch in a single transaction, retrying
    /// deadlocks and lock waits (each attempt claims afresh). A failure
    /// caused by the rows is returned; the caller claims them under a lease
    /// to split them.
    pub async fn claim_and_decide_once(&self) -> Result<Cycle, DecideError> {
        let mut attempt = 1;
        loop {
            let Some(claimed) = self.claim_in_decision().await? else {
                return Ok(Cycle::default());
            };
            match self.decide_in_claim(claimed).await {
                Err(e) if e.is_transient() && attempt < DECIDE_ATTEMPTS => {
                    tracing::debug!(error = %e, attempt, "transient conflict while deciding; retrying");
                    tokio::time::sleep(random::jitter(Duration::from_millis(1 << attempt), 1.0))
                        .await;
                    attempt += 1;
                }
                other => return other,
            }
        }
    }

    /// The loop's cycle in one transaction per batch. After a full batch
    /// the next one is claimed while this one is decided: its transaction
    /// holds its rows and plans once this one has committed, so it sees
    /// this one's outcome. A transient failure decides the batch again with
    /// a fresh claim.
    pub(crate) async fn pipelined_in_decision(
        &self,
        prefetched: Option<decide::Claimed>,
    ) -> Result<(Cycle, Option<decide::Claimed>), DecideError> {
        let claimed = match prefetched {
            Some(claimed) => claimed,
            None => match self.claim_in_decision().await? {
                Some(claimed) => claimed,
                None => return Ok((Cycle::default(), None)),
            },
        };
        // Not ahead of rows whose lease ran out: the next cycle takes them.
        let full = claimed.ids().len() >= self.config().batch_size as usize
            && self.claims_in_decision().await?;
        let (decided, next) = if full {
            tokio::join!(self.decide_in_claim(claimed), self.claim_in_decision())
        } else {
            (self.decide_in_claim(claimed).await, Ok(None))
        };
        let next = next.unwrap_or_else(|e| {
            tracing::debug!(error = %e, "claiming ahead failed; the next cycle claims again");
            None
        });
        match decided {
            Ok(cycle) => Ok((cycle, next)),
            Err(e) => {
                if let Some(next) = next {
                    next.release().await?;
                }
                if !e.is_transient() {
                    return Err(e);
                }
                tracing::debug!(error = %e, "transient conflict while deciding; claiming again");
                Ok((self.claim_and_decide_once().await?, None))
            }
        }
    }

    /// Whether this cycle claims and decides in one transaction: in batch
    /// mode, unless rows just failed for a reason in them, or some lease ran
    /// out (a worker died holding rows claimed under a lease): those rows
    /// are claimed under a lease, as only that claim takes expired rows.
    pub(crate) async fn claims_in_decision(&self) -> Result<bool, sqlx::Error> {
        if self.mode != Mode::Batch || self.careful.load(Ordering::Relaxed) {
            return Ok(false);
        }
        if self.expired_look.due() {
            let mut conn = self.connections.take().await?;
            let expired = queue::any_lease_expired(&mut conn).await?;
            self.connections.keep(conn);
            if expired {
                self.expired_look.again();
                return Ok(false);
            }
        }
        Ok(true)
    }
}
