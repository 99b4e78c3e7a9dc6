//! Where a request stands in its concert's line, from its rank and the
//! line's front, without reading the line.
//!
//! A line is decided in order (first in line wins), so a request's place
//! can be known from a rank fixed when its place is fixed and from the
//! front, the lowest place still open: everyone between the front and the
//! request is ahead of it. A line has three parts, in this order: presale
//! requests (ranked in arrival order as they are written), the lottery (in
//! its drawn order: a request's place is its key's rank, known once the
//! sale has opened) and requests after the opening (in arrival order as
//! they are written). Each part is numbered from 1, so a position adds up
//! the open requests of the parts ahead and those of its own part ahead of
//! it.
//!
//! When several workers decide out of step (one still deciding the front's
//! batch while another has committed the next), the requests decided out
//! of turn beyond the front are read with it (a bounded number: they are
//! the batches in flight) and not counted, so positions stay exact. Should
//! more than [`DECIDED_BEYOND_READ`] of them be behind a stuck front, those
//! not read still count: a position is then an upper bound, never less than
//! the number really ahead.

use serde::{Deserialize, Serialize};

use super::LineKey;

/// How many requests decided out of turn beyond the front are read per
/// part and status.
pub const DECIDED_BEYOND_READ: u32 = 4_096;

/// The parts of a line, in line order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum LinePart {
    Presale = 0,
    Lottery = 1,
    AfterOpening = 2,
}

impl LinePart {
    pub const ALL: [Self; 3] = [Self::Presale, Self::Lottery, Self::AfterOpening];
    /// Ranks of one part: its base plus 1, 2, …
    const SPAN: u64 = 1 << 40;

    /// The part a request of this key is in.
    pub fn of(key: LineKey) -> Self {
        if key == LineKey::PRESALE {
            Self::Presale
        } else if key.is_lottery() {
            Self::Lottery
        } else {
            Self::AfterOpening
        }
    }

    /// The lowest rank of the part (no request has it: places start at 1).
    pub fn base(self) -> u64 {
        self as u64 * Self::SPAN
    }

    /// The first rank past the part.
    pub fn end(self) -> u64 {
        self.base() + Self::SPAN
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// A request's rank in its concert's line: its part's base plus its
/// 1-based place in that part. Rank order is line order.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, sqlx::Type,
)]
#[serde(transparent)]
#[sqlx(transparent)]
pub struct LineRank(u64);

impl LineRank {
    /// The `place`-th (from 1) of `part`.
    pub fn new(part: LinePart, place: u64) -> Self {
        Self(part.base() + place.clamp(1, LinePart::SPAN - 1))
    }

    pub fn part(self) -> LinePart {
        match self.0 / LinePart::SPAN {
            0 => LinePart::Presale,
            1 => LinePart::Lottery,
            _ => LinePart::AfterOpening,
        }
    }

    /// Its place in its part, from 1.
    pub fn place(self) -> u64 {
        self.0 - self.part().base()
    }

    pub fn get(self) -> u64 {
        self.0
    }
}

/// One part of a line, as last read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PartFront {
    /// Requests that entered the part: placed, or (a lottery's, before the
    /// opening has counted them) to be placed after those placed.
    pub entered: u64,
    /// Places known (1..=placed).
    pub placed: u64,
    /// The lowest place still open; None when no placed request is open.
    pub lowest_open: Option<u64>,
    /// The requests beyond the lowest open one already decided (decided
    /// out of turn), sorted, in the part's order: their places, or for the
    /// lottery their keys.
    pub decided_beyond: Vec<u64>,
}

impl PartFront {
    /// The first place not known to be decided.
    pub fn front(&self) -> u64 {
        self.lowest_open.unwrap_or(self.placed + 1)
    }

    /// Open requests of the part ahead of the one at `place` (`order`: its
    /// place, or its key in the lottery).
    fn open_below(&self, place: u64, order: u64) -> u64 {
        let front = self.front();
        if place <= front {
            return 0;
        }
        let decided = self.decided_beyond.partition_point(|&d| d < order) as u64;
        (place - front).saturating_sub(decided)
    }

    /// Open requests of the part.
    pub fn open(&self) -> u64 {
        self.open_below(self.entered.max(self.placed) + 1, u64::MAX)
    }

    fn decided(&self, place: u64, order: u64) -> bool {
        place < self.front() || self.decided_beyond.binary_search(&order).is_ok()
    }
}

/// A concert's line as last read: each part's front.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LineFront {
    pub parts: [PartFront; 3],
}

impl LineFront {
    /// 1: next to be decided, among the concert's open requests; `key` is
    /// the request's own.
    pub fn position(&self, rank: LineRank, key: LineKey) -> u64 {
        let part = rank.part();
        let ahead: u64 = LinePart::ALL
            .iter()
            .filter(|p| **p < part)
            .map(|p| self.parts[p.index()].open())
            .sum();
        ahead + self.parts[part.index()].open_below(rank.place(), Self::order(rank, key)) + 1
    }

    /// Open requests: waiting for the opening, in line, being decided.
    pub fn length(&self) -> u64 {
        self.parts.iter().map(PartFront::open).sum()
    }

    /// Whether the request is known to have left the line.
    pub fn has_passed(&self, rank: LineRank, key: LineKey) -> bool {
        self.parts[rank.part().index()].decided(rank.place(), Self::order(rank, key))
    }

    pub fn part(&self, part: LinePart) -> &PartFront {
        &self.parts[part.index()]
    }

    pub fn part_mut(&mut self, part: LinePart) -> &mut PartFront {
        &mut self.parts[part.index()]
    }

