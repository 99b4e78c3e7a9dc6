//! A concert's seats one by one: listed by anyone, added, changed and
//! removed by its organizer's staff (each write recorded). Long because
//! each write keeps a sold or requested seat's story intact in the same
//! handler that records it, beside the request and answer types they share.

use axum::extract::State;
use axum::http::{HeaderName, StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use ticket_core::db::{self, seats::SeatRow, whole};
use ticket_core::domain::{
    ConcertId, FieldError, PageRequest, Permission, PriceCategories, ReservationStatus, SeatId,
    SeatNumber, SeatStatus, keep,
};
use utoipa::{IntoParams, ToSchema};

use crate::concerts::state::ConcertsState;
use crate::error::{ApiError, ApiResult, ErrorCode, Problem};
use crate::extract::{ApiJson, ApiPath, ApiQuery, integral};
use crate::organizers::access::On;
use crate::organizers::audit::{Did, Staff, changed, seen};
use serde_json::{Value, json};

pub fn router() -> Router<ConcertsState> {
    Router::new()
        .route("/api/concerts/{id}/seats", get(list))
        .route("/api/seats", post(create))
        .route("/api/seats/{id}", get(show).patch(update).delete(remove))
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct SeatFilter {
    /// Only seats with this status.
    #[param(value_type = Option<String>, example = "AVAILABLE", pattern = "^(AVAILABLE|RESERVED)$")]
    status: Option<String>,
    /// Zero-based page number.
    #[param(maximum = 10000)]
    page: Option<u32>,
    /// Seats per page, 1–1,000 (default 1,000).
    #[param(minimum = 1, maximum = 1000)]
    size: Option<u32>,
}

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateSeatRequest {
    #[serde(deserialize_with = "integral::required")]
    concert_id: u64,
    /// 1–20 letters, digits, '-' or '_'; unique within the concert.
    #[schema(min_length = 1, max_length = 20, pattern = r"^[\w-]+$")]
    seat_number: String,
}

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UpdateSeatRequest {
    #[schema(min_length = 1, max_length = 20, pattern = r"^[\w-]+$")]
    seat_number: Option<String>,
    #[schema(example = "AVAILABLE", pattern = "^(AVAILABLE|RESERVED)$")]
    status: Option<String>,
    /// Moves the seat to the concert's category of this name (an unsold
    /// seat only: neither held nor sold).
    #[schema(min_length = 1, max_length = 40, example = "VIP")]
    category: Option<String>,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SeatResponse {
    id: u64,
    concert_id: u64,
    seat_number: String,
    #[schema(example = "AVAILABLE")]
    status: &'static str,
    /// Its price category's name; null when the concert has no prices.
    #[schema(example = "VIP")]
    category: Option<String>,
    /// In the currency's minor units; null when the concert has no prices.
    price: Option<u64>,
    currency: Option<String>,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SeatSummary {
    id: u64,
    seat_number: String,
    #[schema(example = "AVAILABLE")]
    status: &'static str,
    /// Its price category's name; null when the concert has no prices.
    #[schema(example = "VIP")]
    category: Option<String>,
    /// In the currency's minor units; null when the concert has no prices.
    price: Option<u64>,
}

impl From<SeatRow> for SeatResponse {
    fn from(s: SeatRow) -> Self {
        let price = s.price.into_price();
        Self {
            id: s.id.get(),
            concert_id: s.concert_id.get(),
            seat_number: s.seat_number,
            status: s.status.as_str(),
            category: price.as_ref().map(|p| p.category.clone()),
            price: price.as_ref().map(|p| p.price.get()),
            currency: price.map(|p| p.currency.as_str().to_owned()),
        }
    }
}

impl From<SeatRow> for SeatSummary {
    fn from(s: SeatRow) -> Self {
        let price = s.price.into_price();
        Self {
            id: s.id.get(),
            seat_number: s.seat_number,
            status: s.status.as_str(),
            category: price.as_ref().map(|p| p.category.clone()),
            price: price.map(|p| p.price.get()),
        }
    }
}

/// A valid change to a seat; absent fields stay as they are.
pub struct SeatChanges {
    number: Option<SeatNumber>,
    status: Option<SeatStatus>,
    /// A category's name, found in the seat's concert once it is locked.
    category: Option<String>,
}

impl TryFrom<UpdateSeatRequest> for SeatChanges {
    type Error = Vec<FieldError>;

    fn try_from(req: UpdateSeatRequest) -> Result<Self, Self::Error> {
        let mut errors = Vec::new();
        let number = keep(
            req.seat_number
                .as_deref()
                .map(SeatNumber::parse)
                .transpose(),
            &mut errors,
        );
        let status = keep(
            req.status.as_deref().map(SeatStatus::parse).transpose(),
            &mut errors,
        );
        let category = keep(
            req.category
                .as_deref()
                .map(|c| PriceCategories::parse_name("category", c))
                .transpose(),
            &mut errors,
        );
        match (number, status, category) {
            (Some(number), Some(status), Some(category)) => Ok(Self {
                number,
                status,
                category,
            }),
            _ => Err(errors),
        }
    }
}

/// A concert's seats in natural order (A1, A2, …, A10, …, B1), a page at a
/// time: the body is the page's seats, `X-Total-Count` the number of seats
/// that match, and `Link` the `first`, `prev`, `next` and `last` pages.
#[utoipa::path(get, path = "/api/concerts/{id}/seats", tag = "seats", params(("id" = u64, Path), SeatFilter),
    responses((status = 200, body = Vec<SeatSummary>, headers(
                  ("X-Total-Count" = u64, description = "seats matching the filter, over all pages"),
                  ("Link" = String, description = "RFC 8288 links to the first, prev, next and last pages"))),
              (status = 400, body = Problem), (status = 404, body = Problem), (status = 429, body = Problem)))]
pub async fn list(
    State(state): State<ConcertsState>,
    ApiPath(concert): ApiPath<ConcertId>,
    ApiQuery(filter): ApiQuery<SeatFilter>,
) -> ApiResult<impl IntoResponse> {
    let status = filter
        .status
        .as_deref()
        .map(SeatStatus::parse)
        .transpose()?;
    let page = PageRequest::parse_within(filter.page, filter.size, PageRequest::SEATS)?;
    let mut conn = state.pool.acquire().await?;
    let Some(found) = db::concerts::find(&mut conn, concert).await? else {
        return Err(ApiError::concert_not_found());
    };
    let total = match status {
        None => u64::from(found.seat_count),
        Some(status) => db::concerts::seat_counts(&mut conn, concert)
            .await?
            .of(status),
    };
    let seats = db::seats::list_for_concert(&mut conn, concert, status, page).await?;
    let body: Vec<SeatSummary> = seats.into_iter().map(Into::into).collect();
    let base = match status {
        None => format!("/api/concerts/{concert}/seats?"),
        Some(status) => format!("/api/concerts/{concert}/seats?status={}&", status.as_str()),
    };
    Ok((
        [
            (HeaderName::from_static("x-total-count"), total.to_string()),
            (header::LINK, page_links(&base, page, total)),
        ],
        Json(body),
    ))
}

/// RFC 8288 links to the neighbouring and outer pages of `page`.
fn page_links(base: &str, page: PageRequest, total: u64) -> String {
    let last = page.total_pages(total).saturating_sub(1);
    let link = |n: u64, rel: &str| format!("<{base}page={n}&size={}>; rel=\"{rel}\"", page.size);
    let current = u64::from(page.page);
    let mut links = vec![link(0, "first")];
    if current > 0 {
        links.push(link((current - 1).min(last), "prev"));
    }
    if current < last {
        links.push(link(current + 1, "next"));
    }
    links.push(link(last, "last"));
    links.join(", ")
}

/// One seat.
#[utoipa::path(get, path = "/api/seats/{id}", tag = "seats", params(("id" = u64, Path)),
    responses((status = 200, body = SeatResponse), (status = 400, body = Problem), (status = 404, body = Problem)))]
