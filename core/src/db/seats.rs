use super::prices::{PriceColumns, seat_price_columns};
use super::{BindIds as _, IdList, Traced as _};
use chrono::{DateTime, Utc};
use sqlx::MySqlConnection;

use crate::domain::{ConcertId, PageRequest, ReservationStatus, SeatId, SeatNumber, SeatStatus};

mod decision;
mod window;
pub use decision::*;
pub use window::best_free;

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct SeatRow {
    pub id: SeatId,
    pub concert_id: ConcertId,
    pub seat_number: String,
    pub status: SeatStatus,
    /// Its category and price now (none while the concert has no
    /// categories).
    #[sqlx(flatten)]
    pub price: PriceColumns,
}

/// The columns of a [`SeatRow`], of `seats s`.
macro_rules! seat_row {
    ($rest:literal) => {
        concat!(
            "SELECT s.id, s.concert_id, s.seat_number, s.status, ",
            seat_price_columns!(),
            " FROM seats s ",
            $rest
        )
    };
}

/// One page of the concert's seats in natural order (A1, A2, …, A10, …,
/// B1), optionally only those with the given status. Standing places are
/// not seats to list.
pub async fn list_for_concert(
    conn: &mut MySqlConnection,
    concert: ConcertId,
    status: Option<SeatStatus>,
    page: PageRequest,
) -> Result<Vec<SeatRow>, sqlx::Error> {
    let query = match status {
        None => sqlx::query_as(seat_row!(
            "WHERE s.concert_id = ? AND s.area IS NULL ORDER BY s.sort_key, s.id LIMIT ? OFFSET ?"
        ))
        .bind(concert),
        Some(status) => sqlx::query_as(seat_row!(
            "WHERE s.concert_id = ? AND s.status = ? AND s.area IS NULL ORDER BY s.sort_key, s.id LIMIT ? OFFSET ?"
        ))
        .bind(concert)
        .bind(status),
    };

    query
        .bind(page.size)
        .bind(page.offset())
        .fetch_all(conn)
        .traced("SELECT", "seats")
        .await
}

/// The seat; a standing place is none (it is its area's, changed with it).
pub async fn find(conn: &mut MySqlConnection, id: SeatId) -> Result<Option<SeatRow>, sqlx::Error> {
    sqlx::query_as(seat_row!("WHERE s.id = ? AND s.area IS NULL"))
        .bind(id)
        .fetch_optional(conn)
        .traced("SELECT", "seats")
        .await
}

/// Reads and locks the seat row for the rest of the transaction. Whoever
/// takes the seat must update this row first, so holding the lock freezes
/// the seat's reservations too. A standing place is none, as for [`find`].
pub async fn find_for_update(
    conn: &mut MySqlConnection,
    id: SeatId,
) -> Result<Option<SeatRow>, sqlx::Error> {
    sqlx::query_as(seat_row!("WHERE s.id = ? AND s.area IS NULL FOR UPDATE"))
        .bind(id)
        .fetch_optional(conn)
        .traced("SELECT", "seats")
        .await
}

/// What an order must know of its seats: each existing seat's concert and
/// that concert's `max_seats_per_order`. Seats that do not exist are
/// absent, and so are standing places (asked for by area and count).
pub async fn order_facts(
    conn: &mut MySqlConnection,
    seats: &[SeatId],
) -> Result<Vec<(SeatId, ConcertId, u8)>, sqlx::Error> {
    let Some(list) = IdList::of(seats) else {
        return Ok(Vec::new());
    };
    let select = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT s.id, s.concert_id, c.max_seats_per_order FROM seats s \
         JOIN concerts c ON c.id = s.concert_id WHERE s.id IN ({list}) AND s.area IS NULL"
    )));
    select
        .bind_ids(&list)
        .fetch_all(conn)
        .traced("SELECT", "seats")
        .await
}

