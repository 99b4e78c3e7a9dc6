//! The reservation queue worker. Any number of them run side by side with no
//! coordinator: each claims rows with `FOR UPDATE SKIP LOCKED` under a lease,
//! decides them, and fences every write with the lease token.

pub mod config;
pub mod decide;
mod every;
pub mod health;
pub mod holds;
pub mod live_config;
pub mod observability;
pub mod opening;
mod random;
pub mod rates;
pub mod relay;
pub mod retention;
mod set_aside;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime};

use sqlx::{Connection, MySqlPool};
use ticket_core::db::kept::KeptConnections;
use ticket_core::db::{self, queue};
use ticket_core::domain::QueueId;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

pub use config::{Cli, Mode, WorkerConfig};
pub use decide::{DecideError, Decided};
pub use observability::WorkerMetrics;

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
enum Ahead {
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

pub struct Worker {
    pool: MySqlPool,
    /// One for claiming, one for deciding (they overlap).
    connections: KeptConnections,
    heartbeat: health::Heartbeat,
    owner: String,
    mode: Mode,
    config: watch::Receiver<WorkerConfig>,
    metrics: Arc<WorkerMetrics>,
    /// Claims look for expired leases now and then.
    expired_look: every::Every,
    /// Sales that have opened are looked for now and then.
    opening_look: every::Every,
    rates: rates::DecisionRates,
    publishing: every::Every,
    /// Rows failed for a reason in them: the next cycle claims under a
    /// lease, so that their batch can be split and their attempts counted.
    careful: AtomicBool,
}

/// The now-and-then work due at one claim.
#[derive(Debug, Clone, Copy)]
struct Errands {
    admit_opened: bool,
    publish_rates: bool,
}

impl Errands {
    fn any(self) -> bool {
        self.admit_opened || self.publish_rates
    }
}

/// How often a claim looks for rows whose lease ran out: a crashed worker's
/// rows wait at most this much longer than their lease.
const EXPIRED_LOOK_EVERY: Duration = Duration::from_secs(1);

/// Pause between cycles while requests keep arriving (but no full batch).
const BUSY_PAUSE: Duration = Duration::from_millis(2);

/// Attempts at claiming or deciding one batch when deadlocks or lock waits
/// get in the way (each attempt starts from a clean rollback).
const DECIDE_ATTEMPTS: u32 = 5;

/// How long a request waits when an earlier request for its seat is still
/// open in another worker's hands: about one batch decision.
const DEFER_FOR: Duration = Duration::from_millis(20);

impl Worker {
    /// `config` is read before every cycle, so a new value applies from the
    /// next batch on without a restart.
    pub fn new(
        pool: MySqlPool,
        owner: impl Into<String>,
        mode: Mode,
        config: watch::Receiver<WorkerConfig>,
    ) -> Self {
        // A worker that was just made is not stuck: its heartbeat starts now.
        let heartbeat = health::Heartbeat::default();
        heartbeat.beat();
        Self {
            connections: KeptConnections::new(pool.clone(), 2),
            pool,
            heartbeat,
            owner: owner.into(),
            mode,
            config,
            metrics: WorkerMetrics::new(),
            expired_look: every::Every::new(EXPIRED_LOOK_EVERY),
            opening_look: every::Every::new(opening::LOOK_EVERY),
            rates: rates::DecisionRates::default(),
            publishing: every::Every::new(rates::PUBLISH_EVERY),
            careful: AtomicBool::new(false),
        }
    }

    /// A worker with a fixed configuration.
    pub fn with_config(
        pool: MySqlPool,
        owner: impl Into<String>,
        mode: Mode,
        config: WorkerConfig,
    ) -> Self {
        let (sender, receiver) = watch::channel(config);
        // Nobody will change it; the receiver keeps the last value anyway.
        drop(sender);
        Self::new(pool, owner, mode, receiver)
    }

    /// Beaten on every turn of the claim loop (for the liveness endpoint).
    pub fn heartbeat(&self) -> health::Heartbeat {
        self.heartbeat.clone()
    }

    /// What `/metrics` serves.
    pub fn metrics(&self) -> Arc<WorkerMetrics> {
        self.metrics.clone()
    }

    pub fn config(&self) -> WorkerConfig {
        *self.config.borrow()
    }

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

