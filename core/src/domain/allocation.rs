//! Who gets which seat: the rule at the heart of the box office, without
//! I/O. A worker locks the seats its batch wants, then asks [`allocate`]
//! for a verdict per request and writes them; everything that makes the
//! rule hold across workers is in the inputs: the requests in line order;
//! for each free seat the place of the first open request for it that
//! another worker (or another part of a split batch) holds; and for each
//! fan (a user in one concert) the seats they may still take under the
//! concert's cap and the place of their first open request elsewhere.
//!
//! The rule, for each request in line order:
//! - **lost** when one of its seats is not free, or was won by an earlier
//!   request of the batch: it takes nothing (all or nothing), and the seats
//!   it did not lose stay free for the requests behind it;
//! - **deferred** (handed back, decided again shortly) when an earlier
//!   request for one of its seats, or an earlier request of its fan, is
//!   still open elsewhere, or was deferred in this batch: that one is ahead
//!   in line and is decided first;
//! - **over the limit** when its seats would take its fan past the cap: it
//!   takes nothing, and its seats stay free for the requests behind it;
//! - otherwise **won**: every seat it names is its own.
//!
//! A request may instead ask for the best `count` places of a pool (a
//! price category's seats side by side, or a standing area; see [`best`]).
//! It is decided by the same rule, the pool standing for its seats: it
//! waits while an earlier request that could take one of the pool's free
//! places is open elsewhere (or was deferred in this batch), and an exact
//! request waits likewise behind an earlier open request for the pool of
//! one of its seats; when its turn comes it gets the best of what the
//! requests before it left ([`best::choose`]), or fails SOLD_OUT or
//! NO_ADJACENT_SEATS and takes nothing. So the earlier of two requests of
//! one size in a pool never gets the worse block.
//!
//! So for every seat the winner is the earliest request in line that wanted
//! it while it was free and its fan had room, whichever worker holds which
//! request; and a fan's requests are decided in their line order, one
//! worker at a time, so that no two workers spend one fan's budget.

use std::collections::{HashMap, HashSet};

use super::{ConcertId, QueueId, SeatId, UserId};

pub mod best;

pub use best::{Place, Refusal, Shape};

/// One request of a batch as the rule sees it.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    pub id: QueueId,
    /// Its place in line (`LineKey::place`): smaller is earlier.
    pub place: u64,
    pub wants: Wants<'a>,
    pub fan: Fan,
}

/// What a request asks for.
#[derive(Debug, Clone, Copy)]
pub enum Wants<'a> {
    /// The seats it names, all or nothing.
    Seats(&'a [SeatId]),
    /// The best places of a pool in this shape.
    Best(PoolId, Shape),
}

impl Wants<'_> {
    /// How many seats it takes when it wins.
    fn count(&self) -> u32 {
        match self {
            Self::Seats(seats) => u32::try_from(seats.len()).unwrap_or(u32::MAX),
            Self::Best(_, shape) => shape.count,
        }
    }
}

/// A pool of places asked for by count: a category's seats or a standing
/// area of one concert.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PoolId(pub u64);

/// A pool of the batch: its free places, each also in [`FreeSeats`] with
/// the first request elsewhere that could take it (asking for the pool,
/// or naming the seat).
#[derive(Debug, Clone, Default)]
pub struct Pool {
    pub places: Vec<Place>,
}

/// Every pool the batch asks for or whose seats it names.
pub type Pools = HashMap<PoolId, Pool>;

/// A user in one concert: whose seats the concert's cap counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Fan {
    pub concert: ConcertId,
    pub user: UserId,
}

/// Where a fan of the batch stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FanStanding {
    /// Seats the fan may still take: the concert's cap less their held and
    /// confirmed seats.
    pub room: u32,
    /// The place in line of the fan's first open request outside the batch.
    pub first_open_elsewhere: Option<u64>,
}

/// Every fan of the batch; a fan not in the map has no cap and nothing
/// open elsewhere.
pub type Fans = HashMap<Fan, FanStanding>;

/// The seats a batch wants that are free (no live claim; a hold that has
/// ended is none), each with the place in line of the first open request
/// outside the batch that could take it: one naming it, or one asking for
/// its pool. A seat not in the map is taken.
pub type FreeSeats = HashMap<SeatId, Option<u64>>;

/// What becomes of one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Won,
    /// SEAT_TAKEN: one of its seats is someone else's.
    Lost,
    /// Behind an open request for one of its seats, or of its fan:
    /// decided later.
    Deferred,
    /// USER_LIMIT_REACHED: its seats would take its fan past the cap.
    OverLimit,
    /// SOLD_OUT: fewer free places in its pool than it asks for.
    SoldOut,
    /// NO_ADJACENT_SEATS: no block of its count side by side.
    NoAdjacentSeats,
}

/// A request's verdict and, when it won, its seats.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    pub verdict: Verdict,
    /// The seats won (empty unless [`Verdict::Won`]).
    pub seats: Vec<SeatId>,
}

impl Decision {
    fn refused(verdict: Verdict) -> Self {
        Self {
            verdict,
            seats: Vec::new(),
        }
    }
}

