use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::get;
use axum::{Json, Router};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use ticket_core::db::{self, request_pools, waiting_list, whole};
use ticket_core::domain::allocation::Fan;
use ticket_core::domain::{
    AccessCode, Admission, ConcertId, FieldError, MaxSeatsPerOrder, MaxSeatsPerUser, PageRequest,
    Permission, PoolName, WaitingSeats,
};
use utoipa::{IntoParams, ToSchema};

use crate::error::{ApiError, ApiResult, ErrorCode, Problem};
use crate::extract::{ApiJson, ApiPath, ApiQuery, AuthUser, integral};
use crate::organizers::access::{On, permit_on};
use crate::reservations::alone::take_code;
use crate::reservations::best::pool_under_line_lock;
use crate::reservations::view::ReservationResponse;
use crate::waiting_list::state::WaitingListState;

pub fn router() -> Router<WaitingListState> {
    Router::new()
        .route(
            "/api/concerts/{id}/waiting-list",
            get(list).post(join).delete(leave),
        )
        .route("/api/concerts/{id}/waiting-list/me", get(me))
}

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct JoinRequest {
    /// Seats wanted together, 1 to the concert's `maxSeatsPerOrder`.
    #[serde(deserialize_with = "integral::required")]
    #[schema(minimum = 1, maximum = 10)]
    seats: u64,
    /// During the concert's presale: an access code, as a reservation
    /// needs then (it binds to the first account that uses it).
    #[schema(max_length = 64, example = "ABCD-EFGH-JKMN-PQRS")]
    access_code: Option<String>,
    /// Wait for seats of this price category only (its name). Without it,
    /// or `area`, any seat (never a standing place).
    #[schema(max_length = 40, example = "Stalls")]
    category: Option<String>,
    /// Wait for places of this standing area (its name).
    #[schema(max_length = 40, example = "Floor")]
    area: Option<String>,
}

impl JoinRequest {
    /// The pool named, if any: 400 when both a category and an area are.
    fn named(&self) -> ApiResult<Option<PoolName>> {
        match (&self.category, &self.area) {
            (None, None) => Ok(None),
            (Some(category), None) => Ok(Some(PoolName::Category(category.clone()))),
            (None, Some(area)) => Ok(Some(PoolName::Area(area.clone()))),
            (Some(_), Some(_)) => {
                Err(FieldError::new("area", "give category or area, not both").into())
            }
        }
    }
}

/// The caller's place on a concert's waiting list, and the offer made to
/// them, if any.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WaitingListEntryResponse {
    /// 1 for the next fan to be offered seats (of the fans before who wait
    /// for what this entry waits for, or for any seat when it waits for a
    /// category's); null once offered.
    position: Option<u64>,
    seats: u8,
    /// The price category waited for (null: any seat, or an area).
    category: Option<String>,
    /// The standing area waited for.
    area: Option<String>,
    /// WAITING, or OFFERED (see `offer`).
    #[schema(example = "WAITING")]
    status: String,
    joined_at: DateTime<Utc>,
    /// The seats held for the caller (a reservation with `source`
    /// WAITING_LIST: confirm it like any hold before `holdExpiresAt`).
    offer: Option<ReservationResponse>,
}

/// Joins the concert's waiting list (signed in, when no seat of what the
/// fan waits for is free): for any seat, a price category's seats, or a
/// standing area's places. When seats of it come back that nobody in line
/// wants, the first fan whose count they meet is offered the best of them
/// as a hold of theirs. Joining asks what
/// reserving asks at that moment: the sale open, or in the presale an
/// access code; a solved challenge (`Proof-Of-Work`) when the concert asks
/// for one.
#[utoipa::path(post, path = "/api/concerts/{id}/waiting-list", tag = "waiting-list", security(("bearer" = [])),
    params(("id" = u64, Path)), request_body = JoinRequest,
    responses((status = 201, body = WaitingListEntryResponse), (status = 400, body = Problem),
              (status = 401, body = Problem), (status = 403, body = Problem), (status = 404, body = Problem),
              (status = 409, body = Problem)))]
