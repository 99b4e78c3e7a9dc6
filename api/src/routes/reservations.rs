use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use chrono::{DateTime, Utc};
use opentelemetry::trace::TraceContextExt as _;
use serde::{Deserialize, Serialize};
use ticket_core::db::{self, outbox, queue, reservations, seats};
use ticket_core::domain::{
    IdempotencyKey, PageRequest, QueueId, ReservationId, ReservationStatus, SeatId, UserId,
};
use ticket_core::telemetry::{propagation, spans};
use tracing::Instrument as _;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;
use utoipa::{IntoParams, ToSchema};

use super::concerts::PageQuery;
use crate::enqueue_batcher::EnqueueError;
use crate::error::{ApiError, ApiResult, ErrorCode, Problem};
use crate::extract::{ApiJson, ApiPath, ApiQuery, AuthUser, integral};
use crate::state::AppState;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/api/reservations", post(enqueue))
        .route("/api/reservations/status/{id}", get(status))
        .route("/api/reservations/cancel", post(cancel))
        .route("/api/reservations/{id}", get(show))
        .route("/api/users/me/reservations", get(mine))
}

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReserveRequest {
    #[serde(deserialize_with = "integral::required")]
    seat_id: u64,
    /// Optional; when given it must be the caller's own id.
    #[serde(default, deserialize_with = "integral::optional")]
    user_id: Option<u64>,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReserveResponse {
    queue_id: u64,
    #[schema(example = "PENDING")]
    status: &'static str,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct QueueStatusResponse {
    queue_id: u64,
    /// PENDING, PROCESSING, SUCCESS or FAILED.
    #[schema(example = "SUCCESS")]
    status: &'static str,
    /// Set on SUCCESS.
    reservation_id: Option<u64>,
    seat_id: u64,
    /// Set on FAILED, e.g. SEAT_TAKEN.
    reason: Option<String>,
    /// When the request was accepted (server clock, UTC).
    requested_at: DateTime<Utc>,
    /// When a worker decided it; null while PENDING or PROCESSING.
    decided_at: Option<DateTime<Utc>>,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReservationResponse {
    reservation_id: u64,
    user_id: u64,
    concert_id: u64,
    seat_id: u64,
    seat_number: String,
    /// CONFIRMED or CANCELLED.
    #[schema(example = "CONFIRMED")]
    status: &'static str,
    created_at: DateTime<Utc>,
}

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CancelRequest {
    #[serde(deserialize_with = "integral::required")]
    reservation_id: u64,
    #[serde(default, deserialize_with = "integral::optional")]
    user_id: Option<u64>,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CancelResponse {
    reservation_id: u64,
    #[schema(example = "CANCELLED")]
    status: &'static str,
}

#[derive(IntoParams)]
#[into_params(parameter_in = Header)]
pub struct IdempotencyHeader {
    /// Repeating a request with the same key returns the original answer
    /// instead of queueing a second request (1–128 visible ASCII characters).
    #[param(
        rename = "Idempotency-Key",
        min_length = 1,
        max_length = 128,
        pattern = r"^[\x21-\x7E]+$"
    )]
    _key: Option<String>,
}

impl From<reservations::ReservationRow> for ReservationResponse {
    fn from(r: reservations::ReservationRow) -> Self {
        Self {
            reservation_id: r.id.get(),
            user_id: r.user_id.get(),
            concert_id: r.concert_id.get(),
            seat_id: r.seat_id.get(),
            seat_number: r.seat_number,
            status: r.status.as_str(),
            created_at: r.created_at,
        }
    }
}

/// The body's optional userId must name the caller.
fn ensure_self(caller: AuthUser, user_id: Option<u64>) -> ApiResult<()> {
    match user_id {
        Some(id) if UserId(id) != caller.id => Err(ApiError::new(
            ErrorCode::Forbidden,
            "you may only act for yourself",
        )),
        _ => Ok(()),
    }
}

fn accepted(queue_id: QueueId, replayed: bool) -> Response {
    let mut response = (
        StatusCode::CREATED,
        [(
            header::LOCATION,
            format!("/api/reservations/status/{queue_id}"),
        )],
        Json(ReserveResponse {
            queue_id: queue_id.get(),
            status: "PENDING",
        }),
    )
        .into_response();
    if replayed {
        response
            .headers_mut()
            .insert("idempotent-replayed", HeaderValue::from_static("true"));
    }
    response
}

/// Queues a reservation request and answers at once; poll the Location.
#[utoipa::path(post, path = "/api/reservations", tag = "reservations", security(("bearer" = [])),
    request_body = ReserveRequest, params(IdempotencyHeader),
    responses((status = 201, body = ReserveResponse), (status = 400, body = Problem), (status = 401, body = Problem),
              (status = 403, body = Problem), (status = 404, body = Problem), (status = 409, body = Problem),
              (status = 503, body = Problem)))]
