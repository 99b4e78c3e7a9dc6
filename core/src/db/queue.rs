//! The reservation queue: enqueue, claim under a lease, and fenced completion.

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Utc};
use sqlx::{AssertSqlSafe, MySqlConnection};

use super::request_seats::{self, RequestSeat};
use super::{Traced as _, bind_ids, bind_ids_exec, in_placeholders};
use crate::domain::{
    Admission, ConcertId, FailureReason, HoldDuration, IdempotencyKey, LineKey, QueueId,
    QueueStatus, ReservationId, SaleWindow, SeatId, SeatIds, UserId,
};

#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct QueueRow {
    pub id: QueueId,
    pub user_id: UserId,
    pub concert_id: ConcertId,
    /// The request's first (lowest) seat.
    pub seat_id: SeatId,
    pub seat_count: u8,
    pub line_key: LineKey,
    pub status: QueueStatus,
    pub reservation_id: Option<ReservationId>,
    pub reason: Option<String>,
    pub created_at: DateTime<Utc>,
    pub decided_at: Option<DateTime<Utc>>,
}

impl QueueRow {
    pub fn is_open(&self) -> bool {
        matches!(
            self.status,
            QueueStatus::Waiting | QueueStatus::Pending | QueueStatus::Processing
        )
    }
}

const COLUMNS: &str = "id, user_id, concert_id, seat_id, seat_count, line_key, status, reservation_id, \
                       reason, created_at, decided_at";

/// How many claims of one request may end without a decision before the
/// request is set aside (the workers' TICKET_WORKER_MAX_ATTEMPTS default).
pub const DEFAULT_MAX_ATTEMPTS: u32 = 5;

/// W3C trace context of the request that enqueued a row.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TraceContext {
    pub traceparent: Option<String>,
    pub tracestate: Option<String>,
}

/// Adds a request with its seats, in line at `line` (WAITING in a lottery,
/// else PENDING: see [`NewRequest::line_at`]); call inside a transaction. Fails
/// with a violation of `uq_request_seats_open` when the user already has an
/// open request for one of the seats, of `uq_queue_idempotency` when the
/// key was used before, and with a foreign key error (1452) when a seat or
/// the user does not exist.
pub async fn enqueue(
    conn: &mut MySqlConnection,
    request: &NewRequest,
    line: LineKey,
    key: Option<&IdempotencyKey>,
    now: DateTime<Utc>,
) -> Result<QueueId, sqlx::Error> {
    async move {
        let done = sqlx::query(
            "INSERT INTO reservation_queue \
             (user_id, concert_id, seat_id, seat_count, line_key, status, idempotency_key, traceparent, \
              tracestate, created_at, updated_at) \
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        )
        .bind(request.user)
        .bind(request.concert)
        .bind(request.seats.first())
        .bind(request.seat_count())
        .bind(line)
        .bind(QueueStatus::in_line_at(line))
        .bind(key.map(IdempotencyKey::as_str))
        .bind(request.trace.traceparent.as_deref())
        .bind(request.trace.tracestate.as_deref())
        .bind(now.naive_utc())
        .bind(now.naive_utc())
        .execute(&mut *conn)
        .await?;
        let id = QueueId(done.last_insert_id());
        request_seats::insert(conn, &request.seat_rows(id, line), false).await?;
        Ok(id)
    }
    .traced("INSERT", "reservation_queue")
    .await
}

/// One request of a group enqueued together.
#[derive(Debug, Clone)]
pub struct NewRequest {
    pub user: UserId,
    pub concert: ConcertId,
    pub seats: SeatIds,
    /// Its concert's sale, which decides by the database's clock, when the
    /// request is written, whether it is too early, in the lottery, or
    /// behind everyone already in line.
    pub sale: SaleWindow,
    /// Its key in the line if it arrives inside the lottery window.
    pub draw: LineKey,
    pub trace: TraceContext,
}

impl NewRequest {
    fn seat_count(&self) -> u8 {
        u8::try_from(self.seats.len()).unwrap_or(u8::MAX)
    }

    /// Its key in the concert's line when written at `now` (the database's
    /// clock), or `None` when its sale does not take requests yet.
    pub fn line_at(&self, now: DateTime<Utc>) -> Option<LineKey> {
        match self.sale.admission(now) {
            Admission::NotYet { .. } => None,
            Admission::Lottery { .. } => Some(self.draw),
            Admission::Open => Some(LineKey::AFTER_OPENING),
        }
    }

    fn seat_rows(&self, queue_id: QueueId, line: LineKey) -> Vec<RequestSeat> {
        self.seats
            .as_slice()
            .iter()
            .map(|&seat| RequestSeat {
                queue_id,
                seat,
                user: self.user,
                concert: self.concert,
                line,
            })
            .collect()
    }
}

/// Hands out each group's `now`: the database's clock as the group read
/// it, but never the same value twice in this process, so that a group can
/// tell its own rows from older ones by their `created_at`.
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

    /// `read` (the database's clock), or a microsecond after the last time
    /// handed out when that is later.
    pub fn after(&self, read: DateTime<Utc>) -> DateTime<Utc> {
        use std::sync::atomic::Ordering;
        let wall = read.timestamp_micros();
        let mut last = self.last_micros.load(Ordering::Relaxed);
        loop {
            let next = wall.max(last + 1);
            match self.last_micros.compare_exchange_weak(
                last,
                next,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return DateTime::from_timestamp_micros(next).unwrap_or(read),
                Err(seen) => last = seen,
            }
        }
    }
}

