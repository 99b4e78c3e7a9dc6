//! Reservations and their seats. A reservation is HELD (until its hold
//! ends), CONFIRMED, EXPIRED or CANCELLED; each of its seats carries the
//! same status, and `uq_reservation_seats_live` lets at most one HELD or
//! CONFIRMED claim exist per seat.
//!
//! A hold past its end reads as EXPIRED everywhere at once, before the sweep
//! writes it: nobody is shown, or can confirm, a hold that has run out.
//!
//! Long because every statement of a reservation's life (make, read, hold,
//! confirm, cancel, expire, move its seats) is here, each a small function,
//! so that its status rules are read in one file.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use sqlx::{AssertSqlSafe, MySqlConnection};

use super::prices::PriceColumns;
use super::seats::{PlaceColumns, place_columns};
use super::{BindIds as _, IdList, Traced as _, execute_for_ids};
use crate::domain::events::{EventKind, ReservationEvent, ReservedSeat, Subject};
use crate::domain::{
    ConcertId, PageRequest, PaymentReference, QueueId, ReservationId, ReservationStatus, SeatId,
    SeatPrice, UserId,
};

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ReservationRow {
    pub id: ReservationId,
    pub user_id: UserId,
    pub concert_id: ConcertId,
    pub queue_id: Option<QueueId>,
    /// LINE or WAITING_LIST.
    pub source: String,
    /// As of now: a HELD reservation whose hold has ended reads EXPIRED.
    pub status: ReservationStatus,
    pub hold_expires_at: Option<DateTime<Utc>>,
    pub confirmed_at: Option<DateTime<Utc>>,
    pub payment_reference: Option<String>,
    pub created_at: DateTime<Utc>,
    /// A ticket of it was used at the door: it is no longer cancelled.
    pub checked_in: bool,
    #[sqlx(skip)]
    pub seats: Vec<ReservedSeat>,
}

pub(crate) const SELECT: &str = "SELECT r.id, r.user_id, r.concert_id, r.queue_id, r.source, \
                      IF(r.status = 'HELD' AND r.hold_expires_at <= ?, 'EXPIRED', r.status) AS status, \
                      r.hold_expires_at, r.confirmed_at, r.payment_reference, r.created_at, \
                      EXISTS (SELECT 1 FROM tickets t WHERE t.reservation_id = r.id \
                                 AND t.checked_in_at IS NOT NULL) AS checked_in \
                      FROM reservations r";

pub async fn find(
    conn: &mut MySqlConnection,
    id: ReservationId,
    now: DateTime<Utc>,
) -> Result<Option<ReservationRow>, sqlx::Error> {
    async move {
        let row: Option<ReservationRow> =
            sqlx::query_as(AssertSqlSafe(format!("{SELECT} WHERE r.id = ?")))
                .bind(now.naive_utc())
                .bind(id)
                .fetch_optional(&mut *conn)
                .await?;
        let Some(mut row) = row else {
            return Ok(None);
        };
        row.seats = seats_of(conn, &[id]).await?.remove(&id).unwrap_or_default();
        Ok(Some(row))
    }
    .traced("SELECT", "reservations")
    .await
}

/// The user's reservations, newest first.
pub async fn list_for_user(
    conn: &mut MySqlConnection,
    user: UserId,
    page: PageRequest,
    now: DateTime<Utc>,
) -> Result<Vec<ReservationRow>, sqlx::Error> {
    async move {
        let mut rows: Vec<ReservationRow> = sqlx::query_as(AssertSqlSafe(format!(
            "{SELECT} WHERE r.user_id = ? ORDER BY r.created_at DESC, r.id DESC LIMIT ? OFFSET ?"
        )))
        .bind(now.naive_utc())
        .bind(user)
        .bind(page.size)
        .bind(page.offset())
        .fetch_all(&mut *conn)
        .await?;
        let ids: Vec<ReservationId> = rows.iter().map(|r| r.id).collect();
        let mut seats = seats_of(conn, &ids).await?;
        for row in &mut rows {
            row.seats = seats.remove(&row.id).unwrap_or_default();
        }
        Ok(rows)
    }
    .traced("SELECT", "reservations")
    .await
}

