//! The rule against a plain reference clerk that takes the whole line one
//! request at a time: a request wins when every seat it names is still
//! free and its fan stays within the cap. Workers holding random parts of
//! the line, each deciding the first few of its part again and again with
//! [`allocate`], must end with the clerk's winners, whatever the line, the
//! orders, the fans, the cap and the seats sold before.

use std::collections::{HashMap, HashSet};

use proptest::prelude::*;

use super::*;

fn seats(ids: &[u64]) -> Vec<SeatId> {
    ids.iter().copied().map(SeatId).collect()
}

fn fan(user: u64) -> Fan {
    Fan {
        concert: ConcertId(1),
        user: UserId(user),
    }
}

/// Each request is its own fan, without a cap.
fn verdicts(line: &[(u64, &[SeatId])], free: &[(u64, Option<u64>)]) -> Vec<Verdict> {
    let line: Vec<(u64, u64, &[SeatId])> = line.iter().map(|&(id, s)| (id, id, s)).collect();
    verdicts_of_fans(&line, free, &Fans::new())
}

/// (id = place, user, seats).
fn verdicts_of_fans(
    line: &[(u64, u64, &[SeatId])],
    free: &[(u64, Option<u64>)],
    fans: &Fans,
) -> Vec<Verdict> {
    let requests: Vec<Request<'_>> = line
        .iter()
        .map(|&(id, user, seats)| Request {
            id: QueueId(id),
            place: id,
            wants: Wants::Seats(seats),
            fan: fan(user),
        })
        .collect();
    let free: FreeSeats = free.iter().map(|&(s, first)| (SeatId(s), first)).collect();
    allocate(&requests, &free, fans)
}

#[test]
fn an_order_wins_all_its_seats_or_none_and_leaves_the_rest_free() {
    let (ab, bc, c) = (seats(&[1, 2]), seats(&[2, 3]), seats(&[3]));
    let got = verdicts(
        &[(1, &ab), (2, &bc), (3, &c)],
        &[(1, None), (2, None), (3, None)],
    );
    assert_eq!(got, [Verdict::Won, Verdict::Lost, Verdict::Won]);
}

#[test]
fn a_seat_taken_or_unknown_loses_the_order() {
    let (a, ab) = (seats(&[1]), seats(&[1, 2]));
    let got = verdicts(&[(1, &ab), (2, &a), (3, &[])], &[(1, None)]);
    assert_eq!(got, [Verdict::Lost, Verdict::Won, Verdict::Lost]);
}

#[test]
fn a_request_waits_behind_an_earlier_one_elsewhere_and_so_do_those_sharing_its_seats() {
    let (a, ab, b, c) = (seats(&[1]), seats(&[1, 2]), seats(&[2]), seats(&[3]));
    let got = verdicts(
        &[(5, &ab), (6, &b), (7, &c), (8, &a)],
        &[(1, Some(3)), (2, None), (3, Some(9))],
    );
    assert_eq!(
        got,
        [
            Verdict::Deferred,
            Verdict::Deferred,
            Verdict::Won,
            Verdict::Deferred
        ],
        "request 3 elsewhere is ahead for seat 1; request 9 is behind for seat 3"
    );
}

#[test]
fn a_fan_takes_no_more_than_the_cap_and_the_seats_refused_stay_free() {
    let (ab, cd, e) = (seats(&[1, 2]), seats(&[3, 4]), seats(&[5]));
    // Fan 1 may take 3 more seats; fan 2 has no room left.
    let fans: Fans = [(1, 3), (2, 0)]
        .into_iter()
        .map(|(user, room)| {
            let standing = FanStanding {
                room,
                first_open_elsewhere: None,
            };
            (fan(user), standing)
        })
        .collect();
    let got = verdicts_of_fans(
        &[
            (1, 1, &ab),
            (2, 1, &cd),
            (3, 2, &e),
            (4, 1, &e),
            (5, 3, &cd),
        ],
        &[(1, None), (2, None), (3, None), (4, None), (5, None)],
        &fans,
    );
    assert_eq!(
        got,
        [
            Verdict::Won,
            Verdict::OverLimit,
            Verdict::OverLimit,
            Verdict::Won,
            Verdict::Won
        ],
        "fan 1's second order would make 4; fan 2 has none left; fan 3 has no cap"
    );
}

