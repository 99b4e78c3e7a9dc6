use std::fmt;

use serde::{Deserialize, Serialize};

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, sqlx::Type)]
        #[serde(transparent)]
        #[sqlx(transparent)]
        pub struct $name(pub u64);

        impl $name {
            /// Parses a decimal id as it appears in a path segment.
            pub fn parse(raw: &str) -> Result<Self, super::FieldError> {
                raw.parse::<u64>()
                    .map(Self)
                    .map_err(|_| super::FieldError::new("id", "must be a positive integer"))
            }

            pub fn get(self) -> u64 {
                self.0
            }
        }

        impl From<$name> for u64 {
            fn from(id: $name) -> u64 {
                id.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.0.fmt(f)
            }
        }
    };
}

id_type!(
    /// Primary key of `users`.
    UserId
);
id_type!(
    /// Primary key of `concerts`.
    ConcertId
);
id_type!(
    /// Primary key of `organizers`.
    OrganizerId
);
id_type!(
    /// Primary key of `organizer_invitations`.
    InvitationId
);
id_type!(
    /// Primary key of `desk_shifts`.
    ShiftId
);
id_type!(
    /// Primary key of `seats`.
    SeatId
);
id_type!(
    /// Primary key of `reservations`.
    ReservationId
);
id_type!(
    /// Primary key of `reservation_queue`.
    QueueId
);
id_type!(
    /// Primary key of `access_codes`.
    AccessCodeId
);
id_type!(
    /// Primary key of `payments`.
    PaymentId
);
id_type!(
    /// Primary key of `refunds`.
    RefundId
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_decimal_ids_only() {
        assert_eq!(SeatId::parse("42"), Ok(SeatId(42)));
        for bad in ["", "-1", "abc", "1.5", " 1", "18446744073709551616"] {
            assert!(SeatId::parse(bad).is_err(), "{bad:?} must be rejected");
        }
    }
}
id_type!(
    /// Primary key of `tickets`.
    TicketId
);
id_type!(
    /// Primary key of `scanners`.
    ScannerId
);
