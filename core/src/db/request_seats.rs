//! The seats each request names. A row is open while its request is
//! (WAITING, PENDING or PROCESSING); (user, open seat) is unique, which is "one open
//! request per user and seat", and the open rows of a seat in line order
//! ((line key, queue id), see `LineKey`) are its line.

use std::collections::HashMap;

use sqlx::{AssertSqlSafe, MySqlConnection};

use super::{BindIds as _, IdList, Traced as _, execute_for_ids};
use crate::domain::{ConcertId, LineKey, QueueId, SeatId, UserId};

/// One seat of one request, as written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestSeat {
    pub queue_id: QueueId,
    pub seat: SeatId,
    pub user: UserId,
    pub concert: ConcertId,
    pub line: LineKey,
}

/// Writes open rows; with `skip_conflicts`, a row that would break a key
/// (the user's seat already open in another request, or a seat that no
/// longer exists) is left out instead of failing the statement. Rows go in
/// seat order: the seat locks their foreign-key checks take come in the
/// order deciding workers lock seats in.
pub async fn insert(
    conn: &mut MySqlConnection,
    rows: &[RequestSeat],
    skip_conflicts: bool,
) -> Result<u64, sqlx::Error> {
    if rows.is_empty() {
        return Ok(0);
    }
    let mut sorted = rows.to_vec();
    sorted.sort_by_key(|r| (r.seat, r.queue_id));
    let mut insert = sqlx::QueryBuilder::new(if skip_conflicts {
        "INSERT IGNORE INTO request_seats (queue_id, seat_id, user_id, concert_id, line_key, is_open) "
    } else {
        "INSERT INTO request_seats (queue_id, seat_id, user_id, concert_id, line_key, is_open) "
    });
    insert.push_values(&sorted, |mut row, r| {
        row.push_bind(r.queue_id)
            .push_bind(r.seat)
            .push_bind(r.user)
            .push_bind(r.concert)
            .push_bind(r.line)
            .push_bind(1_i8);
    });
    Ok(insert
        .build()
        .execute(conn)
        .traced("INSERT", "request_seats")
        .await?
        .rows_affected())
}

/// How many open seats each of `users` has, by seat or by count (users
/// without any may be absent). One statement, a subquery of each kind per
/// user: the group writer reads it holding its concert's line, so a second
/// round trip would lengthen every group's turn.
pub async fn open_counts(
    conn: &mut MySqlConnection,
    users: &[UserId],
) -> Result<HashMap<UserId, u64>, sqlx::Error> {
    let Some(list) = IdList::of(users) else {
        return Ok(HashMap::new());
    };
    let select = sqlx::query_as(AssertSqlSafe(format!(
        "SELECT u.id, CAST( \
            (SELECT COUNT(*) FROM request_seats s FORCE INDEX (uq_request_seats_open) \
              WHERE s.user_id = u.id AND s.open_seat_id IS NOT NULL) \
          + (SELECT COALESCE(SUM(p.seat_count), 0) FROM request_pools p FORCE INDEX (uq_request_pools_open) \
              WHERE p.user_id = u.id AND p.open_pool IS NOT NULL) AS UNSIGNED) \
           FROM users u WHERE u.id IN ({list})"
    )));
    let rows: Vec<(UserId, u64)> = select
        .bind_ids(&list)
        .fetch_all(conn)
        .traced("SELECT", "request_seats")
        .await?;
    Ok(rows.into_iter().filter(|(_, open)| *open > 0).collect())
}

/// The user's open request that names any of `seats`, if any (what a
/// QUEUE_DUPLICATED answer points to).
pub async fn find_open(
    conn: &mut MySqlConnection,
    user: UserId,
    concert: ConcertId,
    seats: &[SeatId],
) -> Result<Option<QueueId>, sqlx::Error> {
    let Some(list) = IdList::of(seats) else {
        return Ok(None);
    };
    let select = sqlx::query_as(AssertSqlSafe(format!(
        "SELECT MIN(queue_id) FROM request_seats \
         WHERE user_id = ? AND concert_id = ? AND open_seat_id IN ({list})"
    )))
    .bind(user)
    .bind(concert);
    let (found,): (Option<QueueId>,) = select
        .bind_ids(&list)
        .fetch_one(conn)
        .traced("SELECT", "request_seats")
        .await?;
    Ok(found)
}