/// The times a group is written at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupTime {
    /// A reading of the database's clock at least as late as every opening
    /// and lottery start the group's admissions depend on: which requests
    /// the sale takes yet, and whether in the lottery, is decided by it.
    pub admitted_at: DateTime<Utc>,
    /// The rows' `created_at`, distinct per group (see [`GroupClock`]): a
    /// record of the arrival, which no deadline is compared against.
    pub written_at: DateTime<Utc>,
}

impl GroupTime {
    /// Both at `at` (the database's clock, read for the group).
    pub fn at(at: DateTime<Utc>) -> Self {
        Self {
            admitted_at: at,
            written_at: at,
        }
    }
}

/// How one request of a group fared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Queued(QueueId),
    /// Its sale does not take requests yet at the group's `now`.
    SaleNotOpen,
    /// The user already has an open request for one of the seats (an
    /// earlier click, or the same request twice in the group): that one.
    Duplicate(QueueId),
    SeatNotFound,
    /// A still-valid token of an account deleted since.
    UserNotFound,
    /// Not written, and no reason found: an earlier request for the same
    /// seat was decided between the INSERT and its read-back. Enqueue it alone.
    Unsettled,
}

/// What [`enqueue_many`] did: each request's outcome, in the order given,
/// and how many open seats each of their users has now (theirs included).
#[derive(Debug, Default)]
pub struct Enqueued {
    pub outcomes: Vec<Outcome>,
    pub open_seats_per_user: HashMap<UserId, u64>,
}

/// Takes back WAITING or PENDING requests written in the caller's transaction (refused
/// after all, or a user over the open-seat limit), with their seats;
/// returns how many requests were removed.
pub async fn withdraw(conn: &mut MySqlConnection, ids: &[QueueId]) -> Result<u64, sqlx::Error> {
    if ids.is_empty() {
        return Ok(0);
    }
    request_seats::delete(conn, ids).await?;
    let delete = sqlx::query(AssertSqlSafe(format!(
        "DELETE FROM reservation_queue WHERE status IN ('WAITING', 'PENDING') AND id IN ({})",
        in_placeholders(ids.len())
    )));
    Ok(bind_ids_exec(delete, ids)
        .execute(conn)
        .traced("DELETE", "reservation_queue")
        .await?
        .rows_affected())
}