/// Every seat of the concert that `seat` belongs to, with that concert
/// (nothing when there is no such seat): what a cold seat directory reads
/// in one query instead of one per seat (from the concert's seat index).
/// Standing places are not seats a request names: none is found.
pub async fn of_same_concert(
    conn: &mut MySqlConnection,
    seat: SeatId,
) -> Result<Vec<(SeatId, ConcertId)>, sqlx::Error> {
    sqlx::query_as(
        "SELECT s.id, s.concert_id FROM seats f JOIN seats s ON s.concert_id = f.concert_id \
         WHERE f.id = ? AND f.area IS NULL AND s.area IS NULL",
    )
    .bind(seat)
    .fetch_all(conn)
    .traced("SELECT", "seats")
    .await
}

/// Seats added one by one are offered after every seat of the layout
/// (best available), front row first, then left first: where a row's
/// centre is, is not known.
const ADDED_RANKS_FROM: u32 = 1 << 31;
const ADDED_ROW_RANKS: u32 = 1_000;

/// Fails with a violation of `uq_seats_concert_seat_number` when the concert
/// already has a seat with this number. A seat named like rows ×
/// seatsPerRow's takes its row and position; others come last.
pub async fn insert(
    conn: &mut MySqlConnection,
    concert: ConcertId,
    number: &SeatNumber,
    now: DateTime<Utc>,
) -> Result<SeatId, sqlx::Error> {
    let (row, position) = number.grid_place().unwrap_or((u32::MAX, 0));
    let rank = row
        .saturating_mul(ADDED_ROW_RANKS)
        .saturating_add(position)
        .saturating_add(ADDED_RANKS_FROM);
    let done = sqlx::query(
        "INSERT INTO seats (concert_id, seat_number, sort_key, status, row_index, row_position, \
         seat_rank, created_at, updated_at) VALUES (?, ?, ?, 'AVAILABLE', ?, ?, ?, ?, ?)",
    )
    .bind(concert)
    .bind(number.as_str())
    .bind(number.sort_key())
    .bind(row)
    .bind(position)
    .bind(rank)
    .bind(now.naive_utc())
    .bind(now.naive_utc())
    .execute(conn)
    .traced("INSERT", "seats")
    .await?;
    Ok(SeatId(done.last_insert_id()))
}

/// The seat's live claim, if any: the status (HELD or CONFIRMED) of the
/// reservation that holds or bought it. A hold past its end is no claim.
pub async fn live_claim(
    conn: &mut MySqlConnection,
    id: SeatId,
    now: DateTime<Utc>,
) -> Result<Option<ReservationStatus>, sqlx::Error> {
    let row: Option<(ReservationStatus,)> = sqlx::query_as(
        "SELECT rs.status FROM reservation_seats rs JOIN reservations r ON r.id = rs.reservation_id \
         WHERE rs.live_seat_id = ? AND NOT (r.status = 'HELD' AND r.hold_expires_at <= ?)",
    )
    .bind(id)
    .bind(now.naive_utc())
    .fetch_optional(conn)
    .traced("SELECT", "reservation_seats")
    .await?;
    Ok(row.map(|(status,)| status))
}

/// Whether a request for the seat is still waiting in the queue.
pub async fn has_open_requests(
    conn: &mut MySqlConnection,
    id: SeatId,
) -> Result<bool, sqlx::Error> {
    let (open,): (bool,) =
        sqlx::query_as("SELECT EXISTS (SELECT 1 FROM request_seats WHERE open_seat_id = ?)")
            .bind(id)
            .fetch_one(conn)
            .traced("SELECT", "request_seats")
            .await?;
    Ok(open)
}

/// Whether anyone ever asked for or held the seat: a request in the queue
/// (open or decided) or a reservation (of any status) names it.
pub async fn has_history(conn: &mut MySqlConnection, id: SeatId) -> Result<bool, sqlx::Error> {
    let (held,): (bool,) = sqlx::query_as(
        "SELECT EXISTS (SELECT 1 FROM request_seats WHERE seat_id = ?) \
             OR EXISTS (SELECT 1 FROM reservation_queue WHERE seat_id = ?) \
             OR EXISTS (SELECT 1 FROM reservation_seats WHERE seat_id = ?)",
    )
    .bind(id)
    .bind(id)
    .bind(id)
    .fetch_one(conn)
    .traced("SELECT", "reservation_queue")
    .await?;
    Ok(held)
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
    .traced("UPDATE", "seats")
    .await?;
    Ok(())
}

