use chrono::{DateTime, Utc};
use sqlx::MySqlConnection;
use tracing::Instrument as _;

use crate::domain::{ConcertId, PageRequest, QueueId, SeatId, SeatNumber, SeatStatus};

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct SeatRow {
    pub id: SeatId,
    pub concert_id: ConcertId,
    pub seat_number: String,
    pub status: SeatStatus,
}

/// One page of the concert's seats in natural order (A1, A2, …, A10, …,
/// B1), optionally only those with the given status.
pub async fn list_for_concert(
    conn: &mut MySqlConnection,
    concert: ConcertId,
    status: Option<SeatStatus>,
    page: PageRequest,
) -> Result<Vec<SeatRow>, sqlx::Error> {
    async move {
        let query = match status {
            None => sqlx::query_as(
                "SELECT id, concert_id, seat_number, status FROM seats \
                 WHERE concert_id = ? ORDER BY sort_key, id LIMIT ? OFFSET ?",
            )
            .bind(concert),
            Some(status) => sqlx::query_as(
                "SELECT id, concert_id, seat_number, status FROM seats \
                 WHERE concert_id = ? AND status = ? ORDER BY sort_key, id LIMIT ? OFFSET ?",
            )
            .bind(concert)
            .bind(status),
        };
        query
            .bind(page.size)
            .bind(page.offset())
            .fetch_all(conn)
            .await
    }
    .instrument(super::span("SELECT", "seats"))
    .await
}

pub async fn find(conn: &mut MySqlConnection, id: SeatId) -> Result<Option<SeatRow>, sqlx::Error> {
    async move {
        sqlx::query_as("SELECT id, concert_id, seat_number, status FROM seats WHERE id = ?")
            .bind(id)
            .fetch_optional(conn)
            .await
    }
    .instrument(super::span("SELECT", "seats"))
    .await
}

/// Reads and locks the seat row for the rest of the transaction. Whoever
/// takes the seat must update this row first, so holding the lock freezes
/// the seat's reservations too.
pub async fn find_for_update(
    conn: &mut MySqlConnection,
    id: SeatId,
) -> Result<Option<SeatRow>, sqlx::Error> {
    async move {
        sqlx::query_as(
            "SELECT id, concert_id, seat_number, status FROM seats WHERE id = ? FOR UPDATE",
        )
        .bind(id)
        .fetch_optional(conn)
        .await
    }
    .instrument(super::span("SELECT", "seats"))
    .await
}

/// Fails with a violation of `uq_seats_concert_seat_number` when the concert
/// already has a seat with this number.
pub async fn insert(
    conn: &mut MySqlConnection,
    concert: ConcertId,
    number: &SeatNumber,
    now: DateTime<Utc>,
) -> Result<SeatId, sqlx::Error> {
    async move {
        let done = sqlx::query(
            "INSERT INTO seats (concert_id, seat_number, sort_key, status, created_at, updated_at) \
             VALUES (?, ?, ?, 'AVAILABLE', ?, ?)",
        )
        .bind(concert)
        .bind(number.as_str())
        .bind(number.sort_key())
        .bind(now.naive_utc())
        .bind(now.naive_utc())
        .execute(conn)
        .await?;
        Ok(SeatId(done.last_insert_id()))
    }
    .instrument(super::span("INSERT", "seats"))
    .await
}

/// Whether the seat is sold (a CONFIRMED reservation exists for it).
pub async fn has_confirmed_reservation(
    conn: &mut MySqlConnection,
    id: SeatId,
) -> Result<bool, sqlx::Error> {
    async move {
        let (held,): (bool,) = sqlx::query_as(
            "SELECT EXISTS (SELECT 1 FROM reservations WHERE confirmed_seat_id = ?)",
        )
        .bind(id)
        .fetch_one(conn)
        .await?;
        Ok(held)
    }
    .instrument(super::span("SELECT", "reservations"))
    .await
}

/// Whether a request for the seat is still waiting in the queue.
pub async fn has_open_requests(
    conn: &mut MySqlConnection,
    id: SeatId,
) -> Result<bool, sqlx::Error> {
    async move {
        let (open,): (bool,) = sqlx::query_as(
            "SELECT EXISTS (SELECT 1 FROM reservation_queue WHERE seat_id = ? \
                            AND status IN ('PENDING', 'PROCESSING'))",
        )
        .bind(id)
        .fetch_one(conn)
        .await?;
        Ok(open)
    }
    .instrument(super::span("SELECT", "reservation_queue"))
    .await
}

/// Whether anyone ever asked for or held the seat: a request in the queue
/// (open or decided) or a reservation (confirmed or cancelled).
pub async fn has_history(conn: &mut MySqlConnection, id: SeatId) -> Result<bool, sqlx::Error> {
    async move {
        let (held,): (bool,) = sqlx::query_as(
            "SELECT EXISTS (SELECT 1 FROM reservation_queue WHERE seat_id = ?) \
                 OR EXISTS (SELECT 1 FROM reservations WHERE seat_id = ?)",
        )
        .bind(id)
        .bind(id)
        .fetch_one(conn)
        .await?;
        Ok(held)
    }
    .instrument(super::span("SELECT", "reservation_queue"))
    .await
}

