//! Deciding claimed requests. `batch` decides a whole batch in a few
//! set-based statements and one commit; `per_request` is the original's
//! one-transaction-per-request algorithm, kept as the benchmark baseline.

use std::collections::HashSet;
use std::time::SystemTime;

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

/// Decides the claimed rows in one transaction: for each seat the earliest
/// request is the candidate; it wins if the seat is AVAILABLE, every other
/// request for the seat fails with SEAT_TAKEN.
pub async fn batch(
    conn: &mut MySqlConnection,
    ids: &[QueueId],
    token: u64,
) -> Result<Report, DecideError> {
    let lock_started = SystemTime::now();
    let mut tx = conn.begin().await?;
    let now = db::now();
    let rows = queue::lock_leased(&mut tx, ids, token).await?;
    let lock = (lock_started, SystemTime::now());

    let mut seen = HashSet::with_capacity(rows.len());
    let (candidates, mut failed): (Vec<_>, Vec<_>) =
        rows.iter().partition(|r| seen.insert(r.seat_id));
    let seats_started = SystemTime::now();
    let mut wanted: Vec<SeatId> = candidates.iter().map(|r| r.seat_id).collect();
    wanted.sort_unstable();
    let taken: HashSet<SeatId> = seats::lock_available(&mut tx, &wanted)
        .await?
        .into_iter()
        .collect();
    let (winners, outbid): (Vec<_>, Vec<_>) = candidates
        .into_iter()
        .partition(|r| taken.contains(&r.seat_id));
    failed.extend(outbid);

    let winner_ids: Vec<QueueId> = winners.iter().map(|r| r.id).collect();
    let failed_ids: Vec<QueueId> = failed.iter().map(|r| r.id).collect();
    let taken: Vec<SeatId> = winners.iter().map(|r| r.seat_id).collect();
    let reserved = seats::mark_reserved(&mut tx, &taken, now).await?;
    let seats_done = (seats_started, SystemTime::now());
    let inserted = reservations::insert_for_requests(&mut tx, &winner_ids, now).await?;
    let insert = (seats_done.1, SystemTime::now());
    let succeeded = queue::mark_succeeded(&mut tx, &winner_ids, token, now).await?;
    let refused =
        queue::mark_failed(&mut tx, &failed_ids, token, FailureReason::SeatTaken, now).await?;
    let events = outbox::record_succeeded(&mut tx, &winner_ids, now).await?;
    let mark = (insert.1, SystemTime::now());
    // Every statement must have touched exactly the rows decided above; any
    // difference means the model above is wrong, and nothing is committed.
    let expected = winner_ids.len() as u64;
    let consistent = reserved == expected
        && inserted == expected
        && succeeded == expected
        && events == expected
        && refused == failed_ids.len() as u64;
    if !consistent {
        return Err(DecideError::Invariant(anyhow::anyhow!(
            "batch bookkeeping mismatch: {reserved} seats, {inserted} reservations, {succeeded} successes, \
             {events} events for {expected} winners; {refused} of {} failures",
            failed_ids.len()
        )));
    }
    tx.commit().await?;
    let commit = (mark.1, SystemTime::now());
    let won: HashSet<QueueId> = winner_ids.iter().copied().collect();
    Ok(Report {
        decided: Decided {
            succeeded: winner_ids.len(),
            failed: failed_ids.len(),
            lost: ids.len() - rows.len(),
        },
        rows: rows
            .into_iter()
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
}
