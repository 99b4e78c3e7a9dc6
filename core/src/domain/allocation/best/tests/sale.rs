//! A whole sale: a mixed line (seats by number, two categories, a standing
//! area) decided by workers holding random parts of it, against a clerk
//! that takes it one request at a time.

use std::collections::{HashMap, HashSet};

use proptest::prelude::*;

use super::super::super::*;
use super::{blocks, ids, place};
use crate::domain::allocation::best::{choose, grid_rank};

/// Seats 0–15 in two rows of 8: row A's centre (positions 2–5) is pool 1
/// ("Category 1"), the rest of both rows pool 2; places 16–23 are a
/// standing area, pool 3.
fn pools_of_venue() -> HashMap<PoolId, (bool, Vec<Place>)> {
    let mut pools: HashMap<PoolId, (bool, Vec<Place>)> = HashMap::new();
    for cell in 0..16u32 {
        let (r, position) = (cell / 8, cell % 8);
        let pool = if r == 0 && (2..6).contains(&position) {
            1
        } else {
            2
        };
        let entry = pools.entry(PoolId(pool)).or_insert((true, Vec::new()));
        entry.1.push(place(
            u64::from(cell),
            r,
            position,
            grid_rank(r, position, 8),
        ));
    }
    let floor = (16..24u64).map(|n| place(n, 2, 0, n as u32)).collect();
    pools.insert(PoolId(3), (false, floor));
    pools
}

#[derive(Debug, Clone)]
enum Ask {
    Seats(Vec<SeatId>),
    Best(PoolId, u32, bool),
}

#[derive(Debug, Clone)]
struct Sale {
    line: Vec<Ask>,
    places: Vec<u64>,
    fans: Vec<u64>,
    cap: u32,
    owner: Vec<usize>,
    batch: Vec<usize>,
    sold: HashSet<SeatId>,
}

fn ask() -> impl Strategy<Value = Ask> {
    prop_oneof![
        proptest::sample::subsequence((0..16u64).collect::<Vec<_>>(), 1..=3)
            .prop_map(|s| Ask::Seats(ids(&s))),
        (1..=3u64, 1..=4u32, any::<bool>()).prop_map(|(p, n, split)| Ask::Best(
            PoolId(p),
            n,
            split
        )),
    ]
}

fn sale() -> impl Strategy<Value = Sale> {
    (1..=24usize, 1..=4usize).prop_flat_map(|(n, w)| {
        (
            proptest::collection::vec(ask(), n),
            proptest::collection::btree_set(0..1_000u64, n),
            proptest::collection::vec(1..=5u64, n),
            1..=8u32,
            proptest::collection::vec(0..w, n),
            proptest::collection::vec(1..=6usize, w),
            proptest::collection::hash_set((0..24u64).prop_map(SeatId), 0..8),
        )
            .prop_map(|(line, places, fans, cap, owner, batch, sold)| Sale {
                line,
                places: places.into_iter().collect(),
                fans,
                cap,
                owner,
                batch,
                sold,
            })
    })
}

fn fan(user: u64) -> Fan {
    Fan {
        concert: ConcertId(1),
        user: UserId(user),
    }
}

