//! Writing requests: one at a time (a keyed request, in its own
//! transaction) or a whole group in a few multi-row statements.

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Utc};
use sqlx::{AssertSqlSafe, MySqlConnection};

use crate::db::request_pools;
use crate::db::request_seats::{self, RequestSeat};
use crate::db::{IdList, Traced as _, execute_for_ids, fans};
use crate::domain::allocation::Fan;
use crate::domain::{IdempotencyKey, LineKey, QueueId, QueueStatus, SeatId, UserId};

use super::*;

/// Adds a request with its seats, in line at `line` (WAITING in a lottery,
/// else PENDING: see [`NewRequest::line_at`]); call inside a transaction. Fails
/// with a violation of `uq_request_seats_open` when the user already has an
/// open request for one of the seats, of `uq_queue_idempotency` when the
/// key was used before, and with a foreign key error (1452) when a seat or
/// the user does not exist.
pub async fn enqueue(
    conn: &mut MySqlConnection,
    request: &NewRequest,
    line: LineKey,
    key: Option<&IdempotencyKey>,
    now: DateTime<Utc>,
) -> Result<QueueId, sqlx::Error> {
    async move {
        crate::db::line::lock_lines(conn, &[request.concert]).await?;
        let done = sqlx::query(
            "INSERT INTO reservation_queue \
             (user_id, concert_id, seat_id, seat_count, line_key, status, idempotency_key, access_code_id, \
              traceparent, tracestate, created_at, updated_at) \
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        )
        .bind(request.user)
        .bind(request.concert)
        .bind(request.seats().first())
        .bind(request.seat_count())
        .bind(line)
        .bind(QueueStatus::in_line_at(line))
        .bind(key.map(IdempotencyKey::as_str))
        .bind(request.access_code)
        .bind(request.trace.traceparent.as_deref())
        .bind(request.trace.tracestate.as_deref())
        .bind(now.naive_utc())
        .bind(now.naive_utc())
        .execute(&mut *conn)
        .await?;
        let id = QueueId(done.last_insert_id());
        request_seats::insert(conn, &request.seat_rows(id, line), false).await?;
        if let Some(pool) = request.pool_row(id, line) {
            request_pools::insert(conn, &pool).await?;
        }
        let entered = crate::db::line::Entered {
            concert: request.concert,
            key: line,
            id,
        };
        crate::db::line::rank_entered(conn, &[entered]).await?;
        Ok(id)
    }
    .traced("INSERT", "reservation_queue")
    .await
}

/// How one request of a group fared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Queued(QueueId),
    /// Its sale does not take requests yet at the group's `now`.
    SaleNotOpen,
    /// The user already has an open request for one of the seats (an
    /// earlier click, or the same request twice in the group): that one.
    Duplicate(QueueId),
    SeatNotFound,
    /// A still-valid token of an account deleted since.
    UserNotFound,
    /// Not written, and no reason found: an earlier request for the same
    /// seat was decided between the INSERT and its read-back. Enqueue it alone.
    Unsettled,
}

/// What [`enqueue_many`] did: each request's outcome, in the order given,
/// and its fans' seats.
#[derive(Debug, Default)]
pub struct Enqueued {
    pub outcomes: Vec<Outcome>,
    /// The seats each of their fans has now: held, confirmed and asked for
    /// by open requests (theirs included).
    pub fan_seats: HashMap<Fan, u64>,
}

impl Enqueued {
    /// The requests written, in the order given, for
    /// [`crate::db::line::rank_entered`] (less any the caller withdraws).
    pub fn entered(
        &self,
        requests: &[NewRequest],
        time: GroupTime,
    ) -> Vec<crate::db::line::Entered> {
        self.outcomes
            .iter()
            .zip(requests)
            .filter_map(|(outcome, r)| match outcome {
                Outcome::Queued(id) => Some(crate::db::line::Entered {
                    concert: r.concert,
                    key: r
                        .line_at(time.admitted_at)
                        .unwrap_or(LineKey::AFTER_OPENING),
                    id: *id,
                }),
                _ => None,
            })
            .collect()
    }
}

/// Takes back WAITING or PENDING requests written in the caller's transaction (refused
/// after all, or a user over the open-seat limit), with their seats;
/// returns how many requests were removed.
pub async fn withdraw(conn: &mut MySqlConnection, ids: &[QueueId]) -> Result<u64, sqlx::Error> {
    request_seats::delete(conn, ids).await?;
    request_pools::delete(conn, ids).await?;
    execute_for_ids(conn, ids, |list| {
        sqlx::query(AssertSqlSafe(format!(
            "DELETE FROM reservation_queue WHERE status IN ('WAITING', 'PENDING') AND id IN ({list})"
        )))
    })
    .traced("DELETE", "reservation_queue")
    .await
}

