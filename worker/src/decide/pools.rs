//! The seats a batch decides over: those its requests name, and for its
//! requests by count the best free places of each pool (a category's
//! seats, a standing area's places) they ask for, a window read first and
//! the whole pool only when the window cannot prove a decision (see
//! [`seats::best_free`]).

use std::collections::{BTreeMap, HashMap};

use chrono::{DateTime, Utc};
use sqlx::MySqlConnection;
use ticket_core::db::{queue, request_pools, seats};
use ticket_core::domain::allocation::{Decision, Place, PoolId, Pools, Shape, Verdict};
use ticket_core::domain::{AskedPool, BestAsk, ConcertId, QueueId, SeatId};

/// A pool of one concert that requests of the batch ask for.
pub(super) type PoolOf = (ConcertId, AskedPool);

pub(super) fn pool_id((concert, pool): PoolOf) -> PoolId {
    PoolId((concert.get() << 9) | u64::from(pool.code()))
}

/// How much of each asked pool a batch reads: `None` is all of it.
#[derive(Debug, Clone)]
pub(super) struct Windows(BTreeMap<PoolOf, Option<u32>>);

impl Windows {
    /// Per category, a window of twice its seats asked for (at least 64):
    /// the best blocks lie in it unless many seats in between were passed
    /// over (the rows it touches are read whole besides). Per standing
    /// area, its places asked for and 64: any place will do, so only a
    /// place taken meanwhile is passed over.
    pub(super) fn for_rows(rows: &[queue::LeasedRow]) -> Self {
        let mut asked: BTreeMap<PoolOf, u32> = BTreeMap::new();
        for row in rows {
            if let Some(best) = row.best {
                *asked.entry((row.concert_id, best.pool)).or_default() += u32::from(best.count);
            }
        }
        Self(
            asked
                .into_iter()
                .map(|(pool, places)| {
                    let window = match pool.1 {
                        AskedPool::Category(_) => places.saturating_mul(2),
                        AskedPool::Area(_) => places,
                    };
                    (pool, Some(window.saturating_add(64)))
                })
                .collect(),
        )
    }

    pub(super) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Reads four times as much of `pool` next time, or all of it once
    /// that is a few hundred thousand places.
    pub(super) fn widen(&mut self, pool: PoolOf) {
        let wider = self
            .0
            .get(&pool)
            .copied()
            .flatten()
            .and_then(|n| n.checked_mul(4))
            .filter(|&n| n <= 250_000);
        self.0.insert(pool, wider);
    }
}

/// What the windows read: the seats, and per pool the rank below which
/// every free place of it was read (`None`: all were).
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
    for (&(concert, pool), &limit) in &windows.0 {
        let (seats, bound) = seats::best_free(tx, concert, pool, limit, now).await?;
        read.seats.extend(seats);
        read.bounds.insert(pool_id((concert, pool)), bound);
    }
    Ok(read)
}

/// The pools of the batch: each asked pool's locked free places, and the
/// free seats the batch names in those pools (an exact request waits
/// behind a request by count of its seat's category).
pub(super) fn pools_of(standing: &[seats::WantedSeat], asked: &Read) -> Pools {
    let mut pools = Pools::new();
    for s in standing {
        let Some(pool) = s.pool() else {
            continue;
        };
        let id = pool_id((s.concert, pool));
        if asked.bounds.contains_key(&id) {
            pools.entry(id).or_default().places.push(s.place);
        }
    }
    pools
}

/// For each concert of the batch, the first open request elsewhere of each
/// of `pools`: folded into the line of each of their free seats.
pub(super) async fn first_open_by_pool(
    tx: &mut MySqlConnection,
    pools: &BTreeMap<ConcertId, Vec<AskedPool>>,
    batch: &[QueueId],
) -> Result<HashMap<PoolOf, u64>, sqlx::Error> {
    let mut firsts = HashMap::new();
    for (&concert, pools) in pools {
        for (pool, place) in request_pools::first_open_elsewhere(tx, concert, pools, batch).await? {
            firsts.insert((concert, pool), place);
        }
    }
    Ok(firsts)
}

/// Whether a decision over a window is the one the whole pool would give.
/// Every free place ranked below the bound was read, and for a category so
/// was every free seat of the rows those are in; so a block with a seat
/// not read lies in a row not read, all its `count` seats rank at least
/// the bound, and one block read that ranks below `count` times the bound
/// beats it. A standing area's best places are proven when each ranks
/// below the bound. A refusal, or seats in several blocks (a split), needs
/// the whole pool.
pub(super) fn proven(
    decision: &Decision,
    places: &HashMap<SeatId, Place>,
    shape: Shape,
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
            if won.len() != decision.seats.len() {
                return false;
            }
            if !shape.adjacent {
                return won.iter().all(|p| p.rank < bound);
            }
            won.sort_by_key(|p| (p.row, p.position));
            let one_block = won
                .windows(2)
                .all(|w| w[0].row == w[1].row && w[0].position + 1 == w[1].position);
            let sum: u64 = won.iter().map(|p| u64::from(p.rank)).sum();
            one_block && sum < u64::from(bound) * won.len() as u64
        }
        Verdict::SoldOut | Verdict::NoAdjacentSeats => false,
        Verdict::Lost | Verdict::Deferred | Verdict::OverLimit => true,
    }
}

/// The shape a request by count wants: a category's seats side by side, a
/// standing area's places anywhere.
pub(super) fn shape_of(best: BestAsk) -> Shape {
    Shape {
        count: u32::from(best.count),
        adjacent: best.pool.category().is_some(),
        allow_split: best.allow_split,
    }
}
