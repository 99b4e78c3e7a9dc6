//! What the cap per fan (a user in one concert) needs of a decision's fans:
//! the seats each holds or has confirmed, and the place of their first open
//! request outside the batch (a fan's requests are decided in line order,
//! by one worker at a time).

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use sqlx::{AssertSqlSafe, MySqlConnection};

use super::{BindIds as _, IdList, Traced as _};
use crate::domain::allocation::Fan;
use crate::domain::{ConcertId, QueueId, SeatId, UserId};

/// One fan of a batch, as the last commit left them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FanRecord {
    /// Seats of live claims: HELD before the hold's end, or CONFIRMED.
    pub seats_taken: u32,
    pub first_open_elsewhere: Option<u64>,
}

/// The records of `users`, the fans of `batch`'s requests in `concert`; a
/// user missing has neither seats nor open requests outside `batch`. Two
/// plain range reads over the users' index entries (their live
/// reservations' seats in the concert, their open seats outside the batch),
/// counted here: no row of the batch is read again, and no GROUP BY or
/// UNION (either builds a temporary table each time).
pub async fn records(
    conn: &mut MySqlConnection,
    concert: ConcertId,
    users: &[UserId],
    batch: &[QueueId],
    now: DateTime<Utc>,
) -> Result<HashMap<UserId, FanRecord>, sqlx::Error> {
    let (Some(users_list), Some(batch_list)) = (IdList::of(users), IdList::of(batch)) else {
        return Ok(HashMap::new());
    };
    // Open requests first, then holds: each statement sees the last commit
    // when it runs, and a request of the fan's decided in between was
    // still open for the first (its fan's request here waits) or is
    // already held for the second; the other order could see neither.
    let select = sqlx::query_as(AssertSqlSafe(format!(
        "SELECT o.user_id, CAST({place} AS UNSIGNED) FROM request_seats o FORCE INDEX (uq_request_seats_open) \
          WHERE o.user_id IN ({users_list}) AND o.open_seat_id IS NOT NULL \
            AND o.concert_id = ? AND o.queue_id NOT IN ({batch_list})",
        place = super::line::place_sql("o."),
    )));
    let mut open: Vec<(UserId, u64)> = select
        .bind_ids(&users_list)
        .bind(concert)
        .bind_ids(&batch_list)
        .fetch_all(&mut *conn)
        .traced("SELECT", "request_seats")
        .await?;
    // Their open requests by count (best available) likewise.
    let select = sqlx::query_as(AssertSqlSafe(format!(
        "SELECT o.user_id, CAST({place} AS UNSIGNED) FROM request_pools o FORCE INDEX (uq_request_pools_open) \
          WHERE o.user_id IN ({users_list}) AND o.open_pool IS NOT NULL \
            AND o.concert_id = ? AND o.queue_id NOT IN ({batch_list})",
        place = super::line::place_sql("o."),
    )));
    let by_count: Vec<(UserId, u64)> = select
        .bind_ids(&users_list)
        .bind(concert)
        .bind_ids(&batch_list)
        .fetch_all(&mut *conn)
        .traced("SELECT", "request_pools")
        .await?;
    open.extend(by_count);
    let select = sqlx::query_as(AssertSqlSafe(format!(
        "SELECT r.user_id FROM reservations r FORCE INDEX (idx_reservations_user) \
           JOIN reservation_seats rs ON rs.reservation_id = r.id \
          WHERE r.user_id IN ({users_list}) AND r.concert_id = ? \
            AND (r.status = 'CONFIRMED' OR (r.status = 'HELD' AND r.hold_expires_at > ?))"
    )));
    let held: Vec<(UserId,)> = select
        .bind_ids(&users_list)
        .bind(concert)
        .bind(now.naive_utc())
        .fetch_all(conn)
        .traced("SELECT", "reservations")
        .await?;
    let mut records: HashMap<UserId, FanRecord> = HashMap::new();
    for (user,) in held {
        records.entry(user).or_default().seats_taken += 1;
    }
    for (user, place) in open {
        let first = &mut records.entry(user).or_default().first_open_elsewhere;
        *first = Some(first.map_or(place, |f| f.min(place)));
    }
    Ok(records)
}