/// The verdict of each request of `line` (in line order) that names its
/// seats, in that order.
pub fn allocate(line: &[Request<'_>], free: &FreeSeats, fans: &Fans) -> Vec<Verdict> {
    decide(line, free, &Pools::new(), fans)
        .into_iter()
        .map(|d| d.verdict)
        .collect()
}

/// The decision of each request of `line` (in line order), in that order.
pub fn decide(line: &[Request<'_>], free: &FreeSeats, pools: &Pools, fans: &Fans) -> Vec<Decision> {
    let pool_of: HashMap<SeatId, PoolId> = pools
        .iter()
        .flat_map(|(id, pool)| pool.places.iter().map(move |p| (p.seat, *id)))
        .collect();
    let mut left: HashMap<PoolId, PoolLeft> = HashMap::new();
    let mut won: HashSet<SeatId> = HashSet::new();
    let mut waited_for: HashSet<SeatId> = HashSet::new();
    let mut pools_waiting: HashSet<PoolId> = HashSet::new();
    let mut seats_waited_in: HashSet<PoolId> = HashSet::new();
    let mut fans_waiting: HashSet<Fan> = HashSet::new();
    let mut room: HashMap<Fan, u32> = fans.iter().map(|(fan, s)| (*fan, s.room)).collect();
    line.iter()
        .map(|request| {
            let fan_behind = fans_waiting.contains(&request.fan)
                || fans
                    .get(&request.fan)
                    .and_then(|f| f.first_open_elsewhere)
                    .is_some_and(|first| first < request.place);
            let fan_room = room.get(&request.fan).copied().unwrap_or(u32::MAX);
            let decision = match request.wants {
                Wants::Seats(seats) => {
                    let lost = seats.is_empty()
                        || seats
                            .iter()
                            .any(|s| !free.contains_key(s) || won.contains(s));
                    let behind = seats.iter().any(|s| {
                        waited_for.contains(s)
                            || pool_of.get(s).is_some_and(|p| pools_waiting.contains(p))
                            || free
                                .get(s)
                                .copied()
                                .flatten()
                                .is_some_and(|first| first < request.place)
                    });
                    if lost {
                        Decision::refused(Verdict::Lost)
                    } else if behind || fan_behind {
                        waited_for.extend(seats);
                        // A seat waited for holds back its pool's requests
                        // by count: one behind this might take it.
                        seats_waited_in.extend(seats.iter().filter_map(|s| pool_of.get(s)));
                        Decision::refused(Verdict::Deferred)
                    } else if request.wants.count() > fan_room {
                        Decision::refused(Verdict::OverLimit)
                    } else {
                        Decision {
                            verdict: Verdict::Won,
                            seats: seats.to_vec(),
                        }
                    }
                }
                Wants::Best(id, shape) => {
                    let pool = left
                        .entry(id)
                        .or_insert_with(|| PoolLeft::of(pools.get(&id), free));
                    let behind = pools_waiting.contains(&id)
                        || seats_waited_in.contains(&id)
                        || pool
                            .first_open_elsewhere(&won)
                            .is_some_and(|first| first < request.place);
                    if behind || fan_behind {
                        pools_waiting.insert(id);
                        Decision::refused(Verdict::Deferred)
                    } else if shape.count > fan_room {
                        Decision::refused(Verdict::OverLimit)
                    } else {
                        match pool.choose(shape, &won) {
                            Ok(seats) => Decision {
                                verdict: Verdict::Won,
                                seats,
                            },
                            Err(Refusal::SoldOut) => Decision::refused(Verdict::SoldOut),
                            Err(Refusal::NoAdjacentSeats) => {
                                Decision::refused(Verdict::NoAdjacentSeats)
                            }
                        }
                    }
                }
            };
            match decision.verdict {
                Verdict::Deferred => {
                    fans_waiting.insert(request.fan);
                }
                Verdict::Won => {
                    won.extend(&decision.seats);
                    if let Some(left) = room.get_mut(&request.fan) {
                        *left -= request.wants.count();
                    }
                }
                _ => {}
            }
            decision
        })
        .collect()
}

/// A pool's free places as its line goes, sorted once: a batch asks one
/// pool hundreds of times, and sorting its thousands of places for each
/// request was most of a decision's time. Places won meanwhile (by a
/// request by count, or one naming them) are skipped as they come.
struct PoolLeft {
    /// In plan order (row, position): the runs a block is cut from.
    by_place: Vec<Place>,
    /// Best first: a standing area's places in the order it gives them.
    by_rank: Vec<Place>,
    /// Those with an open request elsewhere, the earliest first.
    by_first: Vec<(u64, SeatId)>,
}

impl PoolLeft {
    fn of(pool: Option<&Pool>, free: &FreeSeats) -> Self {
        let places: Vec<Place> = pool
            .map(|p| p.places.as_slice())
            .unwrap_or_default()
            .iter()
            .filter(|p| free.contains_key(&p.seat))
            .copied()
            .collect();
        let mut by_first: Vec<(u64, SeatId)> = places
            .iter()
            .filter_map(|p| free.get(&p.seat).copied().flatten().map(|f| (f, p.seat)))
            .collect();
        by_first.sort_unstable();
        let mut by_place = places.clone();
        by_place.sort_by_key(best::plan_order);
        let mut by_rank = places;
        by_rank.sort_by_key(best::rank_order);
        Self {
            by_place,
            by_rank,
            by_first,
        }
    }

    /// The first open request elsewhere for a place not won yet.
    fn first_open_elsewhere(&self, won: &HashSet<SeatId>) -> Option<u64> {
        self.by_first
            .iter()
            .find(|(_, seat)| !won.contains(seat))
            .map(|&(first, _)| first)
    }

    fn choose(&self, shape: Shape, won: &HashSet<SeatId>) -> Result<Vec<SeatId>, Refusal> {
        let not_won = |p: &&Place| !won.contains(&p.seat);
        if shape.adjacent {
            let left: Vec<Place> = self.by_place.iter().filter(not_won).copied().collect();
            best::choose(&left, shape)
        } else {
            best::first_ranked(self.by_rank.iter().filter(not_won).copied(), shape.count)
        }
    }
}

#[cfg(test)]
mod tests;