#[test]
fn a_fans_request_waits_behind_their_earlier_one_elsewhere_and_so_do_their_later_ones() {
    let (a, b, c) = (seats(&[1]), seats(&[2]), seats(&[3]));
    let fans: Fans = [(
        fan(1),
        FanStanding {
            room: 10,
            first_open_elsewhere: Some(4),
        },
    )]
    .into_iter()
    .collect();
    let got = verdicts_of_fans(
        &[(3, 1, &a), (5, 1, &b), (6, 2, &c)],
        &[(1, None), (2, None), (3, None)],
        &fans,
    );
    assert_eq!(got, [Verdict::Won, Verdict::Deferred, Verdict::Won]);
    let b_then_a = verdicts_of_fans(
        &[(5, 1, &b), (7, 1, &a)],
        &[(1, None), (2, Some(1))],
        &Fans::new(),
    );
    assert_eq!(
        b_then_a,
        [Verdict::Deferred, Verdict::Deferred],
        "the fan's later request waits for the one deferred before it"
    );
}

/// The reference: the whole line in order, one request at a time.
fn clerk(line: &[Vec<SeatId>], fans: &[u64], cap: u32, sold: &HashSet<SeatId>) -> Vec<bool> {
    let mut sold = sold.clone();
    let mut taken: HashMap<u64, u32> = HashMap::new();
    line.iter()
        .zip(fans)
        .map(|(wanted, fan)| {
            let count = taken.entry(*fan).or_default();
            let wins =
                wanted.iter().all(|s| !sold.contains(s)) && *count + wanted.len() as u32 <= cap;
            if wins {
                sold.extend(wanted);
                *count += wanted.len() as u32;
            }
            wins
        })
        .collect()
}

/// A line of requests (in line order) with their places, who holds each,
/// and the seats sold before.
#[derive(Debug, Clone)]
struct Sale {
    line: Vec<Vec<SeatId>>,
    places: Vec<u64>,
    /// The user of each request, and the seats each may hold in all.
    fans: Vec<u64>,
    cap: u32,
    /// The worker holding each request.
    owner: Vec<usize>,
    /// How many of its open requests each worker decides at a time.
    batch: Vec<usize>,
    sold: HashSet<SeatId>,
}

impl Sale {
    fn requests(&self) -> Vec<Request<'_>> {
        self.line
            .iter()
            .zip(&self.places)
            .enumerate()
            .map(|(i, (seats, &place))| Request {
                id: QueueId(i as u64 + 1),
                place,
                wants: Wants::Seats(seats),
                fan: fan(self.fans[i]),
            })
            .collect()
    }

    /// The sale as workers decide it: each turn, a worker decides the first
    /// few of its open requests; turns go round until everything is
    /// decided. Who won, in line order.
    fn decided_by_workers(&self) -> Vec<bool> {
        let (line, requests) = (&self.line, self.requests());
        let mut sold = self.sold.clone();
        let mut taken: HashMap<u64, u32> = HashMap::new();
        let mut outcome: Vec<Option<bool>> = vec![None; line.len()];
        let mut rounds = 0;
        while outcome.iter().any(Option::is_none) {
            for (worker, &size) in self.batch.iter().enumerate() {
                let mine: Vec<usize> = (0..line.len())
                    .filter(|&i| self.owner[i] == worker && outcome[i].is_none())
                    .take(size)
                    .collect();
                let mut free = FreeSeats::new();
                for &i in &mine {
                    for seat in line[i].iter().filter(|s| !sold.contains(s)) {
                        let first_elsewhere = (0..line.len())
                            .filter(|j| !mine.contains(j) && outcome[*j].is_none())
                            .filter(|&j| line[j].contains(seat))
                            .map(|j| self.places[j])
                            .min();
                        free.insert(*seat, first_elsewhere);
                    }
                }
                let mut fans = Fans::new();
                for &i in &mine {
                    let user = self.fans[i];
                    let first_open_elsewhere = (0..line.len())
                        .filter(|j| !mine.contains(j) && outcome[*j].is_none())
                        .filter(|&j| self.fans[j] == user)
                        .map(|j| self.places[j])
                        .min();
                    let room = self.cap - taken.get(&user).copied().unwrap_or(0);
                    let standing = FanStanding {
                        room,
                        first_open_elsewhere,
                    };
                    fans.insert(fan(user), standing);
                }
                let batch: Vec<Request<'_>> = mine.iter().map(|&i| requests[i]).collect();
                for (&i, verdict) in mine.iter().zip(allocate(&batch, &free, &fans)) {
                    match verdict {
                        Verdict::Won => {
                            sold.extend(&line[i]);
                            *taken.entry(self.fans[i]).or_default() += line[i].len() as u32;
                            outcome[i] = Some(true);
                        }
                        Verdict::Lost
                        | Verdict::OverLimit
                        | Verdict::SoldOut
                        | Verdict::NoAdjacentSeats => outcome[i] = Some(false),
                        Verdict::Deferred => {}
                    }
                }
            }
            rounds += 1;
            // Each round decides at least the earliest open request.
            assert!(rounds <= line.len() + 1, "no progress: {outcome:?}");
        }
        outcome.into_iter().map(|o| o == Some(true)).collect()
    }
}

