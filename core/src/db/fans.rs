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

/// The records of the fans of `batch`'s requests in `concert`; a user
/// missing has neither seats nor open requests outside `batch`. One row a
/// request, each with a subquery through the user's reservations and one
/// through their open seats (`uq_request_seats_open`), a handful of index
/// entries per fan; no UNION or GROUP BY (either builds a temporary table
/// each time).
pub async fn records(
    conn: &mut MySqlConnection,
    concert: ConcertId,
    batch: &[QueueId],
    now: DateTime<Utc>,
) -> Result<HashMap<UserId, FanRecord>, sqlx::Error> {
    let Some(batch_list) = IdList::of(batch) else {
        return Ok(HashMap::new());
    };
    let select = sqlx::query_as(AssertSqlSafe(format!(
        "SELECT q.user_id, \
                (SELECT COUNT(*) FROM reservations r FORCE INDEX (idx_reservations_user) \
                   JOIN reservation_seats rs ON rs.reservation_id = r.id \
                  WHERE r.user_id = q.user_id AND r.concert_id = q.concert_id \
                    AND (r.status = 'CONFIRMED' OR (r.status = 'HELD' AND r.hold_expires_at > ?))), \
                (SELECT CAST(MIN({place}) AS UNSIGNED) \
                   FROM request_seats o FORCE INDEX (uq_request_seats_open) \
                  WHERE o.user_id = q.user_id AND o.open_seat_id IS NOT NULL \
                    AND o.concert_id = q.concert_id AND o.queue_id NOT IN ({batch_list})) \
           FROM reservation_queue q FORCE INDEX (PRIMARY) \
          WHERE q.id IN ({batch_list}) AND q.concert_id = ?",
        place = super::line::place_sql("o."),
    )));
    let rows: Vec<(UserId, i64, Option<u64>)> = select
        .bind(now.naive_utc())
        .bind_ids(&batch_list)
        .bind_ids(&batch_list)
        .bind(concert)
        .fetch_all(conn)
        .traced("SELECT", "reservations")
        .await?;
    Ok(rows
        .into_iter()
        .map(|(user, taken, first_open_elsewhere)| {
            let record = FanRecord {
                seats_taken: u32::try_from(taken).unwrap_or(u32::MAX),
                first_open_elsewhere,
            };
            (user, record)
        })
        .collect())
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
          GROUP BY concert_id, user_id"
    )));
    let rows: Vec<(ConcertId, UserId, u64)> = select
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

/// What a group's write reads back about its users, in one statement (a
/// second one would lengthen every group's transaction, and the group
/// writer is the enqueue's narrow part): every open seat of `users` (user,
/// seat, the request that has it open, its concert), and for each fan with
/// an open seat (every fan of the group has its new request's) the seats
/// they hold (before the hold's end by the database's clock) or have
/// confirmed. A subquery a row, not a UNION or a GROUP BY: those build a
/// temporary table each time.
pub async fn open_and_held_of_users(
    conn: &mut MySqlConnection,
    users: &[UserId],
) -> Result<(Vec<OpenSeat>, HashMap<Fan, u64>), sqlx::Error> {
    let Some(list) = IdList::of(users) else {
        return Ok((Vec::new(), HashMap::new()));
    };
    let select = sqlx::query_as(AssertSqlSafe(format!(
        "SELECT x.user_id, x.seat_id, x.queue_id, x.concert_id, \
                (SELECT COUNT(*) FROM reservations r FORCE INDEX (idx_reservations_user) \
                   JOIN reservation_seats rs ON rs.reservation_id = r.id \
                  WHERE r.user_id = x.user_id AND r.concert_id = x.concert_id \
                    AND (r.status = 'CONFIRMED' \
                         OR (r.status = 'HELD' AND r.hold_expires_at > UTC_TIMESTAMP(6)))) \
           FROM request_seats x FORCE INDEX (uq_request_seats_open) \
          WHERE x.open_seat_id IS NOT NULL AND x.user_id IN ({list})"
    )));
    let rows: Vec<(UserId, SeatId, QueueId, ConcertId, i64)> = select
        .bind_ids(&list)
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

/// One open seat of a user.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpenSeat {
    pub user: UserId,
    pub seat: SeatId,
    pub request: QueueId,
    pub concert: ConcertId,
}
