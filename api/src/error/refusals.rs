//! The refusals several features give, said once: not found for each
//! entity, and the enqueue's refusals with what they carry.

use ticket_core::domain::{MaxSeatsPerUser, QueueId, SaleWindow};

use super::{ApiError, ErrorCode, Extra};

impl ApiError {
    /// 409: the ticket was admitted before, at `at` through `gate`.
    pub fn already_checked_in(at: chrono::DateTime<chrono::Utc>, gate: Option<String>) -> Self {
        Self {
            detail: format!(
                "already checked in at {}{}: do not admit",
                at.format("%H:%M:%S UTC"),
                gate.as_deref()
                    .map(|g| format!(", gate {g}"))
                    .unwrap_or_default()
            ),
            extra: Extra::CheckedIn(at, gate),
            ..Self::new(ErrorCode::AlreadyCheckedIn, "")
        }
    }

    /// 409 `SALE_NOT_OPEN`: too early, even for the lottery.
    pub fn sale_not_open(sale: SaleWindow) -> Self {
        Self {
            extra: Extra::Sale(sale),
            ..Self::new(
                ErrorCode::SaleNotOpen,
                "the sale has not opened yet; requests are taken from acceptsRequestsFrom",
            )
        }
    }

    /// 409: the request's seats would take the user past the concert's cap.
    pub fn user_limit_reached(cap: MaxSeatsPerUser, seats_taken: u64) -> Self {
        Self {
            extra: Extra::UserLimit(cap, seats_taken),
            ..Self::new(
                ErrorCode::UserLimitReached,
                format!(
                    "you may have at most {} seats of this concert and have {seats_taken}",
                    cap.get()
                ),
            )
        }
    }

    /// 403: the presale takes requests with an access code only.
    pub fn access_code_required() -> Self {
        Self::new(
            ErrorCode::AccessCodeRequired,
            "the presale is on: a request needs an access code until the sale opens",
        )
    }

    /// 403: no such code for this concert, or it was revoked.
    pub fn access_code_invalid() -> Self {
        Self::new(
            ErrorCode::AccessCodeInvalid,
            "this access code is not valid for this concert",
        )
    }

    /// 409: the code has been used up, or by another account.
    pub fn access_code_used(detail: impl Into<String>) -> Self {
        Self::new(ErrorCode::AccessCodeUsed, detail)
    }

    /// 401: a still-valid token of an account deleted since.
    pub fn account_gone() -> Self {
        Self::new(ErrorCode::Unauthorized, "your account no longer exists")
    }

    /// 409 `QUEUE_DUPLICATED`, pointing to the request already in line.
    pub fn duplicate_request(existing: QueueId) -> Self {
        Self {
            extra: Extra::Queued(existing),
            ..Self::new(
                ErrorCode::QueueDuplicated,
                "you already have a pending request for this seat; follow its queueId",
            )
        }
    }

    pub fn concert_not_found() -> Self {
        Self::new(ErrorCode::ConcertNotFound, "no such concert")
    }

    pub fn seat_not_found() -> Self {
        Self::new(ErrorCode::SeatNotFound, "no such seat")
    }

    pub fn reservation_not_found() -> Self {
        Self::new(ErrorCode::ReservationNotFound, "no such reservation")
    }

    pub fn user_not_found() -> Self {
        Self::new(ErrorCode::UserNotFound, "no such user")
    }
}
