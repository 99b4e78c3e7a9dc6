//! The reservation queue: enqueue, claim under a lease, and fenced completion.

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Utc};
use sqlx::{AssertSqlSafe, MySqlConnection};
use tracing::Instrument as _;

use super::{bind_ids, bind_ids_exec, in_placeholders};
use crate::domain::{
    FailureReason, IdempotencyKey, QueueId, QueueStatus, ReservationId, SeatId, UserId,
};

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct QueueRow {
    pub id: QueueId,
    pub user_id: UserId,
    pub seat_id: SeatId,
    pub status: QueueStatus,
    pub reservation_id: Option<ReservationId>,
    pub reason: Option<String>,
    pub created_at: DateTime<Utc>,
    pub decided_at: Option<DateTime<Utc>>,
}

const COLUMNS: &str =
    "id, user_id, seat_id, status, reservation_id, reason, created_at, decided_at";

/// How many claims of one request may end without a decision before the
/// request is set aside (the workers' TICKET_WORKER_MAX_ATTEMPTS default).
pub const DEFAULT_MAX_ATTEMPTS: u32 = 5;

/// W3C trace context of the request that enqueued a row.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TraceContext {
    pub traceparent: Option<String>,
    pub tracestate: Option<String>,
}

/// Adds a PENDING request. Fails with a violation of `uq_queue_open_request`
/// when the user already has an open request for the seat, of
/// `uq_queue_idempotency` when the key was used before, and with a foreign
/// key error (1452) when the seat or user does not exist.
pub async fn enqueue(
    conn: &mut MySqlConnection,
    user: UserId,
    seat: SeatId,
    key: Option<&IdempotencyKey>,
    trace: &TraceContext,
    now: DateTime<Utc>,
) -> Result<QueueId, sqlx::Error> {
    async move {
        let done = sqlx::query(
            "INSERT INTO reservation_queue \
             (user_id, seat_id, status, idempotency_key, traceparent, tracestate, created_at, updated_at) \
             VALUES (?, ?, 'PENDING', ?, ?, ?, ?, ?)",
        )
        .bind(user)
        .bind(seat)
        .bind(key.map(IdempotencyKey::as_str))
        .bind(trace.traceparent.as_deref())
        .bind(trace.tracestate.as_deref())
        .bind(now.naive_utc())
        .bind(now.naive_utc())
        .execute(conn)
        .await?;
        Ok(QueueId(done.last_insert_id()))
    }
    .instrument(super::span("INSERT", "reservation_queue"))
    .await
}

/// One request of a group enqueued together.
#[derive(Debug, Clone)]
pub struct NewRequest {
    pub user: UserId,
    pub seat: SeatId,
    pub trace: TraceContext,
}

/// Hands out each group's `now`: the current time at the database's
/// precision, but never the same value twice in this process, so that a
/// group can tell its own rows from older ones by their `created_at`.
#[derive(Debug)]
pub struct GroupClock {
    last_micros: std::sync::atomic::AtomicI64,
}

impl Default for GroupClock {
    fn default() -> Self {
        Self::new()
    }
}

impl GroupClock {
    pub const fn new() -> Self {
        Self {
            last_micros: std::sync::atomic::AtomicI64::new(0),
        }
    }

    pub fn now(&self) -> DateTime<Utc> {
        use std::sync::atomic::Ordering;
        let wall = super::now().timestamp_micros();
        let mut last = self.last_micros.load(Ordering::Relaxed);
        loop {
            let next = wall.max(last + 1);
            match self.last_micros.compare_exchange_weak(
                last,
                next,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return DateTime::from_timestamp_micros(next).unwrap_or_else(super::now),
                Err(seen) => last = seen,
            }
        }
    }
}

/// How one request of a group fared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Queued(QueueId),
    /// The user already has this open request for the seat (an earlier
    /// click, or the same request twice in the group).
    Duplicate(QueueId),
    SeatNotFound,
    /// A still-valid token of an account deleted since.
    UserNotFound,
    /// Not written, and no reason found: an earlier request for the same
    /// seat was decided between the INSERT and its read-back. Enqueue it alone.
    Unsettled,
}

