//! The offering worker's statements: which lists have fans waiting, and
//! one offering step of a list (who is offered which of the seats that came
//! back), in one transaction.

use chrono::{DateTime, Utc};
use sqlx::{AssertSqlSafe, MySqlConnection};

use super::FREE_AND_UNWANTED;

mod reads;
use crate::db::prices::{PriceColumns, SEAT_PRICE};
use crate::db::{BindIds as _, IdList, Traced as _, outbox, reservations, seats};
use crate::domain::events::{EventKind, ReservationEvent, ReservedSeat, Subject};
use crate::domain::waiting_list::{FreePlace, Offer, offers};
use crate::domain::{
    Admission, ConcertId, LotteryWindow, MaxSeatsPerUser, OfferDuration, ReservationId,
    ReservationStatus, SaleWindow, SeatId, SeatStatus, UserId,
};
use reads::{Candidate, fans_who_fit, free_for_list};

/// A free seat an offer gives, locked, with its price now.
#[derive(sqlx::FromRow)]
struct FreeSeat {
    id: SeatId,
    seat_number: String,
    /// Positions (the price's own columns name the category).
    pool_category: Option<u8>,
    pool_area: Option<u8>,
    #[sqlx(flatten)]
    price: PriceColumns,
}

/// Concerts after `after` (in id order) whose list has someone waiting and
/// that have a seat free that nobody in line wants: the lists an offering
/// step has work in, up to `limit`. Every list is reached by walking on
/// from the last one returned, however many lists have fans waiting.
pub async fn needing_offers(
    conn: &mut MySqlConnection,
    after: ConcertId,
    limit: u32,
) -> Result<Vec<ConcertId>, sqlx::Error> {
    let rows: Vec<(ConcertId,)> = sqlx::query_as(AssertSqlSafe(format!(
        "SELECT l.concert_id FROM waiting_lists l WHERE l.concert_id > ? \
            AND NOT EXISTS (SELECT 1 FROM concerts c WHERE c.id = l.concert_id AND c.cancelled_at IS NOT NULL) \
            AND EXISTS (SELECT 1 FROM waiting_list_entries e FORCE INDEX (idx_waiting_list_order) \
                         WHERE e.status = 'WAITING' AND e.concert_id = l.concert_id) \
            AND EXISTS (SELECT 1 FROM seats s FORCE INDEX (idx_seats_concert_status) \
                         WHERE s.concert_id = l.concert_id AND {FREE_AND_UNWANTED}) \
          ORDER BY l.concert_id LIMIT ?"
    )))
    .bind(after)
    .bind(limit)
    .fetch_all(conn)
    .traced("SELECT", "waiting_lists")
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

/// Fans read (and locked) at a time, in order.
pub(super) const ENTRIES_PER_PAGE: u32 = 500;
/// Seats one step offers at most; the next pass goes on.
pub(super) const SEATS_PER_STEP: u32 = 1_000;

/// The concert as an offer needs it.
#[derive(sqlx::FromRow)]
struct OfferTerms {
    waiting_list_offer_seconds: u32,
    max_seats_per_user: u8,
    opens_at: Option<DateTime<Utc>>,
    presale_starts_at: Option<DateTime<Utc>>,
}

impl OfferTerms {
    /// Who may be offered seats at `now`: everyone once the sale is open,
    /// only fans holding a code while the presale runs, nobody before.
    fn who_may_buy(&self, now: DateTime<Utc>) -> Buyers {
        let window = SaleWindow {
            opens_at: self.opens_at,
            lottery: LotteryWindow::default(),
            presale_starts_at: self.presale_starts_at,
        };
        match window.admission(now) {
            Admission::Open => Buyers::Everyone,
            _ if window.in_presale(now) => Buyers::CodeHolders,
            _ => Buyers::Nobody,
        }
    }
}

pub(super) enum Buyers {
    Everyone,
    CodeHolders,
    Nobody,
}

/// One offering step for `concert`, inside the caller's transaction: takes
/// the list's lock (or returns nothing when another worker has it: that
/// one is offering), locks the fans waiting who could take some of the
/// free seats, in order and page by page until they would take them all
/// (a decision about one of them waits, see [`super::lock_fans_waiting`]),
/// then locks the seats (and places) it would offer of those free that no
/// open request wants, best first, of the pools the fans wait for (read
/// before the fans, without locks; skipping any a decision or a confirm has
/// locked: those are the line's), decides who is offered what ([`offers`]:
/// each fan only what they wait for), and writes
/// each offer: a HELD reservation of the fan's (source WAITING_LIST) until
/// `now` + the concert's offer time, its seats HELD, the entry OFFERED,
/// and a WaitingListOffered event.
///
/// Only fans who could reserve at `now` are offered: none before the sale
/// (or presale) opens, and during the presale only those holding a code of
/// the concert with a use and seats left. A fan waiting for more seats
/// than are free, at their cap, or without a code in the presale keeps
/// their place and holds back nobody behind them.
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
        let Some(terms): Option<OfferTerms> = sqlx::query_as(
            "SELECT waiting_list_offer_seconds, max_seats_per_user, opens_at, presale_starts_at \
               FROM concerts WHERE id = ?",
        )
        .bind(concert)
        .fetch_optional(&mut *conn)
        .await?
        else {
            return Ok(Vec::new());
        };
        let buyers = terms.who_may_buy(now);
        if matches!(buyers, Buyers::Nobody) {
            return Ok(Vec::new());
        }
        // What could go: a plain read, so that the fans are locked before
        // any seat is (a decision locks in that order too).
        let candidates = free_for_list(conn, concert).await?;
        if candidates.is_empty() {
            return Ok(Vec::new());
        }
        let places: Vec<FreePlace> = candidates.iter().map(Candidate::place).collect();
        let cap = u64::from(MaxSeatsPerUser::from_stored(terms.max_seats_per_user).get());
        let list = fans_who_fit(conn, concert, &buyers, cap, &places, now).await?;
        if list.is_empty() {
            return Ok(Vec::new());
        }
        let chosen: Vec<SeatId> = offers(&list, &places)
            .iter()
            .flat_map(|o| o.places.iter().map(|&i| candidates[i].id))
            .collect();
        // Locked, skipping any a decision or a confirm has locked (those
        // are the line's), and still free and unwanted; offered again over
        // what is left, in the same order.
        let Some(chosen) = IdList::of(&chosen) else {
            return Ok(Vec::new());
        };
        let free: Vec<FreeSeat> = sqlx::query_as(AssertSqlSafe(format!(
            "SELECT s.id, s.seat_number, s.category AS pool_category, s.area AS pool_area, \
                    {SEAT_PRICE} FROM seats s \
              WHERE s.id IN ({chosen}) AND s.concert_id = ? AND {FREE_AND_UNWANTED} \
              ORDER BY s.seat_rank, s.id FOR UPDATE SKIP LOCKED"
        )))
        .bind_ids(&chosen)
        .bind(concert)
        .fetch_all(&mut *conn)
        .await?;
        if free.is_empty() {
            return Ok(Vec::new());
        }
        let places: Vec<FreePlace> = free
            .iter()
            .map(|s| FreePlace {
                category: s.pool_category,
                area: s.pool_area,
            })
            .collect();
        let made_offers = offers(&list, &places);
        let offer_seconds = terms.waiting_list_offer_seconds;
        let until = now + OfferDuration::from_stored(offer_seconds).as_duration();
        let mut free: Vec<Option<FreeSeat>> = free.into_iter().map(Some).collect();
        let mut made = Vec::new();
        let mut events = Vec::new();
        for Offer { entry, fan, places } in made_offers {
            let given: Vec<ReservedSeat> = places
                .iter()
                .filter_map(|&i| free.get_mut(i).and_then(Option::take))
                .map(|s| ReservedSeat {
                    seat_id: s.id,
                    seat_number: s.seat_number,
                    price: s.price.into_price(),
                    place: crate::domain::SeatPlace::default(),
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
