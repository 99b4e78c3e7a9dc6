//! E-tickets (issue 31): one per seat of a CONFIRMED reservation, issued in
//! the transaction that confirms it and voided in the one that cancels it.

use chrono::{DateTime, Utc};
use sqlx::{AssertSqlSafe, MySqlConnection};

use super::seats::{PlaceColumns, place_columns};
use super::{BindIds as _, IdList, Traced as _, execute_for_ids};
use crate::domain::ticket_code::TicketIdentity;
use crate::domain::{ConcertId, ReservationId, SeatId, TicketId, UserId};

/// Issues a ticket for every CONFIRMED claim of `reservations` (the
/// caller's, in its transaction).
pub async fn issue_for(
    conn: &mut MySqlConnection,
    reservations: &[ReservationId],
    now: DateTime<Utc>,
) -> Result<u64, sqlx::Error> {
    execute_for_ids(conn, reservations, |list| {
        sqlx::query(AssertSqlSafe(format!(
            "INSERT INTO tickets (concert_id, reservation_id, seat_id, version, status, issued_at) \
             SELECT concert_id, reservation_id, seat_id, 1, 'VALID', ? FROM reservation_seats \
              WHERE status = 'CONFIRMED' AND reservation_id IN ({list})"
        )))
        .bind(now.naive_utc())
    })
    .traced("INSERT", "tickets")
    .await
}

/// Voids the valid tickets of `reservations` (cancelled in the caller's
/// transaction).
pub async fn void_for(
    conn: &mut MySqlConnection,
    reservations: &[ReservationId],
    now: DateTime<Utc>,
) -> Result<u64, sqlx::Error> {
    execute_for_ids(conn, reservations, |list| {
        sqlx::query(AssertSqlSafe(format!(
            "UPDATE tickets SET status = 'VOID', voided_at = ? \
              WHERE status = 'VALID' AND reservation_id IN ({list})"
        )))
        .bind(now.naive_utc())
    })
    .traced("UPDATE", "tickets")
    .await
}

/// A ticket with what its holder and the door are shown.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct TicketRow {
    pub id: TicketId,
    pub concert_id: ConcertId,
    pub reservation_id: ReservationId,
    pub seat_id: SeatId,
    pub version: u32,
    /// VALID or VOID.
    pub status: String,
    pub seat_number: String,
    pub category: Option<String>,
    pub user_id: UserId,
    pub holder: String,
    /// Where the seat is: a plan's labels, or a standing area and the
    /// place's entry number.
    #[sqlx(flatten)]
    pub place: PlaceColumns,
    pub checked_in_at: Option<DateTime<Utc>>,
    pub checked_in_gate: Option<String>,
}

impl TicketRow {
    pub fn identity(&self) -> TicketIdentity {
        TicketIdentity {
            ticket: self.id,
            concert: self.concert_id,
            seat: self.seat_id,
            version: self.version,
        }
    }

    pub fn is_valid(&self) -> bool {
        self.status == "VALID"
    }
}

const SELECT: &str = concat!(
    "SELECT t.id, t.concert_id, t.reservation_id, t.seat_id, t.version, t.status, \
     s.seat_number, rs.category, r.user_id, u.nickname AS holder, ",
    place_columns!(),
    ", t.checked_in_at, t.checked_in_gate \
     FROM tickets t JOIN seats s ON s.id = t.seat_id \
     JOIN reservation_seats rs ON rs.reservation_id = t.reservation_id AND rs.seat_id = t.seat_id \
     JOIN reservations r ON r.id = t.reservation_id JOIN users u ON u.id = r.user_id"
);

/// The tickets of a reservation, in seat order.
pub async fn of_reservation(
    conn: &mut MySqlConnection,
    reservation: ReservationId,
) -> Result<Vec<TicketRow>, sqlx::Error> {
    sqlx::query_as(AssertSqlSafe(format!(
        "{SELECT} WHERE t.reservation_id = ? ORDER BY t.seat_id"
    )))
    .bind(reservation)
    .fetch_all(conn)
    .traced("SELECT", "tickets")
    .await
}