/// Adds many requests (WAITING or PENDING), each with its seats, in a few multi-row
/// statements; call inside a transaction. A request that cannot be written
/// (one of its seats already open in another request of its user, an
/// unknown seat, a deleted user) is left out and reported in its outcome,
/// and the rest are written all the same.
///
/// Rows go in seat order, so the seat locks the foreign-key checks take
/// come in id order, as every writer of seats takes them. That order only
/// matters between requests for different seats, which never compete;
/// requests for one seat keep their arrival order. A group with an order of
/// several seats share-locks all its seats first: its seat rows would
/// otherwise lock in row order (an order of seats 3 and 4 written before
/// another of seat 5 takes 3 and 5 for the requests, then 4, and waits in a
/// cycle with a confirm holding 4 and wanting 5).
///
/// `INSERT IGNORE` skips exactly the rows that would break a unique or
/// foreign key (every value is bounded before it gets here, so nothing is
/// truncated). Queue ids are read back by (user, first seat) among the rows
/// carrying our `now`, so `now` must differ from every other group's (see
/// [`GroupClock`]); another process's group written in the same microsecond
/// with the same user and first seat (one user's two clicks, on two API
/// instances, within a microsecond) could be taken for ours, and one of the
/// two rows would be left without seats: the decision sets such a row aside.
pub async fn enqueue_many(
    conn: &mut MySqlConnection,
    requests: &[NewRequest],
    time: GroupTime,
) -> Result<Enqueued, sqlx::Error> {
    let now = time.written_at;
    async move {
        if requests.is_empty() {
            return Ok(Enqueued::default());
        }
        let lines: Vec<Option<LineKey>> = requests
            .iter()
            .map(|r| r.line_at(time.admitted_at))
            .collect();
        let mut order: Vec<usize> = (0..requests.len())
            .filter(|&i| lines[i].is_some())
            .collect();
        order.sort_by_key(|&i| requests[i].seats.first());
        // Of two requests of one user with the same first seat, the first is
        // written and the second is its duplicate.
        let mut first_of: HashMap<(UserId, SeatId), usize> = HashMap::new();
        let mut written = Vec::with_capacity(order.len());
        for &i in &order {
            let r = &requests[i];
            if let (std::collections::hash_map::Entry::Vacant(e), Some(line)) =
                (first_of.entry((r.user, r.seats.first())), lines[i])
            {
                e.insert(i);
                written.push((r, line));
            }
        }
        if written.is_empty() {
            // Every request came before its sale takes any.
            return Ok(Enqueued {
                outcomes: vec![Outcome::SaleNotOpen; requests.len()],
                ..Enqueued::default()
            });
        }
        if written.iter().any(|(r, _)| r.seats.len() > 1) {
            let mut group_seats: Vec<SeatId> = written
                .iter()
                .flat_map(|(r, _)| r.seats.as_slice().iter().copied())
                .collect();
            group_seats.sort_unstable();
            group_seats.dedup();
            super::seats::share_all(conn, &group_seats).await?;
        }
        let mut insert = sqlx::QueryBuilder::new(
            "INSERT IGNORE INTO reservation_queue \
             (user_id, concert_id, seat_id, seat_count, line_key, status, traceparent, tracestate, \
              created_at, updated_at) ",
        );
        insert.push_values(&written, |mut row, (r, line)| {
            row.push_bind(r.user)
                .push_bind(r.concert)
                .push_bind(r.seats.first())
                .push_bind(r.seat_count())
                .push_bind(*line)
                .push_bind(QueueStatus::in_line_at(*line))
                .push_bind(r.trace.traceparent.clone())
                .push_bind(r.trace.tracestate.clone())
                .push_bind(now.naive_utc())
                .push_bind(now.naive_utc());
        });
        let first_id = insert.build().execute(&mut *conn).await?.last_insert_id();
        let ids = written_ids(conn, first_id, written.len(), now).await?;

        let seat_rows: Vec<RequestSeat> = written
            .iter()
            .filter_map(|(r, line)| {
                ids.get(&(r.user, r.seats.first()))
                    .map(|&id| r.seat_rows(id, *line))
            })
            .flatten()
            .collect();
        request_seats::insert(conn, &seat_rows, true).await?;
        let users: Vec<UserId> = requests.iter().map(|r| r.user).collect();
        let open: HashMap<(UserId, SeatId), QueueId> = request_seats::open_of_users(conn, &users)
            .await?
            .into_iter()
            .map(|(user, seat, id)| ((user, seat), id))
            .collect();

        // A written request holds every one of its seats, or is refused.
        let mut refused = Vec::new();
        let mut settled: HashMap<(UserId, SeatId), Outcome> = HashMap::new();
        let mut missing = Vec::new();
        for (r, _) in &written {
            let key = (r.user, r.seats.first());
            let Some(&id) = ids.get(&key) else {
                missing.push(*r);
                continue;
            };
            let holders: Vec<Option<QueueId>> = r
                .seats
                .as_slice()
                .iter()
                .map(|&s| open.get(&(r.user, s)).copied())
                .collect();
            let outcome = if holders.iter().all(|h| *h == Some(id)) {
                Outcome::Queued(id)
            } else {
                refused.push(id);
                match holders.iter().flatten().find(|&&h| h != id) {
                    Some(&other) => Outcome::Duplicate(other),
                    None => Outcome::SeatNotFound,
                }
            };
            settled.insert(key, outcome);
        }
        withdraw(conn, &refused).await?;

        let (seats, users) = if missing.is_empty() {
            (HashSet::new(), HashSet::new())
        } else {
            existing_seats_and_users(conn, &missing).await?
        };
        let settle = |r: &NewRequest| match settled.get(&(r.user, r.seats.first())) {
            Some(&outcome) => outcome,
            None if !users.contains(&r.user) => Outcome::UserNotFound,
            None if !r.seats.as_slice().iter().all(|s| seats.contains(s)) => Outcome::SeatNotFound,
            None => Outcome::Unsettled,
        };
        let outcomes = requests
            .iter()
            .enumerate()
            .map(|(i, r)| {
                if lines[i].is_none() {
                    return Outcome::SaleNotOpen;
                }
                let first = first_of[&(r.user, r.seats.first())];
                match settle(&requests[first]) {
                    Outcome::Queued(id) | Outcome::Duplicate(id) if first != i => {
                        Outcome::Duplicate(id)
                    }
                    outcome => outcome,
                }
            })
            .collect();
        let refused: HashSet<QueueId> = refused.into_iter().collect();
        let mut open_seats_per_user: HashMap<UserId, u64> = HashMap::new();
        for ((user, _), id) in &open {
            if !refused.contains(id) {
                *open_seats_per_user.entry(*user).or_default() += 1;
            }
        }
        Ok(Enqueued {
            outcomes,
            open_seats_per_user,
        })
    }
    .traced("INSERT", "reservation_queue")
    .await
}