pub async fn join(
    State(state): State<WaitingListState>,
    caller: AuthUser,
    headers: HeaderMap,
    ApiPath(concert): ApiPath<ConcertId>,
    ApiJson(req): ApiJson<JoinRequest>,
) -> ApiResult<(StatusCode, Json<WaitingListEntryResponse>)> {
    let mut conn = state.pool.acquire().await?;
    let Some(row) = db::concerts::find(&mut conn, concert).await? else {
        return Err(ApiError::concert_not_found());
    };
    let seats = WaitingSeats::parse(
        req.seats,
        MaxSeatsPerOrder::parse(row.max_seats_per_order.into()).unwrap_or_default(),
    )
    .map_err(|e| ApiError::from(vec![e]))?;
    let wants = match req.named()? {
        Some(named) => Some(
            request_pools::names_of(&mut conn, concert)
                .await?
                .pool(&named)?,
        ),
        None => None,
    };
    // A code that cannot be one is as unknown as a wrong one.
    let access_code = match req.access_code.as_deref().map(AccessCode::parse) {
        None => None,
        Some(Ok(code)) => Some(code),
        Some(Err(_)) => return Err(ApiError::access_code_invalid()),
    };
    let terms = state.sales.terms(&state.pool, concert).await?;
    terms.ensure_selling()?;
    let now = db::now(&mut conn).await?;
    let admission = match access_code {
        Some(_) => terms.window.admission_with_code(now),
        None => terms.window.admission(now),
    };
    match admission {
        Admission::Open | Admission::Presale => {}
        Admission::CodeRequired { .. } => return Err(ApiError::access_code_required()),
        Admission::NotYet { .. } | Admission::Lottery { .. } => {
            return Err(ApiError::sale_not_open(terms.window));
        }
    }
    if terms.proof_of_work.is_on() {
        crate::proof_of_work::pay(&state.challenges, &state.pool, &headers, caller.id, concert)
            .await?;
    }
    if waiting_list::has_free_seat(&mut conn, concert, wants).await? {
        return Err(ApiError::new(
            ErrorCode::SeatsAvailable,
            "this concert has seats of what you would wait for free: reserve one instead of waiting",
        ));
    }
    if waiting_list::has_running_offer(&mut conn, concert, caller.id).await? {
        return Err(ApiError::new(
            ErrorCode::AlreadyOnWaitingList,
            "seats from this concert's waiting list are held for you: confirm or release them first",
        ));
    }
    let cap = MaxSeatsPerUser::from_stored(row.max_seats_per_user);
    let taken = db::fans::seats_of(&mut conn, &[caller.id])
        .await?
        .get(&Fan {
            concert,
            user: caller.id,
        })
        .copied()
        .unwrap_or(0);
    if taken + u64::from(seats.get()) > u64::from(cap.get()) {
        return Err(ApiError::user_limit_reached(cap, taken));
    }
    // Join and leave times are the database's, as the offers' are: the
    // list's history is read against one clock.
    waiting_list::ensure_list(&mut conn, concert, now).await?;
    whole::run(&mut conn, async |tx| {
        // In the presale the code is taken as a reservation takes it (the
        // offer, later, asks for a code with a use left again).
        if let (Admission::Presale, Some(code)) = (admission, &access_code) {
            let seats = u64::from(seats.get());
            take_code(tx, concert, caller.id, seats, code, now).await?;
        }
        // Named again where it is written: the categories may have moved.
        let wants = match req.named()? {
            Some(named) => Some(pool_under_line_lock(tx, concert, &named).await?),
            None => None,
        };
        waiting_list::join(tx, concert, caller.id, seats, wants, now).await?;
        Ok::<_, ApiError>(())
    })
    .await?;
    let entry = entry_of(&mut conn, concert, caller).await?;
    Ok((StatusCode::CREATED, Json(entry)))
}

/// Leaves the concert's waiting list. Seats already offered stay held for
/// the caller until they confirm, release or let them expire.
#[utoipa::path(delete, path = "/api/concerts/{id}/waiting-list", tag = "waiting-list", security(("bearer" = [])),
    params(("id" = u64, Path)),
    responses((status = 204), (status = 401, body = Problem), (status = 404, body = Problem)))]
pub async fn leave(
    State(state): State<WaitingListState>,
    caller: AuthUser,
    ApiPath(concert): ApiPath<ConcertId>,
) -> ApiResult<StatusCode> {
    let mut conn = state.pool.acquire().await?;
    let now = db::now(&mut conn).await?;
    if waiting_list::leave(&mut conn, concert, caller.id, now).await? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(not_on_list())
    }
}

/// The caller's place on the concert's waiting list (`position`) and the
/// seats offered to them (`offer`).
#[utoipa::path(get, path = "/api/concerts/{id}/waiting-list/me", tag = "waiting-list", security(("bearer" = [])),
    params(("id" = u64, Path)),
    responses((status = 200, body = WaitingListEntryResponse), (status = 401, body = Problem),
              (status = 404, body = Problem)))]