/// What [`enqueue_many`] did: each request's outcome, in the order given,
/// and how many open requests each of their users has now (these included).
#[derive(Debug, Default)]
pub struct Enqueued {
    pub outcomes: Vec<Outcome>,
    pub open_per_user: HashMap<UserId, u64>,
}

/// Takes back PENDING requests written in the caller's transaction (a user
/// over the open-request limit); returns how many were removed.
pub async fn withdraw(conn: &mut MySqlConnection, ids: &[QueueId]) -> Result<u64, sqlx::Error> {
    async move {
        let ids = super::queue_ids(ids);
        let delete = sqlx::query(AssertSqlSafe(format!(
            "DELETE FROM reservation_queue WHERE status = 'PENDING' AND id IN ({})",
            in_placeholders(ids.len())
        )));
        Ok(bind_ids_exec(delete, &ids)
            .execute(conn)
            .await?
            .rows_affected())
    }
    .instrument(super::span("DELETE", "reservation_queue"))
    .await
}

/// Adds many PENDING requests with one multi-row INSERT; call inside a
/// transaction. A request that cannot be written (a duplicate, an unknown
/// seat, a deleted user) is left out and reported in its outcome, and the
/// rest are written all the same.
///
/// Rows go in seat order, so the seat locks the foreign-key checks take come
/// in the same order as a deciding worker's (no lock cycle between them).
/// That order only matters between requests for different seats, which never
/// compete; requests for one seat keep their arrival order.
///
/// `INSERT IGNORE` skips exactly the rows that would break a unique or
/// foreign key (every value is bounded before it gets here, so nothing is
/// truncated). Ids are read back through the open-request key (user, seat);
/// a row found there is ours if it carries our `now`, so `now` must differ
/// from every other group's (see [`GroupClock`]). A duplicate written by
/// another process in the same microsecond would pass for ours: its caller
/// is then told the id of the request already in line, which is the right
/// request, with 201 instead of 409.
pub async fn enqueue_many(
    conn: &mut MySqlConnection,
    requests: &[NewRequest],
    now: DateTime<Utc>,
) -> Result<Enqueued, sqlx::Error> {
    async move {
        if requests.is_empty() {
            return Ok(Enqueued::default());
        }
        let mut order: Vec<usize> = (0..requests.len()).collect();
        order.sort_by_key(|&i| requests[i].seat);
        // The first of two identical requests in the group is written; the
        // second is its duplicate.
        let mut first_of: HashMap<(UserId, SeatId), usize> = HashMap::new();
        let mut written = Vec::with_capacity(order.len());
        for &i in &order {
            let r = &requests[i];
            if let std::collections::hash_map::Entry::Vacant(e) = first_of.entry((r.user, r.seat)) {
                e.insert(i);
                written.push(r);
            }
        }
        let mut insert = sqlx::QueryBuilder::new(
            "INSERT IGNORE INTO reservation_queue \
             (user_id, seat_id, status, traceparent, tracestate, created_at, updated_at) ",
        );
        insert.push_values(&written, |mut row, r| {
            row.push_bind(r.user)
                .push_bind(r.seat)
                .push_bind("PENDING")
                .push_bind(r.trace.traceparent.clone())
                .push_bind(r.trace.tracestate.clone())
                .push_bind(now.naive_utc())
                .push_bind(now.naive_utc());
        });
        insert.build().execute(&mut *conn).await?;

        let users: Vec<u64> = requests.iter().map(|r| r.user.0).collect();
        let open = open_requests_of(conn, &users).await?;
        let mut open_per_user: HashMap<UserId, u64> = HashMap::new();
        for (user, ..) in &open {
            *open_per_user.entry(*user).or_default() += 1;
        }
        let by_pair: HashMap<(UserId, SeatId), (QueueId, bool)> = open
            .into_iter()
            .map(|(u, s, id, created)| ((u, s), (id, created == now)))
            .collect();
        let missing: Vec<&NewRequest> = written
            .iter()
            .copied()
            .filter(|r| !by_pair.contains_key(&(r.user, r.seat)))
            .collect();
        let (seats, users) = if missing.is_empty() {
            (HashSet::new(), HashSet::new())
        } else {
            existing_seats_and_users(conn, &missing).await?
        };
        let settle = |r: &NewRequest| match by_pair.get(&(r.user, r.seat)) {
            Some(&(id, true)) => Outcome::Queued(id),
            Some(&(id, false)) => Outcome::Duplicate(id),
            None if !users.contains(&r.user) => Outcome::UserNotFound,
            None if !seats.contains(&r.seat) => Outcome::SeatNotFound,
            None => Outcome::Unsettled,
        };
        let outcomes = requests
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let first = first_of[&(r.user, r.seat)];
                match settle(&requests[first]) {
                    Outcome::Queued(id) | Outcome::Duplicate(id) if first != i => {
                        Outcome::Duplicate(id)
                    }
                    outcome => outcome,
                }
            })
            .collect();
        Ok(Enqueued {
            outcomes,
            open_per_user,
        })
    }
    .instrument(super::span("INSERT", "reservation_queue"))
    .await
}

