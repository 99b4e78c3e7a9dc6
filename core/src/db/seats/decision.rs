//! What deciding workers, the expiry sweep and checkout do to seats, under
//! the seat locks every writer takes in id order.

use crate::db::prices::{PriceColumns, SEAT_PRICE};
use crate::db::{BindIds as _, IdList, Traced as _, execute_for_ids};
use crate::domain::allocation::Place;
use crate::domain::{AskedPool, ConcertId, QueueId, SeatId, SeatPrice, SeatStatus};
use chrono::{DateTime, Utc};
use sqlx::MySqlConnection;
use std::collections::HashMap;

/// Sets the status of seats the caller has locked: HELD until `held_until`,
/// RESERVED or AVAILABLE (`held_until` then NULL).
pub async fn mark(
    conn: &mut MySqlConnection,
    seats: &[SeatId],
    status: SeatStatus,
    held_until: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
) -> Result<u64, sqlx::Error> {
    execute_for_ids(conn, seats, |list| {
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "UPDATE seats SET status = ?, held_until = ?, updated_at = ? WHERE id IN ({list})"
        )))
        .bind(status)
        .bind(held_until.map(|t| t.naive_utc()))
        .bind(now.naive_utc())
    })
    .traced("UPDATE", "seats")
    .await
}

/// Makes those of `seats` (locked by the caller) that no live claim holds
/// any more AVAILABLE: after a cancel or an expiry ended theirs.
pub async fn free_unclaimed(
    conn: &mut MySqlConnection,
    seats: &[SeatId],
    now: DateTime<Utc>,
) -> Result<u64, sqlx::Error> {
    execute_for_ids(conn, seats, |list| {
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "UPDATE seats s SET s.status = 'AVAILABLE', s.held_until = NULL, s.updated_at = ? \
             WHERE s.id IN ({list}) AND s.status <> 'AVAILABLE' \
             AND NOT EXISTS (SELECT 1 FROM reservation_seats rs WHERE rs.live_seat_id = s.id)"
        )))
        .bind(now.naive_utc())
    })
    .traced("UPDATE", "seats")
    .await
}

/// Locks `seats` in id order (every writer of seats locks in that order,
/// so none waits for another in a cycle) and returns their numbers.
pub async fn lock_all(
    conn: &mut MySqlConnection,
    seats: &[SeatId],
) -> Result<Vec<(SeatId, String)>, sqlx::Error> {
    let Some(list) = IdList::of(seats) else {
        return Ok(Vec::new());
    };
    let select = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT id, seat_number FROM seats FORCE INDEX (PRIMARY) WHERE id IN ({list}) ORDER BY id FOR UPDATE"
    )));
    select
        .bind_ids(&list)
        .fetch_all(conn)
        .traced("SELECT", "seats")
        .await
}

/// Share-locks `seats` (sorted, distinct) in id order, as [`lock_all`]
/// takes its exclusive locks: for a writer whose inserts refer to the seats
/// (their foreign-key checks share-lock each seat in row order).
pub async fn share_all(conn: &mut MySqlConnection, seats: &[SeatId]) -> Result<(), sqlx::Error> {
    let Some(list) = IdList::of(seats) else {
        return Ok(());
    };
    let select = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT id FROM seats FORCE INDEX (PRIMARY) WHERE id IN ({list}) ORDER BY id LOCK IN SHARE MODE"
    )));
    let _: Vec<(SeatId,)> = select
        .bind_ids(&list)
        .fetch_all(conn)
        .traced("SELECT", "seats")
        .await?;
    Ok(())
}

impl WantedSeat {
    /// The pool a request by count takes it from: its area, else its
    /// category.
    pub fn pool(&self) -> Option<AskedPool> {
        self.area
            .map(AskedPool::Area)
            .or(self.category.map(AskedPool::Category))
    }
}

/// Who holds a seat a deciding worker locked as free to take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SeatClaim {
    /// Nobody: the seat is free.
    None,
    /// A hold that has ended (not yet swept): free, once that claim is
    /// ended by whoever takes the seat.
    ExpiredHold,
    /// A live claim although the seat's status says free (a hand-made fix
    /// can leave them apart): the seat is taken.
    Live,
}

/// What a deciding worker must know of a seat it locked as free before
/// giving it to the earliest request that wants it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WantedSeat {
    pub seat: SeatId,
    pub seat_number: String,
    /// What the seat costs now: the claim made of it keeps this.
    pub price: Option<SeatPrice>,
    pub claim: SeatClaim,
    /// The place in line (`LineKey::place`) of the first open (WAITING,
    /// PENDING or PROCESSING, under any lease) request for the seat outside
    /// the caller's batch. A request of the batch behind it waits: that one
    /// is ahead in line.
    pub first_open_elsewhere: Option<u64>,
    pub concert: ConcertId,
    /// Its price category's position, if it has one.
    pub category: Option<u8>,
    /// Its standing area's position, for a standing place.
    pub area: Option<u8>,
    /// Where it is, for best available.
    pub place: Place,
}

#[derive(sqlx::FromRow)]
struct StandingRow {
    seat: SeatId,
    seat_number: String,
    concert_id: ConcertId,
    category_position: Option<u8>,
    area: Option<u8>,
    row_index: u32,
    row_position: u32,
    seat_rank: u32,
    #[sqlx(flatten)]
    price: PriceColumns,
    claim: Option<i64>,
    first_open_elsewhere: Option<u64>,
}