pub async fn find(
    conn: &mut MySqlConnection,
    ticket: TicketId,
) -> Result<Option<TicketRow>, sqlx::Error> {
    sqlx::query_as(AssertSqlSafe(format!("{SELECT} WHERE t.id = ?")))
        .bind(ticket)
        .fetch_optional(conn)
        .traced("SELECT", "tickets")
        .await
}

/// The concert's tickets voided at or after `since`, oldest first, at most
/// `limit` (a scanner asks again from the last one's time).
pub async fn voided_since(
    conn: &mut MySqlConnection,
    concert: ConcertId,
    since: DateTime<Utc>,
    limit: u32,
) -> Result<Vec<(TicketId, DateTime<Utc>)>, sqlx::Error> {
    sqlx::query_as(
        "SELECT id, voided_at FROM tickets FORCE INDEX (idx_tickets_concert_voided) \
          WHERE concert_id = ? AND voided_at >= ? ORDER BY voided_at, id LIMIT ?",
    )
    .bind(concert)
    .bind(since.naive_utc())
    .bind(limit)
    .fetch_all(conn)
    .traced("SELECT", "tickets")
    .await
}

/// Tickets of several reservations at once (the mail of a confirmation).
pub async fn of_reservations(
    conn: &mut MySqlConnection,
    reservations: &[ReservationId],
) -> Result<Vec<TicketRow>, sqlx::Error> {
    let Some(list) = IdList::of(reservations) else {
        return Ok(Vec::new());
    };
    let select = sqlx::query_as(AssertSqlSafe(format!(
        "{SELECT} WHERE t.reservation_id IN ({list}) ORDER BY t.reservation_id, t.seat_id"
    )));
    select
        .bind_ids(&list)
        .fetch_all(conn)
        .traced("SELECT", "tickets")
        .await
}

/// A valid ticket with the price its seat was sold at (0 without prices).
#[derive(Debug, Clone, Copy, sqlx::FromRow)]
pub struct PricedTicket {
    pub id: TicketId,
    pub seat_id: SeatId,
    pub price: u64,
    pub checked_in: bool,
}

/// Locks the reservation's valid tickets and reads them with their prices,
/// in ticket order. Call with the reservation locked (after its seats, as
/// every writer does). The lock is what makes `checked_in` true to act on:
/// a scan admits a ticket by updating its row, so a check-in either
/// committed before this read (and is seen) or waits for the caller's
/// commit and finds the ticket void.
pub async fn valid_with_prices(
    conn: &mut MySqlConnection,
    reservation: ReservationId,
) -> Result<Vec<PricedTicket>, sqlx::Error> {
    sqlx::query_as(
        "SELECT t.id, t.seat_id, CAST(COALESCE(rs.price, 0) AS UNSIGNED) AS price, \
                t.checked_in_at IS NOT NULL AS checked_in \
           FROM tickets t JOIN reservation_seats rs \
            ON rs.reservation_id = t.reservation_id AND rs.seat_id = t.seat_id \
          WHERE t.reservation_id = ? AND t.status = 'VALID' ORDER BY t.id FOR UPDATE",
    )
    .bind(reservation)
    .fetch_all(conn)
    .traced("SELECT", "tickets")
    .await
}

/// Voids these valid tickets (refunded in the caller's transaction).
pub async fn void_ids(
    conn: &mut MySqlConnection,
    tickets: &[TicketId],
    now: DateTime<Utc>,
) -> Result<u64, sqlx::Error> {
    execute_for_ids(conn, tickets, |list| {
        sqlx::query(AssertSqlSafe(format!(
            "UPDATE tickets SET status = 'VOID', voided_at = ? WHERE status = 'VALID' AND id IN ({list})"
        )))
        .bind(now.naive_utc())
    })
    .traced("UPDATE", "tickets")
    .await
}
