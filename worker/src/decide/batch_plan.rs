//! The plan of a batch: the seats locked, the allocation rule asked, and
//! what its verdicts mean for the tables (reservations, seat changes,
//! events).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use chrono::{DateTime, Utc};
use sqlx::MySqlConnection;
use ticket_core::db::{fans, queue, reservations, seats, waiting_list};
use ticket_core::domain::allocation::{self, Fan, FanStanding, Verdict};

use super::pools;
use ticket_core::domain::events::{EventKind, ReservationEvent, ReservedSeat, Subject};
use ticket_core::domain::{
    AskedPool, ConcertId, FailureReason, QueueId, ReservationId, ReservationStatus, SeatId,
    SeatPrice, SeatStatus, UserId,
};

/// Who gets what in a batch, decided under the locks of the seats wanted.
#[derive(Debug, Default)]
pub(super) struct Plan {
    pub(super) reservations: Vec<reservations::NewReservation>,
    /// SEAT_TAKEN.
    pub(super) failed: Vec<QueueId>,
    /// USER_LIMIT_REACHED.
    pub(super) over_limit: Vec<QueueId>,
    /// SOLD_OUT (requests by count).
    pub(super) sold_out: Vec<QueueId>,
    /// NO_ADJACENT_SEATS (requests by count).
    pub(super) no_adjacent: Vec<QueueId>,
    pub(super) deferred: Vec<QueueId>,
    /// Won seats whose previous claim was a hold that has ended.
    pub(super) reclaimed: Vec<SeatId>,
    pub(super) numbers: HashMap<SeatId, String>,
    /// The won seats' prices, as read under their locks.
    pub(super) prices: HashMap<SeatId, SeatPrice>,
}

impl Plan {
    pub(super) fn won_seats(&self) -> usize {
        self.reservations.iter().map(|r| r.seats.len()).sum()
    }

    /// The refused requests by their reason.
    pub(super) fn refusals(&self) -> [(FailureReason, &[QueueId]); 4] {
        [
            (FailureReason::SeatTaken, &self.failed),
            (FailureReason::UserLimitReached, &self.over_limit),
            (FailureReason::SoldOut, &self.sold_out),
            (FailureReason::NoAdjacentSeats, &self.no_adjacent),
        ]
    }

    pub(super) fn refused(&self) -> usize {
        self.refusals().iter().map(|(_, ids)| ids.len()).sum()
    }

    /// The won seats by the status (and hold end) they take, in id order.
    pub(super) fn seat_changes(&self) -> Vec<(SeatStatus, Option<DateTime<Utc>>, Vec<SeatId>)> {
        let mut changes: HashMap<(SeatStatus, Option<DateTime<Utc>>), Vec<SeatId>> = HashMap::new();
        for r in &self.reservations {
            let status = match r.status {
                ReservationStatus::Held => SeatStatus::Held,
                _ => SeatStatus::Reserved,
            };
            changes
                .entry((status, r.hold_expires_at))
                .or_default()
                .extend(&r.seats);
        }
        let mut changes: Vec<_> = changes
            .into_iter()
            .map(|((status, until), mut seats)| {
                seats.sort_unstable();
                (status, until, seats)
            })
            .collect();
        changes.sort_by_key(|(_, _, seats)| seats.first().copied());
        changes
    }

    /// A ReservationHeld or ReservationConfirmed event per reservation.
    pub(super) fn events(
        &self,
        ids: &HashMap<QueueId, ReservationId>,
        now: DateTime<Utc>,
    ) -> Vec<ReservationEvent> {
        self.reservations
            .iter()
            .filter_map(|r| {
                let id = *ids.get(&r.queue_id)?;
                let seats: Vec<ReservedSeat> = r
                    .seats
                    .iter()
                    .map(|s| ReservedSeat {
                        seat_id: *s,
                        seat_number: self.numbers.get(s).cloned().unwrap_or_default(),
                        price: self.prices.get(s).cloned(),
                        place: ticket_core::domain::SeatPlace::default(),
                    })
                    .collect();
                let kind = match r.status {
                    ReservationStatus::Held => EventKind::Held,
                    _ => EventKind::Confirmed,
                };
                Some(ReservationEvent::new(
                    kind,
                    &Subject {
                        reservation_id: id,
                        queue_id: Some(r.queue_id),
                        user_id: r.user,
                        concert_id: r.concert,
                        seats: &seats,
                        hold_expires_at: r.hold_expires_at,
                        payment_reference: None,
                    },
                    now,
                ))
            })
            .collect()
    }
}