/// Changes what is given and leaves the rest. Fails with a violation of
/// `uq_seats_concert_seat_number` when the new number is taken.
pub async fn update(
    conn: &mut MySqlConnection,
    id: SeatId,
    number: Option<&SeatNumber>,
    status: Option<SeatStatus>,
    now: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    async move {
        sqlx::query(
            "UPDATE seats SET seat_number = COALESCE(?, seat_number), sort_key = COALESCE(?, sort_key), \
             status = COALESCE(?, status), updated_at = ? WHERE id = ?",
        )
        .bind(number.map(SeatNumber::as_str))
        .bind(number.map(SeatNumber::sort_key))
        .bind(status)
        .bind(now.naive_utc())
        .bind(id)
        .execute(conn)
        .await?;
        Ok(())
    }
    .instrument(super::span("UPDATE", "seats"))
    .await
}

/// Deletes the seat. Call with the seat locked and [`has_history`] false.
pub async fn delete(conn: &mut MySqlConnection, id: SeatId) -> Result<bool, sqlx::Error> {
    async move {
        let done = sqlx::query("DELETE FROM seats WHERE id = ?")
            .bind(id)
            .execute(conn)
            .await?;
        Ok(done.rows_affected() == 1)
    }
    .instrument(super::span("DELETE", "seats"))
    .await
}

/// Marks seats locked by [`lock_available`] as RESERVED.
pub async fn mark_reserved(
    conn: &mut MySqlConnection,
    seats: &[SeatId],
    now: DateTime<Utc>,
) -> Result<u64, sqlx::Error> {
    async move {
        if seats.is_empty() {
            return Ok(0);
        }
        let update = sqlx::query(sqlx::AssertSqlSafe(format!(
            "UPDATE seats SET status = 'RESERVED', updated_at = ? WHERE status = 'AVAILABLE' AND id IN ({})",
            super::in_placeholders(seats.len())
        )))
        .bind(now.naive_utc());
        let ids: Vec<u64> = seats.iter().map(|s| s.0).collect();
        let done = super::bind_ids_exec(update, &ids).execute(conn).await?;
        Ok(done.rows_affected())
    }
    .instrument(super::span("UPDATE", "seats"))
    .await
}

/// The original's conditional update: takes the seat if it is AVAILABLE.
pub async fn reserve_if_available(
    conn: &mut MySqlConnection,
    seat: SeatId,
    now: DateTime<Utc>,
) -> Result<bool, sqlx::Error> {
    async move {
        let done = sqlx::query("UPDATE seats SET status = 'RESERVED', updated_at = ? WHERE id = ? AND status = 'AVAILABLE'")
            .bind(now.naive_utc())
            .bind(seat)
            .execute(conn)
            .await?;
        Ok(done.rows_affected() == 1)
    }
    .instrument(super::span("UPDATE", "seats"))
    .await
}

/// Makes a RESERVED seat AVAILABLE again (its reservation was cancelled).
pub async fn release(
    conn: &mut MySqlConnection,
    seat: SeatId,
    now: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    async move {
        sqlx::query("UPDATE seats SET status = 'AVAILABLE', updated_at = ? WHERE id = ? AND status = 'RESERVED'")
            .bind(now.naive_utc())
            .bind(seat)
            .execute(conn)
            .await?;
        Ok(())
    }
    .instrument(super::span("UPDATE", "seats"))
    .await
}

/// What a deciding worker must know of a seat it locked as AVAILABLE
/// before giving it to its earliest request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, sqlx::FromRow)]
pub struct Standing {
    pub seat: SeatId,
    /// A CONFIRMED reservation exists, whatever the seat's status column
    /// says (a hand-made fix can leave them apart): the seat is taken.
    pub sold: bool,
    /// The earliest open (PENDING or PROCESSING, under any lease) request
    /// for the seat, if it is at most `up_to`. When it is earlier than the
    /// worker's candidate, someone is ahead in line and the candidate waits.
    pub first_open: Option<QueueId>,
}

/// Locks those of `seats` that are AVAILABLE, in id order (the order every
/// writer of seats uses), and returns their [`Standing`]; seats that are
/// taken, or locked by a transaction that then takes them, are left out.
///
/// The subqueries are plain reads: a locking read does not lock the rows of
/// its subqueries (MySQL and MariaDB alike). What they see stays true until
/// our commit, because a request leaves the open states only through a
/// decision that locks its seat first (or a failure that does not take it),
/// and a new request for a seat waits for the seat's lock (its foreign key).
///
/// Per seat the earliest open request is found by reading the seat's
/// requests in id order up to the first open one (at most `up_to`, the
/// batch's latest candidate): a seat whose history of decided requests is
/// long (re-sold many times) costs that history. The seat index is forced:
/// for `ORDER BY id LIMIT 1` the optimizer would rather walk the (status, id)
/// index through every open request.
pub async fn lock_available(
    conn: &mut MySqlConnection,
    seats: &[SeatId],
    up_to: QueueId,
) -> Result<Vec<Standing>, sqlx::Error> {
    async move {
        if seats.is_empty() {
            return Ok(Vec::new());
        }
        let select = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT s.id AS seat, \
                    EXISTS (SELECT 1 FROM reservations r WHERE r.confirmed_seat_id = s.id) AS sold, \
                    (SELECT q.id FROM reservation_queue q FORCE INDEX (idx_queue_seat_id) \
                      WHERE q.seat_id = s.id AND q.id <= ? AND q.status IN ('PENDING', 'PROCESSING') \
                      ORDER BY q.id LIMIT 1) AS first_open \
             FROM seats s WHERE s.status = 'AVAILABLE' AND s.id IN ({}) ORDER BY s.id FOR UPDATE",
            super::in_placeholders(seats.len())
        )))
        .bind(up_to);
        let ids: Vec<u64> = seats.iter().map(|s| s.0).collect();
        super::bind_ids(select, &ids).fetch_all(conn).await
    }
    .instrument(super::span("SELECT", "seats"))
    .await
}
