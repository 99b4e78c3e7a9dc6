//! A concert's waiting list: fans join and leave it, and the offering
//! worker gives the seats that come back, which no open request wants, to
//! the fans on it in order, as holds of theirs. One concert's rows per
//! statement and per step.

use chrono::{DateTime, Utc};
use sqlx::{AssertSqlSafe, MySqlConnection};

use super::{BindIds as _, IdList, Traced as _, fans, outbox, seats};
use crate::domain::allocation::Fan;
use crate::domain::events::{EventKind, ReservationEvent, ReservedSeat, Subject};
use crate::domain::waiting_list::{Offer, Waiting, offers};
use crate::domain::{
    ConcertId, MaxSeatsPerUser, OfferDuration, PageRequest, ReservationId, ReservationStatus,
    SeatId, SeatStatus, UserId, WaitingSeats,
};

/// A free seat no open request wants: what an offer may give, and what
/// makes joining the list pointless (go and reserve it).
const FREE_AND_UNWANTED: &str = "s.status = 'AVAILABLE' \
     AND NOT EXISTS (SELECT 1 FROM request_seats o WHERE o.open_seat_id = s.id) \
     AND NOT EXISTS (SELECT 1 FROM reservation_seats rs WHERE rs.live_seat_id = s.id)";

/// Whether `concert` has a seat that is free and that no open request
/// wants. Stops at the first.
pub async fn has_free_seat(
    conn: &mut MySqlConnection,
    concert: ConcertId,
) -> Result<bool, sqlx::Error> {
    let found: Option<(u64,)> = sqlx::query_as(AssertSqlSafe(format!(
        "SELECT s.id FROM seats s FORCE INDEX (idx_seats_concert_status) \
          WHERE s.concert_id = ? AND {FREE_AND_UNWANTED} LIMIT 1"
    )))
    .bind(concert)
    .fetch_optional(conn)
    .traced("SELECT", "seats")
    .await?;
    Ok(found.is_some())
}

/// Makes sure `concert` has its list's row (what offering locks). In its
/// own statement, before the join's transaction: once there, nothing but
/// the offering worker locks it.
pub async fn ensure_list(
    conn: &mut MySqlConnection,
    concert: ConcertId,
    now: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    let exists: Option<(u64,)> =
        sqlx::query_as("SELECT concert_id FROM waiting_lists WHERE concert_id = ?")
            .bind(concert)
            .fetch_optional(&mut *conn)
            .traced("SELECT", "waiting_lists")
            .await?;
    if exists.is_none() {
        sqlx::query("INSERT IGNORE INTO waiting_lists (concert_id, created_at) VALUES (?, ?)")
            .bind(concert)
            .bind(now.naive_utc())
            .execute(conn)
            .traced("INSERT", "waiting_lists")
            .await?;
    }
    Ok(())
}

/// Puts `user` at the end of `concert`'s list. A fan already waiting is
/// refused by `uq_waiting_list_waiting`.
pub async fn join(
    conn: &mut MySqlConnection,
    concert: ConcertId,
    user: UserId,
    seats: WaitingSeats,
    now: DateTime<Utc>,
) -> Result<u64, sqlx::Error> {
    let done = sqlx::query(
        "INSERT INTO waiting_list_entries (concert_id, user_id, seats, status, created_at) \
         VALUES (?, ?, ?, 'WAITING', ?)",
    )
    .bind(concert)
    .bind(user)
    .bind(seats.get())
    .bind(now.naive_utc())
    .execute(conn)
    .traced("INSERT", "waiting_list_entries")
    .await?;
    Ok(done.last_insert_id())
}

/// Takes `user` off `concert`'s list; false when they were not waiting (an
/// offer already made stays theirs, a hold like any other).
pub async fn leave(
    conn: &mut MySqlConnection,
    concert: ConcertId,
    user: UserId,
    now: DateTime<Utc>,
) -> Result<bool, sqlx::Error> {
    let done = sqlx::query(
        "UPDATE waiting_list_entries SET status = 'LEFT', ended_at = ? \
          WHERE concert_id = ? AND waiting_user_id = ?",
    )
    .bind(now.naive_utc())
    .bind(concert)
    .bind(user)
    .execute(conn)
    .traced("UPDATE", "waiting_list_entries")
    .await?;
    Ok(done.rows_affected() == 1)
}

/// A fan's latest entry on a concert's list.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Entry {
    pub id: u64,
    pub seats: u8,
    /// WAITING, OFFERED or LEFT.
    pub status: String,
    pub reservation_id: Option<ReservationId>,
    pub created_at: DateTime<Utc>,
    /// Fans waiting ahead of this one, plus one (WAITING only).
    #[sqlx(skip)]
    pub position: Option<u64>,
}

/// `user`'s latest entry on `concert`'s list, with its place when waiting:
/// the fans still waiting who joined before, plus one.
pub async fn latest_entry(
    conn: &mut MySqlConnection,
    concert: ConcertId,
    user: UserId,
) -> Result<Option<Entry>, sqlx::Error> {
    let entry: Option<Entry> = sqlx::query_as(
        "SELECT id, seats, status, reservation_id, created_at FROM waiting_list_entries \
          WHERE user_id = ? AND concert_id = ? ORDER BY id DESC LIMIT 1",
    )
    .bind(user)
    .bind(concert)
    .fetch_optional(&mut *conn)
    .traced("SELECT", "waiting_list_entries")
    .await?;
    let Some(mut entry) = entry else {
        return Ok(None);
    };
    if entry.status == "WAITING" {
        let (ahead,): (i64,) = sqlx::query_as(
            "SELECT COUNT(*) FROM waiting_list_entries \
              WHERE status = 'WAITING' AND concert_id = ? AND id < ?",
        )
        .bind(concert)
        .bind(entry.id)
        .fetch_one(conn)
        .traced("SELECT", "waiting_list_entries")
        .await?;
        entry.position = Some(u64::try_from(ahead).unwrap_or(0) + 1);
    }
    Ok(Some(entry))
}

