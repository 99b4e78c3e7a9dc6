//! Domain types. Each is built with `parse`, which is the only way to get one,
//! so a value of these types has already been validated.

pub mod access_code;
pub mod allocation;
mod concert;
pub mod desk;
mod email;
pub mod events;
mod ids;
pub mod language;
pub mod line_position;
pub mod mail;
mod order;
mod page;
pub mod payment;
mod place;
mod pool_name;
pub mod price;
mod proof_of_work;
mod reservation;
mod sale;
mod seat;
pub mod seating_plan;
pub mod standing_area;
mod status;
mod team;
pub mod ticket_code;
pub mod time_zone;
mod user;
pub mod waiting_list;

pub use access_code::{AccessCode, CodeBatch};
pub use concert::{ConcertDate, ConcertTitle, GridSeat, SeatLayout, Venue};
pub use email::EmailAddress;
pub use ids::{
    AccessCodeId, ConcertId, InvitationId, OrganizerId, PaymentId, QueueId, RefundId,
    ReservationId, ScannerId, SeatId, ShiftId, TicketId, UserId,
};
pub use language::Language;
pub use line_position::{LineFront, LinePart, LineRank};
pub use order::{
    Asked, AskedPool, BestAsk, HoldDuration, MaxSeatsPerOrder, MaxSeatsPerUser, PaymentReference,
    SeatIds,
};
pub use page::{PageBounds, PageRequest};
pub use place::SeatPlace;
pub use pool_name::{PoolName, PoolNames};
pub use price::{Amount, Currency, PriceCategories, SeatPrice};
pub use proof_of_work::ProofOfWork;
pub use reservation::{FailureReason, IdempotencyKey};
pub use sale::{
    Admission, LineKey, LotteryWindow, OpensAt, PresaleStartsAt, RefundableUntil, SaleWindow,
};
pub use seat::SeatNumber;
pub use standing_area::StandingAreas;
pub use status::{QueueStatus, ReservationStatus, Role, SeatStatus};
pub use team::{MemberRole, OrganizerName, OrganizerSlug, Permission};
pub use time_zone::VenueTimeZone;
pub use user::{NickName, Password};
pub use waiting_list::{OfferDuration, WaitingSeats};

/// Why one input field was rejected; `field` uses the API's camelCase name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct FieldError {
    pub field: &'static str,
    pub message: String,
    /// What the message names (a seat, a category…), by name, so that a
    /// client can say it in its own words and language.
    pub params: Vec<(&'static str, String)>,
}

impl FieldError {
    pub fn new(field: &'static str, message: impl Into<String>) -> Self {
        Self {
            field,
            message: message.into(),
            params: Vec::new(),
        }
    }

    /// The same error, naming `value` as `name`.
    pub fn with(mut self, name: &'static str, value: impl Into<String>) -> Self {
        self.params.push((name, value.into()));
        self
    }
}

/// Counts characters, not bytes: limits are stated to users in characters.
pub(crate) fn char_len(s: &str) -> usize {
    s.chars().count()
}

/// Shared rule for free-text names: trimmed, 1..=max characters, no control
/// characters (they break logs and terminals and never belong in a name).
pub fn parse_text(field: &'static str, raw: &str, max: usize) -> Result<String, FieldError> {
    let trimmed = raw.trim();
    let len = char_len(trimmed);
    if len == 0 {
        return Err(FieldError::new(field, "must not be empty"));
    }
    if len > max {
        return Err(FieldError::new(
            field,
            format!("must be at most {max} characters"),
        ));
    }
    if trimmed.chars().any(char::is_control) {
        return Err(FieldError::new(
            field,
            "must not contain control characters",
        ));
    }
    Ok(trimmed.to_owned())
}

/// Keeps a parsed value, or records why it failed, so that one response can
/// list every invalid field:
///
/// ```
/// # use ticket_core::domain::{keep, NickName, Password};
/// let mut errors = Vec::new();
/// let nick = keep(NickName::parse(""), &mut errors);
/// let pass = keep(Password::parse("short"), &mut errors);
/// assert!(nick.is_none() && pass.is_none());
/// assert_eq!(errors.len(), 2);
/// ```
pub fn keep<T>(parsed: Result<T, FieldError>, errors: &mut Vec<FieldError>) -> Option<T> {
    match parsed {
        Ok(value) => Some(value),
        Err(e) => {
            errors.push(e);
            None
        }
    }
}
