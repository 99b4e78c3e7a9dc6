//! The offering worker's statements: which lists have fans waiting, and
//! one offering step of a list (who is offered which of the seats that came
//! back), in one transaction.

use chrono::{DateTime, Utc};
use sqlx::{AssertSqlSafe, MySqlConnection};

use super::FREE_AND_UNWANTED;
use crate::db::prices::{PriceColumns, SEAT_PRICE};
use crate::db::{Traced as _, fans, outbox, reservations, seats};
use crate::domain::allocation::Fan;
use crate::domain::events::{EventKind, ReservationEvent, ReservedSeat, Subject};
use crate::domain::waiting_list::{Offer, Waiting, offers};
use crate::domain::{
    ConcertId, MaxSeatsPerUser, OfferDuration, ReservationId, ReservationStatus, SeatId,
    SeatStatus, UserId,
};
/// A free seat an offer may give, with its price now.
#[derive(sqlx::FromRow)]
struct FreeSeat {
    id: SeatId,
    seat_number: String,
    #[sqlx(flatten)]
    price: PriceColumns,
}

/// Concerts whose list has someone waiting, up to `limit`.
pub async fn with_fans_waiting(
    conn: &mut MySqlConnection,
    limit: u32,
) -> Result<Vec<ConcertId>, sqlx::Error> {
    let rows: Vec<(ConcertId,)> = sqlx::query_as(
        "SELECT DISTINCT concert_id FROM waiting_list_entries FORCE INDEX (idx_waiting_list_order) \
          WHERE status = 'WAITING' LIMIT ?",
    )
    .bind(limit)
    .fetch_all(conn)
    .traced("SELECT", "waiting_list_entries")
    .await?;
    Ok(rows.into_iter().map(|(id,)| id).collect())
}

/// An offer made: the reservation that holds its seats.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Offered {
    pub entry: u64,
    pub fan: UserId,
    pub reservation: ReservationId,
    pub seats: Vec<SeatId>,
}

/// Fans looked at per step, in order.
const ENTRIES_PER_STEP: u32 = 500;

