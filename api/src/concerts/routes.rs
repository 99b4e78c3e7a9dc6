use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use axum::{Json, Router};
use chrono::{DateTime, Utc};
use serde::Serialize;
use ticket_core::db::{self, concerts::ConcertRow, whole};
use ticket_core::domain::{
    ConcertId, FieldError, OpensAt, PageRequest, PresaleStartsAt, PriceCategories, StandingAreas,
};
use utoipa::ToSchema;

use crate::error::{ApiError, ApiResult, ErrorCode, Problem};
use crate::extract::{Admin, ApiJson, ApiPath, ApiQuery, PageQuery};
use crate::state::AppState;

use super::input::{self, ConcertChanges, CreateConcertRequest, NewConcert, UpdateConcertRequest};

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/api/concerts", get(list).post(create))
        .route("/api/concerts/{id}", get(show).patch(update).delete(remove))
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
    /// Seats one user may have in the concert (held, confirmed and asked
    /// for by open requests).
    max_seats_per_user: u8,
    /// When the sale opens; null: on sale.
    opens_at: Option<DateTime<Utc>>,
    /// When the presale begins (requests need an access code until
    /// `opensAt`); null: no presale.
    presale_starts_at: Option<DateTime<Utc>>,
    lottery_window_seconds: u32,
    /// 0: off; else the proof-of-work level a request must pay.
    proof_of_work: u8,
    /// How long seats offered from the waiting list are held for the fan.
    waiting_list_offer_seconds: u32,
    /// Until when a fan may give back tickets paid through the payment
    /// provider; null: never (an admin always may).
    refundable_until: Option<DateTime<Utc>>,
    /// When the concert was cancelled (its orders are refunded), and why;
    /// null: it was not.
    cancelled_at: Option<DateTime<Utc>>,
    cancel_reason: Option<String>,
    /// The price categories, in order (the first takes the rows no other
    /// names); empty: the concert has no prices.
    categories: Vec<CategoryResponse>,
    /// The standing areas, in order (an area's position is its index, as
    /// in the availability's `availableByArea`); empty: none. `seatCount`
    /// counts their places.
    areas: Vec<AreaResponse>,
    /// The venue's IANA time zone: show the times above in it.
    #[schema(example = "Asia/Seoul")]
    time_zone: String,
    /// The zone's abbreviation at each time shown ("KST"; "CET" or "CEST"
    /// by the season), for a page to write after the venue's time.
    time_zone_names: ZoneNames,
    created_at: DateTime<Utc>,
    updated_at: DateTime<Utc>,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ZoneNames {
    #[schema(example = "KST")]
    concert_date: String,
    opens_at: Option<String>,
    presale_starts_at: Option<String>,
    refundable_until: Option<String>,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CategoryResponse {
    name: String,
    /// In the currency's minor units.
    price: u64,
    currency: String,
    rows: Vec<String>,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AreaResponse {
    name: String,
    capacity: u32,
    /// The price category of its places, by name; null: the first (or
    /// none, without prices).
    category: Option<String>,
}

fn areas_of(areas: Option<&StandingAreas>) -> Vec<AreaResponse> {
    areas.map_or_else(Vec::new, |a| {
        a.areas
            .iter()
            .map(|a| AreaResponse {
                name: a.name.clone(),
                capacity: a.capacity,
                category: a.category.clone(),
            })
            .collect()
    })
}

fn categories_of(categories: Option<&PriceCategories>) -> Vec<CategoryResponse> {
    let Some(categories) = categories else {
        return Vec::new();
    };
    categories
        .categories
        .iter()
        .map(|c| CategoryResponse {
            name: c.name.clone(),
            price: c.price.get(),
            currency: categories.currency.as_str().to_owned(),
            rows: c.rows.iter().map(|r| r.as_str().to_owned()).collect(),
        })
        .collect()
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
    /// Each with its seat counts, as `GET /api/concerts/{id}` gives them.
    content: Vec<ConcertDetailResponse>,
    page: u32,
    size: u32,
    total_elements: u64,
    total_pages: u64,
}

impl ConcertResponse {
    fn new(
        c: ConcertRow,
        categories: Option<&PriceCategories>,
        areas: Option<&StandingAreas>,
    ) -> Self {
        let zone = c.time_zone();
        let name = |at: Option<DateTime<Utc>>| at.map(|at| zone.abbreviation_at(at));
        Self {
            time_zone: zone.name().to_owned(),
            time_zone_names: ZoneNames {
                concert_date: zone.abbreviation_at(c.concert_date),
                opens_at: name(c.opens_at),
                presale_starts_at: name(c.presale_starts_at),
                refundable_until: name(c.refundable_until),
            },
            id: c.id.get(),
            title: c.title,
            venue: c.venue,
            concert_date: c.concert_date,
            seat_count: c.seat_count,
            hold_seconds: c.hold_seconds,
            max_seats_per_order: c.max_seats_per_order,
            max_seats_per_user: c.max_seats_per_user,
            opens_at: c.opens_at,
            presale_starts_at: c.presale_starts_at,
            lottery_window_seconds: c.lottery_window_seconds,
            proof_of_work: c.proof_of_work,
            waiting_list_offer_seconds: c.waiting_list_offer_seconds,
            refundable_until: c.refundable_until,
            cancelled_at: c.cancelled_at,
            cancel_reason: c.cancel_reason,
            categories: categories_of(categories),
            areas: areas_of(areas),
            created_at: c.created_at,
            updated_at: c.updated_at,
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
    let mut new = NewConcert::try_from(req)?;
    new.settings.time_zone = new.time_zone.unwrap_or(state.time_zone);
    let mut conn = state.pool.acquire().await?;
    let (id, concert) = whole::run(&mut conn, async |tx| {
        let now = db::now(tx).await?;
        let id = db::concerts::insert_with_seats(
            tx,
            &new.title,
            &new.venue,
            new.date,
            new.layout,
            new.settings,
            now,
        )
        .await?;
        if let Some(categories) = &new.categories {
            // Nobody sees the new seats before the commit: no lock to take first.
            db::prices::replace(tx, id, categories).await?;
        }
        if let Some(areas) = &new.areas {
            db::standing_areas::replace(tx, id, areas, new.categories.as_ref(), now).await?;
        }
        let concert = load(tx, id).await?;
        Ok::<_, ApiError>((id, concert))
    })
    .await?;
    let location = format!("/api/concerts/{id}");
    Ok((
        StatusCode::CREATED,
        [(header::LOCATION, location)],
        Json(ConcertResponse::new(
            concert,
            new.categories.as_ref(),
            new.areas.as_ref(),
        )),
    ))
}

/// Concerts, the soonest show first (shows played last, the latest first),
/// each with its seat counts.
#[utoipa::path(get, path = "/api/concerts", tag = "concerts", params(PageQuery),
    responses((status = 200, body = ConcertPage), (status = 400, body = Problem)))]
pub async fn list(
    State(state): State<AppState>,
    ApiQuery(q): ApiQuery<PageQuery>,
) -> ApiResult<Json<ConcertPage>> {
    let page = PageRequest::parse(q.page, q.size)?;
    let mut conn = state.pool.acquire().await?;
    let (rows, total) = db::concerts::list(&mut conn, page).await?;
    let ids: Vec<ConcertId> = rows.iter().map(|c| c.id).collect();
    let categories = db::prices::of_concerts(&mut conn, &ids).await?;
    let areas = db::standing_areas::of_concerts(&mut conn, &ids).await?;
    drop(conn);
    let mut content = Vec::with_capacity(rows.len());
    for c in rows {
        // From the snapshot the seat maps share (a second old at most): a
        // list read by every visitor counts no seats itself.
        let counts = state
            .availability
            .get(&state.pool, c.id)
            .await?
            .map(|a| a.counts)
            .unwrap_or_default();
        let (of, its_areas) = (categories.get(&c.id), areas.get(&c.id));
        content.push(ConcertDetailResponse {
            concert: ConcertResponse::new(c, of, its_areas),
            available_seats: counts.available,
            held_seats: counts.held,
            reserved_seats: counts.reserved,
        });
    }
    Ok(Json(ConcertPage {
        content,
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
    let categories = db::prices::of_concert(&mut conn, id).await?;
    let areas = db::standing_areas::of_concert(&mut conn, id).await?;
    Ok(Json(ConcertDetailResponse {
        concert: ConcertResponse::new(concert, categories.as_ref(), Some(&areas)),
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
    let ConcertChanges(changes, new_categories, new_areas) = ConcertChanges::try_from(req)?;
    let mut conn = state.pool.acquire().await?;
    let (concert, categories, areas) = whole::run(&mut conn, async |tx| {
        if new_areas.is_some() {
            // As every writer of requests takes it: no request for an area
            // is written between the check below and the commit.
            db::line::lock_line_of(tx, id).await?;
        }
        if new_categories.is_some() {
            // Seats before the concert, in id order, as a deciding worker takes
            // them: no decision reads a price halfway through the change.
            db::concerts::lock_seats(tx, id).await?;
        }
        if db::concerts::lock(tx, id).await?.is_none() {
            return Err(ApiError::concert_not_found());
        }
        if let Some(categories) = &new_categories {
            // A plan's seats keep their plan category: its price category
            // must stay.
            for name in db::prices::plan_categories(tx, id).await? {
                if !categories.categories.iter().any(|c| c.name == name) {
                    return Err(FieldError::new(
                        "categories",
                        format!("the seating plan's category {name:?} needs a price category of that name"),
                    )
                    .into());
                }
            }
        }
        if new_areas.is_some() && db::standing_areas::ever_requested(tx, id).await? {
            return Err(ApiError::new(
                ErrorCode::AreasAlreadyRequested,
                "places of the concert's standing areas were asked for: its areas stay as they are",
            ));
        }
        let now = db::now(tx).await?;
        db::concerts::update(tx, id, &changes, now).await?;
        if let Some(categories) = &new_categories {
            db::prices::replace(tx, id, categories).await?;
        }
        let categories = db::prices::of_concert(tx, id).await?;
        // The areas (new or kept) must name categories the concert has.
        let areas = match &new_areas {
            Some(areas) => areas.clone(),
            None => db::standing_areas::of_concert(tx, id).await?,
        };
        input::areas_in_categories(&areas, categories.as_ref())?;
        if let Some(areas) = &new_areas {
            db::standing_areas::replace(tx, id, areas, categories.as_ref(), now).await?;
        }
        let concert = load(tx, id).await?;
        // Checked against what the concert is now, the change included; the
        // transaction is rolled back on refusal.
        if let Some(presale) = concert.presale_starts_at {
            let opening = concert.opens_at.map(OpensAt::from_stored);
            input::presale_before_opening(PresaleStartsAt::from_stored(presale), opening)?;
        }
        input::sale_before_concert(
            concert.concert_date,
            concert.opens_at,
            concert.presale_starts_at,
        )?;
        Ok::<_, ApiError>((concert, categories, areas))
    })
    .await?;
    Ok(Json(ConcertResponse::new(
        concert,
        categories.as_ref(),
        Some(&areas),
    )))
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
    let mut conn = state.pool.acquire().await?;
    whole::run(&mut conn, async |tx| {
        // Seats first, in id order, then the concert: the order a deciding
        // worker takes them in (its reservation's foreign key reads the
        // concert). With the seats locked, no request for them can be written
        // behind the check below: the enqueue waits, then finds no seat. The
        // line before them, as every writer of requests takes it.
        db::line::lock_line_of(tx, id).await?;
        let locked = db::concerts::lock_seats(tx, id).await?;
        let Some(concert) = db::concerts::lock(tx, id).await? else {
            return Err(ApiError::concert_not_found());
        };
        if concert.seat_count != locked {
            return Err(ApiError::new(
                ErrorCode::ConcertDeleteForbidden,
                "seats were added to the concert meanwhile; try again",
            ));
        }
        if db::concerts::has_history(tx, id).await? {
            return Err(ApiError::new(
                ErrorCode::ConcertDeleteForbidden,
                "the concert has reservation requests or reservations; it can no longer be deleted",
            ));
        }
        db::concerts::delete_with_seats(tx, id).await?;
        Ok::<_, ApiError>(())
    })
    .await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn load(conn: &mut db::Conn, id: ConcertId) -> ApiResult<ConcertRow> {
    db::concerts::find(conn, id)
        .await?
        .ok_or_else(ApiError::concert_not_found)
}
