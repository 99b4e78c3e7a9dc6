//! The waiting list of a sold-out concert: how long an offer is held, how
//! many seats a fan may wait for, and who is offered the seats that come
//! back (pure: the worker reads the list and the free seats, this decides).

use super::{AskedPool, FieldError, MaxSeatsPerOrder, UserId};

/// How long seats offered to a fan on the waiting list are held for them
/// (`waitingListOfferSeconds`, 1 second to a day; 15 minutes unless set).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OfferDuration(u32);

impl OfferDuration {
    pub const DEFAULT: Self = Self(900);
    pub const MOST: u32 = 86_400;

    pub fn parse(seconds: u64) -> Result<Self, FieldError> {
        match u32::try_from(seconds) {
            Ok(s) if (1..=Self::MOST).contains(&s) => Ok(Self(s)),
            _ => Err(FieldError::new(
                "waitingListOfferSeconds",
                format!("must be 1 to {}", Self::MOST),
            )),
        }
    }

    /// As stored: the column's CHECK keeps it in range.
    pub fn from_stored(seconds: u32) -> Self {
        Self::parse(seconds.into()).unwrap_or(Self::DEFAULT)
    }

    pub fn seconds(self) -> u32 {
        self.0
    }

    pub fn as_duration(self) -> chrono::Duration {
        chrono::Duration::seconds(self.0.into())
    }
}

impl Default for OfferDuration {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// The seats a fan waits for: 1 to the concert's `maxSeatsPerOrder` (an
/// offer is one order).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WaitingSeats(u8);

impl WaitingSeats {
    pub fn parse(seats: u64, per_order: MaxSeatsPerOrder) -> Result<Self, FieldError> {
        match u8::try_from(seats) {
            Ok(n) if (1..=per_order.get()).contains(&n) => Ok(Self(n)),
            _ => Err(FieldError::new(
                "seats",
                format!(
                    "must be 1 to {} (the concert's seats per order)",
                    per_order.get()
                ),
            )),
        }
    }

    pub fn get(self) -> u8 {
        self.0
    }
}

/// What a fan waits for: any seat (`None`: not a standing place, as a
/// seat map's seat), a price category's seats, or a standing area's places
/// (an [`AskedPool`], as a request by count names it).
pub type WaitingFor = Option<AskedPool>;

/// A free seat or place as an offer sees it: its price category's and its
/// standing area's positions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FreePlace {
    pub category: Option<u8>,
    pub area: Option<u8>,
}

impl FreePlace {
    /// Whether a fan waiting for `wants` may be offered it.
    pub fn serves(self, wants: WaitingFor) -> bool {
        match wants {
            None => self.area.is_none(),
            Some(AskedPool::Category(c)) => self.area.is_none() && self.category == Some(c),
            Some(AskedPool::Area(a)) => self.area == Some(a),
        }
    }
}

/// A fan on the list, in the order they joined.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Waiting {
    pub entry: u64,
    pub fan: UserId,
    pub seats: u8,
    pub wants: WaitingFor,
    /// Seats the fan may still take under the concert's cap per fan (held,
    /// confirmed and asked for by open requests already count).
    pub room: u64,
}

/// An offer: the free places at `places` (indices into the free list, in
/// its order), to the fan of `entry`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Offer {
    pub entry: u64,
    pub fan: UserId,
    pub places: Vec<usize>,
}

