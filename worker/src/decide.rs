//! Deciding claimed requests: a whole batch in a few set-based statements
//! and one commit.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, SystemTime};

use chrono::{DateTime, Utc};
use sqlx::pool::PoolConnection;
use sqlx::{MySql, MySqlConnection, MySqlPool};
use ticket_core::db::queue::{Fence, TraceContext};
use ticket_core::db::whole::Whole;
use ticket_core::db::{self, outbox, queue, reservations, seats};
use ticket_core::domain::{ConcertId, FailureReason, QueueId, SeatId};

mod batch_plan;
mod pools;
use batch_plan::*;

/// What deciding a batch did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Decided {
    pub succeeded: usize,
    pub failed: usize,
    /// Rows no longer under our lease (another worker re-claimed them).
    pub lease_lost: usize,
    /// Rows handed back undecided: an earlier request for their seat was
    /// still open in another worker's hands, or their attempt failed.
    pub deferred: usize,
    /// Rows set aside as FAILED (PROCESSING_FAILED) after their last attempt.
    pub dead_lettered: usize,
}

impl std::ops::AddAssign for Decided {
    fn add_assign(&mut self, other: Self) {
        self.succeeded += other.succeeded;
        self.failed += other.failed;
        self.lease_lost += other.lease_lost;
        self.deferred += other.deferred;
        self.dead_lettered += other.dead_lettered;
    }
}

/// One decided row, for its trace and the latency metric.
#[derive(Debug, Clone)]
pub struct RowDecision {
    pub id: QueueId,
    pub concert_id: ConcertId,
    pub seat_id: SeatId,
    pub succeeded: bool,
    pub requested_at: DateTime<Utc>,
    pub trace: TraceContext,
}

/// When each step of a batch decision ran (start, end).
#[derive(Debug, Clone, Copy)]
pub struct Phases {
    pub lock: (SystemTime, SystemTime),
    /// Locking the wanted seats and marking the winners' RESERVED.
    pub seats: (SystemTime, SystemTime),
    pub insert: (SystemTime, SystemTime),
    /// Marking the queue rows and writing the outbox events.
    pub mark: (SystemTime, SystemTime),
    pub commit: (SystemTime, SystemTime),
}

/// What a batch decision did, row by row.
#[derive(Debug, Clone)]
pub struct Report {
    pub decided: Decided,
    pub rows: Vec<RowDecision>,
    pub phases: Option<Phases>,
}

/// Decides the claimed rows in one transaction, all or nothing per request:
/// in line order, a request wins if every seat it names is free (no live
/// claim; a hold that has ended is none) and not taken by an earlier request
/// of the batch; else it fails with SEAT_TAKEN and takes nothing, and the
/// seats it did not lose stay free for the requests behind it. First come,
/// first served across workers: while an earlier request for one of its
/// seats is still open elsewhere (another worker's batch, another part of a
/// split batch), a request is handed back, due again after `defer_for`, and
/// so is any later request of the batch sharing a seat with it.
///
/// A won request of a concert with holds is HELD until now + its hold;
/// without holds it is CONFIRMED at once, as the original flow. A request of
/// a sale that has not opened yet (its opening moved, or the API's clock ran
/// ahead) is handed back until the opening: nothing is decided before it.
pub async fn batch<C: db::whole::Held>(
    conn: C,
    ids: &[QueueId],
    token: u64,
    defer_for: Duration,
) -> Result<Report, DecideError> {
    let lock_started = SystemTime::now();
    let fence = Fence::Lease(token);
    let mut tx = Whole::begin(conn).await?;
    let decided = async {
        let locked = queue::lock_leased(&mut tx, ids, fence).await?;
        let lock = (lock_started, SystemTime::now());
        decide_rows(&mut tx, ids.len(), locked, fence, defer_for, lock).await
    }
    .await;
    finish(tx, decided).await
}

/// Commits a decision that went through (and times its commit), rolls back
/// one that did not.
async fn finish<C: db::whole::Held>(
    tx: Whole<C>,
    decided: Result<Report, DecideError>,
) -> Result<Report, DecideError> {
    let mut report = tx.end(decided).await?;
    if let Some(phases) = &mut report.phases {
        phases.commit.1 = SystemTime::now();
    }
    Ok(report)
}