pub async fn me(
    State(state): State<WaitingListState>,
    caller: AuthUser,
    ApiPath(concert): ApiPath<ConcertId>,
) -> ApiResult<Json<WaitingListEntryResponse>> {
    let mut conn = state.pool.acquire().await?;
    Ok(Json(entry_of(&mut conn, concert, caller).await?))
}

async fn entry_of(
    conn: &mut db::Conn,
    concert: ConcertId,
    caller: AuthUser,
) -> ApiResult<WaitingListEntryResponse> {
    let Some(entry) = waiting_list::latest_entry(conn, concert, caller.id).await? else {
        return Err(not_on_list());
    };
    if entry.status == "LEFT" {
        return Err(not_on_list());
    }
    // Names are read only for an entry that has a pool (a fan polls this).
    let (category, area) = match waiting_list::waiting_for(entry.pool) {
        None => (None, None),
        pool => request_pools::names_of(conn, concert).await?.names(pool),
    };
    let offer = match entry.reservation_id {
        Some(id) => {
            let now = db::now(conn).await?;
            db::reservations::find(conn, id, now)
                .await?
                .map(ReservationResponse::from)
        }
        None => None,
    };
    Ok(WaitingListEntryResponse {
        position: entry.position,
        seats: entry.seats,
        category,
        area,
        status: entry.status,
        joined_at: entry.created_at,
        offer,
    })
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct ListPage {
    /// Zero-based page number.
    #[param(maximum = 10000)]
    page: Option<u32>,
    /// Entries per page, 1–1,000 (default 1,000).
    #[param(minimum = 1, maximum = 1000)]
    size: Option<u32>,
}

/// One fan's entry on a list, as the operator sees it.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ListedEntryResponse {
    id: u64,
    user_id: u64,
    nick_name: String,
    seats: u8,
    /// The price category waited for (null: any seat, or an area).
    category: Option<String>,
    /// The standing area waited for.
    area: Option<String>,
    /// WAITING, OFFERED (`reservationId` holds the offer) or LEFT.
    #[schema(example = "WAITING")]
    status: String,
    reservation_id: Option<u64>,
    joined_at: DateTime<Utc>,
    /// When the entry was offered seats or left the list.
    ended_at: Option<DateTime<Utc>>,
}

/// The concert's waiting list (admin): every entry, waiting, offered or
/// left, in the order the fans joined.
#[utoipa::path(get, path = "/api/concerts/{id}/waiting-list", tag = "waiting-list", security(("bearer" = [])),
    params(("id" = u64, Path), ListPage),
    responses((status = 200, body = Vec<ListedEntryResponse>), (status = 400, body = Problem),
              (status = 401, body = Problem), (status = 403, body = Problem), (status = 404, body = Problem)))]
pub async fn list(
    State(state): State<WaitingListState>,
    caller: AuthUser,
    ApiPath(concert): ApiPath<ConcertId>,
    ApiQuery(query): ApiQuery<ListPage>,
) -> ApiResult<Json<Vec<ListedEntryResponse>>> {
    permit_on(
        &state.pool,
        caller,
        On::Concert(concert),
        Permission::ManageWaitingList,
    )
    .await?;
    let page = PageRequest::parse_within(query.page, query.size, PageRequest::SEATS)?;
    let mut conn = state.pool.acquire().await?;
    if db::concerts::find(&mut conn, concert).await?.is_none() {
        return Err(ApiError::concert_not_found());
    }
    let entries = waiting_list::entries(&mut conn, concert, page).await?;
    let names = request_pools::names_of(&mut conn, concert).await?;
    Ok(Json(
        entries
            .into_iter()
            .map(|e| {
                let (category, area) = names.names(waiting_list::waiting_for(e.pool));
                ListedEntryResponse {
                    id: e.id,
                    user_id: e.user_id.get(),
                    nick_name: e.nickname,
                    seats: e.seats,
                    category,
                    area,
                    status: e.status,
                    reservation_id: e.reservation_id.map(|r| r.get()),
                    joined_at: e.created_at,
                    ended_at: e.ended_at,
                }
            })
            .collect(),
    ))
}

fn not_on_list() -> ApiError {
    ApiError::new(
        ErrorCode::NotOnWaitingList,
        "you are not on this concert's waiting list",
    )
}