pub async fn enqueue(
    State(state): State<AppState>,
    caller: AuthUser,
    headers: HeaderMap,
    ApiJson(req): ApiJson<ReserveRequest>,
) -> ApiResult<Response> {
    ensure_self(caller, req.user_id)?;
    let key = match headers.get("idempotency-key") {
        Some(v) => Some(IdempotencyKey::parse(v.to_str().unwrap_or("\u{0}"))?),
        None => None,
    };
    let seat = SeatId(req.seat_id);
    // Most requests are not sampled: their row carries the request's own
    // (unsampled) context, and no producer span is made for nobody to see.
    let current = tracing::Span::current().context();
    if !current.span().span_context().is_sampled() {
        let (id, replayed) = place(&state, caller, seat, key, current).await?;
        return Ok(accepted(id, replayed));
    }
    // The producer span: the queue row carries its context to the worker,
    // whose processing of the row continues this trace.
    let send = spans::send_span();
    let context = send.context();
    let placed = place(&state, caller, seat, key, context)
        .instrument(send.clone())
        .await;
    if let Ok((id, _)) = &placed {
        send.record("messaging.message.id", id.get());
    }
    placed.map(|(id, replayed)| accepted(id, replayed))
}

fn too_many_open() -> ApiError {
    ApiError::rate_limited(
        "you have too many open reservation requests; wait for their decisions",
        1,
    )
}

fn refused(e: EnqueueError) -> ApiError {
    match e {
        EnqueueError::TooManyOpen => too_many_open(),
        EnqueueError::Duplicate(existing) => ApiError::duplicate_request(existing),
        EnqueueError::SeatNotFound => super::seats::seat_not_found(),
        EnqueueError::UserGone => ApiError::account_gone(),
        EnqueueError::Database(e) => e.into(),
    }
}

/// Queues the request; `(queue id, replayed)`.
async fn place(
    state: &AppState,
    caller: AuthUser,
    seat: SeatId,
    key: Option<IdempotencyKey>,
    context: opentelemetry::Context,
) -> ApiResult<(QueueId, bool)> {
    let trace = propagation::stored_form(&context);
    let Some(key) = key else {
        // The common case: written together with concurrent requests.
        let request = queue::NewRequest {
            user: caller.id,
            seat,
            trace,
        };
        return match state.enqueuer.enqueue(request, context).await {
            Ok(id) => Ok((id, false)),
            Err(e) => Err(refused(e)),
        };
    };
    let mut conn = state.pool.acquire().await?;
    let limit = state.limits.max_open_requests_per_user();
    if limit > 0 {
        let open = queue::open_counts(&mut conn, &[caller.id]).await?;
        // A replayed key does not add a request: let it through to answer.
        if open.get(&caller.id).copied().unwrap_or(0) >= u64::from(limit)
            && queue::find_by_idempotency_key(&mut conn, caller.id, &key)
                .await?
                .is_none()
        {
            return Err(too_many_open());
        }
    }
    match queue::enqueue(&mut conn, caller.id, seat, Some(&key), &trace, db::now()).await {
        Ok(id) => Ok((id, false)),
        Err(e) => {
            // The same key again (the server may name either key it broke):
            // answer as the first time, if it was the same request.
            if db::violated_unique_key(&e).is_some()
                && let Some(original) =
                    queue::find_by_idempotency_key(&mut conn, caller.id, &key).await?
            {
                if original.seat_id != seat {
                    return Err(ApiError::new(
                        ErrorCode::IdempotencyKeyReused,
                        "this Idempotency-Key was used for a different request",
                    ));
                }
                return Ok((original.id, true));
            }
            Err(refused(
                EnqueueError::from_insert(&mut conn, (caller.id, seat), e).await,
            ))
        }
    }
}

/// Where a queued request stands. Only its owner (or an admin) sees it.
#[utoipa::path(get, path = "/api/reservations/status/{id}", tag = "reservations", security(("bearer" = [])),
    params(("id" = u64, Path, description = "queueId")),
    responses((status = 200, body = QueueStatusResponse), (status = 400, body = Problem), (status = 401, body = Problem),
              (status = 404, body = Problem)))]
