//! The API's one error type: every failure leaves as an RFC 9457
//! `application/problem+json` body with a stable `code`. Long because it is
//! the one place where every code, its status and every database error's
//! mapping (409 by constraint name) are said.

use std::collections::BTreeMap;

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use serde::Serialize;
use ticket_core::db;
use ticket_core::domain::{FieldError, MaxSeatsPerUser, Permission, QueueId, SaleWindow};
use utoipa::ToSchema;

use crate::fresh_cache::Unanswered;

mod refusals;

/// Stable, documented error codes; clients switch on these, not on text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ErrorCode {
    ValidationError,
    PayloadTooLarge,
    UnsupportedMediaType,
    Unauthorized,
    InvalidCredentials,
    Forbidden,
    RouteNotFound,
    UserNotFound,
    ConcertNotFound,
    SeatNotFound,
    QueueNotFound,
    ReservationNotFound,
    AccessCodeNotFound,
    MethodNotAllowed,
    NicknameDuplicated,
    SeatDuplicated,
    UserDeleteForbidden,
    /// No refund has this id.
    RefundNotFound,
    /// Only a pending refund of money taken by hand is recorded as given
    /// back by hand.
    RefundNotByHand,
    /// An account whose money is still moving (a payment the provider may
    /// yet take, a refund not yet made) cannot be deleted until it settles.
    MoneyInFlight,
    ConcertDeleteForbidden,
    SeatDeleteForbidden,
    SeatStatusConflict,
    QueueDuplicated,
    IdempotencyKeyReused,
    ReservationCancelForbidden,
    /// A hold that has run out cannot be confirmed (or cancelled).
    HoldExpired,
    /// Only a HELD reservation can be confirmed (a CANCELLED or EXPIRED one
    /// cannot).
    ReservationNotHeld,
    /// An order's seats belong to more than one concert.
    SeatsOfSeveralConcerts,
    /// An order names more seats than its concert's `maxSeatsPerOrder`.
    TooManySeats,
    /// The concert asks for a proof of work and the request has none.
    ChallengeRequired,
    /// The proof of work is wrong, expired, another caller's or spent.
    ChallengeInvalid,
    /// The concert's sale (or its lottery) has not begun; see `opensAt`.
    SaleNotOpen,
    /// The request would take its user past the concert's
    /// `maxSeatsPerUser`; see `seatsTaken`.
    UserLimitReached,
    /// The concert is in its presale: a request needs an `accessCode`.
    AccessCodeRequired,
    /// No such access code for the concert, or it was revoked.
    AccessCodeInvalid,
    /// The access code has no use or seats left, or belongs to another
    /// account.
    AccessCodeUsed,
    /// The concert has a free seat nobody in line wants: reserve it
    /// instead of joining its waiting list.
    SeatsAvailable,
    /// The caller is on the concert's waiting list already, or holds an
    /// offer from it that is still running.
    AlreadyOnWaitingList,
    /// The caller is not waiting on the concert's waiting list.
    NotOnWaitingList,
    /// No ticket of that id for the caller.
    TicketNotFound,
    /// The ticket was admitted before (see `checkedInAt`, `gate`).
    AlreadyCheckedIn,
    /// The ticket was cancelled (or reissued: an older code).
    TicketVoid,
    /// Not a ticket code of this concert: bad signature, unknown key,
    /// another concert's.
    TicketInvalid,
    /// No such live scanner for the concert.
    ScannerNotFound,
    /// This instance has no ticket signing keys (`TICKET_CODE_KEYS`).
    TicketsUnavailable,
    /// The hold is paid through the payment provider (`POST
    /// /api/reservations/{id}/payment`), not confirmed by its fan.
    PaymentRequired,
    /// No payment provider is configured, or it does not answer
    /// (`Retry-After`); nothing changed.
    PaymentsUnavailable,
    /// A provider's webhook reached a server that has no payment provider
    /// configured (the endpoint is not there).
    PaymentsNotConfigured,
    /// A provider's webhook whose signature is missing, wrong or stale.
    WebhookSignatureInvalid,
    /// The reservation costs nothing: confirm it instead.
    NothingToPay,
    /// The concert was cancelled: nothing more is sold.
    ConcertCancelled,
    /// The fan may not refund: the concert allows no refunds (now).
    RefundNotAllowed,
    /// A named ticket is not a valid ticket of the reservation, or the
    /// refund would give back more than was paid.
    TicketNotRefundable,
    /// Seats of the concert were asked for: a seating plan can no longer
    /// replace them.
    SeatsAlreadyRequested,
    /// Places of the concert's standing areas were asked for: its areas
    /// can no longer change.
    AreasAlreadyRequested,
    /// Open requests by count or waiting fans name a price category: it
    /// keeps its place and its name until they are decided.
    CategoriesInUse,
    /// The concert has no seating plan (its seats are rows × seatsPerRow).
    SeatingPlanNotFound,
    /// The caller's role on the organizer does not give the permission the
    /// route needs (named in `permission`).
    PermissionRequired,
    /// No organizer of that id the caller may see.
    OrganizerNotFound,
    /// Another organizer has this slug.
    OrganizerSlugDuplicated,
    /// The change would leave the organizer without an owner.
    LastOwner,
    /// No invitation of that id for the caller.
    InvitationNotFound,
    /// The invitation was answered, revoked, or has lapsed.
    InvitationClosed,
    /// The account is a member of the organizer already.
    AlreadyMember,
    /// No desk shift of that id the caller may see.
    ShiftNotFound,
    /// The shift was closed: nothing more is sold or given back on it.
    ShiftClosed,
    /// The clerk has a shift open at this concert already.
    ShiftAlreadyOpen,
    /// A refund at the desk above the organizer's limit for one refund
    /// (named in `refundLimit`).
    DeskRefundLimit,
    RequestTimeout,
    RateLimited,
    DatabaseUnavailable,
    /// This instance follows as many event streams as it may; another may
    /// take the request (503, `Retry-After`).
    InstanceBusy,
    InternalError,
}