/// One offering step for `concert`, inside the caller's transaction: takes
/// the list's lock (or returns nothing when another worker has it: that
/// one is offering), locks the fans waiting, in order (a decision about one
/// of them waits, see [`super::lock_fans_waiting`]), reads the seats that are
/// free and that no open request wants (locking them, skipping any a
/// decision or a confirm has locked: those are the line's), decides who is
/// offered what ([`offers`]), and writes each offer: a HELD reservation of
/// the fan's (source WAITING_LIST) until `now` + the concert's offer time,
/// its seats HELD, the entry OFFERED, and a WaitingListOffered event.
///
/// The `NOT EXISTS` of an open request is a plain read inside a locking
/// one: a request written after it waits for the seat's lock (its foreign
/// key) and is then decided against a held seat (SEAT_TAKEN), which is what
/// it would have met had it come a moment after the offer.
pub async fn offer_step(
    conn: &mut MySqlConnection,
    concert: ConcertId,
    now: DateTime<Utc>,
) -> Result<Vec<Offered>, sqlx::Error> {
    async move {
        let locked: Option<(u64,)> = sqlx::query_as(
            "SELECT concert_id FROM waiting_lists WHERE concert_id = ? FOR UPDATE SKIP LOCKED",
        )
        .bind(concert)
        .fetch_optional(&mut *conn)
        .await?;
        if locked.is_none() {
            return Ok(Vec::new());
        }
        let Some((offer_seconds, cap)): Option<(u32, u8)> = sqlx::query_as(
            "SELECT waiting_list_offer_seconds, max_seats_per_user FROM concerts WHERE id = ?",
        )
        .bind(concert)
        .fetch_optional(&mut *conn)
        .await?
        else {
            return Ok(Vec::new());
        };
        let waiting: Vec<(u64, UserId, u8)> = sqlx::query_as(
            "SELECT id, user_id, seats FROM waiting_list_entries FORCE INDEX (idx_waiting_list_order) \
              WHERE status = 'WAITING' AND concert_id = ? ORDER BY id LIMIT ? FOR UPDATE",
        )
        .bind(concert)
        .bind(ENTRIES_PER_STEP)
        .fetch_all(&mut *conn)
        .await?;
        let wanted: u32 = waiting.iter().map(|w| u32::from(w.2)).sum();
        if wanted == 0 {
            return Ok(Vec::new());
        }
        let free: Vec<FreeSeat> = sqlx::query_as(AssertSqlSafe(format!(
            "SELECT s.id, s.seat_number, {SEAT_PRICE} FROM seats s FORCE INDEX (idx_seats_concert_status) \
              WHERE s.concert_id = ? AND {FREE_AND_UNWANTED} \
              ORDER BY s.sort_key LIMIT ? FOR UPDATE SKIP LOCKED"
        )))
        .bind(concert)
        .bind(wanted)
        .fetch_all(&mut *conn)
        .await?;
        if free.is_empty() {
            return Ok(Vec::new());
        }
        let users: Vec<UserId> = waiting.iter().map(|w| w.1).collect();
        let taken = fans::seats_of(conn, &users).await?;
        let cap = u64::from(MaxSeatsPerUser::from_stored(cap).get());
        let list: Vec<Waiting> = waiting
            .iter()
            .map(|&(entry, fan, seats)| Waiting {
                entry,
                fan,
                seats,
                room: cap.saturating_sub(
                    taken
                        .get(&Fan {
                            concert,
                            user: fan,
                        })
                        .copied()
                        .unwrap_or(0),
                ),
            })
            .collect();
        let until = now + OfferDuration::from_stored(offer_seconds).as_duration();
        let mut next = free.into_iter();
        let mut made = Vec::new();
        let mut events = Vec::new();
        for Offer { entry, fan, seats } in offers(&list, next.len()) {
            let given: Vec<ReservedSeat> = next
                .by_ref()
                .take(usize::from(seats))
                .map(|s| ReservedSeat {
                    seat_id: s.id,
                    seat_number: s.seat_number,
                    price: s.price.into_price(),
                })
                .collect();
            let ids: Vec<SeatId> = given.iter().map(|s| s.seat_id).collect();
            let reservation = hold_for(conn, concert, fan, &given, until, now).await?;
            sqlx::query(
                "UPDATE waiting_list_entries SET status = 'OFFERED', reservation_id = ?, ended_at = ? \
                  WHERE id = ? AND status = 'WAITING'",
            )
            .bind(reservation)
            .bind(now.naive_utc())
            .bind(entry)
            .execute(&mut *conn)
            .await?;
            let seats = given;
            events.push(ReservationEvent::new(
                EventKind::Offered,
                &Subject {
                    reservation_id: reservation,
                    queue_id: None,
                    user_id: fan,
                    concert_id: concert,
                    seats: &seats,
                    hold_expires_at: Some(until),
                    payment_reference: None,
                },
                now,
            ));
            made.push(Offered {
                entry,
                fan,
                reservation,
                seats: ids,
            });
        }
        outbox::record(conn, &events, now).await?;
        Ok(made)
    }
    .traced("UPDATE", "waiting_list_entries")
    .await
}

/// A hold of `seats` (locked by the caller, free) for `fan` until `until`.
async fn hold_for(
    conn: &mut MySqlConnection,
    concert: ConcertId,
    fan: UserId,
    seats: &[ReservedSeat],
    until: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Result<ReservationId, sqlx::Error> {
    let mut sorted: Vec<SeatId> = seats.iter().map(|s| s.seat_id).collect();
    sorted.sort_unstable();
    let done = sqlx::query(
        "INSERT INTO reservations (user_id, concert_id, seat_id, queue_id, source, status, \
         hold_expires_at, created_at, updated_at) VALUES (?, ?, ?, NULL, 'WAITING_LIST', 'HELD', ?, ?, ?)",
    )
    .bind(fan)
    .bind(concert)
    .bind(sorted.first().copied().unwrap_or(SeatId(0)))
    .bind(until.naive_utc())
    .bind(now.naive_utc())
    .bind(now.naive_utc())
    .execute(&mut *conn)
    .await?;
    let reservation = ReservationId(done.last_insert_id());
    let mut claims: Vec<reservations::Claim<'_>> = seats
        .iter()
        .map(|s| reservations::Claim {
            reservation,
            seat: s.seat_id,
            concert,
            status: ReservationStatus::Held,
            price: s.price.as_ref(),
        })
        .collect();
    reservations::insert_claims(conn, &mut claims).await?;
    seats::mark(conn, &sorted, SeatStatus::Held, Some(until), now).await?;
    Ok(reservation)
}