/// Locks the free seats our rows want (in id order, like every other writer
/// of seats) and has the allocation rule decide each row's fate, in line
/// order (`rows` are); the plan is what that means for the tables. Rows
/// asking by count get the best of a window of their pool's free places,
/// or of the whole pool when the window cannot prove their decision
/// (the whole is then locked too, after the window: a deadlock with another
/// such decision is rolled back and tried again, as any other).
pub(super) async fn plan(
    tx: &mut MySqlConnection,
    rows: &[queue::LeasedRow],
    now: DateTime<Utc>,
) -> Result<Plan, sqlx::Error> {
    let mut windows = pools::Windows::for_rows(rows);
    // Read once, after the first seat locks (as every decision orders its
    // locks); a wider window changes the seats, not the fans.
    let mut fans = None;
    loop {
        let (plan, unproven) = plan_over(tx, rows, &windows, &mut fans, now).await?;
        if unproven.is_empty() {
            return Ok(plan);
        }
        for pool in unproven {
            windows.widen(pool);
        }
    }
}

/// The plan over what `windows` read, and the pools whose window did not
/// prove a decision.
async fn plan_over(
    tx: &mut MySqlConnection,
    rows: &[queue::LeasedRow],
    windows: &pools::Windows,
    fans: &mut Option<allocation::Fans>,
    now: DateTime<Utc>,
) -> Result<(Plan, Vec<pools::PoolOf>), sqlx::Error> {
    let read = if windows.is_empty() {
        pools::Read::default()
    } else {
        pools::read(tx, windows, now).await?
    };
    let mut wanted: Vec<SeatId> = rows
        .iter()
        .flat_map(|r| r.seats.iter().copied())
        .chain(read.seats.iter().copied())
        .collect();
    wanted.sort_unstable();
    wanted.dedup();
    let batch: Vec<QueueId> = rows.iter().map(|r| r.id).collect();
    let standing = seats::lock_free(tx, &wanted, &batch, now).await?;
    let mut pools_here: BTreeMap<ConcertId, Vec<AskedPool>> = BTreeMap::new();
    for s in &standing {
        if let Some(pool) = s.pool() {
            pools_here.entry(s.concert).or_default().push(pool);
        }
    }
    for list in pools_here.values_mut() {
        list.sort_unstable();
        list.dedup();
    }
    let pool_firsts = pools::first_open_by_pool(tx, &pools_here, &batch).await?;
    let pools = pools::pools_of(&standing, &read);
    let mut plan = Plan::default();
    let mut free = allocation::FreeSeats::with_capacity(standing.len());
    let mut ended_holds: HashSet<SeatId> = HashSet::new();
    let mut places: HashMap<SeatId, allocation::Place> = HashMap::with_capacity(standing.len());
    for s in standing {
        // A request by count for the seat's pool may take it too.
        let pool_first = s
            .pool()
            .and_then(|p| pool_firsts.get(&(s.concert, p)).copied());
        let first = match (s.first_open_elsewhere, pool_first) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        match s.claim {
            seats::SeatClaim::Live => tracing::warn!(
                seat = s.seat.0,
                "seat's status says free but it has a live claim; treated as taken"
            ),
            seats::SeatClaim::ExpiredHold => {
                ended_holds.insert(s.seat);
                free.insert(s.seat, first);
            }
            seats::SeatClaim::None => {
                free.insert(s.seat, first);
            }
        }
        places.insert(s.seat, s.place);
        plan.numbers.insert(s.seat, s.seat_number);
        if let Some(price) = s.price {
            plan.prices.insert(s.seat, price);
        }
    }
    let fans = match fans {
        Some(fans) => fans,
        None => fans.insert(fans_of(tx, rows, &batch, now).await?),
    };
    let line: Vec<allocation::Request<'_>> = rows
        .iter()
        .map(|row| allocation::Request {
            id: row.id,
            place: row.line.place(row.id),
            wants: match row.best {
                Some(best) => allocation::Wants::Best(
                    pools::pool_id((row.concert_id, best.pool)),
                    pools::shape_of(best),
                ),
                None => allocation::Wants::Seats(&row.seats),
            },
            fan: fan_of(row),
        })
        .collect();
    let decisions = allocation::decide(&line, &free, &pools, fans);
    let mut unproven: Vec<pools::PoolOf> = rows
        .iter()
        .zip(&decisions)
        .filter_map(|(row, decision)| {
            let best = row.best?;
            let pool = (row.concert_id, best.pool);
            let bound = read.bounds.get(&pools::pool_id(pool)).copied().flatten();
            let shape = pools::shape_of(best);
            (!pools::proven(decision, &places, shape, bound)).then_some(pool)
        })
        .collect();
    if !unproven.is_empty() {
        unproven.sort_unstable();
        unproven.dedup();
        return Ok((plan, unproven));
    }
    for (row, decision) in rows.iter().zip(decisions) {
        match decision.verdict {
            Verdict::Lost => plan.failed.push(row.id),
            Verdict::OverLimit => plan.over_limit.push(row.id),
            Verdict::Deferred => plan.deferred.push(row.id),
            Verdict::SoldOut => plan.sold_out.push(row.id),
            Verdict::NoAdjacentSeats => plan.no_adjacent.push(row.id),
            Verdict::Won => {
                let mut won = decision.seats;
                won.sort_unstable();
                plan.reclaimed
                    .extend(won.iter().filter(|s| ended_holds.contains(s)));
                let held = row.hold.is_hold();
                plan.reservations.push(reservations::NewReservation {
                    queue_id: row.id,
                    user: row.user_id,
                    concert: row.concert_id,
                    seats: won,
                    status: if held {
                        ReservationStatus::Held
                    } else {
                        ReservationStatus::Confirmed
                    },
                    hold_expires_at: held
                        .then(|| now + chrono::Duration::seconds(i64::from(row.hold.seconds()))),
                });
            }
        }
    }
    plan.reclaimed.sort_unstable();
    Ok((plan, Vec::new()))
}

