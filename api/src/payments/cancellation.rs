//! A cancelled concert: `POST /api/concerts/{id}/cancel` closes its sale at
//! once (new requests and waiting-list joins 409 CONCERT_CANCELLED; the
//! workers fail its open requests as they claim them, end its holds, and
//! refund, void and mail every sold order, resumably), and
//! `GET /api/concerts/{id}/cancellation` follows the refunds.

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use ticket_core::db::{self, concerts, whole};
use ticket_core::domain::{ConcertId, FieldError, Permission};
use utoipa::ToSchema;

use crate::error::{ApiError, ApiResult, Problem};
use crate::extract::{ApiJson, ApiPath, AuthUser};
use crate::organizers::access::{On, permit_on};
use crate::organizers::audit::{Did, Staff, changed};
use crate::payments::state::PaymentsState;
use serde_json::{Value, json};

pub fn router() -> Router<PaymentsState> {
    Router::new()
        .route("/api/concerts/{id}/cancel", post(cancel))
        .route("/api/concerts/{id}/cancellation", get(progress))
}

/// Most characters of a cancellation's reason (the column's size).
const REASON_MAX_CHARS: usize = 500;

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CancelConcertRequest {
    /// Why, in the words the fans are told (1–500 characters).
    reason: Option<String>,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CancellationResponse {
    concert_id: u64,
    /// NOT_CANCELLED, REFUNDING (orders or refunds still to do) or DONE.
    #[schema(example = "REFUNDING")]
    status: &'static str,
    cancelled_at: Option<DateTime<Utc>>,
    reason: Option<String>,
    /// Orders refunded.
    refunded: i64,
    /// Orders still to refund, and refunds the provider has yet to take.
    pending: i64,
    /// Refunds the provider refused: an operator has to look.
    failed: i64,
}

/// Cancels a concert (admin): its sale closes at once and the workers
/// refund every sold order in full. Asked again: the same cancellation.
#[utoipa::path(post, path = "/api/concerts/{id}/cancel", tag = "payments", security(("bearer" = [])),
    params(("id" = u64, Path)), request_body = CancelConcertRequest,
    responses((status = 202, body = CancellationResponse), (status = 400, body = Problem), (status = 401, body = Problem),
              (status = 403, body = Problem), (status = 404, body = Problem)))]
pub async fn cancel(
    State(state): State<PaymentsState>,
    staff: Staff,
    ApiPath(id): ApiPath<ConcertId>,
    ApiJson(req): ApiJson<CancelConcertRequest>,
) -> ApiResult<(StatusCode, Json<CancellationResponse>)> {
    let grant = staff
        .permit(&state.pool, On::Concert(id), Permission::CancelShow)
        .await?;
    let reason = req
        .reason
        .as_deref()
        .map(str::trim)
        .unwrap_or_default()
        .to_owned();
    let chars = reason.chars().count();
    if chars == 0 || chars > REASON_MAX_CHARS {
        return Err(FieldError::new(
            "reason",
            format!("say why, in 1 to {REASON_MAX_CHARS} characters (the fans are told)"),
        )
        .into());
    }
    let mut conn = state.pool.acquire().await?;
    whole::run(&mut conn, async |tx| {
        concerts::lock(tx, id)
            .await?
            .ok_or_else(ApiError::concert_not_found)?;
        let now = db::now(tx).await?;
        concerts::cancel(tx, id, &reason, now).await?;
        let did = Did {
            action: "concert.cancel",
            concert: Some(id),
            target: None,
            changes: &changed(Value::Null, json!({"reason": reason})),
        };
        staff.record(tx, grant, did).await?;
        Ok::<_, ApiError>(())
    })
    .await?;
    // Closed here at once; other instances within their terms' second,
    // and the workers fail whatever request reaches them.
    state.sales.forget(id);
    Ok((StatusCode::ACCEPTED, Json(read(&mut conn, id).await?)))
}

/// How a concert's cancellation stands (admin).
#[utoipa::path(get, path = "/api/concerts/{id}/cancellation", tag = "payments", security(("bearer" = [])),
    params(("id" = u64, Path)),
    responses((status = 200, body = CancellationResponse), (status = 401, body = Problem),
              (status = 403, body = Problem), (status = 404, body = Problem)))]
pub async fn progress(
    State(state): State<PaymentsState>,
    caller: AuthUser,
    ApiPath(id): ApiPath<ConcertId>,
) -> ApiResult<Json<CancellationResponse>> {
    permit_on(&state.pool, caller, On::Concert(id), Permission::CancelShow).await?;
    let mut conn = state.pool.acquire().await?;
    Ok(Json(read(&mut conn, id).await?))
}

async fn read(conn: &mut sqlx::MySqlConnection, id: ConcertId) -> ApiResult<CancellationResponse> {
    let concert = concerts::find(conn, id)
        .await?
        .ok_or_else(ApiError::concert_not_found)?;
    let progress = concerts::cancellation_progress(conn, id).await?;
    let status = match (concert.cancelled_at, progress.pending) {
        (None, _) => "NOT_CANCELLED",
        (Some(_), 0) => "DONE",
        (Some(_), _) => "REFUNDING",
    };
    Ok(CancellationResponse {
        concert_id: id.get(),
        status,
        cancelled_at: concert.cancelled_at,
        reason: concert.cancel_reason,
        refunded: progress.refunded,
        pending: progress.pending,
        failed: progress.failed,
    })
}