    async fn try_claim(&self) -> Result<ClaimedBatch, sqlx::Error> {
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
        let mut tx = conn.begin().await?;
        let claim = queue::claim(
            &mut tx,
            &lease,
            config.batch_size,
            config.max_attempts,
            look_for_expired,
            now,
        )
        .await?;
        tx.commit().await?;
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

    /// What a claim does besides claiming, now and then, that is due now
    /// (asking marks it done for one period).
    fn errands_due(&self) -> Errands {
        Errands {
            admit_opened: self.opening_look.due(),
            publish_rates: self.publishing.due(),
        }
    }

    /// Admits the lines of sales that have opened, publishes the decision
    /// rates: those of `errands`.
    async fn run_errands(
        &self,
        conn: &mut sqlx::MySqlConnection,
        errands: Errands,
        now: chrono::DateTime<chrono::Utc>,
    ) -> Result<(), sqlx::Error> {
        if errands.admit_opened {
            opening::admit_opened(conn, now).await?;
        }
        if errands.publish_rates {
            self.rates.publish(conn, &self.owner, now).await?;
        }
        Ok(())
    }

    /// Claims a batch to be decided in the claim's own transaction (see
    /// [`decide::claim`]), after the now-and-then work of a claim, which
    /// alone needs a kept connection.
    async fn claim_in_decision(&self) -> Result<Option<decide::Claimed>, DecideError> {
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
    async fn decide_in_claim(&self, claimed: decide::Claimed) -> Result<Cycle, DecideError> {
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
    async fn pipelined_in_decision(
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

    /// A decided batch's metrics, rates and trace.
    fn record(&self, batch: &ClaimedBatch, report: &decide::Report) {
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

    /// Whether this cycle claims and decides in one transaction: in batch
    /// mode, unless rows just failed for a reason in them, or some lease ran
    /// out (a worker died holding rows claimed under a lease): those rows
    /// are claimed under a lease, as only that claim takes expired rows.
    async fn claims_in_decision(&self) -> Result<bool, sqlx::Error> {
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
    async fn decide_part(
        &self,
        batch: &ClaimedBatch,
        ids: &[QueueId],
    ) -> Result<Decided, DecideError> {
        let mut attempt = 1;
        loop {
            let mut conn = self.connections.take().await?;
            let result = match self.mode {
                Mode::Batch | Mode::LeasedBatch => {
                    decide::batch(&mut conn, ids, batch.token, DEFER_FOR).await
                }
                Mode::PerRequest => {
                    decide::per_request(&mut conn, ids, batch.token, DEFER_FOR).await
                }
            };
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

    /// One cycle of the loop: claimed and decided in one transaction when it
    /// can be, else under a lease (see [`Self::pipelined_cycle`]).
    async fn cycle(
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

    /// A cycle under a lease, after which rows are claimed in the decision's
    /// transaction again (the rows that failed have been split by then).
    async fn leased_cycle(
        &self,
        prefetched: Option<ClaimedBatch>,
        config: WorkerConfig,
    ) -> anyhow::Result<(Cycle, Option<Ahead>)> {
        let (cycle, next) = self.pipelined_cycle(prefetched, config).await?;
        self.careful.store(false, Ordering::Relaxed);
        Ok((cycle, next.map(Ahead::Leased)))
    }

    /// A cycle under a lease. After a full batch the next one is claimed while
    /// this one is decided: a single worker is bound by round trips, not by
    /// CPU, and the two chains overlap. Batches are still decided one after
    /// the other, in queue order.
    async fn pipelined_cycle(
        &self,
        prefetched: Option<ClaimedBatch>,
        config: WorkerConfig,
    ) -> anyhow::Result<(Cycle, Option<ClaimedBatch>)> {
        let batch = match prefetched {
            Some(batch) => batch,
            None => self.claim_once().await?,
        };
        let full = self.mode != Mode::PerRequest && batch.ids.len() >= config.batch_size as usize;
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

    /// Claims and decides until `shutdown` is cancelled. Cancellation is
    /// checked only between cycles, so a batch in progress always finishes.
    /// After a full batch the next claim follows at once, after a partial one
    /// within 2 ms; only an empty queue is polled every poll interval (with
    /// jitter). Errors back off, up to 5 s.
    pub async fn run(&self, shutdown: CancellationToken) {
        let mut failures: u32 = 0;
        let mut prefetched: Option<Ahead> = None;
        tracing::info!(owner = %self.owner, mode = ?self.mode, config = ?self.config(), "worker started");
        while !shutdown.is_cancelled() {
            self.heartbeat.beat();
            let config = self.config();
            let pause = match self.cycle(prefetched.take(), config).await {
                Ok((cycle, next)) => {
                    prefetched = next;
                    if failures > 0 {
                        tracing::info!("worker recovered");
                    }
                    failures = 0;
                    if cycle.claimed > 0 {
                        tracing::debug!(?cycle, "batch decided");
                    }
                    match self.mode {
                        // The original's fixed schedule, kept as the baseline.
                        Mode::PerRequest => config.poll_interval,
                        _ if cycle.claimed >= config.batch_size as usize => continue,
                        // Work is arriving: claim again after a breath, so a
                        // request waits for one short cycle, not a poll interval.
                        _ if cycle.claimed > 0 => BUSY_PAUSE,
                        _ => random::jitter(config.poll_interval, 0.2),
                    }
                }
                Err(e) => {
                    failures += 1;
                    if failures == 1 || failures.is_power_of_two() {
                        tracing::warn!(
                            error = format!("{e:#}"),
                            failures,
                            "cycle failed; backing off"
                        );
                    }
                    random::jitter(
                        Duration::from_millis(50 << failures.min(6)).min(Duration::from_secs(5)),
                        0.5,
                    )
                }
            };
            tokio::select! {
                () = shutdown.cancelled() => break,
                () = tokio::time::sleep(pause) => {}
            }
        }
        // Rows claimed ahead are ours: decide them rather than leave them to
        // wait out their lease, or another worker to claim them again.
        match prefetched {
            Some(Ahead::Leased(batch)) => {
                if let Err(e) = self.decide(&batch).await {
                    tracing::warn!(error = %e, "could not decide the rows claimed ahead; their lease will expire");
                }
            }
            Some(Ahead::InDecision(claimed)) => {
                if let Err(e) = self.decide_in_claim(claimed).await {
                    tracing::warn!(error = %e, "could not decide the rows claimed ahead; they are open again");
                }
            }
            None => {}
        }
        tracing::info!("worker stopped");
    }
}
