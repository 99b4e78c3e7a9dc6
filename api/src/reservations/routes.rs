use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use opentelemetry::trace::TraceContextExt as _;
use serde::{Deserialize, Serialize};
use ticket_core::db::{self, queue, request_seats, reservations};
use ticket_core::domain::{
    AccessCode, Asked, ConcertId, FieldError, IdempotencyKey, LineKey, MaxSeatsPerUser,
    PageRequest, PoolName, QueueId, ReservationId, SaleWindow, SeatId, SeatIds, UserId,
};
use ticket_core::telemetry::{propagation, spans};
use tracing::Instrument as _;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;
use utoipa::ToSchema;

use super::alone;
use super::status::{LineFields, QueueStatusResponse, own_request};
use super::view::{IdempotencyHeader, ReservationResponse, ensure_self};
use crate::concerts::sale_windows::SaleTerms;
use crate::error::{ApiError, ApiResult, Problem};
use crate::extract::PageQuery;
use crate::extract::{ApiJson, ApiPath, ApiQuery, AuthUser, integral};
use crate::reservations::enqueue_batcher::Queued;
use crate::reservations::state::ReservationsState;

pub fn router() -> Router<ReservationsState> {
    Router::new()
        .route("/api/reservations", post(enqueue))
        .route("/api/reservations/status/{id}", get(status))
        .route("/api/reservations/{id}", get(show))
        .route("/api/users/me/reservations", get(mine))
}

/// One seat (`seatId`), an order of several (`seatIds`), or the best
/// `count` seats of a price category (`concertId`, `category`, `count`):
/// one of the three.
#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReserveRequest {
    #[serde(default, deserialize_with = "integral::optional")]
    seat_id: Option<u64>,
    /// 1 to the concert's `maxSeatsPerOrder` distinct seats of one concert,
    /// all or nothing.
    #[serde(default, deserialize_with = "integral::optional_list")]
    #[schema(max_items = 10, min_items = 1)]
    seat_ids: Option<Vec<u64>>,
    /// Best available: the concert (required with `category` or `area`).
    #[serde(default, deserialize_with = "integral::optional")]
    concert_id: Option<u64>,
    /// Best available: the name of one of the concert's price categories.
    /// The line gives `count` seats side by side in one row, the best its
    /// earlier requests left (front row first, centre first; a seating
    /// plan's order).
    #[schema(max_length = 40, example = "Stalls")]
    category: Option<String>,
    /// Standing: the name of one of the concert's standing areas. The line
    /// gives `count` places of it, the lowest entry numbers its earlier
    /// requests left.
    #[schema(max_length = 40, example = "Floor")]
    area: Option<String>,
    /// Best available and standing: 1 to the concert's `maxSeatsPerOrder`.
    #[serde(default, deserialize_with = "integral::optional")]
    #[schema(minimum = 1, maximum = 10)]
    count: Option<u64>,
    /// Best available: when no `count` seats side by side are free, the
    /// best seats in the fewest blocks instead of NO_ADJACENT_SEATS.
    allow_split: Option<bool>,
    /// Optional; when given it must be the caller's own id.
    #[serde(default, deserialize_with = "integral::optional")]
    pub(super) user_id: Option<u64>,
    /// During the concert's presale: an access code (case, dashes and
    /// spaces do not matter). It binds to the first account that uses it.
    #[schema(max_length = 64, example = "ABCD-EFGH-JKMN-PQRS")]
    pub(super) access_code: Option<String>,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReserveResponse {
    queue_id: u64,
    /// PENDING, or WAITING when placed in the pre-opening lottery.
    #[schema(example = "PENDING")]
    status: &'static str,
}

