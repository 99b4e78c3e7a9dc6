use super::{FieldError, char_len};

/// A seat's label within its concert, such as `A12` or `VIP-3`: 1–20
/// letters, digits, `-` or `_`. It carries its natural sort key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeatNumber(String);

impl SeatNumber {
    pub const MAX_CHARS: usize = 20;

    pub fn parse(raw: &str) -> Result<Self, FieldError> {
        let trimmed = raw.trim();
        let len = char_len(trimmed);
        if len == 0 {
            return Err(FieldError::new("seatNumber", "must not be empty"));
        }
        if len > Self::MAX_CHARS {
            return Err(FieldError::new(
                "seatNumber",
                format!("must be at most {} characters", Self::MAX_CHARS),
            ));
        }
        if !trimmed
            .chars()
            .all(|c| c.is_alphanumeric() || c == '-' || c == '_')
        {
            return Err(FieldError::new(
                "seatNumber",
                "may contain only letters, digits, '-' and '_'",
            ));
        }
        Ok(Self(trimmed.to_owned()))
    }

    /// For labels this crate generates itself (always valid).
    pub(crate) fn from_generated(label: String) -> Self {
        Self(label)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Where a seat named like rows × seatsPerRow's (`A1`, `AB12`) is: its
    /// row (A is 0, Z 25, AA 26) and its position in the row (seat 1 is
    /// 0); None for any other name.
    pub fn grid_place(&self) -> Option<(u32, u32)> {
        let letters = self.0.bytes().take_while(u8::is_ascii_uppercase).count();
        let (row, seat) = self.0.split_at(letters);
        if letters == 0 || seat.is_empty() || !seat.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let row = row.bytes().try_fold(0u32, |index, b| {
            index.checked_mul(26)?.checked_add(u32::from(b - b'A') + 1)
        })?;
        let seat: u32 = seat.parse().ok()?;
        Some((row - 1, seat.checked_sub(1)?))
    }

    /// A key whose byte order is the natural order of seat numbers:
    /// A1 < A2 < A10 < B1 < B3 < B3a < B4 < Z9 < AA1. The label is cut into
    /// runs of digits and runs of anything else; each run is written as a tag
    /// (digits before letters), its length in two digits, and its text
    /// (letters upper-cased, digits without leading zeros). Shorter runs of
    /// letters therefore sort first (Z before AA), numbers by magnitude, and
    /// a label sorts right after its own prefix. At most 4 bytes per
    /// character: 80 for the longest label, the width of `seats.sort_key`.
    pub fn sort_key(&self) -> String {
        let mut key = String::new();
        let mut chars = self.0.chars().peekable();
        while let Some(&first) = chars.peek() {
            let digits = first.is_ascii_digit();
            let mut run = String::new();
            while let Some(&c) = chars.peek() {
                if c.is_ascii_digit() != digits {
                    break;
                }
                // One character in, one out: the key length stays bounded.
                run.push(c.to_uppercase().next().unwrap_or(c));
                chars.next();
            }
            let text = if digits {
                let trimmed = run.trim_start_matches('0');
                if trimmed.is_empty() { "0" } else { trimmed }
            } else {
                run.as_str()
            };
            let tag = if digits { '0' } else { '1' };
            key.push_str(&format!("{tag}{:02}{text}", char_len(text)));
        }
        key
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_grid_name_gives_its_row_and_position() {
        let place = |n: &str| super::SeatNumber::parse(n).unwrap().grid_place();
        assert_eq!(place("A1"), Some((0, 0)));
        assert_eq!(place("Z12"), Some((25, 11)));
        assert_eq!(place("AA3"), Some((26, 2)));
        assert_eq!(place("AB1"), Some((27, 0)));
        for other in ["VIP-3", "A0", "a1", "A", "12", "A1b"] {
            assert_eq!(place(other), None, "{other}");
        }
    }

    use super::*;

    fn sorted(labels: &[&str]) -> Vec<String> {
        let mut seats: Vec<_> = labels
            .iter()
            .map(|l| SeatNumber::parse(l).unwrap())
            .collect();
        seats.sort_by_key(SeatNumber::sort_key);
        seats.into_iter().map(|s| s.0).collect()
    }

    #[test]
    fn natural_order() {
        assert_eq!(
            sorted(&[
                "B1", "A10", "AA1", "A2", "Z3", "A1", "a3", "VIP", "VIP1", "B3a", "B4", "B3", "A02"
            ]),
            [
                "A1", "A2", "A02", "a3", "A10", "B1", "B3", "B3a", "B4", "Z3", "AA1", "VIP", "VIP1"
            ]
        );
    }

    #[test]
    fn parse_rules() {
        assert_eq!(SeatNumber::parse(" A1 ").unwrap().as_str(), "A1");
        assert!(SeatNumber::parse("VIP-3").is_ok());
        assert!(SeatNumber::parse("가12").is_ok());
        for bad in ["", " ", "A 1", "A1;DROP", "<b>", "A1'", &"A".repeat(21)] {
            assert!(SeatNumber::parse(bad).is_err(), "{bad:?} must be rejected");
        }
    }

    #[test]
    fn sort_key_fits_its_column() {
        let longest = SeatNumber::parse(&"가".repeat(20)).unwrap();
        assert!(char_len(&longest.sort_key()) <= 80);
        let digits = SeatNumber::parse(&"9".repeat(20)).unwrap();
        assert!(char_len(&digits.sort_key()) <= 80);
        let alternating = SeatNumber::parse(&"A1".repeat(10)).unwrap();
        assert_eq!(char_len(&alternating.sort_key()), 80);
        let expanding = SeatNumber::parse(&"ß".repeat(20)).unwrap();
        assert!(char_len(&expanding.sort_key()) <= 80);
    }
}