/// Every open request of `users`: (user, seat, id, created_at).
async fn open_requests_of(
    conn: &mut MySqlConnection,
    users: &[u64],
) -> Result<Vec<(UserId, SeatId, QueueId, DateTime<Utc>)>, sqlx::Error> {
    let select = sqlx::query_as(AssertSqlSafe(format!(
        "SELECT user_id, seat_id, id, created_at FROM reservation_queue \
         WHERE open_seat_id IS NOT NULL AND user_id IN ({})",
        in_placeholders(users.len())
    )));
    bind_ids(select, users).fetch_all(conn).await
}

/// Which of the requests' seats and users exist.
async fn existing_seats_and_users(
    conn: &mut MySqlConnection,
    requests: &[&NewRequest],
) -> Result<(HashSet<SeatId>, HashSet<UserId>), sqlx::Error> {
    let seats: Vec<u64> = requests.iter().map(|r| r.seat.0).collect();
    let users: Vec<u64> = requests.iter().map(|r| r.user.0).collect();
    let select = sqlx::query_as(AssertSqlSafe(format!(
        "SELECT 0, id FROM seats WHERE id IN ({}) UNION ALL SELECT 1, id FROM users WHERE id IN ({})",
        in_placeholders(seats.len()),
        in_placeholders(users.len())
    )));
    let rows: Vec<(i64, u64)> = bind_ids(bind_ids(select, &seats), &users)
        .fetch_all(conn)
        .await?;
    let (seat_rows, user_rows): (Vec<_>, Vec<_>) =
        rows.into_iter().partition(|(kind, _)| *kind == 0);
    Ok((
        seat_rows.into_iter().map(|(_, id)| SeatId(id)).collect(),
        user_rows.into_iter().map(|(_, id)| UserId(id)).collect(),
    ))
}

/// The user's open request for the seat, if any (what a QUEUE_DUPLICATED
/// answer points to).
pub async fn find_open(
    conn: &mut MySqlConnection,
    user: UserId,
    seat: SeatId,
) -> Result<Option<QueueId>, sqlx::Error> {
    async move {
        let row: Option<(QueueId,)> = sqlx::query_as(
            "SELECT id FROM reservation_queue WHERE user_id = ? AND open_seat_id = ?",
        )
        .bind(user)
        .bind(seat)
        .fetch_optional(conn)
        .await?;
        Ok(row.map(|(id,)| id))
    }
    .instrument(super::span("SELECT", "reservation_queue"))
    .await
}

/// How many open (PENDING or PROCESSING) requests each of `users` has; users
/// without any are absent.
pub async fn open_counts(
    conn: &mut MySqlConnection,
    users: &[UserId],
) -> Result<HashMap<UserId, u64>, sqlx::Error> {
    async move {
        let ids: Vec<u64> = users.iter().map(|u| u.0).collect();
        let select = sqlx::query_as(AssertSqlSafe(format!(
            "SELECT user_id, COUNT(*) FROM reservation_queue \
             WHERE open_seat_id IS NOT NULL AND user_id IN ({}) GROUP BY user_id",
            in_placeholders(ids.len())
        )));
        let rows: Vec<(UserId, i64)> = bind_ids(select, &ids).fetch_all(&mut *conn).await?;
        Ok(rows
            .into_iter()
            .map(|(user, n)| (user, n.unsigned_abs()))
            .collect())
    }
    .instrument(super::span("SELECT", "reservation_queue"))
    .await
}