/// The ids of the rows a multi-row INSERT just wrote (from `first_id` on,
/// carrying `now`), by (user, first seat); the lowest id on a collision.
async fn written_ids(
    conn: &mut MySqlConnection,
    first_id: u64,
    count: usize,
    now: DateTime<Utc>,
) -> Result<HashMap<(UserId, SeatId), QueueId>, sqlx::Error> {
    if first_id == 0 {
        return Ok(HashMap::new());
    }
    let rows: Vec<(QueueId, UserId, SeatId)> = sqlx::query_as(
        "SELECT id, user_id, seat_id FROM reservation_queue \
         WHERE id >= ? AND created_at = ? ORDER BY id LIMIT ?",
    )
    .bind(first_id)
    .bind(now.naive_utc())
    .bind(u32::try_from(count).unwrap_or(u32::MAX))
    .fetch_all(conn)
    .await?;
    let mut ids = HashMap::with_capacity(rows.len());
    for (id, user, seat) in rows {
        ids.entry((user, seat)).or_insert(id);
    }
    Ok(ids)
}

/// Which of the requests' seats and users exist.
async fn existing_seats_and_users(
    conn: &mut MySqlConnection,
    requests: &[&NewRequest],
) -> Result<(HashSet<SeatId>, HashSet<UserId>), sqlx::Error> {
    let seats: Vec<u64> = requests
        .iter()
        .flat_map(|r| r.seats.as_slice().iter().map(|s| s.0))
        .collect();
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

/// How many requests are WAITING, PENDING and PROCESSING (the queue depth).
pub async fn open_depth(
    conn: &mut MySqlConnection,
) -> Result<Vec<(QueueStatus, i64)>, sqlx::Error> {
    sqlx::query_as(
        "SELECT status, COUNT(*) FROM reservation_queue \
         WHERE status IN ('WAITING', 'PENDING', 'PROCESSING') GROUP BY status",
    )
    .fetch_all(conn)
    .traced("SELECT", "reservation_queue")
    .await
}

pub async fn find(
    conn: &mut MySqlConnection,
    id: QueueId,
) -> Result<Option<QueueRow>, sqlx::Error> {
    sqlx::query_as(AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM reservation_queue WHERE id = ?"
    )))
    .bind(id)
    .fetch_optional(conn)
    .traced("SELECT", "reservation_queue")
    .await
}

