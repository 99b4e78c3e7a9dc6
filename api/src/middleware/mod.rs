//! What wraps every route: the per-caller limits, the request timeout and
//! the observation of every answer (metrics, traces).

pub mod limits;
pub mod metrics;
pub mod observation;

use std::time::Duration;

use axum::extract::Request;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::error::{ApiError, ErrorCode};
use crate::extract::{Auth, ClientAddresses};

/// What the limits on every caller reach.
#[derive(Clone)]
pub struct Gate {
    pub auth: Auth,
    pub limits: std::sync::Arc<limits::Limits>,
    /// Scanners seen on this instance (their requests' rate budget).
    pub known_scanners: std::sync::Arc<crate::check_in::known_scanners::KnownScanners>,
    pub client_addresses: ClientAddresses,
}

pub(crate) async fn timeout(limit: Duration, request: Request, next: Next) -> Response {
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
/// `/metrics` on this port is (a scrape reads the database); the metrics
/// port of its own, which only Prometheus reaches, is not behind this.
pub(crate) async fn limit_every_caller(
    axum::extract::State(state): axum::extract::State<Gate>,
    mut request: Request,
    next: Next,
) -> Response {
    let path = request.uri().path();
    // The provider's webhook spends its own budget once its signature is
    // known (`payments::routes::stripe_webhook`).
    if matches!(
        path,
        "/healthz" | "/readyz" | crate::payments::routes::STRIPE_WEBHOOK
    ) || crate::web::is_page(path)
    {
        return next.run(request).await;
    }
    let caller = crate::extract::bearer(request.headers())
        .and_then(|token| crate::extract::signed_in(&state.auth, token).ok());
    match caller {
        Some(principal) => {
            if let Err(refused) = state.limits.user_request(principal.user) {
                return refused.into_response();
            }
            request.extensions_mut().insert(principal);
        }
        None if let Some(scanner) = crate::extract::bearer(request.headers())
            .and_then(|token| state.known_scanners.of_token(token)) =>
        {
            if let Err(refused) = state.limits.scanner_request(scanner) {
                return refused.into_response();
            }
        }
        None => {
            let client = crate::extract::ClientAddress::of(
                request.headers(),
                request.extensions(),
                &state.client_addresses,
            );
            if let Err(refused) = state.limits.anonymous_request(client.0) {
                return refused.into_response();
            }
        }
    }
    next.run(request).await
}
