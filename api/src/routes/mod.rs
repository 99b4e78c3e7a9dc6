//! The HTTP surface, one router per feature, and what wraps them all.

pub mod auth;
pub mod availability;
pub mod checkout;
pub mod concerts;
pub mod health;
pub mod reservations;
pub mod sale;
pub mod seats;
pub mod status_events;
pub mod users;
pub mod web;

use std::time::Duration;

use axum::Router;
use axum::extract::{DefaultBodyLimit, Request};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use tower_http::catch_panic::CatchPanicLayer;

use crate::error::{ApiError, ErrorCode};
use crate::observability;
use crate::state::AppState;

pub const MAX_BODY_BYTES: usize = 64 * 1024;

/// The public API; `/metrics` too when `with_metrics`. A request still
/// unanswered after `request_timeout` (a slow body, a stuck query) gets 408.
pub fn router(state: AppState, with_metrics: bool, request_timeout: Duration) -> Router {
    let metrics = if with_metrics {
        Router::new().route("/metrics", get(observability::metrics_endpoint))
    } else {
        Router::new()
    };
    Router::new()
        .merge(health::router())
        .merge(auth::router())
        .merge(users::router())
        .merge(concerts::router())
        .merge(availability::router())
        .merge(seats::router())
        .merge(reservations::router())
        .merge(status_events::router())
        .merge(checkout::router())
        .merge(sale::router())
        .merge(web::router())
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
        .layer(middleware::from_fn_with_state(
            state.clone(),
            limit_every_caller,
        ))
        .layer(middleware::from_fn(move |request: Request, next: Next| {
            timeout(request_timeout, request, next)
        }))
        .layer(CatchPanicLayer::custom(
            |_panic: Box<dyn std::any::Any + Send>| {
                ApiError::internal(anyhow::anyhow!("handler panicked")).into_response()
            },
        ))
        // Outermost, so that it sees every answer, timeouts and panics too.
        .layer(middleware::from_fn_with_state(
            state.clone(),
            observability::observe,
        ))
        .with_state(state)
}

/// `/metrics` alone, for a port of its own that only Prometheus reaches.
pub fn metrics_only(state: AppState) -> Router {
    Router::new()
        .route("/metrics", get(observability::metrics_endpoint))
        .fallback(|| async { ApiError::new(ErrorCode::RouteNotFound, "no such route") })
        .with_state(state)
}

async fn timeout(limit: Duration, request: Request, next: Next) -> Response {
    match tokio::time::timeout(limit, next.run(request)).await {
        Ok(response) => response,
        Err(_) => {
            ApiError::new(ErrorCode::RequestTimeout, "the request took too long").into_response()
        }
    }
}

/// Decides every request's budget, on every route: a valid token spends its
/// user's, anything else its client address's (a signed-in caller does not
/// escape limits by reading routes that never look at the user). The
/// verified caller goes on in the request's extensions, so extractors only
/// read it and the token is checked once. Probes and the page's assets are
/// never limited: the kubelet and the load balancer ask from one address.
async fn limit_every_caller(
    axum::extract::State(state): axum::extract::State<AppState>,
    mut request: Request,
    next: Next,
) -> Response {
    let path = request.uri().path();
    if matches!(path, "/healthz" | "/readyz" | "/metrics") || web::is_page(path) {
        return next.run(request).await;
    }
    let caller = crate::extract::bearer(request.headers())
        .and_then(|token| crate::extract::signed_in(&state, token).ok());
    match caller {
        Some(principal) => {
            if let Err(refused) = state.limits.user_request(principal.user) {
                return refused.into_response();
            }
            request.extensions_mut().insert(principal);
        }
        None => {
            let client =
                crate::extract::ClientAddress::of(request.headers(), request.extensions(), &state);
            if let Err(refused) = state.limits.anonymous_request(client.0) {
                return refused.into_response();
            }
        }
    }
    next.run(request).await
}