/// Rows claimed in a transaction that stays open for their decision (see
/// [`claim`] and [`decide_claimed`]).
pub struct Claimed {
    tx: Whole<PoolConnection<MySql>>,
    ids: Vec<QueueId>,
    rows: Vec<queue::LeasedRow>,
    /// When the claim began and had its rows.
    lock: (SystemTime, SystemTime),
}

impl Claimed {
    /// In id order.
    pub fn ids(&self) -> &[QueueId] {
        &self.ids
    }

    pub fn claim_phase(&self) -> (SystemTime, SystemTime) {
        self.lock
    }

    /// Gives the rows back undecided: the transaction rolls back.
    pub async fn release(self) -> Result<(), sqlx::Error> {
        self.tx.rollback().await
    }
}

/// Locks the first `limit` PENDING rows in line that are due, with their
/// seats, in a transaction that stays open for their decision: no lease, no
/// PROCESSING status and no commit of the claim alone. Rows another
/// transaction holds are skipped. `None` when no row was due.
pub async fn claim(pool: &MySqlPool, limit: u32) -> Result<Option<Claimed>, DecideError> {
    let started = SystemTime::now();
    let mut tx = Whole::begin(pool.acquire().await?).await?;
    let ids = queue::lock_pending(&mut tx, limit).await?;
    if ids.is_empty() {
        tx.commit().await?;
        return Ok(None);
    }
    let rows = queue::lock_leased(&mut tx, &ids, Fence::InTransaction).await?;
    Ok(Some(Claimed {
        tx,
        ids,
        rows,
        lock: (started, SystemTime::now()),
    }))
}

/// Decides claimed rows in their claim's transaction, as [`batch`] does
/// rows claimed under a lease, and commits. Planned only now, so rows
/// claimed while an earlier batch was being decided see its outcome.
pub async fn decide_claimed(claimed: Claimed, defer_for: Duration) -> Result<Report, DecideError> {
    let Claimed {
        mut tx,
        ids,
        rows,
        lock,
    } = claimed;
    let decided = decide_rows(
        &mut tx,
        ids.len(),
        rows,
        Fence::InTransaction,
        defer_for,
        lock,
    )
    .await;
    finish(tx, decided).await
}

