use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use axum::{Json, Router};
use ticket_core::db::{self, concerts::ConcertRow, whole};
use ticket_core::domain::{
    ConcertId, FieldError, HoldDuration, OpensAt, OrganizerId, PageRequest, Permission,
    PresaleStartsAt, PriceCategories,
};

use crate::concerts::state::ConcertsState;
use crate::error::{ApiError, ApiResult, ErrorCode, Problem};
use crate::extract::{ApiJson, ApiPath, ApiQuery, AuthUser};
use crate::organizers::access::{On, permit};
use crate::organizers::audit::{Did, Staff, changed, seen};
use serde_json::Value;

use super::input::{self, ConcertChanges, CreateConcertRequest, NewConcert, UpdateConcertRequest};
use super::view::{ConcertDetailResponse, ConcertPage, ConcertResponse};

pub fn router() -> Router<ConcertsState> {
    Router::new()
        .route("/api/concerts", get(list).post(create))
        .route("/api/concerts/{id}", get(show).patch(update).delete(remove))
}

/// Creates a concert and all its seats in one transaction (admin).
#[utoipa::path(post, path = "/api/concerts", tag = "concerts", security(("bearer" = [])), request_body = CreateConcertRequest,
    responses((status = 201, body = ConcertResponse), (status = 400, body = Problem), (status = 401, body = Problem),
              (status = 403, body = Problem), (status = 413, body = Problem), (status = 415, body = Problem)))]
pub async fn create(
    State(state): State<ConcertsState>,
    staff: Staff,
    ApiJson(req): ApiJson<CreateConcertRequest>,
) -> ApiResult<impl IntoResponse> {
    let mut new = NewConcert::try_from(req)?;
    new.settings.time_zone = new.time_zone.unwrap_or(state.time_zone);
    let mut conn = state.pool.acquire().await?;
    let organizer = match new.organizer {
        Some(organizer) => organizer,
        None => organizer_of(&mut conn, staff.caller).await?,
    };
    let grant = permit(
        &mut conn,
        staff.caller,
        On::Organizer(organizer),
        Permission::EditConcerts,
    )
    .await?;
    let (id, concert) = whole::run(&mut conn, async |tx| {
        let now = db::now(tx).await?;
        let billing = db::concerts::Billing {
            organizer,
            title: &new.title,
            venue: &new.venue,
            date: new.date,
        };
        let id =
            db::concerts::insert_with_seats(tx, billing, new.layout, new.settings, now).await?;
        if let Some(categories) = &new.categories {
            // Nobody sees the new seats before the commit: no lock to take first.
            db::prices::replace(tx, id, categories).await?;
        }
        if let Some(areas) = &new.areas {
            db::standing_areas::replace(tx, id, areas, new.categories.as_ref(), now).await?;
        }
        let concert = load(tx, id).await?;
        let shown =
            ConcertResponse::new(concert.clone(), new.categories.as_ref(), new.areas.as_ref());
        let did = Did {
            action: "concert.create",
            concert: Some(id),
            target: None,
            changes: &changed(Value::Null, seen(&shown)),
        };
        staff.record(tx, grant, did).await?;
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

/// A new concert's organizer when the request names none: the caller's
/// only one, or the installation's first for the platform's admin.
async fn organizer_of(conn: &mut db::Conn, caller: AuthUser) -> ApiResult<OrganizerId> {
    let theirs = db::organizers::of_user(conn, caller.id, false).await?;
    match theirs.as_slice() {
        [one] => Ok(one.id),
        [] if caller.is_admin() => Ok(db::organizers::DEFAULT),
        [] => Err(ApiError::new(
            ErrorCode::Forbidden,
            "this action is for the members of an organizer",
        )),
        _ => Err(FieldError::new(
            "organizerId",
            "is required: you are a member of several organizers",
        )
        .into()),
    }
}

/// The concerts list's query: a page, and one organizer's only if named.
#[derive(serde::Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ConcertListQuery {
    /// Zero-based page number.
    #[param(maximum = 10000)]
    pub page: Option<u32>,
    /// Items per page, 1–100 (default 20).
    #[param(minimum = 1, maximum = 100)]
    pub size: Option<u32>,
    /// Only this organizer's concerts.
    pub organizer_id: Option<u64>,
}

/// Concerts, the soonest show first (shows played last, the latest first),
/// each with its seat counts.
#[utoipa::path(get, path = "/api/concerts", tag = "concerts", params(ConcertListQuery),
    responses((status = 200, body = ConcertPage), (status = 400, body = Problem)))]
pub async fn list(
    State(state): State<ConcertsState>,
    ApiQuery(q): ApiQuery<ConcertListQuery>,
) -> ApiResult<Json<ConcertPage>> {
    let page = PageRequest::parse(q.page, q.size)?;
    // Ids are kept as signed 64-bit numbers in the API's contract.
    if q.organizer_id.is_some_and(|id| i64::try_from(id).is_err()) {
        return Err(FieldError::new("organizerId", "is not an organizer's id").into());
    }
    let organizer = q.organizer_id.map(OrganizerId);
    let mut conn = state.pool.acquire().await?;
    let (rows, total) = db::concerts::list(&mut conn, page, organizer).await?;
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
        let concert = ConcertResponse::new(c, of, its_areas);
        content.push(ConcertDetailResponse::new(concert, counts));
    }
    Ok(Json(ConcertPage::new(content, page, total)))
}

