//! A concert's waiting list: fans join and leave it, and the offering
//! worker gives the seats that come back, which no open request wants, to
//! the fans on it in order, as holds of theirs. One concert's rows per
//! statement and per step.

use chrono::{DateTime, Utc};
use sqlx::{AssertSqlSafe, MySqlConnection};

use super::{BindIds as _, IdList, Traced as _};
use crate::domain::{ConcertId, PageRequest, ReservationId, UserId, WaitingSeats};

mod offers;

pub use offers::{Offered, needing_offers, offer_step};

/// A free seat no open request wants (one naming it, or one asking for
/// the best of its category): what an offer may give, and what makes
/// joining the list pointless (go and reserve it). A standing area's
/// places are not the list's: they are asked for by area.
const FREE_AND_UNWANTED: &str = "s.status = 'AVAILABLE' AND s.area IS NULL \
     AND NOT EXISTS (SELECT 1 FROM request_seats o WHERE o.open_seat_id = s.id) \
     AND NOT EXISTS (SELECT 1 FROM request_pools p FORCE INDEX (idx_request_pools_line) \
                      WHERE p.concert_id = s.concert_id AND p.open_pool = s.category) \
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

/// Removes the entries of fans who left a list before `before`; how many.
/// Nothing refers to them (an offered entry stays: it is its reservation's
/// record of where it came from).
pub async fn forget_left(
    conn: &mut MySqlConnection,
    before: DateTime<Utc>,
    limit: u32,
) -> Result<u64, sqlx::Error> {
    let done = sqlx::query(
        "DELETE FROM waiting_list_entries WHERE status = 'LEFT' AND ended_at < ? LIMIT ?",
    )
    .bind(before.naive_utc())
    .bind(limit)
    .execute(conn)
    .traced("DELETE", "waiting_list_entries")
    .await?;
    Ok(done.rows_affected())
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
