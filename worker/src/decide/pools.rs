//! The seats a batch decides over: those its requests name, and for its
//! requests by count the best free seats of each category they ask for,
//! a window read first and the whole category only when the window cannot
//! prove a decision (see [`seats::best_free`]).

use std::collections::{BTreeMap, HashMap};

use chrono::{DateTime, Utc};
use sqlx::MySqlConnection;
use ticket_core::db::{queue, request_pools, seats};
use ticket_core::domain::allocation::{Decision, Place, PoolId, Pools, Verdict};
use ticket_core::domain::{ConcertId, QueueId, SeatId};

/// A category of one concert that requests of the batch ask for.
pub(super) type CategoryOf = (ConcertId, u8);

pub(super) fn pool_id((concert, category): CategoryOf) -> PoolId {
    PoolId((concert.get() << 8) | u64::from(category))
}

/// How much of each asked category a batch reads: `None` is all of it.
#[derive(Debug, Clone)]
pub(super) struct Windows(BTreeMap<CategoryOf, Option<u32>>);

impl Windows {
    /// Per category, a window of twice its seats asked for (at least 64):
    /// the best blocks lie in it unless many seats in between were passed
    /// over (the rows it touches are read whole besides).
    pub(super) fn for_rows(rows: &[queue::LeasedRow]) -> Self {
        let mut asked: BTreeMap<CategoryOf, u32> = BTreeMap::new();
        for row in rows {
            if let Some(best) = row.best {
                *asked.entry((row.concert_id, best.category)).or_default() += u32::from(best.count);
            }
        }
        Self(
            asked
                .into_iter()
                .map(|(category, seats)| {
                    (category, Some(seats.saturating_mul(2).saturating_add(64)))
                })
                .collect(),
        )
    }

    pub(super) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Reads four times as much of `category` next time, or all of it
    /// once that is a few hundred thousand seats.
    pub(super) fn widen(&mut self, category: CategoryOf) {
        let wider = self
            .0
            .get(&category)
            .copied()
            .flatten()
            .and_then(|n| n.checked_mul(4))
            .filter(|&n| n <= 250_000);
        self.0.insert(category, wider);
    }
}

/// What the windows read: the seats, and per category the rank below which
/// every free seat of it was read (`None`: all were).
#[derive(Debug, Default)]
pub(super) struct Read {
    pub(super) seats: Vec<SeatId>,
    pub(super) bounds: HashMap<PoolId, Option<u32>>,
}

pub(super) async fn read(
    tx: &mut MySqlConnection,
    windows: &Windows,
    now: DateTime<Utc>,
) -> Result<Read, sqlx::Error> {
    let mut read = Read::default();
    for (&(concert, category), &limit) in &windows.0 {
        let (seats, bound) = seats::best_free(tx, concert, category, limit, now).await?;
        read.seats.extend(seats);
        read.bounds.insert(pool_id((concert, category)), bound);
    }
    Ok(read)
}

/// The pools of the batch: each asked category's locked free seats, and
/// the free seats the batch names in those categories (an exact request
/// waits behind a request by count of its seat's category).
pub(super) fn pools_of(standing: &[seats::WantedSeat], asked: &Read) -> Pools {
    let mut pools = Pools::new();
    for s in standing {
        let Some(category) = s.category else {
            continue;
        };
        let id = pool_id((s.concert, category));
        if asked.bounds.contains_key(&id) {
            pools.entry(id).or_default().places.push(s.place);
        }
    }
    pools
}

/// For each concert of the batch, the first open request elsewhere of each
/// of `categories`: folded into the line of each of their free seats.
pub(super) async fn first_open_by_category(
    tx: &mut MySqlConnection,
    categories: &BTreeMap<ConcertId, Vec<u8>>,
    batch: &[QueueId],
) -> Result<HashMap<CategoryOf, u64>, sqlx::Error> {
    let mut firsts = HashMap::new();
    for (&concert, categories) in categories {
        for (category, place) in
            request_pools::first_open_elsewhere(tx, concert, categories, batch).await?
        {
            firsts.insert((concert, category), place);
        }
    }
    Ok(firsts)
}

/// Whether a decision over a window is the one the whole category would
/// give. Every free seat ranked below the bound was read, and so was every
/// free seat of the rows those are in; so a block with a seat not read lies
/// in a row not read, all its `count` seats rank at least the bound, and
/// one block read that ranks below `count` times the bound beats it. A
/// refusal, or seats in several blocks (a split), needs the whole category.
pub(super) fn proven(
    decision: &Decision,
    places: &HashMap<SeatId, Place>,
    bound: Option<u32>,
) -> bool {
    let Some(bound) = bound else {
        return true;
    };
    match decision.verdict {
        Verdict::Won => {
            let mut won: Vec<Place> = decision
                .seats
                .iter()
                .filter_map(|s| places.get(s).copied())
                .collect();
            won.sort_by_key(|p| (p.row, p.position));
            let one_block = won.len() == decision.seats.len()
                && won
                    .windows(2)
                    .all(|w| w[0].row == w[1].row && w[0].position + 1 == w[1].position);
            let sum: u64 = won.iter().map(|p| u64::from(p.rank)).sum();
            one_block && sum < u64::from(bound) * won.len() as u64
        }
        Verdict::SoldOut | Verdict::NoAdjacentSeats => false,
        Verdict::Lost | Verdict::Deferred | Verdict::OverLimit => true,
    }
}
