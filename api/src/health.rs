use std::sync::atomic::Ordering;

use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};
use serde::Serialize;
use ticket_core::db;
use utoipa::ToSchema;

use crate::error::{ApiError, ApiResult, ErrorCode};

/// What the probes read: the database, and whether it was ever reached.
#[derive(Clone)]
pub struct HealthState {
    pub pool: sqlx::MySqlPool,
    /// Set once the database has answered since start (see `/readyz`).
    pub database_reached: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

pub fn router() -> Router<HealthState> {
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

#[derive(Serialize, ToSchema)]
pub struct ReadyResponse {
    status: &'static str,
    /// `up`, or `down` while an outage lasts.
    database: &'static str,
}

/// Readiness: whether to send this instance traffic. Not before it has
/// reached the database once, so that a pod with a wrong URL or password
/// never joins a rollout. Afterwards through outages too (with `database:
/// down`): every instance shares the database, and taking them all out of
/// the Service would only replace their own answer, 503
/// DATABASE_UNAVAILABLE with Retry-After, by the ingress's bare error.
#[utoipa::path(get, path = "/readyz", tag = "operations",
    responses((status = 200, body = ReadyResponse), (status = 503, body = crate::error::Problem)))]
pub async fn readyz(State(state): State<HealthState>) -> ApiResult<Json<ReadyResponse>> {
    let database = match db::ping(&state.pool).await {
        Ok(()) => {
            state.database_reached.store(true, Ordering::Relaxed);
            "up"
        }
        Err(e) => {
            tracing::warn!(error = %e, "database unreachable");
            if !state.database_reached.load(Ordering::Relaxed) {
                return Err(ApiError::new(
                    ErrorCode::DatabaseUnavailable,
                    "the database has not been reached yet",
                ));
            }
            "down"
        }
    };
    Ok(Json(ReadyResponse {
        status: "ready",
        database,
    }))
}