/// Deletes the seat. Call with the seat locked and [`has_history`] false.
pub async fn delete(conn: &mut MySqlConnection, id: SeatId) -> Result<bool, sqlx::Error> {
    let done = sqlx::query("DELETE FROM seats WHERE id = ?")
        .bind(id)
        .execute(conn)
        .traced("DELETE", "seats")
        .await?;
    Ok(done.rows_affected() == 1)
}

/// A seat's or a place's state, as availability counts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, sqlx::FromRow)]
pub struct SeatState {
    pub id: SeatId,
    pub status: SeatStatus,
    /// The position of its price category.
    pub category: Option<u8>,
    /// The position of its standing area, for a place.
    pub area: Option<u8>,
}

/// Every seat and place of the concert with its stored status, its price
/// category's and its area's positions, in id order: what a seat map and
/// the counts show. Read from the best-available index alone (concert,
/// area, category, status, rank; the id is in every entry). A hold that
/// has just ended shows HELD until the sweep frees it (about a second), as
/// the concert's counts do.
pub async fn states_of_concert(
    conn: &mut MySqlConnection,
    concert: ConcertId,
) -> Result<Vec<SeatState>, sqlx::Error> {
    let mut seats: Vec<SeatState> = sqlx::query_as(
        "SELECT id, status, category, area FROM seats FORCE INDEX (idx_seats_best) WHERE concert_id = ?",
    )
    .bind(concert)
    .fetch_all(conn)
    .traced("SELECT", "seats")
    .await?;
    seats.sort_unstable_by_key(|s| s.id);
    Ok(seats)
}

/// A seat as a seat map draws it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct LayoutSeat {
    pub id: SeatId,
    pub seat_number: String,
    /// The position of its price category; None without categories.
    pub category: Option<u8>,
    /// A plan's seat: its zone and where the plan draws it.
    pub zone: Option<String>,
    pub pos_x: Option<f64>,
    pub pos_y: Option<f64>,
}

/// Every seat of the concert with its number and category, in natural
/// order (A1, A2, …, A10, …, B1): the layout a seat map draws (standing
/// places are not drawn).
pub async fn layout_of_concert(
    conn: &mut MySqlConnection,
    concert: ConcertId,
) -> Result<Vec<LayoutSeat>, sqlx::Error> {
    sqlx::query_as(
        "SELECT id, seat_number, category, zone, pos_x, pos_y \
         FROM seats WHERE concert_id = ? AND area IS NULL ORDER BY sort_key, id",
    )
    .bind(concert)
    .fetch_all(conn)
    .traced("SELECT", "seats")
    .await
}

/// The columns that say where a seat of `seats s` is (see [`PlaceColumns`]).
macro_rules! place_columns {
    () => {
        "s.zone, s.row_label, s.plan_label, \
         (SELECT a.name FROM standing_areas a \
           WHERE a.concert_id = s.concert_id AND a.position = s.area) AS area, \
         IF(s.area IS NULL, NULL, CAST(s.row_position + 1 AS UNSIGNED)) AS entry_number"
    };
}
pub(crate) use place_columns;

/// Where a seat is, as stored: a plan's labels, a standing area's name and
/// the place's entry number (in line order, from 1).
#[derive(Debug, Clone, Default, sqlx::FromRow)]
pub struct PlaceColumns {
    pub zone: Option<String>,
    pub row_label: Option<String>,
    pub plan_label: Option<String>,
    pub area: Option<String>,
    pub entry_number: Option<u64>,
}

impl PlaceColumns {
    /// The place of the seat numbered `seat_number`.
    pub fn place(&self, seat_number: &str) -> crate::domain::SeatPlace {
        crate::domain::SeatPlace::of(
            seat_number,
            self.zone.clone(),
            self.row_label.clone(),
            self.plan_label.clone(),
            self.area.clone(),
            self.entry_number,
        )
    }
}