impl Sale {
    fn wants(&self, i: usize, venue: &HashMap<PoolId, (bool, Vec<Place>)>) -> Wants<'_> {
        match &self.line[i] {
            Ask::Seats(seats) => Wants::Seats(seats),
            Ask::Best(pool, count, allow_split) => Wants::Best(
                *pool,
                Shape {
                    count: *count,
                    adjacent: venue[pool].0,
                    allow_split: *allow_split,
                },
            ),
        }
    }

    /// The reference: the whole line in order, one request at a time;
    /// the seats each won (None: refused).
    fn clerk(&self) -> Vec<Option<Vec<SeatId>>> {
        let venue = pools_of_venue();
        let mut sold = self.sold.clone();
        let mut taken: HashMap<u64, u32> = HashMap::new();
        (0..self.line.len())
            .map(|i| {
                let room = self.cap - taken.get(&self.fans[i]).copied().unwrap_or(0);
                let won = match self.wants(i, &venue) {
                    Wants::Seats(seats) => (seats.iter().all(|s| !sold.contains(s))
                        && seats.len() as u32 <= room)
                        .then(|| seats.to_vec()),
                    Wants::Best(pool, shape) => {
                        let free: Vec<Place> = venue[&pool]
                            .1
                            .iter()
                            .filter(|p| !sold.contains(&p.seat))
                            .copied()
                            .collect();
                        (shape.count <= room)
                            .then(|| choose(&free, shape).ok())
                            .flatten()
                    }
                };
                if let Some(seats) = &won {
                    sold.extend(seats);
                    *taken.entry(self.fans[i]).or_default() += seats.len() as u32;
                }
                won
            })
            .collect()
    }

    /// The sale as workers decide it, each the first few of its part at a
    /// time, told of what is open elsewhere as the database tells them.
    fn decided_by_workers(&self) -> Vec<Option<Vec<SeatId>>> {
        let venue = pools_of_venue();
        let pool_of: HashMap<SeatId, PoolId> = venue
            .iter()
            .flat_map(|(id, (_, places))| places.iter().map(move |p| (p.seat, *id)))
            .collect();
        let n = self.line.len();
        let mut sold = self.sold.clone();
        let mut taken: HashMap<u64, u32> = HashMap::new();
        let mut outcome: Vec<Option<Option<Vec<SeatId>>>> = vec![None; n];
        let mut rounds = 0;
        while outcome.iter().any(Option::is_none) {
            for (worker, &size) in self.batch.iter().enumerate() {
                let mine: Vec<usize> = (0..n)
                    .filter(|&i| self.owner[i] == worker && outcome[i].is_none())
                    .take(size)
                    .collect();
                let open_elsewhere: Vec<usize> = (0..n)
                    .filter(|j| !mine.contains(j) && outcome[*j].is_none())
                    .collect();
                // A seat's line: requests naming it, or asking for its pool.
                let first_for_seat = |seat: SeatId| {
                    open_elsewhere
                        .iter()
                        .filter(|&&j| match &self.line[j] {
                            Ask::Seats(seats) => seats.contains(&seat),
                            Ask::Best(pool, ..) => pool_of.get(&seat) == Some(pool),
                        })
                        .map(|&j| self.places[j])
                        .min()
                };
                let mut free = FreeSeats::new();
                let mut pools = Pools::new();
                for &i in &mine {
                    match &self.line[i] {
                        Ask::Seats(seats) => {
                            for seat in seats.iter().filter(|s| !sold.contains(s)) {
                                free.insert(*seat, first_for_seat(*seat));
                            }
                        }
                        Ask::Best(id, ..) => {
                            let places: Vec<Place> = venue[id]
                                .1
                                .iter()
                                .filter(|p| !sold.contains(&p.seat))
                                .copied()
                                .collect();
                            for p in &places {
                                free.insert(p.seat, first_for_seat(p.seat));
                            }
                            pools.insert(*id, Pool { places });
                        }
                    }
                }
                let mut fans = Fans::new();
                for &i in &mine {
                    let user = self.fans[i];
                    let first_open_elsewhere = open_elsewhere
                        .iter()
                        .filter(|&&j| self.fans[j] == user)
                        .map(|&j| self.places[j])
                        .min();
                    let room = self.cap - taken.get(&user).copied().unwrap_or(0);
                    fans.insert(
                        fan(user),
                        FanStanding {
                            room,
                            first_open_elsewhere,
                        },
                    );
                }
                let batch: Vec<Request<'_>> = mine
                    .iter()
                    .map(|&i| Request {
                        id: QueueId(i as u64 + 1),
                        place: self.places[i],
                        wants: self.wants(i, &venue),
                        fan: fan(self.fans[i]),
                    })
                    .collect();
                for (&i, decision) in mine.iter().zip(decide(&batch, &free, &pools, &fans)) {
                    match decision.verdict {
                        Verdict::Won => {
                            sold.extend(&decision.seats);
                            *taken.entry(self.fans[i]).or_default() += decision.seats.len() as u32;
                            outcome[i] = Some(Some(decision.seats));
                        }
                        Verdict::Deferred => {}
                        _ => outcome[i] = Some(None),
                    }
                }
            }
            rounds += 1;
            assert!(rounds <= n + 1, "no progress: {outcome:?}");
        }
        outcome.into_iter().map(Option::flatten).collect()
    }
}

