//! Claims under a lease, committed before the decision: `leased-batch`, and
//! rows that failed for a reason in them (split and counted).

use std::sync::atomic::Ordering;
use std::time::{Duration, SystemTime};

use ticket_core::db::{self, queue, whole};
use ticket_core::domain::QueueId;

use super::*;

impl Worker {
    /// Claims up to a batch of rows in a short transaction of its own and
    /// commits, leaving them PROCESSING under a fresh lease.
    pub async fn claim_once(&self) -> Result<ClaimedBatch, sqlx::Error> {
        // Claims deadlock now and then with other workers' decisions (both
        // touch the status index); the claim simply runs again.
        let mut attempt = 1;
        loop {
            match self.try_claim().await {
                Ok(batch) => {
                    self.metrics.claimed(&batch);
                    return Ok(batch);
                }
                Err(e) if db::is_transient_conflict(&e) && attempt < DECIDE_ATTEMPTS => {
                    tracing::debug!(error = %e, attempt, "transient conflict while claiming; retrying");
                    tokio::time::sleep(random::jitter(Duration::from_millis(1 << attempt), 1.0))
                        .await;
                    attempt += 1;
                }
                other => return other,
            }
        }
    }

    pub(crate) async fn try_claim(&self) -> Result<ClaimedBatch, sqlx::Error> {
        let config = self.config();
        let claim_started = SystemTime::now();
        let mut conn = self.connections.take().await?;
        let now = db::now(&mut conn).await?;
        let lease = queue::Lease {
            owner: self.owner.clone(),
            token: random::u64(),
            until: now
                + chrono::Duration::from_std(config.lease).unwrap_or(chrono::Duration::seconds(30)),
        };
        let look_for_expired = self.expired_look.due();
        self.run_errands(&mut conn, self.errands_due(), now).await?;
        let claim = whole::run(&mut conn, async |tx| {
            queue::claim(
                tx,
                &lease,
                config.batch_size,
                config.max_attempts,
                look_for_expired,
                now,
            )
            .await
        })
        .await?;
        self.connections.keep(conn);
        if claim.more_expired {
            self.expired_look.again();
        }
        set_aside::report_expired(&claim.dead_lettered, config.max_attempts);
        Ok(ClaimedBatch {
            ids: claim.ids,
            token: lease.token,
            reclaimed: claim.reclaimed,
            dead_lettered: claim.dead_lettered.len(),
            claim_started,
            claim_finished: SystemTime::now(),
        })
    }

    /// Decides a claimed batch. A batch that fails for a reason in its rows
    /// is split in halves, and those again, so that every row that can be
    /// decided is decided now and only the failing rows are left: each is
    /// handed back for a later attempt, or set aside as FAILED
    /// (PROCESSING_FAILED) after its last one. When several rows fail alone
    /// and nothing could be decided, the cause is not in the rows: they are
    /// handed back without counting the attempt, and the error returned.
    pub async fn decide(&self, batch: &ClaimedBatch) -> Result<Decided, DecideError> {
        let mut decided = Decided::default();
        let mut decided_any = false;
        let mut failing: Vec<(QueueId, DecideError)> = Vec::new();
        let mut parts = vec![batch.ids.clone()];
        while let Some(part) = parts.pop() {
            if part.is_empty() {
                continue;
            }
            match self.decide_part(batch, &part).await {
                Ok(d) => {
                    decided_any |= d.succeeded + d.failed > 0;
                    decided += d;
                }
                Err(e) if e.is_caused_by_rows() && part.len() > 1 => {
                    tracing::warn!(
                        error = format!("{e:#}"),
                        rows = part.len(),
                        "deciding rows failed; splitting them"
                    );
                    let (first, second) = part.split_at(part.len() / 2);
                    // First half first: queue order is kept.
                    parts.push(second.to_vec());
                    parts.push(first.to_vec());
                }
                Err(e) if e.is_caused_by_rows() => failing.extend(part.first().map(|&id| (id, e))),
                Err(e) => return Err(e),
            }
        }
        if failing.is_empty() {
            return Ok(decided);
        }
        let config = self.config();
        let mut conn = self.pool.acquire().await?;
        // Several rows failing alone while nothing could be decided: the
        // fault is the database's, not theirs. One failing row (alone, or
        // beside rows that only waited behind it) is taken to be at fault.
        if !decided_any && failing.len() > 1 {
            let ids: Vec<QueueId> = failing.iter().map(|(id, _)| *id).collect();
            set_aside::hand_back_uncounted(&mut conn, &ids, batch.token).await?;
            let (_, cause) = failing.swap_remove(0);
            return Err(cause);
        }
        for (id, cause) in failing {
            let outcome =
                set_aside::failed_attempt(&mut conn, id, batch.token, &cause, config.max_attempts)
                    .await?;
            self.metrics.set_aside(outcome);
            decided += outcome;
        }
        Ok(decided)
    }

    /// Decides some of a batch's rows in one transaction, retrying deadlocks
    /// and lock-wait timeouts with jittered backoff (each attempt starts from
    /// a clean rollback).
    pub(crate) async fn decide_part(
        &self,
        batch: &ClaimedBatch,
        ids: &[QueueId],
    ) -> Result<Decided, DecideError> {
        let mut attempt = 1;
        loop {
            let mut conn = self.connections.take().await?;
            let result = decide::batch(&mut conn, ids, batch.token, DEFER_FOR).await;
            // A transaction that failed was rolled back; the connection is
            // kept only when nothing went wrong on it.
            if result.is_ok() {
                self.connections.keep(conn);
            }
            match result {
                Ok(report) => {
                    self.record(batch, &report);
                    return Ok(report.decided);
                }
                Err(e) if e.is_transient() && attempt < DECIDE_ATTEMPTS => {
                    tracing::debug!(error = %e, attempt, "transient conflict while deciding; retrying");
                    tokio::time::sleep(random::jitter(Duration::from_millis(1 << attempt), 1.0))
                        .await;
                    attempt += 1;
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// One claim-and-decide cycle: the deterministic entry point tests use.
    pub async fn process_once(&self) -> anyhow::Result<Cycle> {
        let batch = self.claim_once().await?;
        let decided = self.decide(&batch).await?;
        if batch.reclaimed > 0 {
            tracing::info!(
                reclaimed = batch.reclaimed,
                "re-claimed rows whose lease had expired"
            );
        }
        Ok(Cycle {
            claimed: batch.ids.len(),
            reclaimed: batch.reclaimed,
            decided,
        })
    }

    /// A cycle under a lease, after which rows are claimed in the decision's
    /// transaction again (the rows that failed have been split by then).
    pub(crate) async fn leased_cycle(
        &self,
        prefetched: Option<ClaimedBatch>,
        config: WorkerConfig,
    ) -> anyhow::Result<(Cycle, Option<Ahead>)> {
        let (cycle, next) = self.pipelined_cycle(prefetched, config).await?;
        self.careful.store(false, Ordering::Relaxed);
        Ok((cycle, next.map(Ahead::Leased)))
    }
}
