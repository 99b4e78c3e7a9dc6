use serde::{Deserialize, Serialize};

macro_rules! status_enum {
    ($(#[$doc:meta])* $name:ident { $($variant:ident => $text:literal),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        pub enum $name {
            $(
                #[serde(rename = $text)]
                $variant,
            )+
        }

        impl $name {
            pub const ALL: &'static [Self] = &[$(Self::$variant),+];

            pub fn as_str(self) -> &'static str {
                match self {
                    $(Self::$variant => $text,)+
                }
            }

            pub fn parse(raw: &str) -> Result<Self, super::FieldError> {
                match raw {
                    $($text => Ok(Self::$variant),)+
                    _ => Err(super::FieldError::new(
                        "status",
                        format!("must be one of {}", [$($text),+].join(", ")),
                    )),
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        // Stored as the same uppercase text the API uses.
        impl sqlx::Type<sqlx::MySql> for $name {
            fn type_info() -> sqlx::mysql::MySqlTypeInfo {
                <str as sqlx::Type<sqlx::MySql>>::type_info()
            }
            fn compatible(ty: &sqlx::mysql::MySqlTypeInfo) -> bool {
                <str as sqlx::Type<sqlx::MySql>>::compatible(ty)
            }
        }

        impl<'q> sqlx::Encode<'q, sqlx::MySql> for $name {
            fn encode_by_ref(
                &self,
                buf: &mut Vec<u8>,
            ) -> Result<sqlx::encode::IsNull, sqlx::error::BoxDynError> {
                <&str as sqlx::Encode<sqlx::MySql>>::encode(self.as_str(), buf)
            }
        }

        impl<'r> sqlx::Decode<'r, sqlx::MySql> for $name {
            fn decode(value: sqlx::mysql::MySqlValueRef<'r>) -> Result<Self, sqlx::error::BoxDynError> {
                let text = <&str as sqlx::Decode<sqlx::MySql>>::decode(value)?;
                Ok(Self::parse(text)?)
            }
        }
    };
}

status_enum!(
    /// Whether a seat can still be sold: HELD while a hold on it runs (a
    /// HELD seat past its hold's end is free), RESERVED once sold.
    SeatStatus { Available => "AVAILABLE", Held => "HELD", Reserved => "RESERVED" }
);
status_enum!(
    /// Lifecycle of a reservation: HELD until confirmed or expired (with
    /// holds), CONFIRMED (sold), EXPIRED or CANCELLED (its seats freed).
    ReservationStatus { Held => "HELD", Confirmed => "CONFIRMED", Expired => "EXPIRED", Cancelled => "CANCELLED" }
);
status_enum!(
    /// Lifecycle of a reservation request in the queue: WAITING (in a
    /// pre-opening lottery, until the sale opens), PENDING, PROCESSING
    /// (claimed by a worker), then SUCCESS or FAILED.
    QueueStatus { Waiting => "WAITING", Pending => "PENDING", Processing => "PROCESSING", Success => "SUCCESS", Failed => "FAILED" }
);
impl QueueStatus {
    /// A new request's status at its place in line: a lottery request
    /// waits for its sale to open; any other is due now.
    pub fn in_line_at(line: super::LineKey) -> Self {
        if line.is_lottery() {
            Self::Waiting
        } else {
            Self::Pending
        }
    }
}

status_enum!(
    /// What a user may do: admins manage concerts, seats and any user.
    Role { User => "USER", Admin => "ADMIN" }
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_round_trip_through_their_text() {
        for s in SeatStatus::ALL {
            assert_eq!(SeatStatus::parse(s.as_str()), Ok(*s));
        }
        for s in QueueStatus::ALL {
            assert_eq!(QueueStatus::parse(s.as_str()), Ok(*s));
        }
        assert!(SeatStatus::parse("available").is_err(), "case matters");
        assert!(QueueStatus::parse("DONE").is_err());
        assert_eq!(serde_json::to_string(&Role::Admin).unwrap(), "\"ADMIN\"");
    }
}