fn fan_of(row: &queue::LeasedRow) -> Fan {
    Fan {
        concert: row.concert_id,
        user: row.user_id,
    }
}

/// Where each fan of the batch stands under their concert's cap, as the
/// last commit left them: a fan's seats grow by a decision of one of their
/// requests, which the rule takes one worker at a time (a request behind
/// the fan's earlier one elsewhere waits), or by an offer from a waiting
/// list, which is waited for first (`lock_fans_waiting`), so what is read
/// here stays true until this batch commits.
async fn fans_of(
    tx: &mut MySqlConnection,
    rows: &[queue::LeasedRow],
    batch: &[QueueId],
    now: DateTime<Utc>,
) -> Result<allocation::Fans, sqlx::Error> {
    let mut by_concert: BTreeMap<ConcertId, (u32, BTreeSet<UserId>)> = BTreeMap::new();
    for row in rows {
        let (cap, users) = by_concert.entry(row.concert_id).or_default();
        *cap = u32::from(row.max_seats_per_user.get());
        users.insert(row.user_id);
    }
    let mut fans = allocation::Fans::new();
    for (concert, (cap, users)) in by_concert {
        let fans_here: Vec<UserId> = users.iter().copied().collect();
        waiting_list::lock_fans_waiting(tx, concert, &fans_here).await?;
        let records = fans::records(tx, concert, &fans_here, batch, now).await?;
        for user in users {
            let record = records.get(&user).copied().unwrap_or_default();
            let standing = FanStanding {
                room: cap.saturating_sub(record.seats_taken),
                first_open_elsewhere: record.first_open_elsewhere,
            };
            fans.insert(Fan { concert, user }, standing);
        }
    }
    Ok(fans)
}
