//! Who gets which seat: the rule at the heart of the box office, without
//! I/O. A worker locks the seats its batch wants, then asks [`allocate`]
//! for a verdict per request and writes them; everything that makes the
//! rule hold across workers is in the two inputs: the requests in line
//! order, and for each free seat the place of the first open request for it
//! that another worker (or another part of a split batch) holds.
//!
//! The rule, for each request in line order:
//! - **lost** when one of its seats is not free, or was won by an earlier
//!   request of the batch: it takes nothing (all or nothing), and the seats
//!   it did not lose stay free for the requests behind it;
//! - **deferred** (handed back, decided again shortly) when an earlier
//!   request for one of its seats is still open elsewhere, or was deferred
//!   in this batch: that one is ahead in line and is decided first;
//! - otherwise **won**: every seat it names is its own.
//!
//! So for every seat the winner is the earliest request in line that wanted
//! it while it was free, whichever worker holds which request.

use std::collections::{HashMap, HashSet};

use super::{QueueId, SeatId};

/// One request of a batch as the rule sees it.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    pub id: QueueId,
    /// Its place in line (`LineKey::place`): smaller is earlier.
    pub place: u64,
    /// The seats it names, all or nothing.
    pub seats: &'a [SeatId],
}

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
    /// Behind an open request for one of its seats: decided later.
    Deferred,
}

/// The verdict of each request of `line` (in line order), in that order.
pub fn allocate(line: &[Request<'_>], free: &FreeSeats) -> Vec<Verdict> {
    let mut won: HashSet<SeatId> = HashSet::new();
    let mut waited_for: HashSet<SeatId> = HashSet::new();
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
            if lost {
                Verdict::Lost
            } else if behind {
                waited_for.extend(request.seats);
                Verdict::Deferred
            } else {
                won.extend(request.seats);
                Verdict::Won
            }
        })
        .collect()
}

#[cfg(test)]
mod tests;
