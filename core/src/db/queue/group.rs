//! A group of requests written together: a few multi-row statements for
//! the whole group, each request's outcome told apart afterwards.
//!
//! Long because a group's write is one sequence over one state (which
//! requests are written, their pools named under the line lock, the
//! statements, each request's outcome read back), the ids and existence
//! reads beside it: cut apart, each piece would need the whole group.

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Utc};
use sqlx::{AssertSqlSafe, MySqlConnection};

use crate::db::request_pools::{self, RequestPool};
use crate::db::request_seats::{self, RequestSeat};
use crate::db::{IdList, Traced as _, fans};
use crate::domain::allocation::Fan;
use crate::domain::{
    Asked, BestAsk, ConcertId, IdempotencyKey, LineKey, QueueId, QueueStatus, SeatId, UserId,
};

use super::*;

/// Adds many requests (WAITING or PENDING), each with its seats or pool, in
/// a few multi-row statements; call inside a transaction, and rank the
/// requests kept with [`line::rank_entered`] before its commit (their
/// concerts' lines are locked until then). A request that cannot be written
/// (one of its seats or its pool already open in another request of its
/// user, an unknown seat, a deleted user) is left out and reported in its
/// outcome, and the rest are written all the same. A request by count has
/// its pool named again once the lines are locked: an operator's change of
/// categories takes the same lock.
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
/// truncated). Queue ids are read back by (user, concert, first seat) among
/// the rows carrying our `now`, so `now` must differ from every other
/// group's (see [`GroupClock`]); another process's group written in the
/// same microsecond with the same user and first seat (one user's two
/// clicks, on two API instances, within a microsecond) could be taken for
/// ours, and one of the two rows would be left without seats: the decision
/// sets such a row aside. What the group cannot settle by itself is
/// `Unsettled`, for the caller to write alone: a key already used (a
/// replay), the same key twice in the group, a second request by count of
/// one fan, a pool whose name is no longer the concert's.
pub async fn enqueue_many(
    conn: &mut MySqlConnection,
    requests: &[NewRequest],
    time: GroupTime,
) -> Result<Enqueued, sqlx::Error> {
    async move {
        if requests.is_empty() {
            return Ok(Enqueued::default());
        }
        let mut group = Group::new(requests, time);
        if group.written.is_empty() {
            return Ok(group.finish(Settled::default()));
        }
        // Before anything else it locks: see `line::lock_lines`.
        let concerts = group.concerts();
        let versions = crate::db::line::lock_lines(conn, &concerts).await?;
        group.name_pools(conn, &versions).await?;
        if group.written.iter().any(|&i| requests[i].seats().len() > 1) {
            crate::db::seats::share_all(conn, &group.seats()).await?;
        }
        let settled = group.write(conn, &concerts).await?;
        Ok(group.finish(settled))
    }
    .traced("INSERT", "reservation_queue")
    .await
}

/// A group as it is written: which of its requests are written, and the
/// outcome of those settled before.
struct Group<'r> {
    requests: &'r [NewRequest],
    time: GroupTime,
    lines: Vec<Option<LineKey>>,
    outcomes: Vec<Option<Outcome>>,
    /// The requests written (in seat order); every other is settled or the
    /// duplicate of the one written with its row key.
    written: Vec<usize>,
    first_of: HashMap<RowKey, usize>,
    /// The pool of each request by count written, as named under the lock.
    pools: HashMap<usize, BestAsk>,
}

/// What the group's statements settled, by request.
#[derive(Default)]
struct Settled {
    outcomes: HashMap<usize, Outcome>,
    seats: HashSet<SeatId>,
    users: HashSet<UserId>,
    fan_seats: HashMap<Fan, u64>,
}

impl<'r> Group<'r> {
    fn new(requests: &'r [NewRequest], time: GroupTime) -> Self {
        let lines: Vec<Option<LineKey>> = requests
            .iter()
            .map(|r| r.line_at(time.admitted_at))
            .collect();
        let mut outcomes: Vec<Option<Outcome>> = lines
            .iter()
            .map(|line| line.is_none().then_some(Outcome::SaleNotOpen))
            .collect();
        let mut order: Vec<usize> = (0..requests.len())
            .filter(|&i| lines[i].is_some())
            .collect();
        order.sort_by_key(|&i| requests[i].first_seat());
        // Of two requests of one user with the same first seat, the first is
        // written and the second is its duplicate; a key or a fan's request
        // by count met again goes alone.
        let mut keys = HashSet::new();
        let mut first_of: HashMap<RowKey, usize> = HashMap::new();
        let mut written = Vec::with_capacity(order.len());
        for i in order {
            let r = &requests[i];
            if let Some(key) = &r.key
                && !keys.insert((r.user, key.as_str()))
            {
                outcomes[i] = Some(Outcome::Unsettled);
                continue;
            }
            match first_of.entry(r.row_key()) {
                std::collections::hash_map::Entry::Vacant(e) => {
                    e.insert(i);
                    written.push(i);
                }
                std::collections::hash_map::Entry::Occupied(_) if r.seats().is_empty() => {
                    outcomes[i] = Some(Outcome::Unsettled);
                }
                std::collections::hash_map::Entry::Occupied(_) => {}
            }
        }
        Self {
            requests,
            time,
            lines,
            outcomes,
            written,
            first_of,
            pools: HashMap::new(),
        }
    }