impl ErrorCode {
    pub fn status(self) -> StatusCode {
        use ErrorCode::*;
        match self {
            ValidationError
            | SeatsOfSeveralConcerts
            | TooManySeats
            | ChallengeRequired
            | ChallengeInvalid
            | TicketInvalid
            | WebhookSignatureInvalid => StatusCode::BAD_REQUEST,
            PaymentRequired => StatusCode::PAYMENT_REQUIRED,
            PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Unauthorized | InvalidCredentials => StatusCode::UNAUTHORIZED,
            Forbidden | PermissionRequired | AccessCodeRequired | AccessCodeInvalid
            | RefundNotAllowed | DeskRefundLimit => StatusCode::FORBIDDEN,
            RouteNotFound
            | UserNotFound
            | ConcertNotFound
            | SeatNotFound
            | QueueNotFound
            | ReservationNotFound
            | AccessCodeNotFound
            | NotOnWaitingList
            | TicketNotFound
            | ScannerNotFound
            | PaymentsNotConfigured
            | RefundNotFound
            | SeatingPlanNotFound
            | OrganizerNotFound
            | InvitationNotFound
            | ShiftNotFound => StatusCode::NOT_FOUND,
            MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            NicknameDuplicated
            | SeatDuplicated
            | UserDeleteForbidden
            | MoneyInFlight
            | RefundNotByHand
            | ConcertDeleteForbidden
            | SeatDeleteForbidden
            | SeatStatusConflict
            | QueueDuplicated
            | IdempotencyKeyReused
            | ReservationCancelForbidden
            | HoldExpired
            | ReservationNotHeld
            | SaleNotOpen
            | UserLimitReached
            | AccessCodeUsed
            | SeatsAvailable
            | AlreadyOnWaitingList
            | AlreadyCheckedIn
            | NothingToPay
            | ConcertCancelled
            | TicketNotRefundable
            | SeatsAlreadyRequested
            | AreasAlreadyRequested
            | CategoriesInUse
            | OrganizerSlugDuplicated
            | LastOwner
            | InvitationClosed
            | AlreadyMember
            | ShiftClosed
            | ShiftAlreadyOpen => StatusCode::CONFLICT,
            TicketVoid => StatusCode::GONE,
            RequestTimeout => StatusCode::REQUEST_TIMEOUT,
            RateLimited => StatusCode::TOO_MANY_REQUESTS,
            DatabaseUnavailable | InstanceBusy | TicketsUnavailable | PaymentsUnavailable => {
                StatusCode::SERVICE_UNAVAILABLE
            }
            InternalError => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }
}

/// One rejected input field, by its JSON name (or path, such as `rows`).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ProblemField {
    pub field: String,
    pub message: String,
    /// What the message names (a seat's zone, row and number, a category,
    /// a limit), so that a client can say it in its own words.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub params: BTreeMap<String, String>,
}