/// How many requests are PENDING and how many PROCESSING (the queue depth).
pub async fn open_depth(
    conn: &mut MySqlConnection,
) -> Result<Vec<(QueueStatus, i64)>, sqlx::Error> {
    async move {
        sqlx::query_as(
            "SELECT status, COUNT(*) FROM reservation_queue \
             WHERE status IN ('PENDING', 'PROCESSING') GROUP BY status",
        )
        .fetch_all(conn)
        .await
    }
    .instrument(super::span("SELECT", "reservation_queue"))
    .await
}

pub async fn find(
    conn: &mut MySqlConnection,
    id: QueueId,
) -> Result<Option<QueueRow>, sqlx::Error> {
    async move {
        sqlx::query_as(AssertSqlSafe(format!(
            "SELECT {COLUMNS} FROM reservation_queue WHERE id = ?"
        )))
        .bind(id)
        .fetch_optional(conn)
        .await
    }
    .instrument(super::span("SELECT", "reservation_queue"))
    .await
}

pub async fn find_by_idempotency_key(
    conn: &mut MySqlConnection,
    user: UserId,
    key: &IdempotencyKey,
) -> Result<Option<QueueRow>, sqlx::Error> {
    async move {
        sqlx::query_as(AssertSqlSafe(format!(
            "SELECT {COLUMNS} FROM reservation_queue WHERE user_id = ? AND idempotency_key = ?"
        )))
        .bind(user)
        .bind(key.as_str())
        .fetch_optional(conn)
        .await
    }
    .instrument(super::span("SELECT", "reservation_queue"))
    .await
}

/// Who holds claimed rows, and until when.
#[derive(Debug, Clone)]
pub struct Lease {
    pub owner: String,
    /// Fences every later write: a worker whose rows were re-claimed by
    /// another (after its lease ran out) no longer matches and changes nothing.
    pub token: u64,
    pub until: DateTime<Utc>,
}

/// What a claim took.
#[derive(Debug, Default)]
pub struct Claim {
    /// In queue order.
    pub ids: Vec<QueueId>,
    /// How many of them were PROCESSING under a lease that had run out.
    pub reclaimed: usize,
    /// Rows whose lease ran out once more after their last allowed attempt
    /// (their worker died or stalled each time): set aside as FAILED with
    /// PROCESSING_FAILED instead of being claimed again.
    pub dead_lettered: Vec<QueueId>,
    /// The search for expired leases filled the claim: look again next time.
    pub more_expired: bool,
}

