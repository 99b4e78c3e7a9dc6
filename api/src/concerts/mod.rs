//! Concerts and their seats: the operator's catalogue, the seat lists, and
//! what a sale's page reads on every visit (availability, seat map, sale
//! view), served from per-instance caches.

pub mod availability;
pub mod availability_cache;
pub mod input;
pub mod orders;
pub mod routes;
pub mod sale;
pub mod sale_windows;
pub mod seat_directory;
pub mod seat_map_cache;
pub mod seating_plan;
pub mod seats;
pub mod state;
pub mod view;

use axum::Router;

use crate::concerts::state::ConcertsState;

pub fn router() -> Router<ConcertsState> {
    Router::new()
        .merge(routes::router())
        .merge(availability::router())
        .merge(seats::router())
        .merge(sale::router())
        .merge(orders::router())
        .merge(seating_plan::router())
}
