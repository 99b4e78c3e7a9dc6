//! The HTTP surface: every feature's router, and the middleware that
//! wraps them all.

use std::time::Duration;

use axum::Router;
use axum::extract::{DefaultBodyLimit, Request};
use axum::middleware::{Next, from_fn, from_fn_with_state};
use axum::response::IntoResponse;
use axum::routing::get;
use tower_http::catch_panic::CatchPanicLayer;

use crate::error::{ApiError, ErrorCode};
use crate::middleware;
use crate::state::AppState;

pub const MAX_BODY_BYTES: usize = 64 * 1024;

/// The public API; `/metrics` too when `with_metrics`. A request still
/// unanswered after `request_timeout` (a slow body, a stuck query) gets 408.
pub fn router(state: AppState, with_metrics: bool, request_timeout: Duration) -> Router {
    let metrics = if with_metrics {
        Router::new().route("/metrics", get(middleware::observation::metrics_endpoint))
    } else {
        Router::new()
    };
    Router::new()
        .merge(crate::health::router())
        .merge(crate::accounts::router())
        .merge(crate::concerts::router())
        .merge(crate::reservations::router())
        .merge(crate::presale::router())
        .merge(crate::proof_of_work::routes::router())
        .merge(crate::waiting_list::router())
        .merge(crate::tickets::router())
        .merge(crate::check_in::router())
        .merge(crate::payments::router())
        .merge(crate::web::router(state.stripe.as_deref()))
        .merge(crate::openapi::router())
        .merge(metrics)
        .fallback(|| async { ApiError::new(ErrorCode::RouteNotFound, "no such route") })
        .method_not_allowed_fallback(|| async {
            ApiError::new(
                ErrorCode::MethodNotAllowed,
                "this route does not accept that method",
            )
        })
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .layer(from_fn_with_state(
            state.clone(),
            middleware::limit_every_caller,
        ))
        .layer(from_fn(move |request: Request, next: Next| {
            middleware::timeout(request_timeout, request, next)
        }))
        .layer(CatchPanicLayer::custom(
            |_panic: Box<dyn std::any::Any + Send>| {
                ApiError::internal(anyhow::anyhow!("handler panicked")).into_response()
            },
        ))
        // Outermost, so that it sees every answer, timeouts and panics too.
        .layer(from_fn_with_state(
            state.clone(),
            middleware::observation::observe,
        ))
        .with_state(state)
}

/// `/metrics` alone, for a port of its own that only Prometheus reaches.
pub fn metrics_only(state: AppState) -> Router {
    Router::new()
        .route("/metrics", get(middleware::observation::metrics_endpoint))
        .fallback(|| async { ApiError::new(ErrorCode::RouteNotFound, "no such route") })
        .with_state(state)
}
