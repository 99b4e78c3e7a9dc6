//! Reservations: a request joins the line (written in groups by the
//! enqueue batcher), its status and place are read from the line watch or
//! pushed as events, and a won hold is confirmed or cancelled (checkout).

pub(crate) mod alone;
pub(crate) mod best;
pub mod checkout;
pub mod desk_orders;
pub mod enqueue_batcher;
pub mod events;
pub mod line_watch;
pub mod request_rates;
pub mod routes;
pub mod state;
pub mod status;
pub mod stream_permits;
pub mod view;

use axum::Router;

use crate::reservations::state::ReservationsState;

pub fn router() -> Router<ReservationsState> {
    Router::new()
        .merge(routes::router())
        .merge(events::router())
        .merge(checkout::router())
}