/// Adds many requests (WAITING or PENDING), each with its seats, in a few multi-row
/// statements; call inside a transaction, and rank the requests kept with
/// [`line::rank_entered`] before its commit (their concerts' lines are
/// locked until then). A request that cannot be written
/// (one of its seats already open in another request of its user, an
/// unknown seat, a deleted user) is left out and reported in its outcome,
/// and the rest are written all the same.
///
/// Rows go in seat order, so the seat locks the foreign-key checks take
/// come in id order, as every writer of seats takes them. That order only
/// matters between requests for different seats, which never compete;
/// requests for one seat keep their arrival order. A group with an order of
/// several seats share-locks all its seats first: its seat rows would
/// otherwise lock in row order (an order of seats 3 and 4 written before
/// another of seat 5 takes 3 and 5 for the requests, then 4, and waits in a
/// cycle with a confirm holding 4 and wanting 5).
///
/// `INSERT IGNORE` skips exactly the rows that would break a unique or
/// foreign key (every value is bounded before it gets here, so nothing is
/// truncated). Queue ids are read back by (user, first seat) among the rows
/// carrying our `now`, so `now` must differ from every other group's (see
/// [`GroupClock`]); another process's group written in the same microsecond
/// with the same user and first seat (one user's two clicks, on two API
/// instances, within a microsecond) could be taken for ours, and one of the
/// two rows would be left without seats: the decision sets such a row aside.
pub async fn enqueue_many(
    conn: &mut MySqlConnection,
    requests: &[NewRequest],
    time: GroupTime,
) -> Result<Enqueued, sqlx::Error> {
    let now = time.written_at;
    async move {
        if requests.is_empty() {
            return Ok(Enqueued::default());
        }
        // A request by count is written alone: it stays unsettled here.
        let lines: Vec<Option<LineKey>> = requests
            .iter()
            .map(|r| match r.asked {
                crate::domain::Asked::Seats(_) => r.line_at(time.admitted_at),
                crate::domain::Asked::Best(_) => None,
            })
            .collect();
        let mut order: Vec<usize> = (0..requests.len())
            .filter(|&i| lines[i].is_some())
            .collect();
        order.sort_by_key(|&i| requests[i].first_seat());
        // Of two requests of one user with the same first seat, the first is
        // written and the second is its duplicate.
        let mut first_of: HashMap<(UserId, SeatId), usize> = HashMap::new();
        let mut written = Vec::with_capacity(order.len());
        for &i in &order {
            let r = &requests[i];
            if let (std::collections::hash_map::Entry::Vacant(e), Some(line)) =
                (first_of.entry((r.user, r.first_seat())), lines[i])
            {
                e.insert(i);
                written.push((r, line));
            }
        }
        if written.is_empty() {
            // Every request came before its sale takes any.
            return Ok(Enqueued {
                outcomes: vec![Outcome::SaleNotOpen; requests.len()],
                ..Enqueued::default()
            });
        }
        // Before anything else it locks: see `line::lock_lines`.
        let concerts: Vec<_> = written.iter().map(|(r, _)| r.concert).collect();
        crate::db::line::lock_lines(conn, &concerts).await?;
        if written.iter().any(|(r, _)| r.seats().len() > 1) {
            let mut group_seats: Vec<SeatId> = written
                .iter()
                .flat_map(|(r, _)| r.seats().iter().copied())
                .collect();
            group_seats.sort_unstable();
            group_seats.dedup();
            crate::db::seats::share_all(conn, &group_seats).await?;
        }
        let mut insert = sqlx::QueryBuilder::new(
            "INSERT IGNORE INTO reservation_queue \
             (user_id, concert_id, seat_id, seat_count, line_key, status, traceparent, tracestate, \
              created_at, updated_at) ",
        );
        insert.push_values(&written, |mut row, (r, line)| {
            row.push_bind(r.user)
                .push_bind(r.concert)
                .push_bind(r.first_seat())
                .push_bind(r.seat_count())
                .push_bind(*line)
                .push_bind(QueueStatus::in_line_at(*line))
                .push_bind(r.trace.traceparent.clone())
                .push_bind(r.trace.tracestate.clone())
                .push_bind(now.naive_utc())
                .push_bind(now.naive_utc());
        });
        let first_id = insert.build().execute(&mut *conn).await?.last_insert_id();
        let ids = written_ids(conn, first_id, written.len(), now).await?;

        let seat_rows: Vec<RequestSeat> = written
            .iter()
            .filter_map(|(r, line)| {
                ids.get(&(r.user, r.first_seat()))
                    .map(|&id| r.seat_rows(id, *line))
            })
            .flatten()
            .collect();
        request_seats::insert(conn, &seat_rows, true).await?;
        let mut users: Vec<UserId> = written.iter().map(|(r, _)| r.user).collect();
        users.sort_unstable();
        users.dedup();
        let mut fan_concerts = concerts.clone();
        fan_concerts.sort_unstable();
        fan_concerts.dedup();
        let (open_seats, held) = fans::open_and_held_of_fans(conn, &users, &fan_concerts).await?;
        let open: HashMap<(UserId, SeatId), QueueId> = open_seats
            .iter()
            .map(|o| ((o.user, o.seat), o.request))
            .collect();

        // A written request holds every one of its seats, or is refused.
        let mut refused = Vec::new();
        let mut settled: HashMap<(UserId, SeatId), Outcome> = HashMap::new();
        let mut missing = Vec::new();
        for (r, _) in &written {
            let key = (r.user, r.first_seat());
            let Some(&id) = ids.get(&key) else {
                missing.push(*r);
                continue;
            };
            let holders: Vec<Option<QueueId>> = r
                .seats()
                .iter()
                .map(|&s| open.get(&(r.user, s)).copied())
                .collect();
            let outcome = if holders.iter().all(|h| *h == Some(id)) {
                Outcome::Queued(id)
            } else {
                refused.push(id);
                match holders.iter().flatten().find(|&&h| h != id) {
                    Some(&other) => Outcome::Duplicate(other),
                    None => Outcome::SeatNotFound,
                }
            };
            settled.insert(key, outcome);
        }
        withdraw(conn, &refused).await?;

        let (seats, users) = if missing.is_empty() {
            (HashSet::new(), HashSet::new())
        } else {
            existing_seats_and_users(conn, &missing).await?
        };
        let settle = |r: &NewRequest| match settled.get(&(r.user, r.first_seat())) {
            Some(&outcome) => outcome,
            None if !users.contains(&r.user) => Outcome::UserNotFound,
            None if !r.seats().iter().all(|s| seats.contains(s)) => Outcome::SeatNotFound,
            None => Outcome::Unsettled,
        };
        let outcomes = requests
            .iter()
            .enumerate()
            .map(|(i, r)| {
                if matches!(r.asked, crate::domain::Asked::Best(_)) {
                    return Outcome::Unsettled;
                }
                if lines[i].is_none() {
                    return Outcome::SaleNotOpen;
                }
                let first = first_of[&(r.user, r.first_seat())];
                match settle(&requests[first]) {
                    Outcome::Queued(id) | Outcome::Duplicate(id) if first != i => {
                        Outcome::Duplicate(id)
                    }
                    outcome => outcome,
                }
            })
            .collect();
        let refused: HashSet<QueueId> = refused.into_iter().collect();
        let mut fan_seats = held;
        for o in open_seats.iter().filter(|o| !refused.contains(&o.request)) {
            let fan = Fan {
                concert: o.concert,
                user: o.user,
            };
            *fan_seats.entry(fan).or_default() += 1;
        }
        Ok(Enqueued {
            outcomes,
            fan_seats,
        })
    }
    .traced("INSERT", "reservation_queue")
    .await
}