impl ProblemField {
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            message: message.into(),
            params: BTreeMap::new(),
        }
    }
}

/// RFC 9457 problem details, extended with `code` and per-field `errors`.
#[derive(Debug, Serialize, ToSchema)]
pub struct Problem {
    /// Always `about:blank`: `code` identifies the problem.
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub title: String,
    pub status: u16,
    pub detail: String,
    pub code: ErrorCode,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<ProblemField>,
    /// With `QUEUE_DUPLICATED`: the request already in line for this seat
    /// (also in the `Location` header).
    #[serde(rename = "queueId", skip_serializing_if = "Option::is_none")]
    pub queue_id: Option<u64>,
    /// With `SALE_NOT_OPEN`: when the sale opens.
    #[serde(rename = "opensAt", skip_serializing_if = "Option::is_none")]
    pub opens_at: Option<DateTime<Utc>>,
    /// With `SALE_NOT_OPEN`: from when requests are taken (into the
    /// pre-opening lottery when it is before `opensAt`).
    #[serde(
        rename = "acceptsRequestsFrom",
        skip_serializing_if = "Option::is_none"
    )]
    pub accepts_requests_from: Option<DateTime<Utc>>,
    /// With `USER_LIMIT_REACHED`: the seats one user may have in the concert.
    #[serde(rename = "maxSeatsPerUser", skip_serializing_if = "Option::is_none")]
    pub max_seats_per_user: Option<u8>,
    /// With `USER_LIMIT_REACHED`: the seats the user has in the concert
    /// already (held, confirmed and asked for by open requests).
    #[serde(rename = "seatsTaken", skip_serializing_if = "Option::is_none")]
    pub seats_taken: Option<u64>,
    /// With `ALREADY_CHECKED_IN`: when the ticket was admitted.
    #[serde(rename = "checkedInAt", skip_serializing_if = "Option::is_none")]
    pub checked_in_at: Option<DateTime<Utc>>,
    /// With `ALREADY_CHECKED_IN`: the gate it was admitted at.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gate: Option<String>,
    /// With `PERMISSION_REQUIRED`: the permission the route needs.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>, example = "REFUND")]
    pub permission: Option<&'static str>,
    /// With `DESK_REFUND_LIMIT`: the most the desk may give back at once,
    /// in the currency's minor units.
    #[serde(rename = "refundLimit", skip_serializing_if = "Option::is_none")]
    pub refund_limit: Option<u64>,
}

#[derive(Debug)]
pub struct ApiError {
    code: ErrorCode,
    detail: String,
    errors: Vec<ProblemField>,
    /// Only for 5xx: logged with its cause chain, never sent.
    source: Option<anyhow::Error>,
    /// What some codes say besides their detail.
    extra: Extra,
}

/// What a problem carries besides its detail, by its code (one at most).
#[derive(Debug, Clone)]
enum Extra {
    None,
    /// Seconds for `Retry-After` (429).
    RetryAfter(u64),
    /// The open request a `QUEUE_DUPLICATED` refers to.
    Queued(QueueId),
    /// A `SALE_NOT_OPEN`'s opening and lottery start.
    Sale(SaleWindow),
    /// A `USER_LIMIT_REACHED`'s cap and the seats the user has.
    UserLimit(MaxSeatsPerUser, u64),
    /// An `ALREADY_CHECKED_IN`'s admission: when, and at which gate.
    CheckedIn(DateTime<Utc>, Option<String>),
    /// A `PERMISSION_REQUIRED`'s permission.
    Permission(Permission),
    /// A `DESK_REFUND_LIMIT`'s limit.
    RefundLimit(u64),
}

pub type ApiResult<T> = Result<T, ApiError>;

impl ApiError {
    pub fn new(code: ErrorCode, detail: impl Into<String>) -> Self {
        Self {
            code,
            detail: detail.into(),
            errors: Vec::new(),
            source: None,
            extra: Extra::None,
        }
    }

    /// 429 `RATE_LIMITED`, to be retried after `seconds`.
    pub fn rate_limited(detail: impl Into<String>, seconds: u64) -> Self {
        Self {
            extra: Extra::RetryAfter(seconds),
            ..Self::new(ErrorCode::RateLimited, detail)
        }
    }

