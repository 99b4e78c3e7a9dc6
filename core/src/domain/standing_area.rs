//! Standing areas (issue 47): floors without seat numbers, each a name, a
//! capacity and the price category its places are sold in. A place is
//! known by its area and its entry number (1 to the capacity): the number
//! a fan enters the floor by, given in line order (the earlier in line,
//! the lower), as Korean standing tickets are.

use std::collections::HashSet;

use super::{FieldError, SeatNumber, parse_text};

/// One area as asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AreaInput<'a> {
    pub name: &'a str,
    pub capacity: u64,
    /// A price category's name; None: the concert's first (or none, for a
    /// concert without prices).
    pub category: Option<&'a str>,
}

/// A valid area.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StandingArea {
    pub name: String,
    pub capacity: u32,
    pub category: Option<String>,
}

/// A concert's areas, in the order given (an area's position is its
/// index).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StandingAreas {
    pub areas: Vec<StandingArea>,
}

impl StandingAreas {
    pub const MAX: usize = 20;
    pub const NAME_CHARS: usize = 40;
    /// Places of all a concert's areas together, as a layout's seats.
    pub const MAX_PLACES: u64 = 100_000;

    pub fn parse(input: &[AreaInput<'_>]) -> Result<Self, FieldError> {
        if input.len() > Self::MAX {
            return Err(FieldError::new(
                "areas",
                format!("at most {} standing areas", Self::MAX),
            ));
        }
        let mut names = HashSet::new();
        let mut total: u64 = 0;
        let mut areas = Vec::with_capacity(input.len());
        for area in input {
            let name = parse_text("areas", area.name, Self::NAME_CHARS).map_err(|e| {
                FieldError::new("areas", format!("name {:?} {}", area.name, e.message))
            })?;
            if !names.insert(name.to_lowercase()) {
                return Err(FieldError::new("areas", format!("{name:?} is named twice")));
            }
            if !(1..=Self::MAX_PLACES).contains(&area.capacity) {
                return Err(FieldError::new(
                    "areas",
                    format!("{name:?}: capacity must be 1 to {}", Self::MAX_PLACES),
                ));
            }
            total += area.capacity;
            let category = area
                .category
                .map(|c| parse_text("areas", c, super::price::PriceCategories::NAME_CHARS))
                .transpose()?;
            areas.push(StandingArea {
                name,
                capacity: u32::try_from(area.capacity).unwrap_or(u32::MAX),
                category,
            });
        }
        if total > Self::MAX_PLACES {
            return Err(FieldError::new(
                "areas",
                format!(
                    "{total} places in all: at most {} across a concert's areas",
                    Self::MAX_PLACES
                ),
            ));
        }
        Ok(Self { areas })
    }

    /// The position of the area named `name` (case aside).
    pub fn position_of(&self, name: &str) -> Option<u8> {
        let wanted = name.trim().to_lowercase();
        self.areas
            .iter()
            .position(|a| a.name.to_lowercase() == wanted)
            .and_then(|p| u8::try_from(p).ok())
    }

    pub fn places(&self) -> u64 {
        self.areas.iter().map(|a| u64::from(a.capacity)).sum()
    }
}

/// A place's seat number: the area's name and its entry number
/// (`Floor #12`). No parsed seat number has a space, so none can clash
/// with a seat's; distinct area names make distinct numbers.
pub fn place_number(area: &str, entry: u32) -> SeatNumber {
    SeatNumber::from_generated(format!("{area} #{entry}"))
}

/// A place's sort key: after every seat's (theirs begin with a `0` or `1`
/// run tag), in area order, then entry order. Not the name's key: a long
/// name of many letter and digit runs has one longer than the column.
pub fn place_sort_key(position: u8, entry: u32) -> String {
    format!("2{position:03}{entry:010}")
}

/// The row every place of the area at `position` is in: past any row a
/// grid or a plan makes (at most 100,000), so a category's rows never
/// include a place.
pub fn row_of_area(position: u8) -> u32 {
    (1 << 30) + u32::from(position)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn area(name: &str, capacity: u64) -> AreaInput<'_> {
        AreaInput {
            name,
            capacity,
            category: None,
        }
    }

    #[test]
    fn a_place_sorts_after_every_seat_by_area_then_entry_within_its_column() {
        let longest = place_sort_key(u8::MAX, u32::MAX);
        assert!(longest.len() <= 80);
        assert!(place_sort_key(0, 9) < place_sort_key(0, 10));
        assert!(place_sort_key(0, u32::MAX) < place_sort_key(1, 1));
        let seat = crate::domain::SeatNumber::parse("ZZ99").unwrap().sort_key();
        assert!(seat < place_sort_key(0, 1));
    }

    #[test]
    fn areas_are_named_once_and_hold_places_within_the_limits() {
        let ok = StandingAreas::parse(&[area("Floor", 5_000), area("Pit", 300)]).unwrap();
        assert_eq!(ok.places(), 5_300);
        assert_eq!(ok.position_of(" pit "), Some(1));
        assert_eq!(ok.position_of("Balcony"), None);
        for (bad, why) in [
            (vec![area("Floor", 1), area("FLOOR", 1)], "named twice"),
            (vec![area("Floor", 0)], "capacity"),
            (vec![area("Floor", 100_001)], "capacity"),
            (vec![area("A", 60_000), area("B", 40_001)], "in all"),
            (vec![area(" ", 5)], "must not be empty"),
        ] {
            let err = StandingAreas::parse(&bad).unwrap_err();
            assert_eq!(err.field, "areas");
            assert!(err.message.contains(why), "{why}: {err}");
        }
        let many: Vec<AreaInput<'_>> = (0..21).map(|_| area("x", 1)).collect();
        assert!(StandingAreas::parse(&many).is_err());
    }

    #[test]
    fn places_are_numbered_apart_from_seats_and_rows() {
        assert_eq!(place_number("Floor", 12).as_str(), "Floor #12");
        assert!(SeatNumber::parse("Floor #12").is_err());
        assert!(row_of_area(0) > 100_000 && row_of_area(1) == row_of_area(0) + 1);
    }
}
