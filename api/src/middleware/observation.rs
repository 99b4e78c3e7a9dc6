//! One server span and one set of measurements per HTTP request, and the
//! Prometheus endpoint that shows them.

use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::http::{HeaderValue, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use opentelemetry::trace::TraceContextExt as _;
use ticket_core::metrics::{self};
use ticket_core::telemetry::propagation;
use tracing::Instrument as _;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

use super::limits::Limits;
use super::metrics::ApiMetrics;

/// What the observation of every answer reaches.
#[derive(Clone)]
pub struct Observed {
    pub pool: sqlx::MySqlPool,
    pub metrics: std::sync::Arc<ApiMetrics>,
    pub limits: std::sync::Arc<Limits>,
}

/// `GET /metrics`: Prometheus text format.
pub async fn metrics_endpoint(State(state): State<Observed>) -> Response {
    (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static(metrics::CONTENT_TYPE),
        )],
        state.metrics.render(&state.pool).await,
    )
        .into_response()
}

/// Wraps every route: a server span (OpenTelemetry HTTP conventions) that
/// continues the caller's `traceparent`, and the request's count and latency.
/// Unmatched paths are labelled `unmatched`, so that scanners cannot grow
/// the label set.
pub async fn observe(State(state): State<Observed>, request: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = known_method(request.method());
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map(|path| path.as_str().to_owned());
    // Probes and scrapes every few seconds would bury the traces that matter.
    if matches!(route.as_deref(), Some("/healthz" | "/readyz" | "/metrics")) {
        let response = next.run(request).await;
        state
            .metrics
            .count(method, route.as_deref(), response.status(), started);
        return response;
    }
    let headers = request.headers();
    let mut parent =
        propagation::from_headers(|name| headers.get(name).and_then(|v| v.to_str().ok()));
    if parent.span().span_context().is_sampled() && !state.limits.caller_may_force_tracing() {
        parent = propagation::without_sampled_flag(&parent);
    }
    let span = tracing::info_span!(
        "HTTP request",
        otel.name = format!("{method} {}", route.as_deref().unwrap_or("")).trim_end(),
        otel.kind = "server",
        http.request.method = method,
        http.route = route.as_deref(),
        url.path = request.uri().path(),
        url.scheme = "http",
        user_agent.original = headers
            .get(header::USER_AGENT)
            .and_then(|v| v.to_str().ok()),
        http.response.status_code = tracing::field::Empty,
        otel.status_code = tracing::field::Empty,
        "error.type" = tracing::field::Empty,
    );
    let _ = span.set_parent(parent);
    let response = next.run(request).instrument(span.clone()).await;
    let status = response.status();
    span.record("http.response.status_code", status.as_u16());
    if status.is_server_error() {
        span.record("otel.status_code", "ERROR");
        span.record("error.type", status.as_str());
    }
    state
        .metrics
        .count(method, route.as_deref(), status, started);
    response
}

/// The method as a fixed label; anything unusual is `_OTHER` (as the HTTP
/// conventions say), never the client's own string.
fn known_method(method: &axum::http::Method) -> &'static str {
    use axum::http::Method;
    match *method {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::PATCH => "PATCH",
        Method::DELETE => "DELETE",
        Method::HEAD => "HEAD",
        Method::OPTIONS => "OPTIONS",
        _ => "_OTHER",
    }
}