pub async fn show(
    State(state): State<ConcertsState>,
    ApiPath(id): ApiPath<SeatId>,
) -> ApiResult<Json<SeatResponse>> {
    let mut conn = state.pool.acquire().await?;
    let seat = db::seats::find(&mut conn, id)
        .await?
        .ok_or_else(ApiError::seat_not_found)?;
    Ok(Json(seat.into()))
}

/// Adds a seat to a concert (admin).
#[utoipa::path(post, path = "/api/seats", tag = "seats", security(("bearer" = [])), request_body = CreateSeatRequest,
    responses((status = 201, body = SeatResponse), (status = 400, body = Problem), (status = 401, body = Problem),
              (status = 403, body = Problem), (status = 404, body = Problem), (status = 409, body = Problem)))]
pub async fn create(
    State(state): State<ConcertsState>,
    staff: Staff,
    ApiJson(req): ApiJson<CreateSeatRequest>,
) -> ApiResult<impl IntoResponse> {
    let grant = staff
        .permit(
            &state.pool,
            On::Concert(ConcertId(req.concert_id)),
            Permission::EditConcerts,
        )
        .await?;
    let number = SeatNumber::parse(&req.seat_number)?;
    let concert = ConcertId(req.concert_id);
    let mut conn = state.pool.acquire().await?;
    let (id, seat) = whole::run(&mut conn, async |tx| {
        if db::concerts::lock(tx, concert).await?.is_none() {
            return Err(ApiError::concert_not_found());
        }
        let now = db::now(tx).await?;
        let id = db::seats::insert(tx, concert, &number, now).await?;
        db::concerts::adjust_seat_count(tx, concert, 1).await?;
        if let Some(categories) = db::prices::of_concert(tx, concert).await? {
            let seat = [(id, number.as_str().to_owned())];
            db::prices::assign(tx, &categories, &seat).await?;
        }
        let seat = SeatResponse::from(
            db::seats::find(tx, id)
                .await?
                .ok_or_else(ApiError::seat_not_found)?,
        );
        let did = Did {
            action: "seat.create",
            concert: Some(concert),
            target: Some(format!("seat {id}")),
            changes: &changed(Value::Null, seen(&seat)),
        };
        staff.record(tx, grant, did).await?;
        Ok((id, seat))
    })
    .await?;
    Ok((
        StatusCode::CREATED,
        [(header::LOCATION, format!("/api/seats/{id}"))],
        Json(seat),
    ))
}

