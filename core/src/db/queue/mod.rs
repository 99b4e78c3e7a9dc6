//! The reservation queue, by the life of a request: written (`enqueue.rs`
//! and `group.rs`, with `request.rs`), claimed by a worker (`claim.rs`), and decided
//! (`completion.rs`), each write of the last two fenced by the claim's
//! lease. The rows, the fence and the reads every stage shares are here.

use chrono::{DateTime, Utc};
use sqlx::{AssertSqlSafe, MySqlConnection};

use super::{BindIds, IdList, Traced as _};
use crate::domain::{
    ConcertId, IdempotencyKey, LineKey, LineRank, QueueId, QueueStatus, ReservationId, SeatId,
    UserId,
};

mod claim;
mod completion;
mod enqueue;
mod group;
mod request;

pub use claim::*;
pub use completion::*;
pub use enqueue::*;
pub use group::*;
pub use request::*;

#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct QueueRow {
    pub id: QueueId,
    pub user_id: UserId,
    pub concert_id: ConcertId,
    /// The request's first (lowest) seat.
    pub seat_id: Option<SeatId>,
    pub seat_count: u8,
    pub line_key: LineKey,
    /// Its place in line, fixed when written (or, in a lottery, at the
    /// opening); None before then.
    pub line_rank: Option<LineRank>,
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

const COLUMNS: &str = "id, user_id, concert_id, seat_id, seat_count, line_key, line_rank, status, reservation_id, \
                       reason, created_at, decided_at";

/// [`COLUMNS`] of the table called `alias` in a join.
pub(crate) fn columns_of(alias: &str) -> String {
    COLUMNS
        .split(", ")
        .map(|column| format!("{alias}.{}", column.trim()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// How many claims of one request may end without a decision before the
/// request is set aside (the workers' TICKET_WORKER_MAX_ATTEMPTS default).
pub const DEFAULT_MAX_ATTEMPTS: u32 = 5;

/// W3C trace context of the request that enqueued a row.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TraceContext {
    pub traceparent: Option<String>,
    pub tracestate: Option<String>,
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
    let Some(list) = IdList::of(ids) else {
        return Ok(Vec::new());
    };
    let select = sqlx::query_as(AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM reservation_queue \
         WHERE id IN ({list}) AND status IN ('SUCCESS', 'FAILED')"
    )));
    select
        .bind_ids(&list)
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

/// How a decision's statements know that the rows are still its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fence {
    /// Claimed and committed as PROCESSING under this lease token: a worker
    /// whose rows were re-claimed after its lease ran out changes nothing.
    Lease(u64),
    /// PROCESSING rows whose lease ran out, locked by the caller's
    /// transaction.
    Expired,
    /// PENDING rows (or WAITING ones of an opened lottery) locked by the
    /// caller's transaction ([`lock_pending`]):
    /// claimed and decided in one transaction, with no lease written. The
    /// lock is the fence: a worker that dies loses its transaction, and the
    /// rows are PENDING again for the next.
    InTransaction,
}

impl Fence {
    /// The condition on `alias`'s rows; a lease binds its token (`bind`).
    fn condition(self, alias: &str) -> String {
        match self {
            Self::Lease(_) => format!("{alias}status = 'PROCESSING' AND {alias}lease_token = ?"),
            Self::Expired => format!("{alias}status = 'PROCESSING'"),
            Self::InTransaction => format!("{alias}status IN ('PENDING', 'WAITING')"),
        }
    }

    /// Binds the value of [`Self::condition`]'s placeholder, if it has one.
    fn bind_token<Q: BindIds>(self, query: Q) -> Q {
        match self {
            Self::Lease(token) => query.bind_id(token),
            Self::Expired | Self::InTransaction => query,
        }
    }
}