fn accepted(queued: Queued, replayed: bool) -> Response {
    let mut response = (
        StatusCode::CREATED,
        [(
            header::LOCATION,
            format!("/api/reservations/status/{}", queued.id),
        )],
        Json(ReserveResponse {
            queue_id: queued.id.get(),
            status: queued.status.as_str(),
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

/// Queues a reservation request for one seat or several (all or nothing)
/// and answers at once; poll the Location.
#[utoipa::path(post, path = "/api/reservations", tag = "reservations", security(("bearer" = [])),
    request_body = ReserveRequest, params(IdempotencyHeader),
    responses((status = 201, body = ReserveResponse), (status = 400, body = Problem), (status = 401, body = Problem),
              (status = 403, body = Problem), (status = 404, body = Problem), (status = 409, body = Problem),
              (status = 503, body = Problem)))]
pub async fn enqueue(
    State(state): State<ReservationsState>,
    caller: AuthUser,
    headers: HeaderMap,
    ApiJson(req): ApiJson<ReserveRequest>,
) -> ApiResult<Response> {
    ensure_self(caller, req.user_id)?;
    let key = match headers.get("idempotency-key") {
        Some(v) => Some(IdempotencyKey::parse(v.to_str().unwrap_or("\u{0}"))?),
        None => None,
    };
    // A code that cannot be one is as unknown as a wrong one.
    let access_code = match req.access_code.as_deref().map(AccessCode::parse) {
        None => None,
        Some(Ok(code)) => Some(code),
        Some(Err(_)) => return Err(ApiError::access_code_invalid()),
    };
    let (concert, asked, named, terms) = asked(&state, &req).await?;
    // Whether the sale takes the request yet, and in the lottery or behind
    // the line, is decided when it is written, by the database's clock.
    let terms = match terms {
        Some(terms) => terms,
        None => state.sales.terms(&state.pool, concert).await?,
    };
    let admitted = async {
        terms.ensure_selling()?;
        if terms.proof_of_work.is_on() {
            crate::proof_of_work::pay(&state.challenges, &state.pool, &headers, caller.id, concert)
                .await?;
        }
        Ok::<_, ApiError>(())
    };
    if let Err(refused) = admitted.await {
        return replayed_or(&state, caller.id, &asked, key.as_ref(), refused).await;
    }
    let order = Order {
        user: caller.id,
        concert,
        asked,
        named,
        pools_version: terms.pools_version,
        sale: terms.window,
        max_seats_per_user: terms.max_seats_per_user,
        access_code,
    };
    // Most requests are not sampled: their row carries the request's own
    // (unsampled) context, and no producer span is made for nobody to see.
    let current = tracing::Span::current().context();
    if !current.span().span_context().is_sampled() {
        let (queued, replayed) = place(&state, order, key, current).await?;
        return Ok(accepted(queued, replayed));
    }
    // The producer span: the queue row carries its context to the worker,
    // whose processing of the row continues this trace.
    let send = spans::send_span();
    let context = send.context();
    let placed = place(&state, order, key, context)
        .instrument(send.clone())
        .await;
    if let Ok((queued, _)) = &placed {
        send.record("messaging.message.id", queued.id.get());
    }
    placed.map(|(queued, replayed)| accepted(queued, replayed))
}

/// A request refused before it is written (its show cancelled since, its
/// proof of work spent) may be a client's retry of one taken before with
/// its key: that one is answered again, as a replay always is; else the
/// refusal.
async fn replayed_or(
    state: &ReservationsState,
    user: UserId,
    asked: &Asked,
    key: Option<&IdempotencyKey>,
    refused: ApiError,
) -> ApiResult<Response> {
    let Some(key) = key else {
        return Err(refused);
    };
    let mut conn = state.pool.acquire().await?;
    match alone::replay(&mut conn, user, asked, key).await? {
        Some(queued) => Ok(accepted(queued, true)),
        None => Err(refused),
    }
}

/// What `req` asks for, of which concert: 400 unless it is exactly one of
/// a seat, seats, a category's best, or an area's places. A request by
/// count comes with its concert's terms, read to name its pool.
pub(super) async fn asked(
    state: &ReservationsState,
    req: &ReserveRequest,
) -> ApiResult<(ConcertId, Asked, Option<PoolName>, Option<SaleTerms>)> {
    let by_count = req.count.is_some() || req.allow_split.is_some();
    let pool = match (&req.category, &req.area) {
        (Some(category), None) => Some(PoolName::Category(category.clone())),
        (None, Some(area)) if req.allow_split.is_none() => Some(PoolName::Area(area.clone())),
        (None, None) => None,
        _ => {
            return Err(FieldError::new(
                "area",
                "give category (with count, optionally allowSplit) or area (with count)",
            )
            .into());
        }
    };
    let mut read_terms = None;
    let (concert, asked) = match (req.seat_id, &req.seat_ids, &pool) {
        (Some(seat), None, None) if !by_count => {
            let seats = SeatIds::one(SeatId(seat));
            let concert = state.seats.concert_of(&state.pool, seats.first()).await?;
            (concert, Asked::Seats(seats))
        }
        (None, Some(list), None) if !by_count => {
            let seats = SeatIds::parse(list)?;
            let concert = state.seats.concert_of_order(&state.pool, &seats).await?;
            (concert, Asked::Seats(seats))
        }
        (None, None, Some(pool)) => {
            let Some(concert) = req.concert_id.map(ConcertId) else {
                let message = format!("is required with {}", pool.field());
                return Err(FieldError::new("concertId", message).into());
            };
            let Some(count) = req.count else {
                let message = format!("is required with {}", pool.field());
                return Err(FieldError::new("count", message).into());
            };
            let split = req.allow_split.unwrap_or(false);
            let Some(terms) = state.sales.of_existing(&state.pool, concert).await? else {
                return Err(ApiError::concert_not_found());
            };
            let ask = super::best::ask(&terms, pool, count, split)?;
            read_terms = Some(terms);
            (concert, Asked::Best(ask))
        }
        _ => {
            return Err(FieldError::new(
                "seatIds",
                "give one of seatId, seatIds, category with count, or area with count",
            )
            .into());
        }
    };
    if req.concert_id.is_some_and(|c| c != concert.get()) {
        return Err(FieldError::new("concertId", "is not the concert of these seats").into());
    }
    Ok((concert, asked, pool, read_terms))
}

/// What a caller asks for, checked.
pub(super) struct Order {
    pub(super) user: UserId,
    pub(super) concert: ConcertId,
    pub(super) asked: Asked,
    /// The category or area a request by count named (named again where
    /// it is written if the concert's pools moved since `pools_version`).
    pub(super) named: Option<PoolName>,
    /// The concert's pools version its terms were read at.
    pub(super) pools_version: u32,
    pub(super) sale: SaleWindow,
    pub(super) max_seats_per_user: MaxSeatsPerUser,
    pub(super) access_code: Option<AccessCode>,
}

/// Queues the request; `(queue id, replayed)`. A new one counts in the
/// concert's requests per second.
pub(super) async fn place(
    state: &ReservationsState,
    order: Order,
    key: Option<IdempotencyKey>,
    context: opentelemetry::Context,
) -> ApiResult<(Queued, bool)> {
    let concert = order.concert;
    let placed = place_uncounted(state, order, key, context).await?;
    if !placed.1 {
        state.request_rates.count([concert]);
    }
    Ok(placed)
}

async fn place_uncounted(
    state: &ReservationsState,
    order: Order,
    key: Option<IdempotencyKey>,
    context: opentelemetry::Context,
) -> ApiResult<(Queued, bool)> {
    let request = queue::NewRequest {
        user: order.user,
        concert: order.concert,
        asked: order.asked,
        named: order.named,
        pools_version: order.pools_version,
        key,
        sale: order.sale,
        draw: LineKey::draw(),
        max_seats_per_user: order.max_seats_per_user,
        access_code: None,
        trace: propagation::stored_form(&context),
    };
    match order.access_code {
        // The common case: written together with concurrent requests.
        None => state.enqueuer.enqueue(request, context).await,
        // The code's row is locked while what it has taken is counted.
        Some(code) => {
            let limit = state.limits.max_open_requests_per_user();
            alone::place(&state.pool, limit, request, Some(code)).await
        }
    }
}

/// Where a queued request stands, and while it is open its place in line
/// and when to ask again. Only its owner (or an admin) sees it.
#[utoipa::path(get, path = "/api/reservations/status/{id}", tag = "reservations", security(("bearer" = [])),
    params(("id" = u64, Path, description = "queueId")),
    responses((status = 200, body = QueueStatusResponse), (status = 400, body = Problem), (status = 401, body = Problem),
              (status = 404, body = Problem)))]