/// Who is offered which of the `free` places (best first): the list in
/// order, each fan whose count can be met from what is left of what they
/// wait for (and whose cap has room for it) gets the best of it; a fan
/// whose count cannot be met keeps their place and the next one is looked
/// at, so a fan waiting for four never keeps a single seat from the fan
/// behind them who wants one, nor a fan waiting for the balcony a stalls
/// seat from a fan waiting for the stalls. A fan is offered once per pass.
pub fn offers(waiting: &[Waiting], free: &[FreePlace]) -> Vec<Offer> {
    let mut taken = vec![false; free.len()];
    let mut left = free.len();
    let mut offered: Vec<Offer> = Vec::new();
    for w in waiting {
        if left == 0 {
            break;
        }
        let seats = usize::from(w.seats);
        if seats > left || u64::from(w.seats) > w.room || offered.iter().any(|o| o.fan == w.fan) {
            continue;
        }
        let places: Vec<usize> = free
            .iter()
            .enumerate()
            .filter(|&(i, place)| !taken[i] && place.serves(w.wants))
            .map(|(i, _)| i)
            .take(seats)
            .collect();
        if places.len() < seats {
            continue;
        }
        for &i in &places {
            taken[i] = true;
        }
        left -= seats;
        offered.push(Offer {
            entry: w.entry,
            fan: w.fan,
            places,
        });
    }
    offered
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEAT: FreePlace = FreePlace {
        category: Some(0),
        area: None,
    };

    fn fan(entry: u64, seats: u8) -> Waiting {
        Waiting {
            entry,
            fan: UserId(entry),
            seats,
            wants: None,
            room: 100,
        }
    }

    fn waiting_for(entry: u64, seats: u8, wants: AskedPool) -> Waiting {
        Waiting {
            wants: Some(wants),
            ..fan(entry, seats)
        }
    }

    fn entries(offered: &[Offer]) -> Vec<u64> {
        offered.iter().map(|o| o.entry).collect()
    }

    #[test]
    fn the_earliest_fan_whose_count_fits_is_offered() {
        let list = [fan(1, 3), fan(2, 1), fan(3, 2)];
        assert_eq!(entries(&offers(&list, &[SEAT; 2])), vec![2]);
        assert_eq!(entries(&offers(&list, &[SEAT; 3])), vec![1]);
        let offered = offers(&list, &[SEAT; 6]);
        assert_eq!(entries(&offered), vec![1, 2, 3]);
        let given: Vec<&[usize]> = offered.iter().map(|o| o.places.as_slice()).collect();
        assert_eq!(
            given,
            vec![&[0, 1, 2][..], &[3], &[4, 5]],
            "best first, in turn"
        );
        assert!(offers(&list, &[]).is_empty());
    }

    #[test]
    fn a_fan_at_the_cap_is_passed_over_and_keeps_their_place() {
        let mut capped = fan(1, 2);
        capped.room = 1;
        let offered = offers(&[capped, fan(2, 2)], &[SEAT; 2]);
        assert_eq!(entries(&offered), vec![2]);
    }

    #[test]
    fn a_fan_is_offered_only_what_they_wait_for() {
        let stalls = FreePlace {
            category: Some(0),
            area: None,
        };
        let balcony = FreePlace {
            category: Some(1),
            area: None,
        };
        // A floor's places are priced in a category too, never a seat's.
        let floor = FreePlace {
            category: Some(0),
            area: Some(0),
        };
        let free = [floor, balcony, stalls, floor];
        let list = [
            waiting_for(1, 2, AskedPool::Category(0)),
            waiting_for(2, 1, AskedPool::Category(1)),
            fan(3, 1),
            waiting_for(4, 2, AskedPool::Area(0)),
            waiting_for(5, 1, AskedPool::Category(0)),
        ];
        let offered = offers(&list, &free);
        assert_eq!(entries(&offered), vec![2, 3, 4], "{offered:?}");
        assert_eq!(offered[0].places, vec![1], "the balcony seat");
        assert_eq!(offered[1].places, vec![2], "any seat: the stalls seat left");
        assert_eq!(offered[2].places, vec![0, 3], "the floor's places");
        // Any seat is never a standing place.
        assert!(offers(&[fan(1, 1)], &[floor]).is_empty());
        assert!(!floor.serves(Some(AskedPool::Area(1))));
    }

    #[test]
    fn never_more_seats_than_are_free_nor_of_another_pool_and_a_fan_once() {
        let pools = [
            None,
            Some(AskedPool::Category(0)),
            Some(AskedPool::Category(1)),
            Some(AskedPool::Area(0)),
        ];
        let kinds = [
            SEAT,
            FreePlace {
                category: Some(1),
                area: None,
            },
            FreePlace {
                category: Some(0),
                area: Some(0),
            },
        ];
        for n in 0..12usize {
            let free: Vec<FreePlace> = (0..n).map(|i| kinds[(i * 7 + n) % 3]).collect();
            let list: Vec<Waiting> = (1..=8u64)
                .map(|i| Waiting {
                    wants: pools[(i as usize + n) % 4],
                    ..fan(i, (i % 4 + 1) as u8)
                })
                .collect();
            let offered = offers(&list, &free);
            let mut given: Vec<usize> = offered.iter().flat_map(|o| o.places.clone()).collect();
            let count = given.len();
            given.sort_unstable();
            given.dedup();
            assert_eq!(given.len(), count, "a place offered twice");
            assert!(given.iter().all(|&i| i < n));
            // No fan passed over whose count fitted what was left of their
            // pool then, and every offer from their pool, best first.
            let mut taken = vec![false; n];
            for w in &list {
                let fitting: Vec<usize> = (0..n)
                    .filter(|&i| !taken[i] && free[i].serves(w.wants))
                    .take(usize::from(w.seats))
                    .collect();
                let offer = offered.iter().find(|o| o.entry == w.entry);
                if fitting.len() == usize::from(w.seats) {
                    assert_eq!(offer.map(|o| &o.places), Some(&fitting), "n {n}, {w:?}");
                    for i in fitting {
                        taken[i] = true;
                    }
                } else {
                    assert!(offer.is_none(), "n {n}, {w:?}");
                }
            }
        }
    }

    #[test]
    fn offer_durations_and_counts_are_bounded() {
        assert!(OfferDuration::parse(0).is_err());
        assert!(OfferDuration::parse(86_401).is_err());
        assert_eq!(OfferDuration::parse(60).unwrap().seconds(), 60);
        assert!(WaitingSeats::parse(0, MaxSeatsPerOrder::DEFAULT).is_err());
        assert!(WaitingSeats::parse(5, MaxSeatsPerOrder::DEFAULT).is_err());
        assert_eq!(
            WaitingSeats::parse(4, MaxSeatsPerOrder::DEFAULT)
                .unwrap()
                .get(),
            4
        );
    }
}
