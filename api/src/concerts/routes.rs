use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use axum::{Json, Router};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use ticket_core::db::{self, concerts::ConcertRow};
use ticket_core::domain::{
    ConcertDate, ConcertId, ConcertTitle, FieldError, HoldDuration, LotteryWindow,
    MaxSeatsPerOrder, OpensAt, PageRequest, SeatLayout, Venue, keep,
};
use utoipa::ToSchema;

use crate::error::{ApiError, ApiResult, ErrorCode, Problem};
use crate::extract::{Admin, ApiJson, ApiPath, ApiQuery, PageQuery, integral};
use crate::state::AppState;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/api/concerts", get(list).post(create))
        .route("/api/concerts/{id}", get(show).patch(update).delete(remove))
}

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateConcertRequest {
    #[schema(
        min_length = 1,
        max_length = 200,
        pattern = r"^[^\x00-\x1F\x7F-\x9F]*[^\s\x00-\x1F\x7F-\x9F][^\x00-\x1F\x7F-\x9F]*$"
    )]
    title: String,
    #[schema(
        min_length = 1,
        max_length = 200,
        pattern = r"^[^\x00-\x1F\x7F-\x9F]*[^\s\x00-\x1F\x7F-\x9F][^\x00-\x1F\x7F-\x9F]*$"
    )]
    venue: String,
    /// RFC 3339, in the future.
    #[schema(example = "2030-05-01T19:00:00+09:00", format = DateTime)]
    concert_date: String,
    /// Rows lettered A…Z, AA…; rows × seatsPerRow ≤ 100,000. Default: 1 row of 100.
    #[schema(minimum = 1, maximum = 100000)]
    rows: Option<u32>,
    #[schema(minimum = 1, maximum = 100000)]
    seats_per_row: Option<u32>,
    /// 0 (default): a won request is CONFIRMED at once. Above 0: it is HELD
    /// for this many seconds unless confirmed.
    #[serde(default, deserialize_with = "integral::optional")]
    #[schema(minimum = 0, maximum = 3600)]
    hold_seconds: Option<u64>,
    /// Seats one request may name, 1–10 (default 4).
    #[serde(default, deserialize_with = "integral::optional")]
    #[schema(minimum = 1, maximum = 10)]
    max_seats_per_order: Option<u64>,
    /// When the sale opens (RFC 3339); requests before it are refused with
    /// SALE_NOT_OPEN, or join the lottery inside `lotteryWindowSeconds`.
    /// Absent or null: on sale at once.
    #[schema(example = "2030-04-01T10:00:00+09:00", format = DateTime)]
    opens_at: Option<String>,
    /// 0 (default) to 86,400: requests placed this long before `opensAt`
    /// are put in a uniformly random order at the opening, ahead of every
    /// later request. Needs `opensAt`.
    #[serde(default, deserialize_with = "integral::optional")]
    #[schema(minimum = 0, maximum = 86400)]
    lottery_window_seconds: Option<u64>,
}

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UpdateConcertRequest {
    #[schema(
        min_length = 1,
        max_length = 200,
        pattern = r"^[^\x00-\x1F\x7F-\x9F]*[^\s\x00-\x1F\x7F-\x9F][^\x00-\x1F\x7F-\x9F]*$"
    )]
    title: Option<String>,
    #[schema(
        min_length = 1,
        max_length = 200,
        pattern = r"^[^\x00-\x1F\x7F-\x9F]*[^\s\x00-\x1F\x7F-\x9F][^\x00-\x1F\x7F-\x9F]*$"
    )]
    venue: Option<String>,
    /// RFC 3339, in the future.
    #[schema(format = DateTime)]
    concert_date: Option<String>,
    /// Applies to requests decided from now on; holds already given keep
    /// their end.
    #[serde(default, deserialize_with = "integral::optional")]
    #[schema(minimum = 0, maximum = 3600)]
    hold_seconds: Option<u64>,
    /// Applies to requests made from now on.
    #[serde(default, deserialize_with = "integral::optional")]
    #[schema(minimum = 1, maximum = 10)]
    max_seats_per_order: Option<u64>,
    /// A new opening time (RFC 3339), or null for on sale now. Requests
    /// already in line keep their places.
    #[serde(default, deserialize_with = "present")]
    #[schema(format = DateTime, nullable)]
    opens_at: Option<Option<String>>,
    #[serde(default, deserialize_with = "integral::optional")]
    #[schema(minimum = 0, maximum = 86400)]
    lottery_window_seconds: Option<u64>,
}