/// The seats each of `users` has in each concert: held (before the hold's
/// end by the database's clock), confirmed, and asked for by open requests
/// (the caller's transaction's own included). What the enqueue refuses by:
/// a request that would take its fan past the cap is refused when it is
/// written; the decision holds the line when two were written at once.
pub async fn seats_of(
    conn: &mut MySqlConnection,
    users: &[UserId],
) -> Result<HashMap<Fan, u64>, sqlx::Error> {
    let Some(list) = IdList::of(users) else {
        return Ok(HashMap::new());
    };
    let select = sqlx::query_as(AssertSqlSafe(format!(
        "SELECT r.concert_id, r.user_id, CAST(COUNT(*) AS UNSIGNED) \
           FROM reservations r FORCE INDEX (idx_reservations_user) \
           JOIN reservation_seats rs ON rs.reservation_id = r.id \
          WHERE r.user_id IN ({list}) \
            AND (r.status = 'CONFIRMED' OR (r.status = 'HELD' AND r.hold_expires_at > UTC_TIMESTAMP(6))) \
          GROUP BY r.concert_id, r.user_id \
         UNION ALL \
         SELECT concert_id, user_id, CAST(COUNT(*) AS UNSIGNED) \
           FROM request_seats FORCE INDEX (uq_request_seats_open) \
          WHERE user_id IN ({list}) AND open_seat_id IS NOT NULL \
          GROUP BY concert_id, user_id \
         UNION ALL \
         SELECT concert_id, user_id, CAST(SUM(seat_count) AS UNSIGNED) \
           FROM request_pools FORCE INDEX (uq_request_pools_open) \
          WHERE user_id IN ({list}) AND open_pool IS NOT NULL \
          GROUP BY concert_id, user_id"
    )));
    let rows: Vec<(ConcertId, UserId, u64)> = select
        .bind_ids(&list)
        .bind_ids(&list)
        .bind_ids(&list)
        .fetch_all(conn)
        .traced("SELECT", "reservations")
        .await?;
    let mut seats: HashMap<Fan, u64> = HashMap::new();
    for (concert, user, n) in rows {
        *seats.entry(Fan { concert, user }).or_default() += n;
    }
    Ok(seats)
}

/// What a group's write reads back about its fans, in one statement (a
/// second one would lengthen every group's transaction, and the group
/// writer is the enqueue's narrow part): every open seat of `users` in
/// `concerts` (user, seat, the request that has it open, its concert), and
/// for each fan with an open seat (every fan of the group has its new
/// request's) the seats they hold (before the hold's end by the database's
/// clock) or have confirmed, and those their open requests by count ask
/// for. A range of the fan index per fan, as short as the fan's cap: what
/// a user has open in other concerts is not read. A
/// subquery a row, not a UNION or a GROUP BY: those build a temporary table
/// each time.
pub async fn open_and_held_of_fans(
    conn: &mut MySqlConnection,
    users: &[UserId],
    concerts: &[ConcertId],
) -> Result<(Vec<OpenSeat>, HashMap<Fan, u64>), sqlx::Error> {
    let (Some(list), Some(concert_list)) = (IdList::of(users), IdList::of(concerts)) else {
        return Ok((Vec::new(), HashMap::new()));
    };
    let select = sqlx::query_as(AssertSqlSafe(format!(
        "SELECT x.user_id, x.seat_id, x.queue_id, x.concert_id, CAST({taken} AS SIGNED) \
           FROM request_seats x FORCE INDEX (uq_request_seats_open) \
          WHERE x.user_id IN ({list}) AND x.concert_id IN ({concert_list}) \
            AND x.open_seat_id IS NOT NULL",
        taken = HELD_AND_BY_COUNT_OF_X,
    )));
    let rows: Vec<(UserId, SeatId, QueueId, ConcertId, i64)> = select
        .bind_ids(&list)
        .bind_ids(&concert_list)
        .fetch_all(conn)
        .traced("SELECT", "request_seats")
        .await?;
    let mut open = Vec::with_capacity(rows.len());
    let mut held = HashMap::new();
    for (user, seat, request, concert, seats) in rows {
        open.push(OpenSeat {
            user,
            seat,
            request,
            concert,
        });
        held.insert(Fan { concert, user }, u64::try_from(seats).unwrap_or(0));
    }
    Ok((open, held))
}

