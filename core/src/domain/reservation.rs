use super::{FieldError, char_len};

/// A client's `Idempotency-Key`: 1–128 visible ASCII characters. The same key
/// from the same user replays the original answer instead of enqueuing again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdempotencyKey(String);

impl IdempotencyKey {
    pub const MAX_CHARS: usize = 128;

    pub fn parse(raw: &str) -> Result<Self, FieldError> {
        let len = char_len(raw);
        if len == 0 || len > Self::MAX_CHARS {
            return Err(FieldError::new(
                "Idempotency-Key",
                format!("must be 1 to {} characters", Self::MAX_CHARS),
            ));
        }
        if !raw.chars().all(|c| c.is_ascii_graphic()) {
            return Err(FieldError::new(
                "Idempotency-Key",
                "may contain only visible ASCII characters",
            ));
        }
        Ok(Self(raw.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Why a reservation request was refused; stable codes shown to clients.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureReason {
    /// Someone else holds the seat (or got it first in the same batch).
    SeatTaken,
    /// Deciding the request failed on every attempt (a row whose data the
    /// decision cannot handle); it was set aside so the queue moves on.
    ProcessingFailed,
    /// Its seats would take its user past the concert's `maxSeatsPerUser`.
    UserLimitReached,
    /// The concert was cancelled before the request was decided.
    ConcertCancelled,
    /// A request by count: fewer free places in its category or area than
    /// it asks for.
    SoldOut,
    /// A request by count: no block of its count side by side in its
    /// category (and it did not allow a split).
    NoAdjacentSeats,
}

impl FailureReason {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::SeatTaken => "SEAT_TAKEN",
            Self::ProcessingFailed => "PROCESSING_FAILED",
            Self::UserLimitReached => "USER_LIMIT_REACHED",
            Self::ConcertCancelled => "CONCERT_CANCELLED",
            Self::SoldOut => "SOLD_OUT",
            Self::NoAdjacentSeats => "NO_ADJACENT_SEATS",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idempotency_keys_are_bounded_visible_ascii() {
        assert!(IdempotencyKey::parse("3f2c-retry-1").is_ok());
        assert!(IdempotencyKey::parse(&"k".repeat(128)).is_ok());
        for bad in ["", " ", "has space", "tab\t", "ключ", &"k".repeat(129)] {
            assert!(IdempotencyKey::parse(bad).is_err(), "{bad:?}");
        }
    }
}