/// The rows of `ids` that are decided (SUCCESS or FAILED).
pub async fn decided_among(
    conn: &mut MySqlConnection,
    ids: &[QueueId],
) -> Result<Vec<QueueRow>, sqlx::Error> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let select = sqlx::query_as(AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM reservation_queue \
         WHERE id IN ({}) AND status IN ('SUCCESS', 'FAILED')",
        in_placeholders(ids.len())
    )));
    bind_ids(select, ids)
        .fetch_all(conn)
        .traced("SELECT", "reservation_queue")
        .await
}

pub async fn find_by_idempotency_key(
    conn: &mut MySqlConnection,
    user: UserId,
    key: &IdempotencyKey,
) -> Result<Option<QueueRow>, sqlx::Error> {
    sqlx::query_as(AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM reservation_queue WHERE user_id = ? AND idempotency_key = ?"
    )))
    .bind(user)
    .bind(key.as_str())
    .fetch_optional(conn)
    .traced("SELECT", "reservation_queue")
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

/// How a decision's statements know that the rows are still its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fence {
    /// Claimed and committed as PROCESSING under this lease token: a worker
    /// whose rows were re-claimed after its lease ran out changes nothing.
    Lease(u64),
    /// PROCESSING rows whose lease ran out, locked by the caller's
    /// transaction.
    Expired,
    /// PENDING rows locked by the caller's transaction ([`lock_pending`]):
    /// claimed and decided in one transaction, with no lease written. The
    /// lock is the fence: a worker that dies loses its transaction, and the
    /// rows are PENDING again for the next.
    Locked,
}

impl Fence {
    /// The condition on `alias`'s rows; a lease binds its token (`bind`).
    fn condition(self, alias: &str) -> String {
        match self {
            Self::Lease(_) => format!("{alias}status = 'PROCESSING' AND {alias}lease_token = ?"),
            Self::Expired => format!("{alias}status = 'PROCESSING'"),
            Self::Locked => format!("{alias}status = 'PENDING'"),
        }
    }

    fn token(self) -> Option<u64> {
        match self {
            Self::Lease(token) => Some(token),
            Self::Expired | Self::Locked => None,
        }
    }
}

