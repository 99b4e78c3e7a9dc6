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

    /// A key whose byte order is the natural order of seat numbers:
    /// A1 < A2 < A10 < B1 < Z9 < AA1. The label splits into a prefix and its
    /// trailing digits; shorter prefixes sort first (so Z before AA), then the
    /// prefix case-insensitively, then the number by magnitude.
    pub fn sort_key(&self) -> String {
        let digits_at = self
            .0
            .char_indices()
            .rev()
            .take_while(|(_, c)| c.is_ascii_digit())
            .last()
            .map_or(self.0.len(), |(i, _)| i);
        let (prefix, digits) = self.0.split_at(digits_at);
        let number = digits.trim_start_matches('0');
        format!(
            "{:02}{}#{:02}{}",
            char_len(prefix),
            prefix.to_uppercase(),
            number.len(),
            number
        )
    }
}

#[cfg(test)]
mod tests {
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
            sorted(&["B1", "A10", "AA1", "A2", "Z3", "A1", "a3", "VIP", "VIP1"]),
            ["A1", "A2", "a3", "A10", "B1", "Z3", "AA1", "VIP", "VIP1"]
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
    }
}