/// A field that may be given as null (`Some(None)`), unlike an absent one
/// (`None`, with `#[serde(default)]`).
fn present<'de, D: serde::Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<Option<Option<T>>, D::Error> {
    Option::<T>::deserialize(d).map(Some)
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConcertResponse {
    id: u64,
    title: String,
    venue: String,
    concert_date: DateTime<Utc>,
    seat_count: u32,
    hold_seconds: u32,
    max_seats_per_order: u8,
    /// When the sale opens; null: on sale.
    opens_at: Option<DateTime<Utc>>,
    lottery_window_seconds: u32,
    created_at: DateTime<Utc>,
    updated_at: DateTime<Utc>,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConcertDetailResponse {
    #[serde(flatten)]
    concert: ConcertResponse,
    /// The seat counts are at most about a second old (the availability's).
    available_seats: u64,
    /// Seats under a running hold (a hold that has just run out counts here
    /// until the sweep frees it, within seconds).
    held_seats: u64,
    reserved_seats: u64,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConcertPage {
    content: Vec<ConcertResponse>,
    page: u32,
    size: u32,
    total_elements: u64,
    total_pages: u64,
}

impl From<ConcertRow> for ConcertResponse {
    fn from(c: ConcertRow) -> Self {
        Self {
            id: c.id.get(),
            title: c.title,
            venue: c.venue,
            concert_date: c.concert_date,
            seat_count: c.seat_count,
            hold_seconds: c.hold_seconds,
            max_seats_per_order: c.max_seats_per_order,
            opens_at: c.opens_at,
            lottery_window_seconds: c.lottery_window_seconds,
            created_at: c.created_at,
            updated_at: c.updated_at,
        }
    }
}

/// A valid new concert.
pub struct NewConcert {
    title: ConcertTitle,
    venue: Venue,
    date: ConcertDate,
    layout: SeatLayout,
    settings: db::concerts::Settings,
}

impl TryFrom<CreateConcertRequest> for NewConcert {
    type Error = Vec<FieldError>;

    fn try_from(req: CreateConcertRequest) -> Result<Self, Self::Error> {
        let mut errors = Vec::new();
        let title = keep(ConcertTitle::parse(&req.title), &mut errors);
        let venue = keep(Venue::parse(&req.venue), &mut errors);
        let date = keep(
            ConcertDate::parse(&req.concert_date, Utc::now()),
            &mut errors,
        );
        let layout = keep(SeatLayout::parse(req.rows, req.seats_per_row), &mut errors);
        let sale = settings(
            req.hold_seconds,
            req.max_seats_per_order,
            req.lottery_window_seconds,
            &mut errors,
        );
        let opens_at = keep(
            req.opens_at.as_deref().map(OpensAt::parse).transpose(),
            &mut errors,
        );
        if req.opens_at.is_none() && req.lottery_window_seconds.is_some_and(|s| s > 0) {
            errors.push(FieldError::new(
                "lotteryWindowSeconds",
                "a lottery needs opensAt",
            ));
        }
        match (title, venue, date, layout, sale, opens_at) {
            (Some(title), Some(venue), Some(date), Some(layout), Some(sale), Some(opens_at))
                if errors.is_empty() =>
            {
                Ok(Self {
                    title,
                    venue,
                    date,
                    layout,
                    settings: db::concerts::Settings {
                        hold: sale.hold.unwrap_or_default(),
                        max_seats_per_order: sale.max_seats_per_order.unwrap_or_default(),
                        opens_at,
                        lottery: sale.lottery.unwrap_or_default(),
                    },
                })
            }
            _ => Err(errors),
        }
    }
}

/// The sale settings a create or a change gave (`None`: not given).
struct GivenSettings {
    hold: Option<HoldDuration>,
    max_seats_per_order: Option<MaxSeatsPerOrder>,
    lottery: Option<LotteryWindow>,
}

/// The sale settings of a create or a change, each parsed when given; None
/// when any is invalid (each invalid one recorded in `errors`).
fn settings(
    hold_seconds: Option<u64>,
    max_seats_per_order: Option<u64>,
    lottery_window_seconds: Option<u64>,
    errors: &mut Vec<FieldError>,
) -> Option<GivenSettings> {
    let hold = keep(hold_seconds.map(HoldDuration::parse).transpose(), errors);
    let max_seats = keep(
        max_seats_per_order.map(MaxSeatsPerOrder::parse).transpose(),
        errors,
    );
    let lottery = keep(
        lottery_window_seconds.map(LotteryWindow::parse).transpose(),
        errors,
    );
    Some(GivenSettings {
        hold: hold?,
        max_seats_per_order: max_seats?,
        lottery: lottery?,
    })
}

/// A valid change to a concert; absent fields stay as they are.
pub struct ConcertChanges(db::concerts::Changes);

impl TryFrom<UpdateConcertRequest> for ConcertChanges {
    type Error = Vec<FieldError>;

    fn try_from(req: UpdateConcertRequest) -> Result<Self, Self::Error> {
        let mut errors = Vec::new();
        let title = keep(
            req.title.as_deref().map(ConcertTitle::parse).transpose(),
            &mut errors,
        );
        let venue = keep(
            req.venue.as_deref().map(Venue::parse).transpose(),
            &mut errors,
        );
        let date = keep(
            req.concert_date
                .as_deref()
                .map(|d| ConcertDate::parse(d, Utc::now()))
                .transpose(),
            &mut errors,
        );
        let sale = settings(
            req.hold_seconds,
            req.max_seats_per_order,
            req.lottery_window_seconds,
            &mut errors,
        );
        let opens_at = keep(
            req.opens_at
                .map(|at| at.as_deref().map(OpensAt::parse).transpose())
                .transpose(),
            &mut errors,
        );
        match (title, venue, date, sale, opens_at) {
            (Some(title), Some(venue), Some(date), Some(sale), Some(opens_at)) => {
                Ok(Self(db::concerts::Changes {
                    title,
                    venue,
                    date,
                    hold: sale.hold,
                    max_seats_per_order: sale.max_seats_per_order,
                    opens_at,
                    lottery: sale.lottery,
                }))
            }
            _ => Err(errors),
        }
    }
}

/// Creates a concert and all its seats in one transaction (admin).
#[utoipa::path(post, path = "/api/concerts", tag = "concerts", security(("bearer" = [])), request_body = CreateConcertRequest,
    responses((status = 201, body = ConcertResponse), (status = 400, body = Problem), (status = 401, body = Problem),
              (status = 403, body = Problem), (status = 413, body = Problem), (status = 415, body = Problem)))]