/// Claims up to `limit` rows: first rows whose lease ran out (their worker
/// died or stalled), then the oldest PENDING ones that are due; rows another
/// transaction holds are skipped, not waited for. Run in its own short
/// transaction and commit at once: the lease, not the lock, keeps the rows
/// ours afterwards. An expired row already claimed `max_attempts` times is
/// not claimed again but ends FAILED (PROCESSING_FAILED).
///
/// Looking for expired leases walks the PROCESSING entries of the status
/// index, delete-marked ones included until InnoDB purges them: on a busy
/// queue that costs milliseconds, so callers look only now and then
/// (`look_for_expired`), as leases run out in seconds, not milliseconds.
pub async fn claim(
    conn: &mut MySqlConnection,
    lease: &Lease,
    limit: u32,
    max_attempts: u32,
    look_for_expired: bool,
    now: DateTime<Utc>,
) -> Result<Claim, sqlx::Error> {
    async move {
        let expired: Vec<(QueueId, u32)> = if !look_for_expired {
            Vec::new()
        } else {
            sqlx::query_as(
            "SELECT id, attempts FROM reservation_queue WHERE status = 'PROCESSING' AND lease_until < ? \
             ORDER BY id LIMIT ? FOR UPDATE SKIP LOCKED",
        )
        .bind(now.naive_utc())
        .bind(limit)
        .fetch_all(&mut *conn)
        .await?
        };
        let more_expired = expired.len() >= limit as usize;
        let (spent, expired): (Vec<_>, Vec<_>) = expired
            .into_iter()
            .partition(|(_, attempts)| *attempts >= max_attempts);
        let dead_lettered: Vec<QueueId> = spent.into_iter().map(|(id, _)| id).collect();
        // Their old lease is gone; the locks just taken keep them ours.
        fail(conn, &dead_lettered, None, FailureReason::ProcessingFailed, now).await?;
        let room = limit.saturating_sub(u32::try_from(expired.len()).unwrap_or(limit));
        let pending: Vec<(QueueId,)> = if room == 0 {
            Vec::new()
        } else {
            sqlx::query_as(
                "SELECT id FROM reservation_queue WHERE status = 'PENDING' \
                 AND (retry_at IS NULL OR retry_at <= ?) \
                 ORDER BY id LIMIT ? FOR UPDATE SKIP LOCKED",
            )
            .bind(now.naive_utc())
            .bind(room)
            .fetch_all(&mut *conn)
            .await?
        };
        let reclaimed = expired.len();
        let mut ids: Vec<QueueId> = expired
            .into_iter()
            .map(|(id, _)| id)
            .chain(pending.into_iter().map(|(id,)| id))
            .collect();
        if ids.is_empty() {
            return Ok(Claim {
                dead_lettered,
                more_expired,
                ..Claim::default()
            });
        }
        ids.sort_unstable();
        let update = sqlx::query(AssertSqlSafe(format!(
            "UPDATE reservation_queue SET status = 'PROCESSING', lease_owner = ?, lease_token = ?, \
             lease_until = ?, attempts = attempts + 1, retry_at = NULL, updated_at = ? WHERE id IN ({})",
            in_placeholders(ids.len())
        )))
        .bind(&lease.owner)
        .bind(lease.token)
        .bind(lease.until.naive_utc())
        .bind(now.naive_utc());
        bind_ids_exec(update, &super::queue_ids(&ids))
            .execute(&mut *conn)
            .await?;
        Ok(Claim {
            ids,
            reclaimed,
            dead_lettered,
            more_expired,
        })
    }
    .instrument(super::span("UPDATE", "reservation_queue"))
    .await
}

/// Hands rows under this lease back to the queue as PENDING, not to be
/// claimed before `retry_at`. A deferred row (an earlier request for its seat
/// was still open elsewhere) gets its attempt back; a row whose attempt
/// failed keeps it counted.
pub async fn hand_back(
    conn: &mut MySqlConnection,
    ids: &[QueueId],
    token: u64,
    retry_at: DateTime<Utc>,
    attempt: Attempt,
    now: DateTime<Utc>,
) -> Result<u64, sqlx::Error> {
    async move {
        if ids.is_empty() {
            return Ok(0);
        }
        let attempts = match attempt {
            Attempt::Refunded => "IF(attempts > 0, attempts - 1, 0)",
            Attempt::Counted => "attempts",
        };
        let update = sqlx::query(AssertSqlSafe(format!(
            "UPDATE reservation_queue SET status = 'PENDING', lease_owner = NULL, lease_token = NULL, \
                 lease_until = NULL, attempts = {attempts}, retry_at = ?, updated_at = ? \
             WHERE status = 'PROCESSING' AND lease_token = ? AND id IN ({})",
            in_placeholders(ids.len())
        )))
        .bind(retry_at.naive_utc())
        .bind(now.naive_utc())
        .bind(token);
        Ok(bind_ids_exec(update, &super::queue_ids(ids))
            .execute(conn)
            .await?
            .rows_affected())
    }
    .instrument(super::span("UPDATE", "reservation_queue"))
    .await
}

/// Whether a handed-back row's attempt counts toward its limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Attempt {
    /// Nothing went wrong (the row was deferred): the claim does not count.
    Refunded,
    /// The attempt failed.
    Counted,
}

/// How often the row was claimed, while it is PROCESSING under this lease.
pub async fn attempts(
    conn: &mut MySqlConnection,
    id: QueueId,
    token: u64,
) -> Result<Option<u32>, sqlx::Error> {
    async move {
        let row: Option<(u32,)> = sqlx::query_as(
            "SELECT attempts FROM reservation_queue \
             WHERE id = ? AND status = 'PROCESSING' AND lease_token = ?",
        )
        .bind(id)
        .bind(token)
        .fetch_optional(conn)
        .await?;
        Ok(row.map(|(n,)| n))
    }
    .instrument(super::span("SELECT", "reservation_queue"))
    .await
}

