use chrono::{DateTime, Utc};
use sqlx::{AssertSqlSafe, MySqlConnection};
use tracing::Instrument as _;

use super::{bind_ids_exec, in_placeholders};
use crate::domain::{
    ConcertId, PageRequest, QueueId, ReservationId, ReservationStatus, SeatId, UserId,
};

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ReservationRow {
    pub id: ReservationId,
    pub user_id: UserId,
    pub concert_id: ConcertId,
    pub seat_id: SeatId,
    pub seat_number: String,
    pub status: ReservationStatus,
    pub created_at: DateTime<Utc>,
}

const SELECT: &str = "SELECT r.id, r.user_id, r.concert_id, r.seat_id, s.seat_number, r.status, r.created_at \
                      FROM reservations r JOIN seats s ON s.id = r.seat_id";

pub async fn find(
    conn: &mut MySqlConnection,
    id: ReservationId,
) -> Result<Option<ReservationRow>, sqlx::Error> {
    async move {
        sqlx::query_as(AssertSqlSafe(format!("{SELECT} WHERE r.id = ?")))
            .bind(id)
            .fetch_optional(conn)
            .await
    }
    .instrument(super::span("SELECT", "reservations"))
    .await
}

/// The user's reservations, newest first.
pub async fn list_for_user(
    conn: &mut MySqlConnection,
    user: UserId,
    page: PageRequest,
) -> Result<Vec<ReservationRow>, sqlx::Error> {
    async move {
        sqlx::query_as(AssertSqlSafe(format!(
            "{SELECT} WHERE r.user_id = ? ORDER BY r.created_at DESC, r.id DESC LIMIT ? OFFSET ?"
        )))
        .bind(user)
        .bind(page.size)
        .bind(page.offset())
        .fetch_all(conn)
        .await
    }
    .instrument(super::span("SELECT", "reservations"))
    .await
}

/// Locks the reservation row; returns its owner, seat and status.
pub async fn lock(
    conn: &mut MySqlConnection,
    id: ReservationId,
) -> Result<Option<(UserId, SeatId, ReservationStatus)>, sqlx::Error> {
    async move {
        sqlx::query_as("SELECT user_id, seat_id, status FROM reservations WHERE id = ? FOR UPDATE")
            .bind(id)
            .fetch_optional(conn)
            .await
    }
    .instrument(super::span("SELECT", "reservations"))
    .await
}

/// CONFIRMED → CANCELLED; false when it was not CONFIRMED.
pub async fn cancel(
    conn: &mut MySqlConnection,
    id: ReservationId,
    now: DateTime<Utc>,
) -> Result<bool, sqlx::Error> {
    async move {
        let done = sqlx::query(
            "UPDATE reservations SET status = 'CANCELLED', updated_at = ? WHERE id = ? AND status = 'CONFIRMED'",
        )
        .bind(now.naive_utc())
        .bind(id)
        .execute(conn)
        .await?;
        Ok(done.rows_affected() == 1)
    }
    .instrument(super::span("UPDATE", "reservations"))
    .await
}

/// One CONFIRMED reservation per given request, for the request's user and
/// seat. The unique index on `confirmed_seat_id` refuses a second one for a
/// seat, whatever happened before.
pub async fn insert_for_requests(
    conn: &mut MySqlConnection,
    requests: &[QueueId],
    now: DateTime<Utc>,
) -> Result<u64, sqlx::Error> {
    async move {
        if requests.is_empty() {
            return Ok(0);
        }
        let insert = sqlx::query(AssertSqlSafe(format!(
            "INSERT INTO reservations (user_id, concert_id, seat_id, status, created_at, updated_at) \
             SELECT q.user_id, s.concert_id, s.id, 'CONFIRMED', ?, ? \
             FROM reservation_queue q JOIN seats s ON s.id = q.seat_id WHERE q.id IN ({}) ORDER BY q.id",
            in_placeholders(requests.len())
        )))
        .bind(now.naive_utc())
        .bind(now.naive_utc());
        let done = bind_ids_exec(insert, &super::queue_ids(requests))
            .execute(conn)
            .await?;
        Ok(done.rows_affected())
    }
    .instrument(super::span("INSERT", "reservations"))
    .await
}

/// A single CONFIRMED reservation (the per-request baseline mode).
pub async fn insert_confirmed(
    conn: &mut MySqlConnection,
    user: UserId,
    seat: SeatId,
    now: DateTime<Utc>,
) -> Result<ReservationId, sqlx::Error> {
    async move {
        let done = sqlx::query(
            "INSERT INTO reservations (user_id, concert_id, seat_id, status, created_at, updated_at) \
             SELECT ?, concert_id, id, 'CONFIRMED', ?, ? FROM seats WHERE id = ?",
        )
        .bind(user)
        .bind(now.naive_utc())
        .bind(now.naive_utc())
        .bind(seat)
        .execute(conn)
        .await?;
        Ok(ReservationId(done.last_insert_id()))
    }
    .instrument(super::span("INSERT", "reservations"))
    .await
}
