//! The reservation queue: enqueue, claim under a lease, and fenced completion.

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

/// What [`enqueue_many`] wrote: each request's id, in order, and how many
/// open requests each of their users has now (these included).
#[derive(Debug, Default)]
pub struct Enqueued {
    pub ids: Vec<QueueId>,
    pub open_per_user: std::collections::HashMap<UserId, u64>,
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

/// Adds many PENDING requests with one multi-row INSERT; returns their ids in
/// the order given. Call inside a transaction. Fails as a whole (and should be
/// rolled back) if any one request would fail alone: then enqueue them one by
/// one to learn which. The ids are read back through the unique open-request
/// key (user, seat), not by assuming consecutive auto-increment values.
pub async fn enqueue_many(
    conn: &mut MySqlConnection,
    requests: &[NewRequest],
    now: DateTime<Utc>,
) -> Result<Enqueued, sqlx::Error> {
    async move {
        if requests.is_empty() {
            return Ok(Enqueued::default());
        }
        let mut insert = sqlx::QueryBuilder::new(
            "INSERT INTO reservation_queue \
             (user_id, seat_id, status, traceparent, tracestate, created_at, updated_at) ",
        );
        insert.push_values(requests, |mut row, r| {
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
        let select = sqlx::query_as(AssertSqlSafe(format!(
            "SELECT user_id, seat_id, id FROM reservation_queue \
             WHERE open_seat_id IS NOT NULL AND user_id IN ({})",
            in_placeholders(users.len())
        )));
        let open: Vec<(UserId, SeatId, QueueId)> =
            bind_ids(select, &users).fetch_all(&mut *conn).await?;
        let mut open_per_user: std::collections::HashMap<UserId, u64> =
            std::collections::HashMap::new();
        for (user, _, _) in &open {
            *open_per_user.entry(*user).or_default() += 1;
        }
        let by_pair: std::collections::HashMap<(UserId, SeatId), QueueId> =
            open.into_iter().map(|(u, s, id)| ((u, s), id)).collect();
        let ids = requests
            .iter()
            .map(|r| {
                by_pair.get(&(r.user, r.seat)).copied().ok_or_else(|| {
                    sqlx::Error::Protocol("an enqueued request was not found".into())
                })
            })
            .collect::<Result<_, _>>()?;
        Ok(Enqueued { ids, open_per_user })
    }
    .instrument(super::span("INSERT", "reservation_queue"))
    .await
}

/// How many open (PENDING or PROCESSING) requests each of `users` has; users
/// without any are absent.
pub async fn open_counts(
    conn: &mut MySqlConnection,
    users: &[UserId],
) -> Result<std::collections::HashMap<UserId, u64>, sqlx::Error> {
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
}

/// Claims up to `limit` rows: first rows whose lease ran out (their worker
/// died or stalled), then the oldest PENDING ones; rows another transaction
/// holds are skipped, not waited for. Run in its own short transaction and
/// commit at once: the lease, not the lock, keeps the rows ours afterwards.
pub async fn claim(
    conn: &mut MySqlConnection,
    lease: &Lease,
    limit: u32,
    now: DateTime<Utc>,
) -> Result<Claim, sqlx::Error> {
    async move {
        let expired: Vec<(QueueId,)> = sqlx::query_as(
            "SELECT id FROM reservation_queue WHERE status = 'PROCESSING' AND lease_until < ? \
             ORDER BY id LIMIT ? FOR UPDATE SKIP LOCKED",
        )
        .bind(now.naive_utc())
        .bind(limit)
        .fetch_all(&mut *conn)
        .await?;
        let room = limit.saturating_sub(u32::try_from(expired.len()).unwrap_or(limit));
        let pending: Vec<(QueueId,)> = if room == 0 {
            Vec::new()
        } else {
            sqlx::query_as(
                "SELECT id FROM reservation_queue WHERE status = 'PENDING' \
                 ORDER BY id LIMIT ? FOR UPDATE SKIP LOCKED",
            )
            .bind(room)
            .fetch_all(&mut *conn)
            .await?
        };
        let reclaimed = expired.len();
        let mut ids: Vec<QueueId> = expired.into_iter().chain(pending).map(|(id,)| id).collect();
        if ids.is_empty() {
            return Ok(Claim::default());
        }
        ids.sort_unstable();
        let update = sqlx::query(AssertSqlSafe(format!(
            "UPDATE reservation_queue SET status = 'PROCESSING', lease_owner = ?, lease_token = ?, \
             lease_until = ?, attempts = attempts + 1, updated_at = ? WHERE id IN ({})",
            in_placeholders(ids.len())
        )))
        .bind(&lease.owner)
        .bind(lease.token)
        .bind(lease.until.naive_utc())
        .bind(now.naive_utc());
        bind_ids_exec(update, &super::queue_ids(&ids))
            .execute(&mut *conn)
            .await?;
        Ok(Claim { ids, reclaimed })
    }
    .instrument(super::span("UPDATE", "reservation_queue"))
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

/// Marks requests SUCCESS with the CONFIRMED reservation of their seat.
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
            "UPDATE reservation_queue q JOIN reservations r ON r.confirmed_seat_id = q.seat_id \
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
    async move {
        if ids.is_empty() {
            return Ok(0);
        }
        let update = sqlx::query(AssertSqlSafe(format!(
            "UPDATE reservation_queue SET status = 'FAILED', reason = ?, lease_until = NULL, \
                 decided_at = ?, updated_at = ? \
             WHERE status = 'PROCESSING' AND lease_token = ? AND id IN ({})",
            in_placeholders(ids.len())
        )))
        .bind(reason.as_str())
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