/// Of the fan of row `x` (its user in its concert): the seats they hold
/// (before the hold's end by the database's clock) or have confirmed, and
/// those their open requests by count ask for.
const HELD_AND_BY_COUNT_OF_X: &str = "(SELECT COUNT(*) FROM reservations r FORCE INDEX (idx_reservations_user) \
       JOIN reservation_seats rs ON rs.reservation_id = r.id \
      WHERE r.user_id = x.user_id AND r.concert_id = x.concert_id \
        AND (r.status = 'CONFIRMED' \
             OR (r.status = 'HELD' AND r.hold_expires_at > UTC_TIMESTAMP(6)))) \
  + (SELECT COALESCE(SUM(p.seat_count), 0) FROM request_pools p \
       FORCE INDEX (uq_request_pools_open) \
      WHERE p.user_id = x.user_id AND p.concert_id = x.concert_id \
        AND p.open_pool IS NOT NULL)";

/// Of the fan of row `x`: the seats their open requests name.
const OPEN_SEATS_OF_X: &str = "(SELECT COUNT(*) FROM request_seats s FORCE INDEX (uq_request_seats_open) \
      WHERE s.user_id = x.user_id AND s.concert_id = x.concert_id AND s.open_seat_id IS NOT NULL)";

/// As [`open_and_held_of_fans`], for requests by count: every open pool of
/// `users` in `concerts` (the fan, the pool's code, the request that has
/// it open), and for each fan with one every seat they have: held,
/// confirmed, and asked for by open requests, by count or by seat (a
/// group without seats need not read those apart). Read only by a group
/// that has requests by count.
pub async fn open_pools_of_fans(
    conn: &mut MySqlConnection,
    users: &[UserId],
    concerts: &[ConcertId],
) -> Result<(Vec<OpenPool>, HashMap<Fan, u64>), sqlx::Error> {
    let (Some(list), Some(concert_list)) = (IdList::of(users), IdList::of(concerts)) else {
        return Ok((Vec::new(), HashMap::new()));
    };
    let select = sqlx::query_as(AssertSqlSafe(format!(
        "SELECT x.user_id, CAST(x.open_pool AS UNSIGNED), x.queue_id, x.concert_id, \
                CAST({taken} + {open_seats} AS SIGNED) \
           FROM request_pools x FORCE INDEX (uq_request_pools_open) \
          WHERE x.user_id IN ({list}) AND x.concert_id IN ({concert_list}) \
            AND x.open_pool IS NOT NULL",
        taken = HELD_AND_BY_COUNT_OF_X,
        open_seats = OPEN_SEATS_OF_X,
    )));
    let rows: Vec<(UserId, u16, QueueId, ConcertId, i64)> = select
        .bind_ids(&list)
        .bind_ids(&concert_list)
        .fetch_all(conn)
        .traced("SELECT", "request_pools")
        .await?;
    let mut open = Vec::with_capacity(rows.len());
    let mut taken = HashMap::new();
    for (user, pool, request, concert, seats) in rows {
        open.push(OpenPool {
            fan: Fan { concert, user },
            pool,
            request,
        });
        taken.insert(Fan { concert, user }, u64::try_from(seats).unwrap_or(0));
    }
    Ok((open, taken))
}

/// One open request by count of a fan: its pool's code
/// ([`crate::domain::AskedPool::code`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpenPool {
    pub fan: Fan,
    pub pool: u16,
    pub request: QueueId,
}

/// One open seat of a user.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpenSeat {
    pub user: UserId,
    pub seat: SeatId,
    pub request: QueueId,
    pub concert: ConcertId,
}