/// What a claim took.
#[derive(Debug, Default)]
pub struct Claim {
    /// In id order.
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
/// died or stalled), then the first PENDING ones in line that are due
/// (WAITING ones wait for their sale to open); rows another
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
             ORDER BY line_key, id LIMIT ? FOR UPDATE SKIP LOCKED",
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
        fail(conn, &dead_lettered, Fence::Expired, FailureReason::ProcessingFailed, now).await?;
        let room = limit.saturating_sub(u32::try_from(expired.len()).unwrap_or(limit));
        let pending = if room == 0 {
            Vec::new()
        } else {
            first_due(conn, room).await?
        };
        let reclaimed = expired.len();
        let mut ids: Vec<QueueId> = expired
            .into_iter()
            .map(|(id, _)| id)
            .chain(pending)
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
        bind_ids_exec(update, &ids)
            .execute(&mut *conn)
            .await?;
        Ok(Claim {
            ids,
            reclaimed,
            dead_lettered,
            more_expired,
        })
    }
    .traced("UPDATE", "reservation_queue")
    .await
}

/// The first `limit` PENDING rows in line that are due by the database's
/// clock, locked; rows another transaction holds are skipped, not waited for.
async fn first_due(conn: &mut MySqlConnection, limit: u32) -> Result<Vec<QueueId>, sqlx::Error> {
    let rows: Vec<(QueueId,)> = sqlx::query_as(
        "SELECT id FROM reservation_queue WHERE status = 'PENDING' \
         AND (retry_at IS NULL OR retry_at <= UTC_TIMESTAMP(6)) \
         ORDER BY line_key, id LIMIT ? FOR UPDATE SKIP LOCKED",
    )
    .bind(limit)
    .fetch_all(&mut *conn)
    .await?;
    Ok(rows.into_iter().map(|(id,)| id).collect())
}

/// Locks up to `limit` of the first PENDING rows in line that are due, for
/// a decision in the same transaction ([`Fence::Locked`]): no lease and no
/// PROCESSING status are written, so a claim costs one statement, not an
/// UPDATE of every row's status index entry and a commit of its own. In id
/// order.
pub async fn lock_pending(
    conn: &mut MySqlConnection,
    limit: u32,
) -> Result<Vec<QueueId>, sqlx::Error> {
    let mut ids = first_due(conn, limit)
        .traced("SELECT", "reservation_queue")
        .await?;
    ids.sort_unstable();
    Ok(ids)
}

/// Whether any row's lease has run out (its worker died or stalled): the
/// PROCESSING entries of the status index are few, so this is cheap, and a
/// worker that decides rows without leases looks now and then.
pub async fn any_lease_expired(conn: &mut MySqlConnection) -> Result<bool, sqlx::Error> {
    let row: Option<(i64,)> = sqlx::query_as(
        "SELECT 1 FROM reservation_queue WHERE status = 'PROCESSING' \
         AND lease_until < UTC_TIMESTAMP(6) LIMIT 1",
    )
    .fetch_optional(conn)
    .traced("SELECT", "reservation_queue")
    .await?;
    Ok(row.is_some())
}

/// Hands rows back to the queue as PENDING, not to be claimed before
/// `retry_at`. A deferred row (an earlier request for its seat was still
/// open elsewhere) gets its attempt back; a row whose attempt failed keeps
/// it counted; a row claimed without a lease ([`Fence::Locked`]) never had
/// one counted.
pub async fn hand_back(
    conn: &mut MySqlConnection,
    ids: &[QueueId],
    fence: Fence,
    retry_at: DateTime<Utc>,
    attempt: Attempt,
    now: DateTime<Utc>,
) -> Result<u64, sqlx::Error> {
    if ids.is_empty() {
        return Ok(0);
    }
    let attempts = match (fence, attempt) {
        (Fence::Locked, _) | (_, Attempt::Counted) => "attempts",
        (_, Attempt::Refunded) => "IF(attempts > 0, attempts - 1, 0)",
    };
    let mut update = sqlx::query(AssertSqlSafe(format!(
        "UPDATE reservation_queue SET status = 'PENDING', lease_owner = NULL, lease_token = NULL, \
             lease_until = NULL, attempts = {attempts}, retry_at = ?, updated_at = ? \
         WHERE {} AND id IN ({})",
        fence.condition(""),
        in_placeholders(ids.len())
    )))
    .bind(retry_at.naive_utc())
    .bind(now.naive_utc());
    if let Some(token) = fence.token() {
        update = update.bind(token);
    }
    Ok(bind_ids_exec(update, ids)
        .execute(conn)
        .traced("UPDATE", "reservation_queue")
        .await?
        .rows_affected())
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
    let row: Option<(u32,)> = sqlx::query_as(
        "SELECT attempts FROM reservation_queue \
         WHERE id = ? AND status = 'PROCESSING' AND lease_token = ?",
    )
    .bind(id)
    .bind(token)
    .fetch_optional(conn)
    .traced("SELECT", "reservation_queue")
    .await?;
    Ok(row.map(|(n,)| n))
}