/// A claimed request, as the decision needs it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct LeasedRow {
    pub id: QueueId,
    pub user_id: UserId,
    pub seat_id: SeatId,
    pub traceparent: Option<String>,
    pub tracestate: Option<String>,
    pub created_at: DateTime<Utc>,
}

/// Locks the rows of `ids` that are still PROCESSING under this lease token,
/// in queue order. Rows missing from the answer were lost (re-claimed by
/// another worker, or already decided) and must not be touched.
pub async fn lock_leased(
    conn: &mut MySqlConnection,
    ids: &[QueueId],
    token: u64,
) -> Result<Vec<LeasedRow>, sqlx::Error> {
    async move {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let select = sqlx::query_as(AssertSqlSafe(format!(
            "SELECT id, user_id, seat_id, traceparent, tracestate, created_at FROM reservation_queue \
             WHERE status = 'PROCESSING' AND lease_token = ? AND id IN ({}) ORDER BY id FOR UPDATE",
            in_placeholders(ids.len())
        )))
        .bind(token);
        bind_ids(select, &super::queue_ids(ids))
            .fetch_all(conn)
            .await
    }
    .instrument(super::span("SELECT", "reservation_queue"))
    .await
}

/// Marks requests SUCCESS with the CONFIRMED reservation of their own user
/// and seat.
pub async fn mark_succeeded(
    conn: &mut MySqlConnection,
    ids: &[QueueId],
    token: u64,
    now: DateTime<Utc>,
) -> Result<u64, sqlx::Error> {
    async move {
        if ids.is_empty() {
            return Ok(0);
        }
        let update = sqlx::query(AssertSqlSafe(format!(
            "UPDATE reservation_queue q \
             JOIN reservations r ON r.confirmed_seat_id = q.seat_id AND r.user_id = q.user_id \
             SET q.status = 'SUCCESS', q.reservation_id = r.id, q.reason = NULL, q.lease_until = NULL, \
                 q.decided_at = ?, q.updated_at = ? \
             WHERE q.status = 'PROCESSING' AND q.lease_token = ? AND q.id IN ({})",
            in_placeholders(ids.len())
        )))
        .bind(now.naive_utc())
        .bind(now.naive_utc())
        .bind(token);
        let done = bind_ids_exec(update, &super::queue_ids(ids))
            .execute(conn)
            .await?;
        Ok(done.rows_affected())
    }
    .instrument(super::span("UPDATE", "reservation_queue"))
    .await
}

pub async fn mark_failed(
    conn: &mut MySqlConnection,
    ids: &[QueueId],
    token: u64,
    reason: FailureReason,
    now: DateTime<Utc>,
) -> Result<u64, sqlx::Error> {
    fail(conn, ids, Some(token), reason, now)
        .instrument(super::span("UPDATE", "reservation_queue"))
        .await
}

/// Marks PROCESSING requests FAILED: with `token`, only those still under
/// that lease; without, the caller holds their row locks.
async fn fail(
    conn: &mut MySqlConnection,
    ids: &[QueueId],
    token: Option<u64>,
    reason: FailureReason,
    now: DateTime<Utc>,
) -> Result<u64, sqlx::Error> {
    if ids.is_empty() {
        return Ok(0);
    }
    let fence = if token.is_some() {
        "AND lease_token = ?"
    } else {
        ""
    };
    let mut update = sqlx::query(AssertSqlSafe(format!(
        "UPDATE reservation_queue SET status = 'FAILED', reason = ?, lease_until = NULL, \
             decided_at = ?, updated_at = ? \
         WHERE status = 'PROCESSING' {fence} AND id IN ({})",
        in_placeholders(ids.len())
    )))
    .bind(reason.as_str())
    .bind(now.naive_utc())
    .bind(now.naive_utc());
    if let Some(token) = token {
        update = update.bind(token);
    }
    let done = bind_ids_exec(update, &super::queue_ids(ids))
        .execute(conn)
        .await?;
    Ok(done.rows_affected())
}