pub async fn status(
    State(state): State<ReservationsState>,
    caller: AuthUser,
    ApiPath(id): ApiPath<QueueId>,
) -> ApiResult<Json<QueueStatusResponse>> {
    let mut conn = state.pool.acquire().await?;
    let (row, lottery_place) = own_request(&mut conn, caller, id).await?;
    let seat_ids = request_seats::shown_for(&mut conn, &[&row])
        .await?
        .remove(&row.id)
        .unwrap_or_default()
        .iter()
        .map(|s| s.get())
        .collect();
    drop(conn);
    let line = LineFields::of(&state, &row, lottery_place).await?;
    Ok(Json(QueueStatusResponse::of(row, seat_ids, line)))
}

/// One reservation, to its owner and to staff finding orders
/// (FIND_ORDERS).
#[utoipa::path(get, path = "/api/reservations/{id}", tag = "reservations", security(("bearer" = [])),
    params(("id" = u64, Path)),
    responses((status = 200, body = ReservationResponse), (status = 400, body = Problem), (status = 401, body = Problem),
              (status = 404, body = Problem)))]
pub async fn show(
    State(state): State<ReservationsState>,
    caller: AuthUser,
    ApiPath(id): ApiPath<ReservationId>,
) -> ApiResult<Json<ReservationResponse>> {
    let mut conn = state.pool.acquire().await?;
    let reservation = crate::reservations::view::readable(&mut conn, caller, id).await?;
    Ok(Json(reservation.into()))
}

/// The caller's reservations, newest first.
#[utoipa::path(get, path = "/api/users/me/reservations", tag = "reservations", security(("bearer" = [])),
    params(PageQuery),
    responses((status = 200, body = Vec<ReservationResponse>), (status = 400, body = Problem), (status = 401, body = Problem)))]
pub async fn mine(
    State(state): State<ReservationsState>,
    caller: AuthUser,
    ApiQuery(q): ApiQuery<PageQuery>,
) -> ApiResult<Json<Vec<ReservationResponse>>> {
    let page = PageRequest::parse(q.page, q.size)?;
    let mut conn = state.pool.acquire().await?;
    let now = db::now(&mut conn).await?;
    let rows = reservations::list_for_user(&mut conn, caller.id, page, now).await?;
    Ok(Json(rows.into_iter().map(Into::into).collect()))
}