/// Renumbers a seat or sets its status (admin). Refuses any change that would
/// contradict a CONFIRMED reservation: the status must stay RESERVED while the
/// seat is sold and AVAILABLE while it is not, and a sold seat keeps its number,
/// as does a seat with pending requests.
#[utoipa::path(patch, path = "/api/seats/{id}", tag = "seats", security(("bearer" = [])), params(("id" = u64, Path)),
    request_body = UpdateSeatRequest,
    responses((status = 200, body = SeatResponse), (status = 400, body = Problem), (status = 401, body = Problem),
              (status = 403, body = Problem), (status = 404, body = Problem), (status = 409, body = Problem)))]
pub async fn update(
    State(state): State<ConcertsState>,
    staff: Staff,
    ApiPath(id): ApiPath<SeatId>,
    ApiJson(req): ApiJson<UpdateSeatRequest>,
) -> ApiResult<Json<SeatResponse>> {
    let grant = staff
        .permit(&state.pool, On::Seat(id), Permission::EditConcerts)
        .await?;
    let changes = SeatChanges::try_from(req)?;
    let mut conn = state.pool.acquire().await?;
    let seat = whole::run(&mut conn, async |tx| {
        let locked = db::seats::find_for_update(tx, id)
            .await?
            .ok_or_else(ApiError::seat_not_found)?;
        let before = seen(&SeatResponse::from(
            db::seats::find(tx, id)
                .await?
                .ok_or_else(ApiError::seat_not_found)?,
        ));
        let now = db::now(tx).await?;
        let claim = db::seats::live_claim(tx, id, now).await?;
        let sold = claim.is_some();
        let consistent = match claim {
            Some(ReservationStatus::Held) => SeatStatus::Held,
            Some(_) => SeatStatus::Reserved,
            None => SeatStatus::Available,
        };
        // A waiting request must get the seat it asked for, by the number it saw.
        if changes.number.is_some() && db::seats::has_open_requests(tx, id).await? {
            return Err(ApiError::new(
                ErrorCode::SeatStatusConflict,
                "the seat has pending requests: its number cannot change until they are decided",
            ));
        }
        if changes.status.is_some_and(|s| s != consistent) || (sold && changes.number.is_some()) {
            return Err(ApiError::new(
                ErrorCode::SeatStatusConflict,
                format!(
                    "the seat is {}: that change would contradict its reservations",
                    match claim {
                        Some(ReservationStatus::Held) => "held",
                        Some(_) => "sold",
                        None => "neither held nor sold",
                    }
                ),
            ));
        }
        if let Some(name) = &changes.category {
            // A held or sold seat keeps the price it was decided at; moving it
            // would change what the map says it cost.
            if sold {
                return Err(ApiError::new(
                    ErrorCode::SeatStatusConflict,
                    "the seat is held or sold: only an unsold seat changes category",
                ));
            }
            let position = db::prices::of_concert(tx, locked.concert_id)
                .await?
                .and_then(|c| c.position_of(name))
                .ok_or_else(|| {
                    FieldError::new("category", format!("the concert has no category {name:?}"))
                })?;
            db::prices::move_seat(tx, id, position).await?;
        }
        db::seats::update(tx, id, changes.number.as_ref(), changes.status, now).await?;
        let seat = SeatResponse::from(
            db::seats::find(tx, id)
                .await?
                .ok_or_else(ApiError::seat_not_found)?,
        );
        let did = Did {
            action: "seat.change",
            concert: Some(locked.concert_id),
            target: Some(format!("seat {id}")),
            changes: &changed(before, seen(&seat)),
        };
        staff.record(tx, grant, did).await?;
        Ok(seat)
    })
    .await?;
    Ok(Json(seat))
}

