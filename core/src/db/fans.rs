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

/// The records of `users` in `concert`; a user missing has neither seats
/// nor open requests outside `batch`. In one round trip: the seats through
/// each user's reservations, the open requests through each user's open
/// seats (`uq_request_seats_open`), a handful of rows per fan.
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
    // Row by row, counted here: grouping in the statement made the server
    // build a temporary table per batch.
    let select = sqlx::query_as(AssertSqlSafe(format!(
        "SELECT 0 AS kind, r.user_id, CAST(0 AS UNSIGNED) AS place \
           FROM reservations r FORCE INDEX (idx_reservations_user) \
           JOIN reservation_seats rs ON rs.reservation_id = r.id \
          WHERE r.user_id IN ({users_list}) AND r.concert_id = ? \
            AND (r.status = 'CONFIRMED' OR (r.status = 'HELD' AND r.hold_expires_at > ?)) \
         UNION ALL \
         SELECT 1, o.user_id, CAST({place} AS UNSIGNED) \
           FROM request_seats o FORCE INDEX (uq_request_seats_open) \
          WHERE o.user_id IN ({users_list}) AND o.open_seat_id IS NOT NULL AND o.concert_id = ? \
            AND o.queue_id NOT IN ({batch_list})",
        place = super::line::place_sql("o."),
    )));
    let rows: Vec<(i64, UserId, u64)> = select
        .bind_ids(&users_list)
        .bind(concert)
        .bind(now.naive_utc())
        .bind_ids(&users_list)
        .bind(concert)
        .bind_ids(&batch_list)
        .fetch_all(conn)
        .traced("SELECT", "reservations")
        .await?;
    let mut records: HashMap<UserId, FanRecord> = HashMap::new();
    for (kind, user, place) in rows {
        let record = records.entry(user).or_default();
        if kind == 0 {
            record.seats_taken += 1;
        } else {
            record.first_open_elsewhere = Some(
                record
                    .first_open_elsewhere
                    .map_or(place, |first| first.min(place)),
            );
        }
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
/// seat, the request that has it open, its concert), and the seats each
/// fan holds (before the hold's end by the database's clock) or has
/// confirmed. Row by row (a held seat a row), counted here: grouping in
/// the statement builds a temporary table each time.
pub async fn open_and_held_of_users(
    conn: &mut MySqlConnection,
    users: &[UserId],
) -> Result<(Vec<OpenSeat>, HashMap<Fan, u64>), sqlx::Error> {
    let Some(list) = IdList::of(users) else {
        return Ok((Vec::new(), HashMap::new()));
    };
    let select = sqlx::query_as(AssertSqlSafe(format!(
        "SELECT 0, user_id, seat_id, queue_id, concert_id \
           FROM request_seats FORCE INDEX (uq_request_seats_open) \
          WHERE open_seat_id IS NOT NULL AND user_id IN ({list}) \
         UNION ALL \
         SELECT 1, r.user_id, rs.seat_id, CAST(0 AS UNSIGNED), r.concert_id \
           FROM reservations r FORCE INDEX (idx_reservations_user) \
           JOIN reservation_seats rs ON rs.reservation_id = r.id \
          WHERE r.user_id IN ({list}) \
            AND (r.status = 'CONFIRMED' OR (r.status = 'HELD' AND r.hold_expires_at > UTC_TIMESTAMP(6)))"
    )));
    let rows: Vec<(i64, UserId, u64, u64, ConcertId)> = select
        .bind_ids(&list)
        .bind_ids(&list)
        .fetch_all(conn)
        .traced("SELECT", "request_seats")
        .await?;
    let mut open = Vec::new();
    let mut held = HashMap::new();
    for (kind, user, n, queue_id, concert) in rows {
        if kind == 0 {
            open.push(OpenSeat {
                user,
                seat: SeatId(n),
                request: QueueId(queue_id),
                concert,
            });
        } else {
            *held.entry(Fan { concert, user }).or_default() += 1;
        }
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