/// A block's order: rank sum, then its first row and position.
type BlockKey = (u64, u32, u32);

fn key(venue: &HashMap<PoolId, (bool, Vec<Place>)>, pool: PoolId, seats: &[SeatId]) -> BlockKey {
    let block: Vec<Place> = venue[&pool]
        .1
        .iter()
        .filter(|p| seats.contains(&p.seat))
        .copied()
        .collect();
    let mut sorted = block.clone();
    sorted.sort_by_key(|p| (p.row, p.position));
    let sum = block.iter().map(|p| u64::from(p.rank)).sum();
    (sum, sorted[0].row, sorted[0].position)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn workers_sharing_a_mixed_line_give_every_seat_as_the_clerk(sale in sale()) {
        prop_assert_eq!(sale.decided_by_workers(), sale.clerk());
    }

    #[test]
    fn one_worker_alone_decides_the_whole_line_at_once_as_the_clerk(sale in sale()) {
        let alone = Sale { owner: vec![0; sale.line.len()], batch: vec![sale.line.len()], ..sale.clone() };
        prop_assert_eq!(alone.decided_by_workers(), sale.clerk());
    }

    #[test]
    fn the_clerks_sale_keeps_every_rule(sale in sale()) {
        let venue = pools_of_venue();
        let won = sale.clerk();
        let mut owners: HashMap<SeatId, usize> = HashMap::new();
        let mut per_fan: HashMap<u64, u32> = HashMap::new();
        // (pool, count) → the key of the block each unsplit request got, in line order.
        let mut got: HashMap<(PoolId, u32), Vec<BlockKey>> = HashMap::new();
        for (i, seats) in won.iter().enumerate() {
            let Some(seats) = seats else { continue };
            for seat in seats {
                prop_assert!(!sale.sold.contains(seat), "seat {:?} was sold before", seat);
                prop_assert!(owners.insert(*seat, i).is_none(), "seat {:?} sold twice", seat);
            }
            let count = per_fan.entry(sale.fans[i]).or_default();
            *count += seats.len() as u32;
            prop_assert!(*count <= sale.cap, "fan {} past the cap", sale.fans[i]);
            if let Ask::Best(pool, n, split) = &sale.line[i] {
                prop_assert_eq!(seats.len(), *n as usize, "all or nothing");
                prop_assert!(seats.iter().all(|s| venue[pool].1.iter().any(|p| p.seat == *s)));
                let adjacent = venue[pool].0;
                if adjacent && !*split {
                    prop_assert_eq!(blocks(&venue[pool].1, seats), 1, "side by side");
                }
                if adjacent && (!*split || blocks(&venue[pool].1, seats) == 1) {
                    got.entry((*pool, *n)).or_default().push(key(&venue, *pool, seats));
                }
            }
        }
        // The earlier of two requests of one size in a pool never got the worse block.
        for keys in got.values() {
            prop_assert!(keys.windows(2).all(|w| w[0] <= w[1]), "{:?}", keys);
        }
        // A standing area is never sold past its places.
        let floor = owners.keys().filter(|s| s.0 >= 16).count();
        prop_assert!(floor <= 8);
    }
}