/// Deletes a seat that nobody ever requested or held (admin).
#[utoipa::path(delete, path = "/api/seats/{id}", tag = "seats", security(("bearer" = [])), params(("id" = u64, Path)),
    responses((status = 204), (status = 400, body = Problem), (status = 401, body = Problem), (status = 403, body = Problem),
              (status = 404, body = Problem), (status = 409, body = Problem)))]
pub async fn remove(
    State(state): State<ConcertsState>,
    staff: Staff,
    ApiPath(id): ApiPath<SeatId>,
) -> ApiResult<StatusCode> {
    let grant = staff
        .permit(&state.pool, On::Seat(id), Permission::EditConcerts)
        .await?;
    let mut conn = state.pool.acquire().await?;
    whole::run(&mut conn, async |tx| {
        // Seat before concert: the order in which a whole concert is deleted
        // and a deciding worker takes them.
        let seat = db::seats::find_for_update(tx, id)
            .await?
            .ok_or_else(ApiError::seat_not_found)?;
        let concert = seat.concert_id;
        db::concerts::lock(tx, concert).await?;
        if seat.status != SeatStatus::Available || db::seats::has_history(tx, id).await? {
            return Err(ApiError::new(
                ErrorCode::SeatDeleteForbidden,
                "the seat has reservation requests or reservations; it can no longer be deleted",
            ));
        }
        db::seats::delete(tx, id).await?;
        db::concerts::adjust_seat_count(tx, concert, -1).await?;
        let did = Did {
            action: "seat.delete",
            concert: Some(concert),
            target: Some(format!("seat {id}")),
            changes: &changed(json!({"seatNumber": seat.seat_number}), Value::Null),
        };
        staff.record(tx, grant, did).await
    })
    .await?;
    Ok(StatusCode::NO_CONTENT)
}