/// The seats of each of `reservations`, in seat order.
pub async fn seats_of(
    conn: &mut MySqlConnection,
    reservations: &[ReservationId],
) -> Result<HashMap<ReservationId, Vec<ReservedSeat>>, sqlx::Error> {
    let Some(list) = IdList::of(reservations) else {
        return Ok(HashMap::new());
    };
    let select = sqlx::query_as(AssertSqlSafe(format!(
        "SELECT rs.reservation_id, rs.seat_id, s.seat_number, rs.category, rs.price, rs.currency, {} \
         FROM reservation_seats rs JOIN seats s ON s.id = rs.seat_id \
         WHERE rs.reservation_id IN ({list}) ORDER BY rs.reservation_id, rs.seat_id",
        place_columns!()
    )));
    let rows: Vec<PlacedClaimRow> = select.bind_ids(&list).fetch_all(conn).await?;
    let mut seats: HashMap<ReservationId, Vec<ReservedSeat>> = HashMap::new();
    for row in rows {
        let claim = row.claim;
        seats
            .entry(claim.reservation_id)
            .or_default()
            .push(ReservedSeat {
                seat_id: claim.seat_id,
                place: row.place.place(&claim.seat_number),
                seat_number: claim.seat_number,
                price: claim.price.into_price(),
            });
    }
    Ok(seats)
}

/// The claims of `reservations`: each one's seat and the price it was
/// decided at.
pub async fn claims_of(
    conn: &mut MySqlConnection,
    reservations: &[ReservationId],
) -> Result<Vec<(ReservationId, SeatId, Option<SeatPrice>)>, sqlx::Error> {
    let Some(list) = IdList::of(reservations) else {
        return Ok(Vec::new());
    };
    let select = sqlx::query_as(AssertSqlSafe(format!(
        "SELECT rs.reservation_id, rs.seat_id, '' AS seat_number, rs.category, rs.price, rs.currency \
           FROM reservation_seats rs WHERE rs.reservation_id IN ({list})"
    )));
    let rows: Vec<ClaimRow> = select.bind_ids(&list).fetch_all(conn).await?;
    Ok(rows
        .into_iter()
        .map(|r| (r.reservation_id, r.seat_id, r.price.into_price()))
        .collect())
}

/// A claim with where its seat is.
#[derive(sqlx::FromRow)]
struct PlacedClaimRow {
    #[sqlx(flatten)]
    claim: ClaimRow,
    #[sqlx(flatten)]
    place: PlaceColumns,
}

/// A claim as stored, with its seat's number.
#[derive(sqlx::FromRow)]
struct ClaimRow {
    reservation_id: ReservationId,
    seat_id: SeatId,
    seat_number: String,
    #[sqlx(flatten)]
    price: PriceColumns,
}

/// A reservation locked for a change, as stored.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct LockedReservation {
    pub id: ReservationId,
    pub user_id: UserId,
    pub concert_id: ConcertId,
    pub queue_id: Option<QueueId>,
    pub status: ReservationStatus,
    pub hold_expires_at: Option<DateTime<Utc>>,
    pub payment_reference: Option<String>,
    pub confirm_key: Option<String>,
    #[sqlx(skip)]
    pub seats: Vec<ReservedSeat>,
}

impl LockedReservation {
    /// The event that announces what happened to the reservation at `at`.
    pub fn event(
        &self,
        kind: EventKind,
        payment_reference: Option<&str>,
        at: DateTime<Utc>,
    ) -> ReservationEvent {
        ReservationEvent::new(
            kind,
            &Subject {
                reservation_id: self.id,
                queue_id: self.queue_id,
                user_id: self.user_id,
                concert_id: self.concert_id,
                seats: &self.seats,
                hold_expires_at: self.hold_expires_at,
                payment_reference,
            },
            at,
        )
    }

    /// HELD and its hold has not ended at `now`.
    pub fn is_live_hold(&self, now: DateTime<Utc>) -> bool {
        self.status == ReservationStatus::Held && self.hold_expires_at.is_some_and(|end| end > now)
    }
}