/// A claimed request, as the decision needs it.
#[derive(Debug, Clone)]
pub struct LeasedRow {
    pub id: QueueId,
    pub user_id: UserId,
    pub concert_id: ConcertId,
    /// In id order; empty only for a row written without its seats (see
    /// [`enqueue_many`]).
    pub seats: Vec<SeatId>,
    /// The concert's hold, as it is set now.
    pub hold: HoldDuration,
    /// When the concert's sale opens, as it is set now.
    pub opens_at: Option<DateTime<Utc>>,
    pub line: LineKey,
    pub traceparent: Option<String>,
    pub tracestate: Option<String>,
    pub created_at: DateTime<Utc>,
}

#[derive(sqlx::FromRow)]
struct LeasedSeat {
    id: QueueId,
    user_id: UserId,
    concert_id: ConcertId,
    seat_id: Option<SeatId>,
    hold_seconds: Option<u32>,
    opens_at: Option<DateTime<Utc>>,
    line_key: LineKey,
    traceparent: Option<String>,
    tracestate: Option<String>,
    created_at: DateTime<Utc>,
}

/// Locks the rows of `ids` that are still ours (`fence`), with their seats,
/// in line order. Rows missing from the answer were lost
/// (re-claimed by another worker, or already decided) and must not be
/// touched. The concert's hold and opening are read, not locked: a
/// concert's row is every decision's, and a changed setting applies from
/// the next decision.
pub async fn lock_leased(
    conn: &mut MySqlConnection,
    ids: &[QueueId],
    fence: Fence,
) -> Result<Vec<LeasedRow>, sqlx::Error> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let mut select = sqlx::query_as(AssertSqlSafe(format!(
        "SELECT q.id, q.user_id, q.concert_id, rs.seat_id, \
                (SELECT c.hold_seconds FROM concerts c WHERE c.id = q.concert_id) AS hold_seconds, \
                (SELECT c.opens_at FROM concerts c WHERE c.id = q.concert_id) AS opens_at, \
                q.line_key, q.traceparent, q.tracestate, q.created_at \
         FROM reservation_queue q FORCE INDEX (PRIMARY) LEFT JOIN request_seats rs ON rs.queue_id = q.id \
         WHERE {} AND q.id IN ({}) \
         ORDER BY q.line_key, q.id, rs.seat_id FOR UPDATE",
        fence.condition("q."),
        in_placeholders(ids.len())
    )));
    if let Some(token) = fence.token() {
        select = select.bind(token);
    }
    let seats: Vec<LeasedSeat> = bind_ids(select, ids)
        .fetch_all(conn)
        .traced("SELECT", "reservation_queue")
        .await?;
    let mut rows: Vec<LeasedRow> = Vec::with_capacity(ids.len());
    for seat in seats {
        match rows.last_mut() {
            Some(row) if row.id == seat.id => row.seats.extend(seat.seat_id),
            _ => rows.push(LeasedRow {
                id: seat.id,
                user_id: seat.user_id,
                concert_id: seat.concert_id,
                seats: seat.seat_id.into_iter().collect(),
                hold: HoldDuration::parse(seat.hold_seconds.unwrap_or(0).into())
                    .unwrap_or_default(),
                opens_at: seat.opens_at,
                line: seat.line_key,
                traceparent: seat.traceparent,
                tracestate: seat.tracestate,
                created_at: seat.created_at,
            }),
        }
    }
    Ok(rows)
}