/// One concert with its settings and its seat counts (the counts at most
/// about a second old).
#[utoipa::path(get, path = "/api/concerts/{id}", tag = "concerts", params(("id" = u64, Path)),
    responses((status = 200, body = ConcertDetailResponse), (status = 400, body = Problem), (status = 404, body = Problem)))]
pub async fn show(
    State(state): State<ConcertsState>,
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
    let concert = ConcertResponse::new(concert, categories.as_ref(), Some(&areas));
    Ok(Json(ConcertDetailResponse::new(concert, counts)))
}

/// Changes a concert's title, venue, date, hold, order size or opening (admin).
#[utoipa::path(patch, path = "/api/concerts/{id}", tag = "concerts", security(("bearer" = [])), params(("id" = u64, Path)),
    request_body = UpdateConcertRequest,
    responses((status = 200, body = ConcertResponse), (status = 400, body = Problem), (status = 401, body = Problem),
              (status = 403, body = Problem), (status = 404, body = Problem)))]
pub async fn update(
    State(state): State<ConcertsState>,
    staff: Staff,
    ApiPath(id): ApiPath<ConcertId>,
    ApiJson(req): ApiJson<UpdateConcertRequest>,
) -> ApiResult<Json<ConcertResponse>> {
    let ConcertChanges(changes, new_categories, new_areas) = ConcertChanges::try_from(req)?;
    let mut conn = state.pool.acquire().await?;
    let (concert, categories, areas) = whole::run(&mut conn, async |tx| {
        // In the write's own transaction: a role taken away meanwhile is
        // seen here, and no connection is taken for the check alone.
        let grant = permit(tx, staff.caller, On::Concert(id), Permission::EditConcerts).await?;
        if new_areas.is_some() || new_categories.is_some() {
            // As every writer of requests and waiting entries takes it (made
            // if the concert has none yet): no request for an area or a
            // category is written, or named, between the checks below and
            // the commit.
            db::line::lock_lines(tx, &[id]).await?;
            db::line::pools_changed(tx, id).await?;
        }
        if new_categories.is_some() {
            // Seats before the concert, in id order, as a deciding worker takes
            // them: no decision reads a price halfway through the change.
            db::concerts::lock_seats(tx, id).await?;
        }
        let Some(before) = db::concerts::lock(tx, id).await? else {
            return Err(ApiError::concert_not_found());
        };
        let (categories_before, areas_before) = (
            db::prices::of_concert(tx, id).await?,
            db::standing_areas::of_concert(tx, id).await?,
        );
        let before = ConcertResponse::new(before, categories_before.as_ref(), Some(&areas_before));
        if let Some(categories) = &new_categories {
            // Open requests by count and waiting fans name a category by its
            // place: moved or renamed, they would be asked of another one.
            for (position, name) in db::prices::named_by_open_requests(tx, id).await? {
                let kept = categories
                    .categories
                    .get(usize::from(position))
                    .is_some_and(|c| c.name == name);
                if !kept {
                    return Err(ApiError::new(
                        ErrorCode::CategoriesInUse,
                        format!(
                            "open requests or waiting fans ask for the category {name:?}: \
                             keep it where it is, under its name (prices may change)"
                        ),
                    ));
                }
            }
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
        // Read again only what the change replaced.
        let categories = match &new_categories {
            Some(_) => db::prices::of_concert(tx, id).await?,
            None => categories_before,
        };
        // The areas (new or kept) must name categories the concert has.
        let areas = match &new_areas {
            Some(areas) => areas.clone(),
            None => areas_before,
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
        HoldDuration::parse(u64::from(concert.hold_seconds))?
            .allowed_with_prices(categories.as_ref().is_some_and(PriceCategories::is_priced))?;
        let after = ConcertResponse::new(concert.clone(), categories.as_ref(), Some(&areas));
        let did = Did {
            action: "concert.change",
            concert: Some(id),
            target: None,
            changes: &changed(seen(&before), seen(&after)),
        };
        staff.record(tx, grant, did).await?;
        Ok::<_, ApiError>((concert, categories, areas))
    })
    .await?;
    // Read again at this instance's next request (others within a second).
    state.sales.forget(id);
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
    State(state): State<ConcertsState>,
    staff: Staff,
    ApiPath(id): ApiPath<ConcertId>,
) -> ApiResult<StatusCode> {
    let grant = staff
        .permit(&state.pool, On::Concert(id), Permission::EditConcerts)
        .await?;
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
        let did = Did {
            action: "concert.delete",
            concert: Some(id),
            target: None,
            changes: &changed(seen(&concert.title), Value::Null),
        };
        staff.record(tx, grant, did).await?;
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