pub async fn create(
    State(state): State<AppState>,
    _: Admin,
    ApiJson(req): ApiJson<CreateConcertRequest>,
) -> ApiResult<impl IntoResponse> {
    let new = NewConcert::try_from(req)?;
    let mut tx = state.pool.begin().await?;
    let now = db::now(&mut tx).await?;
    let id = db::concerts::insert_with_seats(
        &mut tx,
        &new.title,
        &new.venue,
        new.date,
        new.layout,
        new.settings,
        now,
    )
    .await?;
    let concert = load(&mut tx, id).await?;
    tx.commit().await?;
    let location = format!("/api/concerts/{id}");
    Ok((
        StatusCode::CREATED,
        [(header::LOCATION, location)],
        Json(ConcertResponse::from(concert)),
    ))
}

/// Concerts, newest first.
#[utoipa::path(get, path = "/api/concerts", tag = "concerts", params(PageQuery),
    responses((status = 200, body = ConcertPage), (status = 400, body = Problem)))]
pub async fn list(
    State(state): State<AppState>,
    ApiQuery(q): ApiQuery<PageQuery>,
) -> ApiResult<Json<ConcertPage>> {
    let page = PageRequest::parse(q.page, q.size)?;
    let mut conn = state.pool.acquire().await?;
    let (rows, total) = db::concerts::list(&mut conn, page).await?;
    Ok(Json(ConcertPage {
        content: rows.into_iter().map(Into::into).collect(),
        page: page.page,
        size: page.size,
        total_elements: total,
        total_pages: page.total_pages(total),
    }))
}