/// Locks the reservation's seats (in id order), then the reservation, the
/// order every writer uses; returns the reservation with its seats.
pub async fn lock_with_seats(
    conn: &mut MySqlConnection,
    id: ReservationId,
) -> Result<Option<LockedReservation>, sqlx::Error> {
    async move {
        // A reservation's seats and their prices never change, so this
        // plain read stays true.
        let claims = claims_of(conn, &[id]).await?;
        let seat_ids: Vec<SeatId> = claims.iter().map(|c| c.1).collect();
        let mut prices: HashMap<SeatId, SeatPrice> = claims
            .into_iter()
            .filter_map(|(_, seat, price)| Some((seat, price?)))
            .collect();
        let seats = super::seats::lock_all(conn, &seat_ids).await?;
        let locked: Option<LockedReservation> = sqlx::query_as(
            "SELECT id, user_id, concert_id, queue_id, status, hold_expires_at, payment_reference, confirm_key \
             FROM reservations WHERE id = ? FOR UPDATE",
        )
        .bind(id)
        .fetch_optional(&mut *conn)
        .await?;
        Ok(locked.map(|mut r| {
            r.seats = seats
                .into_iter()
                .map(|(seat_id, seat_number)| ReservedSeat {
                    seat_id,
                    seat_number,
                    price: prices.remove(&seat_id),
                    place: crate::domain::SeatPlace::default(),
                })
                .collect();
            r
        }))
    }
    .traced("SELECT", "reservations")
    .await
}

/// A reservation a decision makes for a won request.
#[derive(Debug, Clone)]
pub struct NewReservation {
    pub queue_id: QueueId,
    pub user: UserId,
    pub concert: ConcertId,
    /// In id order, at least one.
    pub seats: Vec<SeatId>,
    /// HELD (with `hold_expires_at`) or CONFIRMED.
    pub status: ReservationStatus,
    pub hold_expires_at: Option<DateTime<Utc>>,
}

/// Inserts the reservations with their seats; returns each one's id by the
/// request that made it. The unique live claim per seat refuses a seat that
/// is already held or sold, whatever happened before.
pub async fn insert_many(
    conn: &mut MySqlConnection,
    new: &[NewReservation],
    prices: &HashMap<SeatId, SeatPrice>,
    now: DateTime<Utc>,
) -> Result<HashMap<QueueId, ReservationId>, sqlx::Error> {
    async move {
        if new.is_empty() {
            return Ok(HashMap::new());
        }
        let mut insert = sqlx::QueryBuilder::new(
            "INSERT INTO reservations (user_id, concert_id, seat_id, queue_id, status, hold_expires_at, \
             confirmed_at, created_at, updated_at) ",
        );
        insert.push_values(new, |mut row, r| {
            let confirmed = (r.status == ReservationStatus::Confirmed).then_some(now.naive_utc());
            row.push_bind(r.user)
                .push_bind(r.concert)
                .push_bind(r.seats.first().copied().unwrap_or(SeatId(0)))
                .push_bind(r.queue_id)
                .push_bind(r.status)
                .push_bind(r.hold_expires_at.map(|t| t.naive_utc()))
                .push_bind(confirmed)
                .push_bind(now.naive_utc())
                .push_bind(now.naive_utc());
        });
        insert.build().execute(&mut *conn).await?;
        let queue_ids: Vec<QueueId> = new.iter().map(|r| r.queue_id).collect();
        let Some(list) = IdList::of(&queue_ids) else {
            return Ok(HashMap::new());
        };
        let select = sqlx::query_as(AssertSqlSafe(format!(
            "SELECT queue_id, id FROM reservations WHERE queue_id IN ({list})"
        )));
        let ids: HashMap<QueueId, ReservationId> =
            select.bind_ids(&list)
                .fetch_all(&mut *conn)
                .await?
                .into_iter()
                .collect();
        let mut claims: Vec<Claim<'_>> = Vec::new();
        for r in new {
            if let Some(&id) = ids.get(&r.queue_id) {
                claims.extend(r.seats.iter().map(|&seat| Claim {
                    reservation: id,
                    seat,
                    concert: r.concert,
                    status: r.status,
                    price: prices.get(&seat),
                }));
            }
        }
        insert_claims(conn, &mut claims).await?;
        // A reservation confirmed at once (no hold) has its tickets now.
        let confirmed: Vec<ReservationId> = new
            .iter()
            .filter(|r| r.status == ReservationStatus::Confirmed)
            .filter_map(|r| ids.get(&r.queue_id).copied())
            .collect();
        super::tickets::issue_for(conn, &confirmed, now).await?;
        Ok(ids)
    }
    .traced("INSERT", "reservations")
    .await
}