/// Marks requests SUCCESS with the reservation each of them made; their
/// seats close with them.
///
/// One table updated (see the module's note on scans): a multi-table
/// update waits for every row it scans, as a locking read does, and a join
/// here was planned as a scan of the queue, which waited for a group still
/// being enqueued while holding the decision's seats.
pub async fn mark_succeeded(
    conn: &mut MySqlConnection,
    ids: &[QueueId],
    fence: Fence,
    now: DateTime<Utc>,
) -> Result<u64, sqlx::Error> {
    async move {
        if ids.is_empty() {
            return Ok(0);
        }
        let update = sqlx::query(AssertSqlSafe(format!(
            "UPDATE reservation_queue q \
             SET q.status = 'SUCCESS', q.reservation_id = ({own}), q.reason = NULL, q.lease_until = NULL, \
                 q.decided_at = ?, q.updated_at = ? \
             WHERE q.id IN ({}) AND {} AND EXISTS ({own})",
            in_placeholders(ids.len()),
            fence.condition("q."),
            own = "SELECT r.id FROM reservations r WHERE r.queue_id = q.id AND r.user_id = q.user_id"
        )))
        .bind(now.naive_utc())
        .bind(now.naive_utc());
        let mut update = bind_ids_exec(update, ids);
        if let Some(token) = fence.token() {
            update = update.bind(token);
        }
        let done = update.execute(&mut *conn).await?;
        close_if_all(conn, ids, done.rows_affected()).await?;
        Ok(done.rows_affected())
    }
    .traced("UPDATE", "reservation_queue")
    .await
}

pub async fn mark_failed(
    conn: &mut MySqlConnection,
    ids: &[QueueId],
    fence: Fence,
    reason: FailureReason,
    now: DateTime<Utc>,
) -> Result<u64, sqlx::Error> {
    fail(conn, ids, fence, reason, now)
        .traced("UPDATE", "reservation_queue")
        .await
}

/// Marks requests FAILED, those still ours (`fence`).
async fn fail(
    conn: &mut MySqlConnection,
    ids: &[QueueId],
    fence: Fence,
    reason: FailureReason,
    now: DateTime<Utc>,
) -> Result<u64, sqlx::Error> {
    if ids.is_empty() {
        return Ok(0);
    }
    let mut update = sqlx::query(AssertSqlSafe(format!(
        "UPDATE reservation_queue SET status = 'FAILED', reason = ?, lease_until = NULL, \
             decided_at = ?, updated_at = ? \
         WHERE {} AND id IN ({})",
        fence.condition(""),
        in_placeholders(ids.len())
    )))
    .bind(reason.as_str())
    .bind(now.naive_utc())
    .bind(now.naive_utc());
    if let Some(token) = fence.token() {
        update = update.bind(token);
    }
    let done = bind_ids_exec(update, ids).execute(&mut *conn).await?;
    close_if_all(conn, ids, done.rows_affected()).await?;
    Ok(done.rows_affected())
}

/// Closes the seats of `ids` once a statement decided every one of them
/// (`changed`). Fewer means some were not ours to decide: the caller's
/// bookkeeping refuses that (the decision rolls back), or it was the one
/// row of a set-aside that another worker has since taken over.
async fn close_if_all(
    conn: &mut MySqlConnection,
    ids: &[QueueId],
    changed: u64,
) -> Result<(), sqlx::Error> {
    if changed == ids.len() as u64 {
        request_seats::close(conn, ids).await?;
    }
    Ok(())
}