    fn concerts(&self) -> Vec<ConcertId> {
        let mut concerts: Vec<_> = self
            .written
            .iter()
            .map(|&i| self.requests[i].concert)
            .collect();
        concerts.sort_unstable();
        concerts.dedup();
        concerts
    }

    /// Every seat the written requests name, in id order.
    fn seats(&self) -> Vec<SeatId> {
        let mut seats: Vec<SeatId> = self
            .written
            .iter()
            .flat_map(|&i| self.requests[i].seats().iter().copied())
            .collect();
        seats.sort_unstable();
        seats.dedup();
        seats
    }

    /// Names each request by count's pool again, with the lines locked,
    /// where its concert's pools changed since the API read them (their
    /// `versions` now); one whose name the concert no longer has is left to
    /// be written alone (which refuses it naming the field).
    async fn name_pools(
        &mut self,
        conn: &mut MySqlConnection,
        versions: &HashMap<ConcertId, u32>,
    ) -> Result<(), sqlx::Error> {
        let moved = |r: &NewRequest| {
            r.named.is_some() && versions.get(&r.concert).copied().unwrap_or(0) != r.pools_version
        };
        let mut named_in: Vec<ConcertId> = self
            .written
            .iter()
            .map(|&i| &self.requests[i])
            .filter(|r| moved(r))
            .map(|r| r.concert)
            .collect();
        named_in.sort_unstable();
        named_in.dedup();
        let names = request_pools::names_of_concerts(conn, &named_in).await?;
        let requests = self.requests;
        let mut unnamed = Vec::new();
        for &i in &self.written {
            let Asked::Best(mut ask) = requests[i].asked else {
                continue;
            };
            if let Some(named) = requests[i].named.as_ref().filter(|_| moved(&requests[i])) {
                match names.get(&requests[i].concert).map(|n| n.pool(named)) {
                    Some(Ok(pool)) => ask.pool = pool,
                    _ => {
                        unnamed.push(i);
                        continue;
                    }
                }
            }
            self.pools.insert(i, ask);
        }
        for i in unnamed {
            self.outcomes[i] = Some(Outcome::Unsettled);
            self.written.retain(|&w| w != i);
        }
        Ok(())
    }

    /// The group's statements: its rows, their seats and pools, and what
    /// its fans have open and hold once they are written.
    async fn write(
        &self,
        conn: &mut MySqlConnection,
        concerts: &[ConcertId],
    ) -> Result<Settled, sqlx::Error> {
        let now = self.time.written_at;
        let requests = self.requests;
        let mut insert = sqlx::QueryBuilder::new(
            "INSERT IGNORE INTO reservation_queue \
             (user_id, concert_id, seat_id, seat_count, line_key, status, idempotency_key, \
              traceparent, tracestate, created_at, updated_at) ",
        );
        insert.push_values(&self.written, |mut row, &i| {
            let (r, line) = (&requests[i], self.line(i));
            row.push_bind(r.user)
                .push_bind(r.concert)
                .push_bind(r.seats().first().copied())
                .push_bind(r.seat_count())
                .push_bind(line)
                .push_bind(QueueStatus::in_line_at(line))
                .push_bind(r.key.as_ref().map(IdempotencyKey::as_str))
                .push_bind(r.trace.traceparent.clone())
                .push_bind(r.trace.tracestate.clone())
                .push_bind(now.naive_utc())
                .push_bind(now.naive_utc());
        });
        let first_id = insert.build().execute(&mut *conn).await?.last_insert_id();
        let ids = written_ids(conn, first_id, self.written.len(), now).await?;
        let id_of = |i: usize| ids.get(&requests[i].row_key()).copied();

        let seat_rows: Vec<RequestSeat> = self
            .written
            .iter()
            .filter_map(|&i| id_of(i).map(|id| requests[i].seat_rows(id, self.line(i))))
            .flatten()
            .collect();
        request_seats::insert(conn, &seat_rows, true).await?;
        let pool_rows: Vec<RequestPool> = self
            .written
            .iter()
            .filter_map(|&i| {
                let (id, ask) = (id_of(i)?, *self.pools.get(&i)?);
                let r = &requests[i];
                let line = self.line(i);
                Some(RequestPool {
                    queue_id: id,
                    user: r.user,
                    concert: r.concert,
                    ask,
                    line,
                })
            })
            .collect();
        request_pools::insert(conn, &pool_rows, true).await?;

        let mut users: Vec<UserId> = self.written.iter().map(|&i| requests[i].user).collect();
        users.sort_unstable();
        users.dedup();
        let (open_seats, mut fan_seats) = if seat_rows.is_empty() {
            (Vec::new(), HashMap::new())
        } else {
            fans::open_and_held_of_fans(conn, &users, concerts).await?
        };
        let open: HashMap<(UserId, SeatId), QueueId> = open_seats
            .iter()
            .map(|o| ((o.user, o.seat), o.request))
            .collect();
        let open_pools: HashMap<(Fan, u16), QueueId> = if pool_rows.is_empty() {
            HashMap::new()
        } else {
            let (pools, taken) = fans::open_pools_of_fans(conn, &users, concerts).await?;
            // A fan with an open seat is counted by the seats' read, seat
            // by seat (less those refused here); the others are whole here.
            for (fan, seats) in taken {
                fan_seats.entry(fan).or_insert(seats);
            }
            pools.iter().map(|o| ((o.fan, o.pool), o.request)).collect()
        };

        // A written request holds every one of its seats (or its pool), or
        // is refused.
        let mut refused = Vec::new();
        let mut outcomes = HashMap::new();
        let mut missing = Vec::new();
        for &i in &self.written {
            let r = &requests[i];
            let Some(id) = id_of(i) else {
                missing.push(r);
                continue;
            };
            let holders: Vec<Option<QueueId>> = match self.pools.get(&i) {
                Some(ask) => vec![open_pools.get(&(r.fan(), ask.pool.code())).copied()],
                None => r
                    .seats()
                    .iter()
                    .map(|&s| open.get(&(r.user, s)).copied())
                    .collect(),
            };
            let outcome = if holders.iter().all(|h| *h == Some(id)) {
                Outcome::Queued(id)
            } else {
                refused.push(id);
                match holders.iter().flatten().find(|&&h| h != id) {
                    Some(&other) => Outcome::Duplicate(other),
                    None if r.seats().is_empty() => Outcome::Unsettled,
                    None => Outcome::SeatNotFound,
                }
            };
            outcomes.insert(i, outcome);
        }
        withdraw(conn, &refused).await?;
        let refused: HashSet<QueueId> = refused.into_iter().collect();
        for o in open_seats.iter().filter(|o| !refused.contains(&o.request)) {
            let fan = Fan {
                concert: o.concert,
                user: o.user,
            };
            *fan_seats.entry(fan).or_default() += 1;
        }
        let (seats, users) = if missing.is_empty() {
            (HashSet::new(), HashSet::new())
        } else {
            existing_seats_and_users(conn, &missing).await?
        };
        Ok(Settled {
            outcomes,
            seats,
            users,
            fan_seats,
        })
    }