/// One seat's claim by a reservation, with the price it was decided at.
pub struct Claim<'a> {
    pub reservation: ReservationId,
    pub seat: SeatId,
    pub concert: ConcertId,
    pub status: ReservationStatus,
    pub price: Option<&'a SeatPrice>,
}

/// Writes the claims (in seat order, the order of the seats' locks their
/// foreign-key checks take).
pub async fn insert_claims(
    conn: &mut MySqlConnection,
    claims: &mut [Claim<'_>],
) -> Result<(), sqlx::Error> {
    if claims.is_empty() {
        return Ok(());
    }
    claims.sort_by_key(|c| c.seat);
    let mut insert = sqlx::QueryBuilder::new(
        "INSERT INTO reservation_seats (reservation_id, seat_id, concert_id, status, category, price, currency) ",
    );
    insert.push_values(claims.iter(), |mut row, c| {
        row.push_bind(c.reservation)
            .push_bind(c.seat)
            .push_bind(c.concert)
            .push_bind(c.status)
            .push_bind(c.price.map(|p| p.category.clone()))
            .push_bind(c.price.map(|p| p.price.get()))
            .push_bind(c.price.map(|p| p.currency.as_str().to_owned()));
    });
    insert.build().execute(&mut *conn).await?;
    Ok(())
}

/// HELD → CONFIRMED, with the buyer's payment reference and the confirm's
/// Idempotency-Key, if the hold is still running at `now` (the database's
/// clock, read with the reservation locked by [`lock_with_seats`]) and every
/// one of its `seats` claims is still live. Returns false, having changed
/// nothing the caller's rollback would not undo, when either is not so: a
/// seat whose claim a decision ended (its hold ran out) belongs to someone
/// else now, and the hold cannot be confirmed without it.
pub async fn confirm(
    conn: &mut MySqlConnection,
    id: ReservationId,
    seats: usize,
    payment: Option<&PaymentReference>,
    key: Option<&str>,
    now: DateTime<Utc>,
) -> Result<bool, sqlx::Error> {
    async move {
        let confirmed = sqlx::query(
            "UPDATE reservations SET status = 'CONFIRMED', confirmed_at = ?, payment_reference = ?, \
             confirm_key = ?, updated_at = ? WHERE id = ? AND status = 'HELD' AND hold_expires_at > ?",
        )
        .bind(now.naive_utc())
        .bind(payment.map(PaymentReference::as_str))
        .bind(key)
        .bind(now.naive_utc())
        .bind(id)
        .bind(now.naive_utc())
        .execute(&mut *conn)
        .await?
        .rows_affected();
        if confirmed != 1 {
            return Ok(false);
        }
        let claims = sqlx::query(
            "UPDATE reservation_seats SET status = 'CONFIRMED' WHERE reservation_id = ? AND status = 'HELD'",
        )
        .bind(id)
        .execute(&mut *conn)
        .await?
        .rows_affected();
        if claims != seats as u64 {
            return Ok(false);
        }
        super::tickets::issue_for(conn, &[id], now).await?;
        Ok(true)
    }
    .traced("UPDATE", "reservations")
    .await
}

/// Ends reservations (CANCELLED or EXPIRED) and their live claims; returns
/// how many reservations changed. Call with them and their seats locked.
pub async fn end(
    conn: &mut MySqlConnection,
    ids: &[ReservationId],
    status: ReservationStatus,
    now: DateTime<Utc>,
) -> Result<u64, sqlx::Error> {
    async move {
        let Some(list) = IdList::of(ids) else {
            return Ok(0);
        };
        let update = sqlx::query(AssertSqlSafe(format!(
            "UPDATE reservations SET status = ?, updated_at = ? \
             WHERE status IN ('HELD', 'CONFIRMED') AND id IN ({list})"
        )))
        .bind(status)
        .bind(now.naive_utc());
        let ended = update
            .bind_ids(&list)
            .execute(&mut *conn)
            .await?
            .rows_affected();
        let update = sqlx::query(AssertSqlSafe(format!(
            "UPDATE reservation_seats SET status = ? \
             WHERE status IN ('HELD', 'CONFIRMED') AND reservation_id IN ({list})"
        )))
        .bind(status);
        update.bind_ids(&list).execute(&mut *conn).await?;
        if status == ReservationStatus::Cancelled {
            super::tickets::void_for(conn, ids, now).await?;
        }
        Ok(ended)
    }
    .traced("UPDATE", "reservations")
    .await
}

/// Ends the claims of holds that have run out on `seats` (locked by the
/// caller, who is about to give them to someone else). Their reservations
/// stay HELD in the table, read as EXPIRED, until the sweep writes that and
/// announces it; only the claims on these seats end here, as a claim
/// changes only under its seat's lock.
pub async fn end_expired_claims(
    conn: &mut MySqlConnection,
    seats: &[SeatId],
) -> Result<u64, sqlx::Error> {
    execute_for_ids(conn, seats, |list| {
        sqlx::query(AssertSqlSafe(format!(
            "UPDATE reservation_seats SET status = 'EXPIRED' WHERE status = 'HELD' AND live_seat_id IN ({list})"
        )))
    })
    .traced("UPDATE", "reservation_seats")
    .await
}

/// How many of the reservation's claims are HELD (with its seats locked:
/// a hold whose claim a decision ended cannot be confirmed whole).
pub async fn held_claims(
    conn: &mut MySqlConnection,
    id: ReservationId,
) -> Result<u64, sqlx::Error> {
    let (held,): (i64,) = sqlx::query_as(
        "SELECT COUNT(*) FROM reservation_seats WHERE reservation_id = ? AND status = 'HELD'",
    )
    .bind(id)
    .fetch_one(conn)
    .traced("SELECT", "reservation_seats")
    .await?;
    Ok(u64::try_from(held).unwrap_or(0))
}

/// Gives up some of a CONFIRMED reservation's seats (their tickets
/// refunded): their claims end CANCELLED, the reservation stays CONFIRMED
/// with the rest. Call with the reservation and its seats locked.
pub async fn release_seats(
    conn: &mut MySqlConnection,
    id: ReservationId,
    seats: &[SeatId],
) -> Result<u64, sqlx::Error> {
    let Some(list) = IdList::of(seats) else {
        return Ok(0);
    };
    let update = sqlx::query(AssertSqlSafe(format!(
        "UPDATE reservation_seats SET status = 'CANCELLED' \
          WHERE reservation_id = ? AND status = 'CONFIRMED' AND seat_id IN ({list})"
    )))
    .bind(id);
    update
        .bind_ids(&list)
        .execute(conn)
        .traced("UPDATE", "reservation_seats")
        .await
        .map(|done| done.rows_affected())
}

/// Up to `limit` reservations of `concert` that are still HELD or
/// CONFIRMED (a cancelled concert's, to end), oldest first.
pub async fn live_of_concert(
    conn: &mut MySqlConnection,
    concert: ConcertId,
    limit: u32,
) -> Result<Vec<ReservationId>, sqlx::Error> {
    let rows: Vec<(ReservationId,)> = sqlx::query_as(
        "SELECT id FROM reservations WHERE concert_id = ? AND status IN ('HELD', 'CONFIRMED') \
          ORDER BY id LIMIT ?",
    )
    .bind(concert)
    .bind(limit)
    .fetch_all(conn)
    .traced("SELECT", "reservations")
    .await?;
    Ok(rows.into_iter().map(|(id,)| id).collect())
}
