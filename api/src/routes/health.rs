use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};
use serde::Serialize;
use ticket_core::db;
use utoipa::ToSchema;

use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::state::AppState;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
}

#[derive(Serialize, ToSchema)]
pub struct HealthResponse {
    status: &'static str,
}

/// Liveness: the process answers. Deliberately ignores the database, so a
/// database outage does not make Kubernetes restart every pod.
#[utoipa::path(get, path = "/healthz", tag = "operations",
    responses((status = 200, body = HealthResponse)))]
pub async fn healthz() -> Json<HealthResponse> {
    Json(HealthResponse { status: "ok" })
}

/// Readiness: the database answers, so this instance can serve traffic.
#[utoipa::path(get, path = "/readyz", tag = "operations",
    responses((status = 200, body = HealthResponse), (status = 503, body = crate::error::Problem)))]
pub async fn readyz(State(state): State<AppState>) -> ApiResult<Json<HealthResponse>> {
    db::ping(&state.pool).await.map_err(|e| {
        tracing::warn!(error = %e, "not ready: database unreachable");
        ApiError::new(
            ErrorCode::DatabaseUnavailable,
            "the database is unreachable",
        )
    })?;
    Ok(Json(HealthResponse { status: "ready" }))
}