/// The ids of the rows a multi-row INSERT just wrote (from `first_id` on,
/// carrying `now`), by (user, first seat); the lowest id on a collision.
async fn written_ids(
    conn: &mut MySqlConnection,
    first_id: u64,
    count: usize,
    now: DateTime<Utc>,
) -> Result<HashMap<(UserId, SeatId), QueueId>, sqlx::Error> {
    if first_id == 0 {
        return Ok(HashMap::new());
    }
    let rows: Vec<(QueueId, UserId, SeatId)> = sqlx::query_as(
        "SELECT id, user_id, seat_id FROM reservation_queue \
         WHERE id >= ? AND created_at = ? ORDER BY id LIMIT ?",
    )
    .bind(first_id)
    .bind(now.naive_utc())
    .bind(u32::try_from(count).unwrap_or(u32::MAX))
    .fetch_all(conn)
    .await?;
    let mut ids = HashMap::with_capacity(rows.len());
    for (id, user, seat) in rows {
        ids.entry((user, seat)).or_insert(id);
    }
    Ok(ids)
}

/// Which of the requests' seats and users exist.
async fn existing_seats_and_users(
    conn: &mut MySqlConnection,
    requests: &[&NewRequest],
) -> Result<(HashSet<SeatId>, HashSet<UserId>), sqlx::Error> {
    let seats: Vec<u64> = requests
        .iter()
        .flat_map(|r| r.seats().iter().map(|s| s.0))
        .collect();
    let users: Vec<u64> = requests.iter().map(|r| r.user.0).collect();
    // Every request names a user and a seat: both lists or neither.
    let (Some(seat_list), Some(user_list)) = (IdList::of(&seats), IdList::of(&users)) else {
        return Ok((HashSet::new(), HashSet::new()));
    };
    let select = sqlx::query_as(AssertSqlSafe(format!(
        "SELECT 0, id FROM seats WHERE id IN ({seat_list}) \
         UNION ALL SELECT 1, id FROM users WHERE id IN ({user_list})"
    )));
    let rows: Vec<(i64, u64)> = select
        .bind_ids(&seat_list)
        .bind_ids(&user_list)
        .fetch_all(conn)
        .await?;
    let (seat_rows, user_rows): (Vec<_>, Vec<_>) =
        rows.into_iter().partition(|(kind, _)| *kind == 0);
    Ok((
        seat_rows.into_iter().map(|(_, id)| SeatId(id)).collect(),
        user_rows.into_iter().map(|(_, id)| UserId(id)).collect(),
    ))
}
