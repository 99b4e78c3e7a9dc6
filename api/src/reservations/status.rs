//! What a request's owner is told while it waits and once it is decided:
//! the status body, shared by the poll and the event stream.

use chrono::{DateTime, Utc};
use serde::Serialize;
use ticket_core::db::{self, queue};
use ticket_core::domain::{QueueId, QueueStatus, ReservationId, SeatId};
use utoipa::ToSchema;

use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::extract::AuthUser;
use crate::reservations::line_watch::Place;
use crate::reservations::state::ReservationsState;

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct QueueStatusResponse {
    queue_id: u64,
    /// WAITING (in the pre-opening lottery), PENDING, PROCESSING, SUCCESS
    /// or FAILED.
    #[schema(example = "SUCCESS")]
    status: &'static str,
    /// Set on SUCCESS.
    reservation_id: Option<u64>,
    /// The first (lowest) of `seatIds`.
    /// The first seat it names; none for a request by count.
    seat_id: Option<u64>,
    /// The seats it names, or for a request by count the seats the line
    /// gave it once it succeeded.
    seat_ids: Vec<u64>,
    /// Set on FAILED: SEAT_TAKEN, USER_LIMIT_REACHED, CONCERT_CANCELLED,
    /// PROCESSING_FAILED; for a request by count also SOLD_OUT or
    /// NO_ADJACENT_SEATS.
    reason: Option<String>,
    /// When the request was accepted (server clock, UTC).
    requested_at: DateTime<Utc>,
    /// When a worker decided it; null while open.
    decided_at: Option<DateTime<Utc>>,
    /// While PENDING or PROCESSING: 1 = next to be decided among the open
    /// requests of the concert (about a second old at most); null while
    /// WAITING (the lottery's order is taken at the opening) or decided.
    position: Option<u64>,
    /// The position over the decision rate the workers measure; null when
    /// not measured yet.
    estimated_wait_ms: Option<u64>,
    /// While open: when to poll again (about 1 s near the front, up to 10 s
    /// at the back, until the opening while WAITING).
    poll_after_ms: Option<u64>,
    /// While WAITING: when the sale opens.
    opens_at: Option<DateTime<Utc>>,
}

/// Where an open request stands, for its status.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct LineFields {
    pub place: Option<Place>,
    pub opens_at: Option<DateTime<Utc>>,
    pub poll_after_ms: Option<u64>,
}

impl LineFields {
    /// Open requests have a place (once the line has been read) and a hint;
    /// lottery requests wait for the opening instead.
    pub(crate) async fn of(
        state: &ReservationsState,
        row: &queue::QueueRow,
        lottery_place: Option<u64>,
    ) -> ApiResult<Self> {
        if !row.is_open() {
            return Ok(Self::default());
        }
        if let Some(waiting) = Self::waiting(state, row).await? {
            return Ok(waiting);
        }
        Ok(Self::placed(state.line.place(row, lottery_place).await?))
    }

    /// A lottery request before its sale opens: no place yet.
    pub(crate) async fn waiting(
        state: &ReservationsState,
        row: &queue::QueueRow,
    ) -> ApiResult<Option<Self>> {
        if !row.line_key.is_lottery() {
            return Ok(None);
        }
        // Its line is read from now on, so that its place is known at once
        // when the sale opens.
        state.line.interested(row.concert_id);
        let sale = state.sales.of(&state.pool, row.concert_id).await?;
        // Only what the client is told to expect: the opening itself is
        // decided by the database's clock (the claims read it).
        let now = Utc::now();
        Ok(sale
            .opens_at
            .filter(|at| *at > now)
            .map(|opens_at| Self::until_opening(opens_at, now)))
    }

    /// Waiting for the opening: poll again then (within 1–10 s).
    pub(crate) fn until_opening(opens_at: DateTime<Utc>, now: DateTime<Utc>) -> Self {
        let until = (opens_at - now).num_milliseconds().unsigned_abs();
        Self {
            place: None,
            opens_at: Some(opens_at),
            poll_after_ms: Some(until.clamp(1_000, 10_000)),
        }
    }

    /// The status a client is shown, the same in a poll and in a stream:
    /// WAITING while the lottery waits for its opening; once the sale is
    /// open, a lottery request still WAITING in the table (its admission
    /// runs a moment later) is PENDING, in line like the rest.
    pub(crate) fn status_of(&self, row: &queue::QueueRow) -> &'static str {
        if self.opens_at.is_some() {
            QueueStatus::Waiting.as_str()
        } else if row.status == QueueStatus::Waiting {
            QueueStatus::Pending.as_str()
        } else {
            row.status.as_str()
        }
    }

    /// In line, at `place` once the line has been read.
    pub(crate) fn placed(place: Option<Place>) -> Self {
        Self {
            place,
            opens_at: None,
            poll_after_ms: Some(place.map_or(1_000, |p| p.poll_after_ms)),
        }
    }
}

impl QueueStatusResponse {
    pub(crate) fn of(row: queue::QueueRow, seat_ids: Vec<u64>, line: LineFields) -> Self {
        Self {
            queue_id: row.id.get(),
            status: line.status_of(&row),
            reservation_id: row.reservation_id.map(ReservationId::get),
            seat_id: row.seat_id.map(SeatId::get),
            seat_ids,
            reason: row.reason,
            requested_at: row.created_at,
            decided_at: row.decided_at,
            position: line.place.map(|p| p.position),
            estimated_wait_ms: line.place.and_then(|p| p.estimated_wait_ms),
            poll_after_ms: line.poll_after_ms,
            opens_at: line.opens_at,
        }
    }
}

/// The caller's request (or one staff finding orders at its concert may
/// follow: the desk's), with its place in its lottery once counted (see
/// [`db::line::find_placed`]); 404 otherwise.
pub(crate) async fn own_request(
    conn: &mut db::Conn,
    caller: AuthUser,
    id: QueueId,
) -> ApiResult<(queue::QueueRow, Option<u64>)> {
    let not_found = || ApiError::new(ErrorCode::QueueNotFound, "no such request");
    let (row, place) = db::line::find_placed(conn, id)
        .await?
        .ok_or_else(not_found)?;
    let (owner, concert) = (row.user_id, row.concert_id);
    let needs = ticket_core::domain::Permission::FindOrders;
    crate::organizers::access::acting_on(conn, caller, owner, concert, needs, not_found).await?;
    Ok((row, place))
}
