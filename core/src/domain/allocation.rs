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
//! So for every seat the winner is the earliest request in line that wanted
//! it while it was free and its fan had room, whichever worker holds which
//! request; and a fan's requests are decided in their line order, one
//! worker at a time, so that no two workers spend one fan's budget.

use std::collections::{HashMap, HashSet};

use super::{ConcertId, QueueId, SeatId, UserId};

/// One request of a batch as the rule sees it.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    pub id: QueueId,
    /// Its place in line (`LineKey::place`): smaller is earlier.
    pub place: u64,
    /// The seats it names, all or nothing.
    pub seats: &'a [SeatId],
    pub fan: Fan,
}

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
/// for it outside the batch, if there is one. A seat not in the map is
/// taken.
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
}

/// The verdict of each request of `line` (in line order), in that order.
pub fn allocate(line: &[Request<'_>], free: &FreeSeats, fans: &Fans) -> Vec<Verdict> {
    let mut won: HashSet<SeatId> = HashSet::new();
    let mut waited_for: HashSet<SeatId> = HashSet::new();
    let mut fans_waiting: HashSet<Fan> = HashSet::new();
    let mut room: HashMap<Fan, u32> = fans.iter().map(|(fan, s)| (*fan, s.room)).collect();
    line.iter()
        .map(|request| {
            let lost = request.seats.is_empty()
                || request
                    .seats
                    .iter()
                    .any(|s| !free.contains_key(s) || won.contains(s));
            let behind = request.seats.iter().any(|s| {
                waited_for.contains(s)
                    || free
                        .get(s)
                        .copied()
                        .flatten()
                        .is_some_and(|first| first < request.place)
            });
            let fan_behind = fans_waiting.contains(&request.fan)
                || fans
                    .get(&request.fan)
                    .and_then(|f| f.first_open_elsewhere)
                    .is_some_and(|first| first < request.place);
            let wanted = u32::try_from(request.seats.len()).unwrap_or(u32::MAX);
            let fan_room = room.get(&request.fan).copied().unwrap_or(u32::MAX);
            if lost {
                Verdict::Lost
            } else if behind || fan_behind {
                waited_for.extend(request.seats);
                fans_waiting.insert(request.fan);
                Verdict::Deferred
            } else if wanted > fan_room {
                Verdict::OverLimit
            } else {
                won.extend(request.seats);
                if let Some(left) = room.get_mut(&request.fan) {
                    *left -= wanted;
                }
                Verdict::Won
            }
        })
        .collect()
}

#[cfg(test)]
mod tests;
