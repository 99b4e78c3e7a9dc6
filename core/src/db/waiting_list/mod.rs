//! A concert's waiting list: fans join and leave it, and the offering
//! worker gives the seats that come back, which no open request wants, to
//! the fans on it in order, as holds of theirs. One concert's rows per
//! statement and per step.

use chrono::{DateTime, Utc};
use sqlx::{AssertSqlSafe, MySqlConnection};

use super::{BindIds, IdList, Traced as _};
use crate::domain::waiting_list::WaitingFor;
use crate::domain::{AskedPool, ConcertId, PageRequest, ReservationId, UserId, WaitingSeats};

mod offers;

pub use offers::{Offered, needing_offers, offer_step};

/// What an entry's stored `pool` says the fan waits for.
pub fn waiting_for(pool: Option<u16>) -> WaitingFor {
    pool.map(AskedPool::from_code)
}

/// A free seat or place no open request wants (one naming it, or one
/// asking for the best of its pool: its category's seats, or its area's
/// places): what an offer may give, and what makes joining the list for it
/// pointless (go and reserve it).
const FREE_AND_UNWANTED: &str = "s.status = 'AVAILABLE' \
     AND NOT EXISTS (SELECT 1 FROM request_seats o WHERE o.open_seat_id = s.id) \
     AND NOT EXISTS (SELECT 1 FROM request_pools p FORCE INDEX (idx_request_pools_line) \
                      WHERE p.concert_id = s.concert_id \
                        AND p.open_pool = IF(s.area IS NULL, s.category, 256 + s.area)) \
     AND NOT EXISTS (SELECT 1 FROM reservation_seats rs WHERE rs.live_seat_id = s.id)";

/// The seats (`s`) a fan waiting for `wants` may be offered, as a condition
/// and the position it binds: any seat is never a standing place.
fn serving(wants: WaitingFor) -> (&'static str, Option<u8>) {
    match wants {
        None => ("s.area IS NULL", None),
        Some(AskedPool::Category(c)) => ("s.area IS NULL AND s.category = ?", Some(c)),
        Some(AskedPool::Area(a)) => ("s.area = ?", Some(a)),
    }
}

/// Binds `value` when there is one: for a condition that has a
/// placeholder only for some of what it stands for ([`serving`]).
fn bind_some<Q: BindIds>(query: Q, value: Option<impl Into<u64>>) -> Q {
    match value {
        Some(value) => query.bind_id(value.into()),
        None => query,
    }
}

/// Whether `concert` has a seat (or place) of what `wants` names that is
/// free and that no open request wants. Stops at the first.
pub async fn has_free_seat(
    conn: &mut MySqlConnection,
    concert: ConcertId,
    wants: WaitingFor,
) -> Result<bool, sqlx::Error> {
    let (pool, position) = serving(wants);
    let found = sqlx::query_as(AssertSqlSafe(format!(
        "SELECT s.id FROM seats s FORCE INDEX (idx_seats_concert_status) \
          WHERE s.concert_id = ? AND {pool} AND {FREE_AND_UNWANTED} LIMIT 1"
    )))
    .bind(concert);
    let found = bind_some(found, position);
    let found: Option<(u64,)> = found.fetch_optional(conn).traced("SELECT", "seats").await?;
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

/// Puts `user` at the end of `concert`'s list, waiting for `seats` of
/// `wants`. A fan already waiting is refused by `uq_waiting_list_waiting`.
pub async fn join(
    conn: &mut MySqlConnection,
    concert: ConcertId,
    user: UserId,
    seats: WaitingSeats,
    wants: WaitingFor,
    now: DateTime<Utc>,
) -> Result<u64, sqlx::Error> {
    let done = sqlx::query(
        "INSERT INTO waiting_list_entries (concert_id, user_id, seats, pool, status, created_at) \
         VALUES (?, ?, ?, ?, 'WAITING', ?)",
    )
    .bind(concert)
    .bind(user)
    .bind(seats.get())
    .bind(wants.map(AskedPool::code))
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
    /// What the fan waits for, coded as [`AskedPool::code`] (NULL: any seat).
    pub pool: Option<u16>,
    /// WAITING, OFFERED or LEFT.
    pub status: String,
    pub reservation_id: Option<ReservationId>,
    pub created_at: DateTime<Utc>,
    /// Fans waiting ahead of this one, plus one (WAITING only).
    #[sqlx(skip)]
    pub position: Option<u64>,
}

/// `user`'s latest entry on `concert`'s list, with its place when waiting:
/// the fans still waiting who joined before for what may be offered to
/// this one, plus one.
pub async fn latest_entry(
    conn: &mut MySqlConnection,
    concert: ConcertId,
    user: UserId,
) -> Result<Option<Entry>, sqlx::Error> {
    let entry: Option<Entry> = sqlx::query_as(
        "SELECT id, seats, pool, status, reservation_id, created_at FROM waiting_list_entries \
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
        // Ahead: the fans before who may be offered what this one waits
        // for (any seat and a category's seats take from each other).
        let ahead_of = match waiting_for(entry.pool) {
            None => "(pool IS NULL OR pool < 256)",
            Some(AskedPool::Category(_)) => "(pool IS NULL OR pool = ?)",
            Some(AskedPool::Area(_)) => "pool = ?",
        };
        let count = sqlx::query_as(AssertSqlSafe(format!(
            "SELECT COUNT(*) FROM waiting_list_entries \
              WHERE status = 'WAITING' AND concert_id = ? AND id < ? AND {ahead_of}"
        )))
        .bind(concert)
        .bind(entry.id);
        let count = bind_some(count, entry.pool);
        let (ahead,): (i64,) = count
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
    /// The fan's nickname, as an operator calls them.
    pub nickname: String,
    pub seats: u8,
    /// As [`Entry::pool`].
    pub pool: Option<u16>,
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
        "SELECT e.id, e.user_id, u.nickname, e.seats, e.pool, e.status, e.reservation_id, \
                e.created_at, e.ended_at \
           FROM waiting_list_entries e JOIN users u ON u.id = e.user_id \
          WHERE e.concert_id = ? ORDER BY e.id LIMIT ? OFFSET ?",
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