/// The seats of each of `requests`, in seat order.
pub async fn of_requests(
    conn: &mut MySqlConnection,
    requests: &[QueueId],
) -> Result<HashMap<QueueId, Vec<SeatId>>, sqlx::Error> {
    let Some(list) = IdList::of(requests) else {
        return Ok(HashMap::new());
    };
    let select = sqlx::query_as(AssertSqlSafe(format!(
        "SELECT queue_id, seat_id FROM request_seats WHERE queue_id IN ({list}) ORDER BY queue_id, seat_id"
    )));
    let rows: Vec<(QueueId, SeatId)> = select
        .bind_ids(&list)
        .fetch_all(conn)
        .traced("SELECT", "request_seats")
        .await?;
    let mut seats: HashMap<QueueId, Vec<SeatId>> = HashMap::new();
    for (queue_id, seat) in rows {
        seats.entry(queue_id).or_default().push(seat);
    }
    Ok(seats)
}

/// Closes the rows of decided requests: their seats leave the users' open
/// seats and the seats' lines. Call in the transaction that decided them.
/// (By primary key alone: a join to the queue would read, and lock, rows of
/// other workers' batches.) The index is forced: over 200 ids the optimizer
/// estimates the rows per queue id from the index statistics, which lag far
/// behind a table growing by thousands of rows a second, and it scanned the
/// whole table instead, a cost growing with the sale's history.
pub async fn close(conn: &mut MySqlConnection, requests: &[QueueId]) -> Result<u64, sqlx::Error> {
    execute_for_ids(conn, requests, |list| {
        sqlx::query(AssertSqlSafe(format!(
            "UPDATE request_seats FORCE INDEX (PRIMARY) SET is_open = 0 WHERE is_open = 1 AND queue_id IN ({list})"
        )))
    })
    .traced("UPDATE", "request_seats")
    .await
}

/// Removes the rows of requests being taken back (written in the caller's
/// transaction and refused before its commit).
pub async fn delete(conn: &mut MySqlConnection, requests: &[QueueId]) -> Result<u64, sqlx::Error> {
    execute_for_ids(conn, requests, |list| {
        sqlx::query(AssertSqlSafe(format!(
            "DELETE FROM request_seats WHERE queue_id IN ({list})"
        )))
    })
    .traced("DELETE", "request_seats")
    .await
}

/// The seats each of `rows` is about, for its status: those it names, or
/// for a request by count the seats it won (none before its decision). A
/// request naming one seat costs no query: its first seat is its only one.
pub async fn shown_for(
    conn: &mut MySqlConnection,
    rows: &[&crate::db::queue::QueueRow],
) -> Result<HashMap<QueueId, Vec<SeatId>>, sqlx::Error> {
    let mut shown: HashMap<QueueId, Vec<SeatId>> = HashMap::new();
    let mut several = Vec::new();
    let mut won = Vec::new();
    for row in rows {
        match row.seat_id {
            Some(seat) if row.seat_count <= 1 => {
                shown.insert(row.id, vec![seat]);
            }
            Some(_) => several.push(row.id),
            None => {
                shown.insert(row.id, Vec::new());
                won.extend(row.reservation_id.map(|r| (r, row.id)));
            }
        }
    }
    shown.extend(of_requests(conn, &several).await?);
    let by_reservation: HashMap<u64, QueueId> = won.iter().map(|(r, q)| (r.get(), *q)).collect();
    let reservations: Vec<u64> = by_reservation.keys().copied().collect();
    if let Some(list) = IdList::of(&reservations) {
        let select = sqlx::query_as(AssertSqlSafe(format!(
            "SELECT reservation_id, seat_id FROM reservation_seats \
             WHERE reservation_id IN ({list}) ORDER BY reservation_id, seat_id"
        )));
        let seats: Vec<(u64, SeatId)> = select
            .bind_ids(&list)
            .fetch_all(conn)
            .traced("SELECT", "reservation_seats")
            .await?;
        for (reservation, seat) in seats {
            if let Some(request) = by_reservation.get(&reservation) {
                shown.entry(*request).or_default().push(seat);
            }
        }
    }
    Ok(shown)
}