/// One concert with its settings and its seat counts (the counts at most
/// about a second old).
#[utoipa::path(get, path = "/api/concerts/{id}", tag = "concerts", params(("id" = u64, Path)),
    responses((status = 200, body = ConcertDetailResponse), (status = 400, body = Problem), (status = 404, body = Problem)))]
pub async fn show(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<ConcertId>,
) -> ApiResult<Json<ConcertDetailResponse>> {
    // The page reads this on every visit: the counts come from the snapshot
    // the seat maps share, not from a count over every seat per request.
    let counts = state
        .availability
        .get(&state.pool, id)
        .await?
        .ok_or_else(ApiError::concert_not_found)?
        .counts;
    let mut conn = state.pool.acquire().await?;
    let concert = load(&mut conn, id).await?;
    Ok(Json(ConcertDetailResponse {
        concert: concert.into(),
        available_seats: counts.available,
        held_seats: counts.held,
        reserved_seats: counts.reserved,
    }))
}

/// Changes a concert's title, venue, date, hold, order size or opening (admin).
#[utoipa::path(patch, path = "/api/concerts/{id}", tag = "concerts", security(("bearer" = [])), params(("id" = u64, Path)),
    request_body = UpdateConcertRequest,
    responses((status = 200, body = ConcertResponse), (status = 400, body = Problem), (status = 401, body = Problem),
              (status = 403, body = Problem), (status = 404, body = Problem)))]
pub async fn update(
    State(state): State<AppState>,
    _: Admin,
    ApiPath(id): ApiPath<ConcertId>,
    ApiJson(req): ApiJson<UpdateConcertRequest>,
) -> ApiResult<Json<ConcertResponse>> {
    let changes = ConcertChanges::try_from(req)?;
    let mut tx = state.pool.begin().await?;
    if db::concerts::lock(&mut tx, id).await?.is_none() {
        return Err(ApiError::concert_not_found());
    }
    let now = db::now(&mut tx).await?;
    db::concerts::update(&mut tx, id, &changes.0, now).await?;
    let concert = load(&mut tx, id).await?;
    tx.commit().await?;
    Ok(Json(concert.into()))
}

/// Deletes a concert with its seats, unless anyone ever requested or held
/// one of them (admin): a concert on sale is part of its buyers' history.
#[utoipa::path(delete, path = "/api/concerts/{id}", tag = "concerts", security(("bearer" = [])), params(("id" = u64, Path)),
    responses((status = 204), (status = 400, body = Problem), (status = 401, body = Problem), (status = 403, body = Problem),
              (status = 404, body = Problem), (status = 409, body = Problem)))]
pub async fn remove(
    State(state): State<AppState>,
    _: Admin,
    ApiPath(id): ApiPath<ConcertId>,
) -> ApiResult<StatusCode> {
    let mut tx = state.pool.begin().await?;
    // Seats first, in id order, then the concert: the order a deciding
    // worker takes them in (its reservation's foreign key reads the
    // concert). With the seats locked, no request for them can be written
    // behind the check below: the enqueue waits, then finds no seat.
    let locked = db::concerts::lock_seats(&mut tx, id).await?;
    let Some(concert) = db::concerts::lock(&mut tx, id).await? else {
        return Err(ApiError::concert_not_found());
    };
    if concert.seat_count != locked {
        return Err(ApiError::new(
            ErrorCode::ConcertDeleteForbidden,
            "seats were added to the concert meanwhile; try again",
        ));
    }
    if db::concerts::has_history(&mut tx, id).await? {
        return Err(ApiError::new(
            ErrorCode::ConcertDeleteForbidden,
            "the concert has reservation requests or reservations; it can no longer be deleted",
        ));
    }
    db::concerts::delete_with_seats(&mut tx, id).await?;
    tx.commit().await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn load(conn: &mut db::Conn, id: ConcertId) -> ApiResult<ConcertRow> {
    db::concerts::find(conn, id)
        .await?
        .ok_or_else(ApiError::concert_not_found)
}
