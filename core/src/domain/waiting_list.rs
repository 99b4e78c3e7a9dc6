//! The waiting list of a sold-out concert: how long an offer is held, how
//! many seats a fan may wait for, and who is offered the seats that come
//! back (pure: the worker reads the list and the free seats, this decides).

use super::{FieldError, MaxSeatsPerOrder, UserId};

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

/// A fan on the list, in the order they joined.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Waiting {
    pub entry: u64,
    pub fan: UserId,
    pub seats: u8,
    /// Seats the fan may still take under the concert's cap per fan (held,
    /// confirmed and asked for by open requests already count).
    pub room: u64,
}

/// An offer: `seats` of the free seats, to the fan of `entry`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Offer {
    pub entry: u64,
    pub fan: UserId,
    pub seats: u8,
}

/// Who is offered `free` seats: the list in order, each fan whose count
/// can be met from what is left (and whose cap has room for it) gets it;
/// a fan whose count cannot be met keeps their place and the next one is
/// looked at, so a fan waiting for four never keeps a single seat from the
/// fan behind them who wants one. A fan is offered once per pass.
pub fn offers(waiting: &[Waiting], free: usize) -> Vec<Offer> {
    let mut left = free;
    let mut offered: Vec<Offer> = Vec::new();
    for w in waiting {
        if left == 0 {
            break;
        }
        let seats = usize::from(w.seats);
        let fits = seats <= left && u64::from(w.seats) <= w.room;
        if fits && !offered.iter().any(|o| o.fan == w.fan) {
            left -= seats;
            offered.push(Offer {
                entry: w.entry,
                fan: w.fan,
                seats: w.seats,
            });
        }
    }
    offered
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fan(entry: u64, seats: u8) -> Waiting {
        Waiting {
            entry,
            fan: UserId(entry),
            seats,
            room: 100,
        }
    }

    #[test]
    fn the_earliest_fan_whose_count_fits_is_offered() {
        let list = [fan(1, 3), fan(2, 1), fan(3, 2)];
        let offered = offers(&list, 2);
        assert_eq!(offered.iter().map(|o| o.entry).collect::<Vec<_>>(), vec![2]);
        let offered = offers(&list, 3);
        assert_eq!(offered.iter().map(|o| o.entry).collect::<Vec<_>>(), vec![1]);
        let offered = offers(&list, 6);
        assert_eq!(
            offered.iter().map(|o| o.entry).collect::<Vec<_>>(),
            vec![1, 2, 3]
        );
        assert!(offers(&list, 0).is_empty());
    }

    #[test]
    fn a_fan_at_the_cap_is_passed_over_and_keeps_their_place() {
        let mut capped = fan(1, 2);
        capped.room = 1;
        let offered = offers(&[capped, fan(2, 2)], 2);
        assert_eq!(offered.iter().map(|o| o.entry).collect::<Vec<_>>(), vec![2]);
    }

    #[test]
    fn never_more_seats_than_are_free_and_a_fan_once() {
        for free in 0..12 {
            let list: Vec<Waiting> = (1..=8).map(|i| fan(i, (i % 4 + 1) as u8)).collect();
            let offered = offers(&list, free);
            let given: usize = offered.iter().map(|o| usize::from(o.seats)).sum();
            assert!(given <= free);
            // No fan passed over whose count fitted what was left then.
            let mut left = free;
            for w in &list {
                let was_offered = offered.iter().any(|o| o.entry == w.entry);
                assert_eq!(
                    was_offered,
                    usize::from(w.seats) <= left,
                    "free {free}, entry {}",
                    w.entry
                );
                if was_offered {
                    left -= usize::from(w.seats);
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
