//! Events written in the transaction of the change they announce.

use chrono::{DateTime, Utc};
use sqlx::{AssertSqlSafe, MySqlConnection};
use tracing::Instrument as _;

use super::{bind_ids_exec, in_placeholders};
use crate::domain::{QueueId, ReservationId};

pub const RESERVATION_SUCCEEDED: &str = "ReservationSucceeded";
pub const RESERVATION_CANCELLED: &str = "ReservationCancelled";

/// A `ReservationSucceeded` event for each SUCCESS request given.
pub async fn record_succeeded(
    conn: &mut MySqlConnection,
    requests: &[QueueId],
    now: DateTime<Utc>,
) -> Result<u64, sqlx::Error> {
    async move {
        if requests.is_empty() {
            return Ok(0);
        }
        let insert = sqlx::query(AssertSqlSafe(format!(
            "INSERT INTO outbox (event_type, aggregate_id, payload, created_at) \
             SELECT ?, r.id, JSON_OBJECT('reservationId', r.id, 'queueId', q.id, 'userId', r.user_id, \
                                         'concertId', r.concert_id, 'seatId', r.seat_id), ? \
             FROM reservation_queue q JOIN reservations r ON r.id = q.reservation_id \
             WHERE q.status = 'SUCCESS' AND q.id IN ({}) ORDER BY q.id",
            in_placeholders(requests.len())
        )))
        .bind(RESERVATION_SUCCEEDED)
        .bind(now.naive_utc());
        let done = bind_ids_exec(insert, &super::queue_ids(requests))
            .execute(conn)
            .await?;
        Ok(done.rows_affected())
    }
    .instrument(super::span("INSERT", "outbox"))
    .await
}

/// A `ReservationCancelled` event for the reservation.
pub async fn record_cancelled(
    conn: &mut MySqlConnection,
    reservation: ReservationId,
    now: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    async move {
        sqlx::query(
            "INSERT INTO outbox (event_type, aggregate_id, payload, created_at) \
             SELECT ?, id, JSON_OBJECT('reservationId', id, 'userId', user_id, 'concertId', concert_id, \
                                       'seatId', seat_id), ? \
             FROM reservations WHERE id = ?",
        )
        .bind(RESERVATION_CANCELLED)
        .bind(now.naive_utc())
        .bind(reservation)
        .execute(conn)
        .await?;
        Ok(())
    }
    .instrument(super::span("INSERT", "outbox"))
    .await
}
