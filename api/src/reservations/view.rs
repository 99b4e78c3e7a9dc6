//! A reservation as its owner sees it, and the checks a reservation route
//! makes of its caller's body and headers.

use chrono::{DateTime, Utc};
use serde::Serialize;
use ticket_core::db::reservations;
use ticket_core::domain::events::total_of_seats;
use ticket_core::domain::{QueueId, ReservationId, UserId};
use utoipa::{IntoParams, ToSchema};

use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::extract::AuthUser;

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReservationResponse {
    reservation_id: u64,
    user_id: u64,
    concert_id: u64,
    /// The request that made it (null for an offer from the waiting list).
    queue_id: Option<u64>,
    /// LINE: a request that won in line; WAITING_LIST: seats offered to
    /// the fan from the concert's waiting list (a hold, confirmed alike).
    #[schema(example = "LINE")]
    source: String,
    /// The one seat of a one-seat reservation (absent with several).
    #[serde(skip_serializing_if = "Option::is_none")]
    seat_id: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    seat_number: Option<String>,
    seats: Vec<ReservationSeat>,
    /// The seats' prices together, in `currency`'s minor units (null when
    /// the concert has no prices): what a confirm charges.
    total: Option<u64>,
    #[schema(example = "KRW")]
    currency: Option<String>,
    /// HELD, CONFIRMED, EXPIRED or CANCELLED.
    #[schema(example = "CONFIRMED")]
    status: &'static str,
    /// When a hold ends (or ended); null without a hold.
    hold_expires_at: Option<DateTime<Utc>>,
    confirmed_at: Option<DateTime<Utc>>,
    payment_reference: Option<String>,
    created_at: DateTime<Utc>,
    /// A ticket of it was used at the door: it can no longer be cancelled.
    checked_in: bool,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReservationSeat {
    seat_id: u64,
    seat_number: String,
    /// The category and price the seat was decided at (null without prices).
    category: Option<String>,
    price: Option<u64>,
    /// Where the seat is, as the venue names it.
    place: PlaceView,
}

#[derive(IntoParams)]
#[into_params(parameter_in = Header)]
pub struct IdempotencyHeader {
    /// Repeating a request with the same key returns the original answer
    /// instead of queueing a second request (1–128 visible ASCII characters).
    #[param(
        rename = "Idempotency-Key",
        min_length = 1,
        max_length = 128,
        pattern = r"^[\x21-\x7E]+$"
    )]
    _key: Option<String>,
}

impl From<reservations::ReservationRow> for ReservationResponse {
    fn from(r: reservations::ReservationRow) -> Self {
        let total = total_of_seats(&r.seats);
        let one = match r.seats.as_slice() {
            [only] => Some(only.clone()),
            _ => None,
        };
        Self {
            reservation_id: r.id.get(),
            user_id: r.user_id.get(),
            concert_id: r.concert_id.get(),
            queue_id: r.queue_id.map(QueueId::get),
            source: r.source,
            seat_id: one.as_ref().map(|s| s.seat_id.get()),
            seat_number: one.map(|s| s.seat_number),
            seats: r
                .seats
                .into_iter()
                .map(|s| ReservationSeat {
                    seat_id: s.seat_id.get(),
                    seat_number: s.seat_number,
                    category: s.price.as_ref().map(|p| p.category.clone()),
                    price: s.price.map(|p| p.price.get()),
                    place: s.place.into(),
                })
                .collect(),
            total: total.map(|(amount, _)| amount.get()),
            currency: total.map(|(_, currency)| currency.as_str().to_owned()),
            status: r.status.as_str(),
            hold_expires_at: r.hold_expires_at,
            confirmed_at: r.confirmed_at,
            payment_reference: r.payment_reference,
            created_at: r.created_at,
            checked_in: r.checked_in,
        }
    }
}

/// The body's optional userId must name the caller.
pub(crate) fn ensure_self(caller: AuthUser, user_id: Option<u64>) -> ApiResult<()> {
    match user_id {
        Some(id) if UserId(id) != caller.id => Err(ApiError::new(
            ErrorCode::Forbidden,
            "you may only act for yourself",
        )),
        _ => Ok(()),
    }
}

/// Where a seat is, as the venue names it: a plan's `zone`, `row` and
/// `seat` (a grid's row and number), or a standing `area` and the place's
/// `entryNumber`. What is not known is left out.
#[derive(Serialize, ToSchema, Default)]
#[serde(rename_all = "camelCase")]
pub struct PlaceView {
    #[schema(example = "Stalls")]
    #[serde(skip_serializing_if = "Option::is_none")]
    zone: Option<String>,
    #[schema(example = "3")]
    #[serde(skip_serializing_if = "Option::is_none")]
    row: Option<String>,
    #[schema(example = "9")]
    #[serde(skip_serializing_if = "Option::is_none")]
    seat: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    area: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    entry_number: Option<u64>,
}

impl From<ticket_core::domain::SeatPlace> for PlaceView {
    fn from(p: ticket_core::domain::SeatPlace) -> Self {
        Self {
            zone: p.zone,
            row: p.row,
            seat: p.seat,
            area: p.area,
            entry_number: p.entry_number,
        }
    }
}

/// The reservation `id` as `caller` may read it: their own, or one of a
/// concert where their role finds orders (FIND_ORDERS); anyone else's
/// answers exactly as a missing one.
pub(crate) async fn readable(
    conn: &mut sqlx::MySqlConnection,
    caller: AuthUser,
    id: ReservationId,
) -> ApiResult<ticket_core::db::reservations::ReservationRow> {
    let now = ticket_core::db::now(conn).await?;
    let reservation = ticket_core::db::reservations::find(conn, id, now)
        .await?
        .ok_or_else(ApiError::reservation_not_found)?;
    let (owner, concert) = (reservation.user_id, reservation.concert_id);
    let needs = ticket_core::domain::Permission::FindOrders;
    let not_found = ApiError::reservation_not_found;
    crate::organizers::access::acting_on(conn, caller, owner, concert, needs, not_found).await?;
    Ok(reservation)
}
