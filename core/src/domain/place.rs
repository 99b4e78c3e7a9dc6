//! Where a seat is, as the venue names it (issue 58: a fan read "Stalls-3-9"
//! for a Premium seat and "Seat Floor #1" for a standing ticket): a plan's
//! zone, row and seat label; a grid's row and number; or a standing area
//! and the place's entry number. A client words it in its own language.

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SeatPlace {
    pub zone: Option<String>,
    pub row: Option<String>,
    pub seat: Option<String>,
    pub area: Option<String>,
    pub entry_number: Option<u64>,
}

impl SeatPlace {
    /// From a seat's stored parts: a plan's labels when it has them, its
    /// standing area when it is a place, else its grid number ("AB12" is
    /// row AB, seat 12).
    pub fn of(
        seat_number: &str,
        zone: Option<String>,
        row: Option<String>,
        label: Option<String>,
        area: Option<String>,
        entry_number: Option<u64>,
    ) -> Self {
        if area.is_some() {
            return Self {
                area,
                entry_number,
                ..Self::default()
            };
        }
        if row.is_some() || label.is_some() {
            return Self {
                zone: zone.filter(|z| !z.trim().is_empty()),
                row,
                seat: label,
                ..Self::default()
            };
        }
        match seat_number.find(|c: char| c.is_ascii_digit()) {
            Some(cut) if cut > 0 && seat_number[..cut].chars().all(|c| c.is_ascii_uppercase()) => {
                Self {
                    row: Some(seat_number[..cut].to_owned()),
                    seat: Some(seat_number[cut..].to_owned()),
                    ..Self::default()
                }
            }
            _ => Self {
                seat: Some(seat_number.to_owned()),
                ..Self::default()
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn some(s: &str) -> Option<String> {
        Some(s.to_owned())
    }

    #[test]
    fn a_seat_is_named_as_its_venue_names_it() {
        let plan = SeatPlace::of(
            "Stalls-3-9",
            some("Stalls"),
            some("3"),
            some("9"),
            None,
            None,
        );
        assert_eq!(
            (plan.zone, plan.row, plan.seat),
            (some("Stalls"), some("3"), some("9"))
        );
        let one_zone = SeatPlace::of("3-9", some(""), some("3"), some("9"), None, None);
        assert_eq!(one_zone.zone, None);
        let grid = SeatPlace::of("AB12", None, None, None, None, None);
        assert_eq!((grid.row, grid.seat), (some("AB"), some("12")));
        let standing = SeatPlace::of("Floor #1", None, None, None, some("Floor"), Some(1));
        assert_eq!(
            standing,
            SeatPlace {
                area: some("Floor"),
                entry_number: Some(1),
                ..SeatPlace::default()
            }
        );
        let odd = SeatPlace::of("box-7", None, None, None, None, None);
        assert_eq!((odd.row, odd.seat), (None, some("box-7")));
    }
}
