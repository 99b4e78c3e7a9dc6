//! What seat maps draw: the layout (every seat in natural order with its
//! number, `seat-map`) and the availability (every seat's state in about a
//! byte), cacheable (strong ETag, `max-age`, 304 to `If-None-Match`),
//! gzipped for clients that take it, served from per-instance caches.

use axum::Router;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;
use axum::routing::get;
use ticket_core::domain::ConcertId;

use crate::concerts::state::ConcertsState;
use crate::error::{ApiError, ApiResult, Problem};
use crate::extract::ApiPath;

pub fn router() -> Router<ConcertsState> {
    Router::new()
        .route("/api/concerts/{id}/availability", get(availability))
        .route("/api/concerts/{id}/seat-map", get(seat_map))
}

/// Every seat's state: AVAILABLE, HELD or RESERVED as one letter per seat,
/// in seat id order (`seatRanges` gives the ids). At most about a second
/// old; anonymous.
#[utoipa::path(get, path = "/api/concerts/{id}/availability", tag = "concerts",
    params(("id" = u64, Path),
           ("If-None-Match" = Option<String>, Header, description = "an ETag of an earlier answer")),
    responses((status = 200, body = crate::concerts::availability_cache::AvailabilityBody,
               headers(("ETag" = String), ("Cache-Control" = String))),
              (status = 304, description = "unchanged since the ETag given"),
              (status = 400, body = Problem), (status = 404, body = Problem)))]
pub async fn availability(
    State(state): State<ConcertsState>,
    headers: HeaderMap,
    ApiPath(id): ApiPath<ConcertId>,
) -> ApiResult<Response> {
    let snapshot = state
        .availability
        .get(&state.pool, id)
        .await?
        .ok_or_else(ApiError::concert_not_found)?;
    Ok(snapshot
        .body
        .respond(&headers, "application/json", "public, max-age=1"))
}

/// Every seat of the concert in natural order (A1, A2, …, A10, …, B1) with
/// its number: the layout a seat map draws, to be coloured by the
/// availability (which gives the same ids in id order). At most a few
/// seconds old; anonymous.
#[utoipa::path(get, path = "/api/concerts/{id}/seat-map", tag = "concerts",
    params(("id" = u64, Path),
           ("If-None-Match" = Option<String>, Header, description = "an ETag of an earlier answer")),
    responses((status = 200, body = crate::concerts::seat_map_cache::SeatMapBody,
               headers(("ETag" = String), ("Cache-Control" = String))),
              (status = 304, description = "unchanged since the ETag given"),
              (status = 400, body = Problem), (status = 404, body = Problem)))]
pub async fn seat_map(
    State(state): State<ConcertsState>,
    headers: HeaderMap,
    ApiPath(id): ApiPath<ConcertId>,
) -> ApiResult<Response> {
    let layout = state
        .seat_maps
        .get(&state.pool, id)
        .await?
        .ok_or_else(ApiError::concert_not_found)?;
    Ok(layout.respond(&headers, "application/json", "public, max-age=5"))
}