/// A line of up to 24 requests of 1–4 seats among 8 by up to 5 fans with
/// a cap of 1–8 seats each, some seats sold already, held by up to 4
/// workers deciding 1–6 at a time; places in line are increasing but not
/// consecutive (a lottery's keys, then arrival order).
fn sale() -> impl Strategy<Value = Sale> {
    let order = proptest::sample::subsequence((0..8u64).collect::<Vec<_>>(), 1..=4)
        .prop_map(|ids| seats(&ids));
    (1..=24usize, 1..=4usize).prop_flat_map(move |(n, w)| {
        (
            proptest::collection::vec(order.clone(), n),
            proptest::collection::btree_set(0..1_000u64, n),
            proptest::collection::vec(1..=5u64, n),
            1..=8u32,
            proptest::collection::vec(0..w, n),
            proptest::collection::vec(1..=6usize, w),
            proptest::collection::hash_set((0..8u64).prop_map(SeatId), 0..4),
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

impl Sale {
    fn clerk(&self) -> Vec<bool> {
        clerk(&self.line, &self.fans, self.cap, &self.sold)
    }

    /// Every fan with the whole cap as room and nothing open elsewhere.
    fn fans_alone(&self) -> Fans {
        self.fans
            .iter()
            .map(|&user| {
                let standing = FanStanding {
                    room: self.cap,
                    first_open_elsewhere: None,
                };
                (fan(user), standing)
            })
            .collect()
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn workers_sharing_a_line_give_every_seat_to_the_clerks_winner(sale in sale()) {
        prop_assert_eq!(sale.decided_by_workers(), sale.clerk());
    }

    #[test]
    fn one_worker_alone_decides_the_whole_line_at_once_as_the_clerk(sale in sale()) {
        let free: FreeSeats = sale
            .line
            .iter()
            .flatten()
            .filter(|s| !sale.sold.contains(s))
            .map(|s| (*s, None))
            .collect();
        let verdicts = allocate(&sale.requests(), &free, &sale.fans_alone());
        prop_assert!(!verdicts.contains(&Verdict::Deferred), "nothing is open elsewhere");
        let won: Vec<bool> = verdicts.into_iter().map(|v| v == Verdict::Won).collect();
        prop_assert_eq!(won, sale.clerk());
    }

    #[test]
    fn no_seat_is_won_twice_and_winners_take_only_free_seats(
        sale in sale(),
        elsewhere in proptest::collection::vec(proptest::option::of(0..1_000u64), 8),
    ) {
        let free: FreeSeats = (0..8u64)
            .map(SeatId)
            .filter(|s| !sale.sold.contains(s))
            .map(|s| (s, elsewhere[s.0 as usize]))
            .collect();
        let requests = sale.requests();
        let fans = sale.fans_alone();
        let mut owners: HashMap<SeatId, QueueId> = HashMap::new();
        let mut taken: HashMap<Fan, u32> = HashMap::new();
        for (request, verdict) in requests.iter().zip(allocate(&requests, &free, &fans)) {
            if verdict == Verdict::Won {
                let Wants::Seats(seats) = request.wants else { unreachable!("seats by number only") };
                let count = taken.entry(request.fan).or_default();
                *count += seats.len() as u32;
                prop_assert!(*count <= sale.cap, "{:?} past the cap", request.fan);
                for seat in seats {
                    prop_assert!(free.contains_key(seat));
                    // Nobody open elsewhere is ahead of it for this seat.
                    prop_assert!(free[seat].is_none_or(|first| first >= request.place));
                    prop_assert!(owners.insert(*seat, request.id).is_none(), "seat {:?} won twice", seat);
                }
            }
        }
    }
}
