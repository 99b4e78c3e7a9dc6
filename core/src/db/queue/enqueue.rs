//! Writing requests one at a time (what a group could not settle, or a
//! presale request with its code), and what a group's write (`group.rs`)
//! reports of each request.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use sqlx::{AssertSqlSafe, MySqlConnection};

use crate::db::request_pools;
use crate::db::request_seats;
use crate::db::{Traced as _, execute_for_ids};
use crate::domain::allocation::Fan;
use crate::domain::{IdempotencyKey, LineKey, QueueId, QueueStatus};

use super::*;

/// Adds a request with its seats or pool, in line at `line` (WAITING in a
/// lottery, else PENDING: see [`NewRequest::line_at`]); call inside a
/// transaction. Fails with a violation of `uq_request_seats_open` (or
/// `uq_request_pools_open`) when the user already has an open request for
/// one of the seats (or the pool), of `uq_queue_idempotency` when its key
/// was used before, and with a foreign key error (1452) when a seat or the
/// user does not exist.
pub async fn enqueue(
    conn: &mut MySqlConnection,
    request: &NewRequest,
    line: LineKey,
    now: DateTime<Utc>,
) -> Result<QueueId, sqlx::Error> {
    async move {
        crate::db::line::lock_lines(conn, &[request.concert]).await?;
        let done = sqlx::query(
            "INSERT INTO reservation_queue \
             (user_id, concert_id, seat_id, seat_count, line_key, status, idempotency_key, access_code_id, \
              traceparent, tracestate, created_at, updated_at) \
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        )
        .bind(request.user)
        .bind(request.concert)
        .bind(request.seats().first())
        .bind(request.seat_count())
        .bind(line)
        .bind(QueueStatus::in_line_at(line))
        .bind(request.key.as_ref().map(IdempotencyKey::as_str))
        .bind(request.access_code)
        .bind(request.trace.traceparent.as_deref())
        .bind(request.trace.tracestate.as_deref())
        .bind(now.naive_utc())
        .bind(now.naive_utc())
        .execute(&mut *conn)
        .await?;
        let id = QueueId(done.last_insert_id());
        request_seats::insert(conn, &request.seat_rows(id, line), false).await?;
        if let Some(pool) = request.pool_row(id, line) {
            request_pools::insert(conn, &[pool], false).await?;
        }
        let entered = crate::db::line::Entered {
            concert: request.concert,
            key: line,
            id,
        };
        crate::db::line::rank_entered(conn, &[entered]).await?;
        Ok(id)
    }
    .traced("INSERT", "reservation_queue")
    .await
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
/// and its fans' seats.
#[derive(Debug, Default)]
pub struct Enqueued {
    pub outcomes: Vec<Outcome>,
    /// The seats each of their fans has now: held, confirmed and asked for
    /// by open requests (theirs included).
    pub fan_seats: HashMap<Fan, u64>,
}

impl Enqueued {
    /// The requests written, in the order given, for
    /// [`crate::db::line::rank_entered`] (less any the caller withdraws).
    pub fn entered(
        &self,
        requests: &[NewRequest],
        time: GroupTime,
    ) -> Vec<crate::db::line::Entered> {
        self.outcomes
            .iter()
            .zip(requests)
            .filter_map(|(outcome, r)| match outcome {
                Outcome::Queued(id) => Some(crate::db::line::Entered {
                    concert: r.concert,
                    key: r
                        .line_at(time.admitted_at)
                        .unwrap_or(LineKey::AFTER_OPENING),
                    id: *id,
                }),
                _ => None,
            })
            .collect()
    }
}

/// Takes back WAITING or PENDING requests written in the caller's transaction (refused
/// after all, or a user over the open-seat limit), with their seats;
/// returns how many requests were removed.
pub async fn withdraw(conn: &mut MySqlConnection, ids: &[QueueId]) -> Result<u64, sqlx::Error> {
    request_seats::delete(conn, ids).await?;
    request_pools::delete(conn, ids).await?;
    execute_for_ids(conn, ids, |list| {
        sqlx::query(AssertSqlSafe(format!(
            "DELETE FROM reservation_queue WHERE status IN ('WAITING', 'PENDING') AND id IN ({list})"
        )))
    })
    .traced("DELETE", "reservation_queue")
    .await
}
