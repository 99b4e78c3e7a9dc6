//! The desk's requests (issue 60): what a clerk asks of the line for a
//! buyer at the desk, checked before the buyer's account is made, then
//! written behind the line as any fan's request.

use crate::reservations::enqueue_batcher::Queued;
use ticket_core::domain::{AccessCode, ConcertId, FieldError, UserId};
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

use super::routes::{Order, ReserveRequest, asked, place};
use super::state::ReservationsState;
use crate::error::{ApiError, ApiResult};

/// Queues `req` for `user` as the desk asks for it (not the fan: no proof
/// of work is paid), behind the line as any request; the concert it asks
/// of must be `concert`.
pub(crate) async fn enqueue_for_desk(
    state: &ReservationsState,
    checked: DeskOrder,
    user: UserId,
) -> ApiResult<Queued> {
    let order = Order { user, ..checked.0 };
    let current = tracing::Span::current().context();
    let (queued, _) = place(state, order, None, current).await?;
    Ok(queued)
}

/// What the desk asks for, checked, before the buyer it is for exists.
pub(crate) struct DeskOrder(Order);

/// What the desk's `req` asks of `concert`, checked before the buyer's
/// account is made: the sale must be taking requests.
pub(crate) async fn desk_order(
    state: &ReservationsState,
    concert: ConcertId,
    req: &ReserveRequest,
) -> ApiResult<DeskOrder> {
    if req.user_id.is_some() {
        return Err(FieldError::new("userId", "the desk's buyer is made with the request").into());
    }
    let access_code = match req.access_code.as_deref().map(AccessCode::parse) {
        None => None,
        Some(Ok(code)) => Some(code),
        Some(Err(_)) => return Err(ApiError::access_code_invalid()),
    };
    let (asked_of, asked, named, terms) = asked(state, req).await?;
    if asked_of != concert {
        return Err(FieldError::new("seatIds", "must be of the shift's concert").into());
    }
    let terms = match terms {
        Some(terms) => terms,
        None => state.sales.terms(&state.pool, concert).await?,
    };
    terms.ensure_selling()?;
    Ok(DeskOrder(Order {
        // Named by `enqueue_for_desk`, once the buyer's account is made.
        user: UserId(0),
        concert,
        asked,
        named,
        pools_version: terms.pools_version,
        sale: terms.window,
        max_seats_per_user: terms.max_seats_per_user,
        access_code,
    }))
}