    /// 503 `PAYMENTS_UNAVAILABLE`, to be tried again after `seconds`.
    pub fn payments_unavailable(detail: impl Into<String>, seconds: u64) -> Self {
        Self {
            extra: Extra::RetryAfter(seconds),
            ..Self::new(ErrorCode::PaymentsUnavailable, detail)
        }
    }

    pub fn invalid(errors: Vec<ProblemField>) -> Self {
        let detail = match errors.as_slice() {
            [one] => format!("{}: {}", one.field, one.message),
            _ => "the request has invalid fields".to_owned(),
        };
        Self {
            errors,
            ..Self::new(ErrorCode::ValidationError, detail)
        }
    }

    /// A deadlock or a changed record (not a lock wait) behind a 503: the
    /// transaction was rolled back, and trying it again may succeed.
    pub fn is_transient_conflict(&self) -> bool {
        self.source
            .as_ref()
            .and_then(|s| s.downcast_ref::<sqlx::Error>())
            .is_some_and(db::is_retryable_at_once)
    }

    /// Whether it answers a database that could not be reached (not one
    /// that was busy).
    pub fn is_database_unreachable(&self) -> bool {
        self.source
            .as_ref()
            .and_then(|s| s.downcast_ref::<sqlx::Error>())
            .is_some_and(db::is_unavailable)
    }

    pub fn database_unavailable() -> Self {
        Self::new(
            ErrorCode::DatabaseUnavailable,
            "the database is unavailable; retry shortly",
        )
    }

    pub fn internal(source: impl Into<anyhow::Error>) -> Self {
        Self {
            source: Some(source.into()),
            ..Self::new(ErrorCode::InternalError, "an internal error occurred")
        }
    }

    /// 403 `PERMISSION_REQUIRED`: the caller's role lacks `permission`.
    pub fn permission_required(permission: Permission) -> Self {
        Self {
            extra: Extra::Permission(permission),
            ..Self::new(
                ErrorCode::PermissionRequired,
                format!(
                    "this action needs the permission {permission}, which your role does not give"
                ),
            )
        }
    }

    /// 403 `DESK_REFUND_LIMIT`: more than the desk may give back at once.
    pub fn desk_refund_limit(limit: u64) -> Self {
        Self {
            extra: Extra::RefundLimit(limit),
            ..Self::new(
                ErrorCode::DeskRefundLimit,
                format!(
                    "the desk may give back at most {limit} (minor units) in one refund; ask the organizer's finance team"
                ),
            )
        }
    }

    pub fn shift_not_found() -> Self {
        Self::new(ErrorCode::ShiftNotFound, "no such desk shift")
    }

    pub fn organizer_not_found() -> Self {
        Self::new(ErrorCode::OrganizerNotFound, "no such organizer")
    }

    pub fn forbidden() -> Self {
        Self::new(ErrorCode::Forbidden, "you may not act on this resource")
    }

    pub fn code(&self) -> ErrorCode {
        self.code
    }
}

impl From<FieldError> for ProblemField {
    fn from(e: FieldError) -> Self {
        Self {
            field: e.field.to_owned(),
            message: e.message,
            params: e
                .params
                .into_iter()
                .map(|(name, value)| (name.to_owned(), value))
                .collect(),
        }
    }
}

impl From<FieldError> for ApiError {
    fn from(e: FieldError) -> Self {
        Self::invalid(vec![e.into()])
    }
}

impl From<Vec<FieldError>> for ApiError {
    fn from(errors: Vec<FieldError>) -> Self {
        Self::invalid(errors.into_iter().map(Into::into).collect())
    }
}