    fn line(&self, i: usize) -> LineKey {
        self.lines[i].unwrap_or(LineKey::AFTER_OPENING)
    }

    /// Every request's outcome, in the order given.
    fn finish(self, settled: Settled) -> Enqueued {
        let requests = self.requests;
        let settle = |i: usize| {
            let r = &requests[i];
            match settled.outcomes.get(&i) {
                Some(&outcome) => outcome,
                None if !settled.users.contains(&r.user) => Outcome::UserNotFound,
                None if !r.seats().iter().all(|s| settled.seats.contains(s)) => {
                    Outcome::SeatNotFound
                }
                None => Outcome::Unsettled,
            }
        };
        let outcomes = (0..requests.len())
            .map(|i| {
                if let Some(outcome) = self.outcomes[i] {
                    return outcome;
                }
                let first = self.first_of[&requests[i].row_key()];
                match settle(first) {
                    Outcome::Queued(id) | Outcome::Duplicate(id) if first != i => {
                        Outcome::Duplicate(id)
                    }
                    outcome => outcome,
                }
            })
            .collect();
        Enqueued {
            outcomes,
            fan_seats: settled.fan_seats,
        }
    }
}

/// The ids of the rows a multi-row INSERT just wrote (from `first_id` on,
/// carrying `now`), by (user, concert, first seat); the lowest id on a
/// collision.
async fn written_ids(
    conn: &mut MySqlConnection,
    first_id: u64,
    count: usize,
    now: DateTime<Utc>,
) -> Result<HashMap<RowKey, QueueId>, sqlx::Error> {
    if first_id == 0 {
        return Ok(HashMap::new());
    }
    let rows: Vec<(QueueId, UserId, ConcertId, Option<SeatId>)> = sqlx::query_as(
        "SELECT id, user_id, concert_id, seat_id FROM reservation_queue \
         WHERE id >= ? AND created_at = ? ORDER BY id LIMIT ?",
    )
    .bind(first_id)
    .bind(now.naive_utc())
    .bind(u32::try_from(count).unwrap_or(u32::MAX))
    .fetch_all(conn)
    .await?;
    let mut ids = HashMap::with_capacity(rows.len());
    for (id, user, concert, seat) in rows {
        ids.entry((user, concert, seat)).or_insert(id);
    }
    Ok(ids)
}

/// Which of the requests' seats and users exist.
async fn existing_seats_and_users(
    conn: &mut MySqlConnection,
    requests: &[&NewRequest],
) -> Result<(HashSet<SeatId>, HashSet<UserId>), sqlx::Error> {
    let mut seats: Vec<u64> = requests
        .iter()
        .flat_map(|r| r.seats().iter().map(|s| s.0))
        .collect();
    if seats.is_empty() {
        // Requests by count name no seat: one no seat has stands in.
        seats.push(0);
    }
    let users: Vec<u64> = requests.iter().map(|r| r.user.0).collect();
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