/// The decision of `locked`, the rows of the `wanted` that `fence` says are
/// still ours, in the caller's transaction `tx`, which commits it.
async fn decide_rows(
    tx: &mut MySqlConnection,
    wanted: usize,
    locked: Vec<queue::LeasedRow>,
    fence: Fence,
    defer_for: Duration,
    lock: (SystemTime, SystemTime),
) -> Result<Report, DecideError> {
    let now = db::now(tx).await?;
    let lease_lost = wanted - locked.len();
    // A cancelled concert's requests fail, before or after its opening.
    let (cancelled, locked): (Vec<_>, Vec<_>) =
        locked.into_iter().partition(|row| row.concert_cancelled);
    let cancelled: Vec<QueueId> = cancelled.iter().map(|row| row.id).collect();
    let failed_cancelled =
        queue::mark_failed(tx, &cancelled, fence, FailureReason::ConcertCancelled, now).await?;
    let (rows, early): (Vec<_>, Vec<_>) = locked
        .into_iter()
        .partition(|row| row.opens_at.is_none_or(|at| at <= now));
    let mut not_open: HashMap<DateTime<Utc>, Vec<QueueId>> = HashMap::new();
    for row in &early {
        if let Some(at) = row.opens_at {
            not_open.entry(at).or_default().push(row.id);
        }
    }
    let mut held_until_open = 0;
    for (opens_at, ids) in &not_open {
        held_until_open +=
            queue::hand_back(tx, ids, fence, *opens_at, queue::Attempt::Refunded, now).await?;
    }

    let seats_started = SystemTime::now();
    let plan = plan(tx, &rows, now).await?;
    reservations::end_expired_claims(tx, &plan.reclaimed).await?;
    let mut marked = 0;
    for (status, until, seats) in plan.seat_changes() {
        marked += seats::mark(tx, &seats, status, until, now).await?;
    }
    let seats_done = (seats_started, SystemTime::now());
    let reservation_ids =
        reservations::insert_many(tx, &plan.reservations, &plan.prices, now).await?;
    let insert = (seats_done.1, SystemTime::now());
    let winners: Vec<QueueId> = plan.reservations.iter().map(|r| r.queue_id).collect();
    let succeeded = queue::mark_succeeded(tx, &winners, fence, now).await?;
    let mut refused = 0;
    for (reason, ids) in plan.refusals() {
        refused += queue::mark_failed(tx, ids, fence, reason, now).await?;
    }
    let retry_at = now + chrono::Duration::from_std(defer_for).unwrap_or_default();
    let deferred = queue::hand_back(
        tx,
        &plan.deferred,
        fence,
        retry_at,
        queue::Attempt::Refunded,
        now,
    )
    .await?;
    let events = plan.events(&reservation_ids, now);
    let recorded = outbox::record(tx, &events, now).await?;
    let mark = (insert.1, SystemTime::now());
    // Every statement must have touched exactly the rows decided above; any
    // difference means the model above is wrong, and nothing is committed.
    let expected = winners.len() as u64;
    let won_seats = plan.won_seats() as u64;
    let consistent = marked == won_seats
        && held_until_open == early.len() as u64
        && reservation_ids.len() as u64 == expected
        && succeeded == expected
        && recorded == expected
        && refused == plan.refused() as u64
        && failed_cancelled == cancelled.len() as u64
        && deferred == plan.deferred.len() as u64;
    if !consistent {
        return Err(DecideError::Invariant(anyhow::anyhow!(
            "batch bookkeeping mismatch: {marked} of {won_seats} seats, {} reservations, {succeeded} successes, \
             {recorded} events for {expected} winners; {refused} of {} failures; {deferred} of {} deferrals",
            reservation_ids.len(),
            plan.refused(),
            plan.deferred.len()
        )));
    }
    // The commit's end is set once the caller has committed.
    let commit = (mark.1, mark.1);
    let won: HashSet<QueueId> = winners.iter().copied().collect();
    let held_back: HashSet<QueueId> = plan.deferred.iter().copied().collect();
    Ok(Report {
        decided: Decided {
            succeeded: winners.len(),
            failed: plan.refused() + cancelled.len(),
            lease_lost,
            deferred: plan.deferred.len() + early.len(),
            dead_lettered: 0,
        },
        rows: rows
            .into_iter()
            .filter(|row| !held_back.contains(&row.id))
            .map(|row| RowDecision {
                succeeded: won.contains(&row.id),
                id: row.id,
                concert_id: row.concert_id,
                seat_id: row.seats.first().copied().unwrap_or(SeatId(0)),
                requested_at: row.created_at,
                trace: TraceContext {
                    traceparent: row.traceparent,
                    tracestate: row.tracestate,
                },
            })
            .collect(),
        phases: Some(Phases {
            lock,
            seats: seats_done,
            insert,
            mark,
            commit,
        }),
    })
}

#[derive(Debug, thiserror::Error)]
pub enum DecideError {
    #[error(transparent)]
    Database(#[from] sqlx::Error),
    #[error(transparent)]
    Invariant(#[from] anyhow::Error),
}

impl DecideError {
    /// Deadlocks and lock-wait timeouts: the same decision may simply be
    /// tried again (everything was rolled back).
    pub fn is_transient(&self) -> bool {
        matches!(self, Self::Database(e) if db::is_transient_conflict(e))
    }

    /// A failure that trying again cannot cure and that is not the
    /// database's absence: something in the rows themselves (a constraint,
    /// a trigger, data the model does not expect).
    pub fn is_caused_by_rows(&self) -> bool {
        match self {
            Self::Invariant(_) => true,
            Self::Database(e) => {
                e.as_database_error().is_some()
                    && !db::is_transient_conflict(e)
                    && !db::is_unavailable(e)
            }
        }
    }
}