pub async fn status(
    State(state): State<AppState>,
    caller: AuthUser,
    ApiPath(id): ApiPath<QueueId>,
) -> ApiResult<Json<QueueStatusResponse>> {
    let mut conn = state.pool.acquire().await?;
    let row = queue::find(&mut conn, id)
        .await?
        .filter(|row| caller.can_act_on(row.user_id))
        .ok_or_else(|| ApiError::new(ErrorCode::QueueNotFound, "no such request"))?;
    Ok(Json(QueueStatusResponse {
        queue_id: row.id.get(),
        status: row.status.as_str(),
        reservation_id: row.reservation_id.map(ReservationId::get),
        seat_id: row.seat_id.get(),
        reason: row.reason,
        requested_at: row.created_at,
        decided_at: row.decided_at,
    }))
}

/// One reservation. Only its owner (or an admin) sees it.
#[utoipa::path(get, path = "/api/reservations/{id}", tag = "reservations", security(("bearer" = [])),
    params(("id" = u64, Path)),
    responses((status = 200, body = ReservationResponse), (status = 400, body = Problem), (status = 401, body = Problem),
              (status = 404, body = Problem)))]
pub async fn show(
    State(state): State<AppState>,
    caller: AuthUser,
    ApiPath(id): ApiPath<ReservationId>,
) -> ApiResult<Json<ReservationResponse>> {
    let mut conn = state.pool.acquire().await?;
    let reservation = reservations::find(&mut conn, id)
        .await?
        .filter(|r| caller.can_act_on(r.user_id))
        .ok_or_else(reservation_not_found)?;
    Ok(Json(reservation.into()))
}

/// The caller's reservations, newest first.
#[utoipa::path(get, path = "/api/users/me/reservations", tag = "reservations", security(("bearer" = [])),
    params(PageQuery),
    responses((status = 200, body = Vec<ReservationResponse>), (status = 400, body = Problem), (status = 401, body = Problem)))]
pub async fn mine(
    State(state): State<AppState>,
    caller: AuthUser,
    ApiQuery(q): ApiQuery<PageQuery>,
) -> ApiResult<Json<Vec<ReservationResponse>>> {
    let page = PageRequest::parse(q.page, q.size)?;
    let mut conn = state.pool.acquire().await?;
    let rows = reservations::list_for_user(&mut conn, caller.id, page).await?;
    Ok(Json(rows.into_iter().map(Into::into).collect()))
}

/// Cancels a CONFIRMED reservation; its seat becomes AVAILABLE in the same
/// transaction and can be booked again.
#[utoipa::path(post, path = "/api/reservations/cancel", tag = "reservations", security(("bearer" = [])),
    request_body = CancelRequest,
    responses((status = 200, body = CancelResponse), (status = 400, body = Problem), (status = 401, body = Problem),
              (status = 403, body = Problem), (status = 404, body = Problem), (status = 409, body = Problem)))]
pub async fn cancel(
    State(state): State<AppState>,
    caller: AuthUser,
    ApiJson(req): ApiJson<CancelRequest>,
) -> ApiResult<Json<CancelResponse>> {
    ensure_self(caller, req.user_id)?;
    let id = ReservationId(req.reservation_id);
    let mut tx = state.pool.begin().await?;
    // Someone else's reservation answers exactly like a missing one, so ids
    // cannot be probed for existence through cancel.
    let (_, seat, status) = reservations::lock(&mut tx, id)
        .await?
        .filter(|(owner, _, _)| caller.can_act_on(*owner))
        .ok_or_else(reservation_not_found)?;
    if status != ReservationStatus::Confirmed {
        return Err(ApiError::new(
            ErrorCode::ReservationCancelForbidden,
            "only a CONFIRMED reservation can be cancelled",
        ));
    }
    let now = db::now();
    reservations::cancel(&mut tx, id, now).await?;
    seats::release(&mut tx, seat, now).await?;
    outbox::record_cancelled(&mut tx, id, now).await?;
    tx.commit().await?;
    Ok(Json(CancelResponse {
        reservation_id: id.get(),
        status: "CANCELLED",
    }))
}

fn reservation_not_found() -> ApiError {
    ApiError::new(ErrorCode::ReservationNotFound, "no such reservation")
}
