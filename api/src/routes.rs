//! The HTTP surface: every feature's router, and the middleware that
//! wraps them all.

use std::time::Duration;

use axum::Router;
use axum::extract::{DefaultBodyLimit, Request};
use axum::middleware::{Next, from_fn, from_fn_with_state};
use axum::response::IntoResponse;
use axum::routing::get;
use tower_http::catch_panic::CatchPanicLayer;

use axum::extract::FromRef;

use crate::error::{ApiError, ErrorCode};
use crate::extract::MAX_BODY_BYTES;
use crate::middleware::{self, Gate, observation::Observed};
use crate::state::AppState;

/// The public API; `/metrics` too when `with_metrics`. A request still
/// unanswered after `request_timeout` (a slow body, a stuck query) gets 408.
pub fn router(state: AppState, with_metrics: bool, request_timeout: Duration) -> Router {
    let observed = Observed::from_ref(&state);
    let metrics = if with_metrics {
        Router::new()
            .route("/metrics", get(middleware::observation::metrics_endpoint))
            .with_state(observed.clone())
    } else {
        Router::new()
    };
    // Each feature's routes with that feature's own state.
    Router::new()
        .merge(crate::health::router().with_state(FromRef::from_ref(&state)))
        .merge(crate::accounts::router().with_state(FromRef::from_ref(&state)))
        .merge(crate::concerts::router().with_state(FromRef::from_ref(&state)))
        .merge(crate::reservations::router().with_state(FromRef::from_ref(&state)))
        .merge(crate::desk::router().with_state(FromRef::from_ref(&state)))
        .merge(crate::presale::router().with_state(FromRef::from_ref(&state)))
        .merge(crate::organizers::router().with_state(FromRef::from_ref(&state)))
        .merge(crate::proof_of_work::routes::router().with_state(FromRef::from_ref(&state)))
        .merge(crate::waiting_list::router().with_state(FromRef::from_ref(&state)))
        .merge(crate::tickets::router().with_state(FromRef::from_ref(&state)))
        .merge(crate::check_in::router().with_state(FromRef::from_ref(&state)))
        .merge(crate::payments::router().with_state(FromRef::from_ref(&state)))
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
            Gate::from_ref(&state),
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
            observed,
            middleware::observation::observe,
        ))
}

/// `/metrics` alone, for a port of its own that only Prometheus reaches.
pub fn metrics_only(state: AppState) -> Router {
    Router::new()
        .route("/metrics", get(middleware::observation::metrics_endpoint))
        .fallback(|| async { ApiError::new(ErrorCode::RouteNotFound, "no such route") })
        .with_state(Observed::from_ref(&state))
}