    /// A request's order within its part, as `decided_beyond` holds it.
    fn order(rank: LineRank, key: LineKey) -> u64 {
        if rank.part() == LinePart::Lottery {
            key.get()
        } else {
            rank.place()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(parts: [(u64, u64, Option<u64>, Vec<u64>); 3]) -> LineFront {
        LineFront {
            parts: parts.map(|(entered, placed, lowest_open, decided_beyond)| PartFront {
                entered,
                placed,
                lowest_open,
                decided_beyond,
            }),
        }
    }

    const AFTER: LineKey = LineKey::AFTER_OPENING;

    #[test]
    fn a_rank_keeps_its_part_and_place() {
        for part in LinePart::ALL {
            let rank = LineRank::new(part, 7);
            assert_eq!((rank.part(), rank.place()), (part, 7));
        }
        assert!(LineRank::new(LinePart::Presale, 1_000_000) < LineRank::new(LinePart::Lottery, 1));
        assert!(
            LineRank::new(LinePart::Lottery, 1_000_000) < LineRank::new(LinePart::AfterOpening, 1)
        );
        assert_eq!(LinePart::of(LineKey::PRESALE), LinePart::Presale);
        assert_eq!(LinePart::of(LineKey::draw()), LinePart::Lottery);
        assert_eq!(LinePart::of(LineKey::AFTER_OPENING), LinePart::AfterOpening);
    }

    #[test]
    fn a_position_counts_the_open_requests_ahead_in_every_part() {
        // Presale: 10 written, 1..=4 decided. Lottery: 100, 1..=30 decided.
        // After the opening: 50 written, none decided.
        let front = line([
            (10, 10, Some(5), vec![]),
            (100, 100, Some(31), vec![]),
            (50, 50, Some(1), vec![]),
        ]);
        assert_eq!(
            front.position(LineRank::new(LinePart::Presale, 5), LineKey::PRESALE),
            1
        );
        assert_eq!(
            front.position(LineRank::new(LinePart::Presale, 10), LineKey::PRESALE),
            6
        );
        assert_eq!(
            front.position(LineRank::new(LinePart::Lottery, 31), LineKey::draw()),
            7
        );
        assert_eq!(
            front.position(LineRank::new(LinePart::AfterOpening, 1), AFTER),
            6 + 70 + 1
        );
        assert_eq!(front.length(), 6 + 70 + 50);
        assert!(front.has_passed(LineRank::new(LinePart::Lottery, 30), LineKey::draw()));
        assert!(!front.has_passed(LineRank::new(LinePart::Lottery, 31), LineKey::draw()));
    }

    #[test]
    fn requests_decided_out_of_turn_are_not_counted() {
        // One worker still decides 1..=10; another has decided 11..=20.
        let beyond: Vec<u64> = (11..=20).collect();
        let front = line([
            (0, 0, None, vec![]),
            (0, 0, None, vec![]),
            (30, 30, Some(1), beyond),
        ]);
        let at = |place| front.position(LineRank::new(LinePart::AfterOpening, place), AFTER);
        assert_eq!(at(1), 1);
        assert_eq!(at(10), 10);
        assert_eq!(at(21), 11);
        assert_eq!(at(30), 20);
        assert_eq!(front.length(), 20);
        assert!(front.has_passed(LineRank::new(LinePart::AfterOpening, 15), AFTER));
        assert!(!front.has_passed(LineRank::new(LinePart::AfterOpening, 5), AFTER));
    }

    #[test]
    fn lottery_requests_decided_out_of_turn_are_known_by_their_keys() {
        let key = |k: u64| LineKey::from_stored(LineKey::LOTTERY_FLOOR.get() + k);
        let front = line([
            (0, 0, None, vec![]),
            (10, 10, Some(1), vec![key(50).get(), key(60).get()]),
            (0, 0, None, vec![]),
        ]);
        // Places 1..=10 have keys 10, 20, ..., 100.
        let at =
            |place: u64| front.position(LineRank::new(LinePart::Lottery, place), key(place * 10));
        assert_eq!(at(4), 4);
        assert_eq!(at(7), 5);
        assert_eq!(at(10), 8);
        assert!(front.has_passed(LineRank::new(LinePart::Lottery, 5), key(50)));
        assert_eq!(front.length(), 8);
    }

    #[test]
    fn a_lottery_being_ranked_counts_its_unranked_requests() {
        // 1,000 entered the lottery, 400 are counted so far, none decided yet.
        let front = line([
            (0, 0, None, vec![]),
            (1_000, 400, Some(1), vec![]),
            (5, 5, Some(1), vec![]),
        ]);
        assert_eq!(
            front.position(LineRank::new(LinePart::Lottery, 400), LineKey::draw()),
            400
        );
        assert_eq!(
            front.position(LineRank::new(LinePart::AfterOpening, 1), AFTER),
            1_001
        );
        // Everything counted is decided: the rest still counts.
        let front = line([
            (0, 0, None, vec![]),
            (1_000, 400, None, vec![]),
            (5, 5, Some(1), vec![]),
        ]);
        assert_eq!(
            front.position(LineRank::new(LinePart::AfterOpening, 2), AFTER),
            602
        );
    }

    #[test]
    fn an_empty_part_counts_nothing() {
        let front = line([
            (3, 3, None, vec![]),
            (0, 0, None, vec![]),
            (3, 3, Some(3), vec![]),
        ]);
        assert_eq!(
            front.position(LineRank::new(LinePart::AfterOpening, 3), AFTER),
            1
        );
        assert_eq!(front.length(), 1);
        assert!(front.has_passed(LineRank::new(LinePart::Presale, 3), LineKey::PRESALE));
    }
}