/// One entry of a list, as an operator sees it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ListedEntry {
    pub id: u64,
    pub user_id: UserId,
    pub seats: u8,
    pub status: String,
    pub reservation_id: Option<ReservationId>,
    pub created_at: DateTime<Utc>,
    pub ended_at: Option<DateTime<Utc>>,
}

/// A page of `concert`'s list, every entry (waiting, offered or left) in
/// the order the fans joined.
pub async fn entries(
    conn: &mut MySqlConnection,
    concert: ConcertId,
    page: PageRequest,
) -> Result<Vec<ListedEntry>, sqlx::Error> {
    sqlx::query_as(
        "SELECT id, user_id, seats, status, reservation_id, created_at, ended_at \
           FROM waiting_list_entries WHERE concert_id = ? ORDER BY id LIMIT ? OFFSET ?",
    )
    .bind(concert)
    .bind(page.size)
    .bind(page.offset())
    .fetch_all(conn)
    .traced("SELECT", "waiting_list_entries")
    .await
}

/// Whether `user` holds an offer from `concert`'s list that is still
/// running at the database's clock (they may not join again until it ends).
pub async fn has_running_offer(
    conn: &mut MySqlConnection,
    concert: ConcertId,
    user: UserId,
) -> Result<bool, sqlx::Error> {
    let found: Option<(u64,)> = sqlx::query_as(
        "SELECT e.id FROM waiting_list_entries e JOIN reservations r ON r.id = e.reservation_id \
          WHERE e.user_id = ? AND e.concert_id = ? AND e.status = 'OFFERED' \
            AND r.status = 'HELD' AND r.hold_expires_at > UTC_TIMESTAMP(6) LIMIT 1",
    )
    .bind(user)
    .bind(concert)
    .fetch_optional(conn)
    .traced("SELECT", "waiting_list_entries")
    .await?;
    Ok(found.is_some())
}

/// Share-locks the WAITING entries of `users` on `concert`'s list, for a
/// decision about to read what those fans hold: an offer step locks the
/// entries it reads before it counts the fans' seats, so a decision waits
/// here for a running offer to commit (and then counts its hold), and an
/// offer waits for a running decision (and then counts its seats). Without
/// this, a fan's request written after an offer counted their seats and
/// decided before it committed would take them past the cap with it. A
/// concert that never had a list costs one primary-key read.
pub async fn lock_fans_waiting(
    conn: &mut MySqlConnection,
    concert: ConcertId,
    users: &[UserId],
) -> Result<(), sqlx::Error> {
    let has_list: Option<(u64,)> =
        sqlx::query_as("SELECT concert_id FROM waiting_lists WHERE concert_id = ?")
            .bind(concert)
            .fetch_optional(&mut *conn)
            .traced("SELECT", "waiting_lists")
            .await?;
    let (Some(_), Some(list)) = (has_list, IdList::of(users)) else {
        return Ok(());
    };
    let select = sqlx::query_as(AssertSqlSafe(format!(
        "SELECT id FROM waiting_list_entries FORCE INDEX (uq_waiting_list_waiting) \
          WHERE concert_id = ? AND waiting_user_id IN ({list}) LOCK IN SHARE MODE"
    )));
    let _: Vec<(u64,)> = select
        .bind(concert)
        .bind_ids(&list)
        .fetch_all(conn)
        .traced("SELECT", "waiting_list_entries")
        .await?;
    Ok(())
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
/// of them waits, see [`lock_fans_waiting`]), reads the seats that are
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
        let free: Vec<(SeatId, String)> = sqlx::query_as(AssertSqlSafe(format!(
            "SELECT s.id, s.seat_number FROM seats s FORCE INDEX (idx_seats_concert_status) \
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
            let given: Vec<(SeatId, String)> = next.by_ref().take(usize::from(seats)).collect();
            let ids: Vec<SeatId> = given.iter().map(|(id, _)| *id).collect();
            let reservation = hold_for(conn, concert, fan, &ids, until, now).await?;
            sqlx::query(
                "UPDATE waiting_list_entries SET status = 'OFFERED', reservation_id = ?, ended_at = ? \
                  WHERE id = ? AND status = 'WAITING'",
            )
            .bind(reservation)
            .bind(now.naive_utc())
            .bind(entry)
            .execute(&mut *conn)
            .await?;
            let seats: Vec<ReservedSeat> = given
                .into_iter()
                .map(|(seat_id, seat_number)| ReservedSeat {
                    seat_id,
                    seat_number,
                })
                .collect();
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
    seats: &[SeatId],
    until: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Result<ReservationId, sqlx::Error> {
    let mut sorted = seats.to_vec();
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
    let mut insert = sqlx::QueryBuilder::new(
        "INSERT INTO reservation_seats (reservation_id, seat_id, concert_id, status) ",
    );
    insert.push_values(&sorted, |mut row, seat| {
        row.push_bind(reservation)
            .push_bind(*seat)
            .push_bind(concert)
            .push_bind(ReservationStatus::Held);
    });
    insert.build().execute(&mut *conn).await?;
    seats::mark(conn, &sorted, SeatStatus::Held, Some(until), now).await?;
    Ok(reservation)
}