/// Locks those of `seats` that are free (AVAILABLE, or HELD by a hold that
/// has ended at `now`), in id order (the order every writer of seats uses),
/// and returns their [`WantedSeat`]; seats that are taken, or locked by a
/// transaction that then takes them, are left out.
///
/// The subqueries are plain reads: a locking read does not lock the rows of
/// its subqueries (MySQL and MariaDB alike). What they see stays true until
/// our commit, because a request leaves the open states only through a
/// decision that locks its seats first (or a failure that takes none), a
/// new request for a seat waits for the seat's lock (its foreign key), and
/// a claim changes only under its seat's lock. But they may see less than
/// the lock does: the statement's snapshot can be older than a seat's lock,
/// when the seat was locked by a cancel that committed while we waited for
/// it. So a claim that looks live on a seat whose status says free is read
/// again once every lock is held; a decided request that still looks open
/// only makes a request wait a moment longer.
///
/// The first open request is read through the seats' line index, which
/// holds open requests only, so a seat's decided history costs nothing.
/// The index is forced: for `ORDER BY line_key, queue_id LIMIT 1` the
/// optimizer might rather walk the primary key.
pub async fn lock_free(
    conn: &mut MySqlConnection,
    seats: &[SeatId],
    batch: &[QueueId],
    now: DateTime<Utc>,
) -> Result<Vec<WantedSeat>, sqlx::Error> {
    async move {
        // The seats are the batch's: with no request there are none.
        let (Some(seats_list), Some(batch_list)) = (IdList::of(seats), IdList::of(batch)) else {
            return Ok(Vec::new());
        };
        let select = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT s.id AS seat, s.seat_number, s.concert_id, s.category AS category_position, s.area, s.row_index, s.row_position, s.seat_rank, {SEAT_PRICE}, \
                    (SELECT {CLAIM_OF_RESERVATION} \
                       FROM reservation_seats rs JOIN reservations r ON r.id = rs.reservation_id \
                      WHERE rs.live_seat_id = s.id) AS claim, \
                    (SELECT {place} \
                       FROM request_seats o FORCE INDEX (idx_request_seats_line) \
                      WHERE o.open_seat_id = s.id AND o.queue_id NOT IN ({batch_list}) \
                      ORDER BY o.line_key, o.queue_id LIMIT 1) AS first_open_elsewhere \
             FROM seats s FORCE INDEX (PRIMARY) WHERE s.id IN ({seats_list}) \
               AND (s.status = 'AVAILABLE' OR (s.status = 'HELD' AND s.held_until <= ?)) \
             ORDER BY s.id FOR UPDATE",
            place = crate::db::line::place_sql("o."),
        )))
        .bind(now.naive_utc());
        let rows: Vec<StandingRow> = select
            .bind_ids(&batch_list)
            .bind_ids(&seats_list)
            .bind(now.naive_utc())
            .fetch_all(&mut *conn)
            .await?;
        let mut standing: Vec<WantedSeat> = rows
            .into_iter()
            .map(|r| WantedSeat {
                seat: r.seat,
                seat_number: r.seat_number,
                price: r.price.into_price(),
                claim: claim_of(r.claim),
                first_open_elsewhere: r.first_open_elsewhere,
                concert: r.concert_id,
                category: r.category_position,
                area: r.area,
                place: Place {
                    seat: r.seat,
                    row: r.row_index,
                    position: r.row_position,
                    rank: r.seat_rank,
                },
            })
            .collect();
        let live: Vec<SeatId> = standing
            .iter()
            .filter(|s| s.claim == SeatClaim::Live)
            .map(|s| s.seat)
            .collect();
        let now_claimed = claims(conn, &live, now).await?;
        for s in standing.iter_mut().filter(|s| s.claim == SeatClaim::Live) {
            s.claim = now_claimed.get(&s.seat).copied().unwrap_or(SeatClaim::None);
        }
        Ok(standing)
    }
    .traced("SELECT", "seats")
    .await
}

/// 1: a hold that has ended at `now`; any other: a live claim.
const CLAIM_OF_RESERVATION: &str = "IF(r.status = 'HELD' AND r.hold_expires_at <= ?, 1, 2)";

fn claim_of(code: Option<i64>) -> SeatClaim {
    match code {
        None => SeatClaim::None,
        Some(1) => SeatClaim::ExpiredHold,
        Some(_) => SeatClaim::Live,
    }
}

/// The claims on `seats` as the last commit left them; a seat missing has none.
async fn claims(
    conn: &mut MySqlConnection,
    seats: &[SeatId],
    now: DateTime<Utc>,
) -> Result<HashMap<SeatId, SeatClaim>, sqlx::Error> {
    let Some(list) = IdList::of(seats) else {
        return Ok(HashMap::new());
    };
    let select = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT rs.live_seat_id, {CLAIM_OF_RESERVATION} FROM reservation_seats rs \
         JOIN reservations r ON r.id = rs.reservation_id WHERE rs.live_seat_id IN ({list})"
    )))
    .bind(now.naive_utc());
    let rows: Vec<(SeatId, i64)> = select.bind_ids(&list).fetch_all(conn).await?;
    Ok(rows
        .into_iter()
        .map(|(seat, code)| (seat, claim_of(Some(code))))
        .collect())
}