/// Unique violations become 409s by the name of the violated constraint; an
/// unreachable database becomes a 503 the client may retry.
impl From<sqlx::Error> for ApiError {
    fn from(err: sqlx::Error) -> Self {
        let conflict = match db::violated_unique_key(&err) {
            Some("uq_users_nickname") => {
                Some((ErrorCode::NicknameDuplicated, "nickName is already taken"))
            }
            Some("uq_seats_concert_seat_number") => Some((
                ErrorCode::SeatDuplicated,
                "the concert already has a seat with this seatNumber",
            )),
            Some("uq_request_seats_open") => Some((
                ErrorCode::QueueDuplicated,
                "you already have a pending request for this seat",
            )),
            Some("uq_organizers_slug") => Some((
                ErrorCode::OrganizerSlugDuplicated,
                "another organizer has this slug",
            )),
            Some("uq_desk_shifts_open") => Some((
                ErrorCode::ShiftAlreadyOpen,
                "you have a shift open at this concert's desk already: close it first",
            )),
            Some("uq_waiting_list_waiting") => Some((
                ErrorCode::AlreadyOnWaitingList,
                "you are on this concert's waiting list already",
            )),
            // The database's collation says when two names are one (Straße
            // and Strasse are), not Rust's lower case.
            Some("uq_standing_areas_name") => {
                return FieldError::new(
                    "areas",
                    "two areas have names the box office cannot tell apart (such as Straße and Strasse)",
                )
                .into();
            }
            _ => None,
        };
        let missing = match db::violated_foreign_key(&err) {
            Some("fk_queue_seat" | "fk_request_seats_seat") => {
                Some((ErrorCode::SeatNotFound, "no such seat"))
            }
            Some("fk_queue_user") => return Self::account_gone(),
            _ => None,
        };
        if let Some((code, detail)) = conflict.or(missing) {
            return Self::new(code, detail);
        }
        if db::is_unavailable(&err) || db::is_transient_conflict(&err) {
            return Self {
                source: Some(err.into()),
                ..Self::database_unavailable()
            };
        }
        Self::internal(err)
    }
}

impl From<Unanswered<ApiError>> for ApiError {
    fn from(unanswered: Unanswered<ApiError>) -> Self {
        match unanswered {
            Unanswered::Failed(err) => err,
            Unanswered::ReadFailed => Self::database_unavailable(),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.code.status();
        if let Some(source) = &self.source {
            if status == StatusCode::INTERNAL_SERVER_ERROR {
                tracing::error!(code = ?self.code, error = format!("{source:#}"), "request failed");
            } else {
                tracing::warn!(code = ?self.code, error = format!("{source:#}"), "request failed");
            }
        }
        let permission = match self.extra {
            Extra::Permission(p) => Some(p.as_str()),
            _ => None,
        };
        let refund_limit = match self.extra {
            Extra::RefundLimit(limit) => Some(limit),
            _ => None,
        };
        let (queue_id, sale, user_limit, retry_after, checked_in) = match self.extra {
            Extra::None | Extra::Permission(_) | Extra::RefundLimit(_) => {
                (None, None, None, None, None)
            }
            Extra::RetryAfter(seconds) => (None, None, None, Some(seconds), None),
            Extra::Queued(id) => (Some(id), None, None, None, None),
            Extra::Sale(sale) => (None, Some(sale), None, None, None),
            Extra::UserLimit(cap, taken) => (None, None, Some((cap, taken)), None, None),
            Extra::CheckedIn(at, gate) => (None, None, None, None, Some((at, gate))),
        };
        let (checked_in_at, gate) = checked_in.map_or((None, None), |(at, gate)| (Some(at), gate));
        let body = Problem {
            kind: "about:blank",
            title: status.canonical_reason().unwrap_or("Error").to_owned(),
            status: status.as_u16(),
            detail: self.detail,
            code: self.code,
            errors: self.errors,
            queue_id: queue_id.map(QueueId::get),
            opens_at: sale.and_then(|sale| sale.opens_at),
            accepts_requests_from: sale.and_then(SaleWindow::lottery_begins),
            max_seats_per_user: user_limit.map(|(cap, _)| cap.get()),
            seats_taken: user_limit.map(|(_, taken)| taken),
            checked_in_at,
            gate,
            permission,
            refund_limit,
        };
        let mut response = (status, axum::Json(body)).into_response();
        let headers = response.headers_mut();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/problem+json"),
        );
        match self.code {
            ErrorCode::Unauthorized | ErrorCode::InvalidCredentials => {
                headers.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            }
            ErrorCode::DatabaseUnavailable | ErrorCode::InstanceBusy => {
                headers.insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
            }
            ErrorCode::RateLimited | ErrorCode::PaymentsUnavailable => {
                headers.insert(
                    header::RETRY_AFTER,
                    HeaderValue::from(retry_after.unwrap_or(1)),
                );
            }
            _ => {}
        }
        if let Some(id) = queue_id
            && let Ok(location) = HeaderValue::try_from(format!("/api/reservations/status/{id}"))
        {
            headers.insert(header::LOCATION, location);
        }
        response
    }
}
