//! Deciding claimed requests. `batch` decides a whole batch in a few
//! set-based statements and one commit; `per_request` is the original's
//! one-transaction-per-request algorithm, kept as the benchmark baseline.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, SystemTime};

use chrono::{DateTime, Utc};
use sqlx::{Connection, MySqlConnection};
use ticket_core::db::queue::TraceContext;
use ticket_core::db::{self, outbox, queue, reservations, seats};
use ticket_core::domain::{FailureReason, QueueId, SeatId};

/// What deciding a batch did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Decided {
    pub succeeded: usize,
    pub failed: usize,
    /// Rows no longer under our lease (another worker re-claimed them).
    pub lost: usize,
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
        self.lost += other.lost;
        self.deferred += other.deferred;
        self.dead_lettered += other.dead_lettered;
    }
}

/// One decided row, for its trace and the latency metric.
#[derive(Debug, Clone)]
pub struct RowDecision {
    pub id: QueueId,
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
    /// Set by the set-based decision; the per-request baseline has none.
    pub phases: Option<Phases>,
}

/// Decides the claimed rows in one transaction. For each seat our earliest
/// request is the candidate. It wins if the seat is AVAILABLE, has no
/// CONFIRMED reservation, and no earlier request for it is still open
/// elsewhere (first come, first served across workers); every other request
/// for the seat fails with SEAT_TAKEN. While an earlier request is open (in
/// another worker's batch, or in another part of ours), all of ours for that
/// seat are handed back, due again after `defer_for`.
pub async fn batch(
    conn: &mut MySqlConnection,
    ids: &[QueueId],
    token: u64,
    defer_for: Duration,
) -> Result<Report, DecideError> {
    let lock_started = SystemTime::now();
    let mut tx = conn.begin().await?;
    let now = db::now();
    let rows = queue::lock_leased(&mut tx, ids, token).await?;
    let lock = (lock_started, SystemTime::now());

    let seats_started = SystemTime::now();
    let plan = plan(&mut tx, &rows).await?;
    let reserved = seats::mark_reserved(&mut tx, &plan.won_seats, now).await?;
    let seats_done = (seats_started, SystemTime::now());
    let inserted = reservations::insert_for_requests(&mut tx, &plan.winners, now).await?;
    let insert = (seats_done.1, SystemTime::now());
    let succeeded = queue::mark_succeeded(&mut tx, &plan.winners, token, now).await?;
    let refused =
        queue::mark_failed(&mut tx, &plan.failed, token, FailureReason::SeatTaken, now).await?;
    let retry_at = now + chrono::Duration::from_std(defer_for).unwrap_or_default();
    let deferred = queue::hand_back(
        &mut tx,
        &plan.deferred,
        token,
        retry_at,
        queue::Attempt::Refunded,
        now,
    )
    .await?;
    let events = outbox::record_succeeded(&mut tx, &plan.winners, now).await?;
    let mark = (insert.1, SystemTime::now());
    // Every statement must have touched exactly the rows decided above; any
    // difference means the model above is wrong, and nothing is committed.
    let expected = plan.winners.len() as u64;
    let consistent = reserved == expected
        && inserted == expected
        && succeeded == expected
        && events == expected
        && refused == plan.failed.len() as u64
        && deferred == plan.deferred.len() as u64;
    if !consistent {
        return Err(DecideError::Invariant(anyhow::anyhow!(
            "batch bookkeeping mismatch: {reserved} seats, {inserted} reservations, {succeeded} successes, \
             {events} events for {expected} winners; {refused} of {} failures; {deferred} of {} deferrals",
            plan.failed.len(),
            plan.deferred.len()
        )));
    }
    tx.commit().await?;
    let commit = (mark.1, SystemTime::now());
    let won: HashSet<QueueId> = plan.winners.iter().copied().collect();
    let held_back: HashSet<QueueId> = plan.deferred.iter().copied().collect();
    Ok(Report {
        decided: Decided {
            succeeded: plan.winners.len(),
            failed: plan.failed.len(),
            lost: ids.len() - rows.len(),
            deferred: plan.deferred.len(),
            dead_lettered: 0,
        },
        rows: rows
            .into_iter()
            .filter(|row| !held_back.contains(&row.id))
            .map(|row| RowDecision {
                succeeded: won.contains(&row.id),
                id: row.id,
                seat_id: row.seat_id,
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

/// Who gets what in a batch, decided under the locks of the seats won.
#[derive(Debug, Default)]
struct Plan {
    winners: Vec<QueueId>,
    won_seats: Vec<SeatId>,
    failed: Vec<QueueId>,
    deferred: Vec<QueueId>,
}

/// Locks the AVAILABLE seats our rows want (in id order, like every other
/// writer of seats) and decides each row's fate. `rows` are in queue order.
async fn plan(tx: &mut MySqlConnection, rows: &[queue::LeasedRow]) -> Result<Plan, sqlx::Error> {
    let mut candidate: HashMap<SeatId, QueueId> = HashMap::with_capacity(rows.len());
    for row in rows {
        candidate.entry(row.seat_id).or_insert(row.id);
    }
    let mut wanted: Vec<SeatId> = candidate.keys().copied().collect();
    wanted.sort_unstable();
    let latest = candidate.values().copied().max().unwrap_or(QueueId(0));
    let available = seats::lock_available(tx, &wanted, latest).await?;
    let mut free = HashSet::with_capacity(available.len());
    let mut blocked = HashSet::new();
    for s in available {
        if s.sold {
            tracing::warn!(
                seat = s.seat.0,
                "seat is AVAILABLE but has a CONFIRMED reservation; treated as taken"
            );
        } else if s.first_open.is_some_and(|first| first < candidate[&s.seat]) {
            blocked.insert(s.seat);
        } else {
            free.insert(s.seat);
        }
    }
    let mut plan = Plan::default();
    for row in rows {
        if blocked.contains(&row.seat_id) {
            plan.deferred.push(row.id);
        } else if free.contains(&row.seat_id) && candidate[&row.seat_id] == row.id {
            plan.winners.push(row.id);
            plan.won_seats.push(row.seat_id);
        } else {
            plan.failed.push(row.id);
        }
    }
    plan.won_seats.sort_unstable();
    Ok(plan)
}

/// The original algorithm: one transaction per request, in queue order.
pub async fn per_request(
    conn: &mut MySqlConnection,
    ids: &[QueueId],
    token: u64,
) -> Result<Report, DecideError> {
    let mut decided = Decided::default();
    let mut decisions = Vec::with_capacity(ids.len());
    for &id in ids {
        let mut tx = conn.begin().await?;
        let now = db::now();
        let Some(row) = queue::lock_leased(&mut tx, &[id], token).await?.pop() else {
            decided.lost += 1;
            continue;
        };
        let succeeded = seats::reserve_if_available(&mut tx, row.seat_id, now).await?;
        if succeeded {
            reservations::insert_confirmed(&mut tx, row.user_id, row.seat_id, now).await?;
            queue::mark_succeeded(&mut tx, &[id], token, now).await?;
            outbox::record_succeeded(&mut tx, &[id], now).await?;
            decided.succeeded += 1;
        } else {
            queue::mark_failed(&mut tx, &[id], token, FailureReason::SeatTaken, now).await?;
            decided.failed += 1;
        }
        tx.commit().await?;
        decisions.push(RowDecision {
            id,
            seat_id: row.seat_id,
            succeeded,
            requested_at: row.created_at,
            trace: TraceContext {
                traceparent: row.traceparent,
                tracestate: row.tracestate,
            },
        });
    }
    Ok(Report {
        decided,
        rows: decisions,
        phases: None,
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
