//! The desk's routes: shifts opened, sold on, given back from and closed.
//! A shift's row is locked first by every write on it, so that a sale and
//! the close take turns: each sale is counted at the close, or refused
//! after it.
//!
//! Long because a shift's life (open, ask, pay, give back, close, read) is
//! read in one place, each route with its checks and its audit entry.

use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sqlx::MySqlConnection;
use ticket_core::db::desk::{self as shifts_db, ShiftRow};
use ticket_core::db::{self, whole};
use ticket_core::domain::desk::{DeskMethod, ShiftTotals};
use ticket_core::domain::payment::Provider;
use ticket_core::domain::{
    ConcertId, EmailAddress, FieldError, Language, Permission, ReservationId, ReservationStatus,
    ShiftId, TicketId,
};
use utoipa::ToSchema;

use super::view::ShiftResponse;
use crate::error::{ApiError, ApiResult, ErrorCode, Problem};
use crate::extract::{ApiJson, ApiPath, AuthUser};
use crate::organizers::access::{Actor, Grant, On, permit};
use crate::organizers::audit::{Did, Staff, changed};
use crate::payments::refunds::{RefundResult, give_back_tickets};
use crate::reservations::checkout::{lock_acting, sell_hold};
use crate::reservations::desk_orders::{desk_order, enqueue_for_desk};
use crate::reservations::routes::ReserveRequest;
use crate::reservations::state::ReservationsState;
use crate::reservations::view::ReservationResponse;

pub fn router() -> Router<ReservationsState> {
    Router::new()
        .route("/api/concerts/{id}/desk/shifts", get(shifts).post(open))
        .route("/api/concerts/{id}/desk/my-shift", get(my_shift))
        .route("/api/desk/shifts/{id}", get(shift))
        .route("/api/desk/shifts/{id}/requests", post(request))
        .route("/api/desk/shifts/{id}/payments", post(pay))
        .route("/api/desk/shifts/{id}/refunds", post(refund))
        .route("/api/desk/shifts/{id}/close", post(close))
}

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OpenShiftRequest {
    /// The cash in the drawer at the start, in the concert currency's
    /// minor units (0 to 10^9).
    #[schema(minimum = 0, maximum = 1_000_000_000_u64)]
    float: u64,
}

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeskRequest {
    /// What the buyer asks for, as `POST /api/reservations` takes it
    /// (without `userId`).
    order: ReserveRequest,
    /// Where the buyer's tickets are mailed; none: printed at the desk.
    email: Option<String>,
    /// The buyer's mail's language (`en`, default, or `ko`).
    language: Option<String>,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeskRequestResponse {
    queue_id: u64,
    /// PENDING (or WAITING in the lottery): follow it as any request.
    #[schema(example = "PENDING")]
    status: &'static str,
    /// The buyer's account, made for this sale.
    buyer_id: u64,
}

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeskPaymentRequest {
    reservation_id: u64,
    /// CASH or CARD (the card terminal).
    #[schema(example = "CASH")]
    method: String,
}

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeskRefundRequest {
    reservation_id: u64,
    /// The tickets to give back (default: every valid one of the order).
    ticket_ids: Option<Vec<u64>>,
}

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CloseShiftRequest {
    /// The cash counted in the drawer, in minor units.
    #[schema(minimum = 0, maximum = 1_000_000_000_000_u64)]
    counted_cash: u64,
}

const MAX_FLOAT: u64 = 1_000_000_000;
const MAX_COUNTED: u64 = 1_000_000_000_000;

/// Opens the caller's shift at the concert's desk (SELL_AT_DESK), with
/// the cash in the drawer; one open shift per clerk and concert.
#[utoipa::path(post, path = "/api/concerts/{id}/desk/shifts", tag = "desk", security(("bearer" = [])),
    params(("id" = u64, Path)), request_body = OpenShiftRequest,
    responses((status = 201, body = ShiftResponse), (status = 400, body = Problem), (status = 401, body = Problem),
              (status = 403, body = Problem), (status = 404, body = Problem), (status = 409, body = Problem)))]
pub async fn open(
    State(state): State<ReservationsState>,
    staff: Staff,
    ApiPath(concert): ApiPath<ConcertId>,
    ApiJson(req): ApiJson<OpenShiftRequest>,
) -> ApiResult<impl IntoResponse> {
    if req.float > MAX_FLOAT {
        return Err(FieldError::new("float", "must be at most 10^9").into());
    }
    let mut conn = state.pool.acquire().await?;
    let grant = permit(
        &mut conn,
        staff.caller,
        On::Concert(concert),
        Permission::SellAtDesk,
    )
    .await?;
    let shift = whole::run(&mut conn, async |tx| {
        let found = db::concerts::find(tx, concert).await?;
        let cancelled = found.ok_or_else(ApiError::concert_not_found)?.cancelled_at;
        if cancelled.is_some() {
            return Err(crate::payments::routes::concert_cancelled());
        }
        let currency = db::prices::currency_of(tx, concert).await?;
        let now = db::now(tx).await?;
        let id = shifts_db::open(
            tx,
            concert,
            staff.caller.id,
            currency.as_deref(),
            req.float,
            now,
        )
        .await?;
        let after = json!({"float": req.float, "currency": currency});
        record(
            tx,
            &staff,
            grant,
            concert,
            id,
            "desk.shift_open",
            changed(Value::Null, after),
        )
        .await?;
        answer(tx, id).await
    })
    .await?;
    let location = format!("/api/desk/shifts/{}", shift.id());
    Ok((
        StatusCode::CREATED,
        [(header::LOCATION, location)],
        Json(shift),
    ))
}

/// The concert's shifts, the latest first, each with its money
/// (READ_TAKINGS).
#[utoipa::path(get, path = "/api/concerts/{id}/desk/shifts", tag = "desk", security(("bearer" = [])),
    params(("id" = u64, Path)),
    responses((status = 200, body = Vec<ShiftResponse>), (status = 400, body = Problem), (status = 401, body = Problem),
              (status = 403, body = Problem), (status = 404, body = Problem)))]
pub async fn shifts(
    State(state): State<ReservationsState>,
    caller: AuthUser,
    ApiPath(concert): ApiPath<ConcertId>,
) -> ApiResult<Json<Vec<ShiftResponse>>> {
    let mut conn = state.pool.acquire().await?;
    permit(
        &mut conn,
        caller,
        On::Concert(concert),
        Permission::ReadTakings,
    )
    .await?;
    let mut answers = Vec::new();
    for row in shifts_db::of_concert(&mut conn, concert).await? {
        let moved = shifts_db::movements(&mut conn, row.id).await?;
        answers.push(ShiftResponse::of(row, moved));
    }
    Ok(Json(answers))
}

/// The caller's open shift at the concert's desk (SELL_AT_DESK); null
/// when they have none open.
#[utoipa::path(get, path = "/api/concerts/{id}/desk/my-shift", tag = "desk", security(("bearer" = [])),
    params(("id" = u64, Path)),
    responses((status = 200, body = Option<ShiftResponse>), (status = 400, body = Problem), (status = 401, body = Problem),
              (status = 403, body = Problem), (status = 404, body = Problem)))]
pub async fn my_shift(
    State(state): State<ReservationsState>,
    caller: AuthUser,
    ApiPath(concert): ApiPath<ConcertId>,
) -> ApiResult<Json<Option<ShiftResponse>>> {
    let mut conn = state.pool.acquire().await?;
    let needs = Permission::SellAtDesk;
    permit(&mut conn, caller, On::Concert(concert), needs).await?;
    match shifts_db::open_of(&mut conn, concert, caller.id).await? {
        Some(open) => Ok(Json(Some(answer(&mut conn, open).await?))),
        None => Ok(Json(None)),
    }
}

/// One shift with its money: to its clerk, and to READ_TAKINGS.
#[utoipa::path(get, path = "/api/desk/shifts/{id}", tag = "desk", security(("bearer" = [])),
    params(("id" = u64, Path)),
    responses((status = 200, body = ShiftResponse), (status = 400, body = Problem), (status = 401, body = Problem),
              (status = 403, body = Problem), (status = 404, body = Problem)))]
pub async fn shift(
    State(state): State<ReservationsState>,
    caller: AuthUser,
    ApiPath(id): ApiPath<ShiftId>,
) -> ApiResult<Json<ShiftResponse>> {
    let mut conn = state.pool.acquire().await?;
    let row = shifts_db::find(&mut conn, id)
        .await?
        .ok_or_else(ApiError::shift_not_found)?;
    clerk_or(&mut conn, caller, &row, Permission::ReadTakings).await?;
    Ok(Json(answer(&mut conn, id).await?))
}

/// Asks the line for what a buyer at the desk wants (the shift's clerk):
/// a buyer account is made for the sale (its tickets mailed to `email`
/// when given), and its request is written as any fan's, behind those
/// before it. Follow it at `GET /api/reservations/status/{queueId}`.
#[utoipa::path(post, path = "/api/desk/shifts/{id}/requests", tag = "desk", security(("bearer" = [])),
    params(("id" = u64, Path)), request_body = DeskRequest,
    responses((status = 201, body = DeskRequestResponse), (status = 400, body = Problem), (status = 401, body = Problem),
              (status = 403, body = Problem), (status = 404, body = Problem), (status = 409, body = Problem),
              (status = 503, body = Problem)))]
pub async fn request(
    State(state): State<ReservationsState>,
    staff: Staff,
    ApiPath(id): ApiPath<ShiftId>,
    ApiJson(req): ApiJson<DeskRequest>,
) -> ApiResult<impl IntoResponse> {
    let email = req.email.as_deref().map(EmailAddress::parse).transpose()?;
    let language = match req.language.as_deref() {
        Some(code) => Language::parse(code)?,
        None => Language::default(),
    };
    let mut conn = state.pool.acquire().await?;
    let row = shifts_db::find(&mut conn, id)
        .await?
        .ok_or_else(ApiError::shift_not_found)?;
    let grant = clerk_of(&mut conn, staff.caller, &row, Permission::SellAtDesk).await?;
    let concert = row.concert_id;
    let checked = desk_order(&state, concert, &req.order).await?;
    let buyer = whole::run(&mut conn, async |tx| {
        open_shift(tx, id).await?;
        let now = db::now(tx).await?;
        let buyer = shifts_db::insert_guest(tx, concert, id, email.as_ref(), language, now).await?;
        let after = json!({"buyerId": buyer.get(), "mailed": email.is_some()});
        record(
            tx,
            &staff,
            grant,
            concert,
            id,
            "desk.request",
            changed(Value::Null, after),
        )
        .await?;
        Ok::<_, ApiError>(buyer)
    })
    .await?;
    drop(conn);
    let queued = enqueue_for_desk(&state, checked, buyer).await?;
    let body = DeskRequestResponse {
        queue_id: queued.id.get(),
        status: queued.status.as_str(),
        buyer_id: buyer.get(),
    };
    let location = format!("/api/reservations/status/{}", queued.id);
    Ok((
        StatusCode::CREATED,
        [(header::LOCATION, location)],
        Json(body),
    ))
}

/// Sells a running hold of the shift's concert for money taken at the
/// desk (the shift's clerk): in cash or by the card terminal, recorded on
/// the shift in the sale's own transaction. A hold of a free concert is
/// confirmed; a closed shift sells nothing (409 `SHIFT_CLOSED`).
#[utoipa::path(post, path = "/api/desk/shifts/{id}/payments", tag = "desk", security(("bearer" = [])),
    params(("id" = u64, Path)), request_body = DeskPaymentRequest,
    responses((status = 200, body = ReservationResponse), (status = 400, body = Problem), (status = 401, body = Problem),
              (status = 402, body = Problem), (status = 403, body = Problem), (status = 404, body = Problem),
              (status = 409, body = Problem)))]
pub async fn pay(
    State(state): State<ReservationsState>,
    staff: Staff,
    ApiPath(id): ApiPath<ShiftId>,
    ApiJson(req): ApiJson<DeskPaymentRequest>,
) -> ApiResult<Json<ReservationResponse>> {
    let method = DeskMethod::parse(&req.method)?;
    let reservation = ReservationId(req.reservation_id);
    let mut conn = state.pool.acquire().await?;
    let sold = whole::run(&mut conn, async |tx| {
        let row = open_shift(tx, id).await?;
        let grant = clerk_of(tx, staff.caller, &row, Permission::SellAtDesk).await?;
        let (locked, actor) =
            lock_acting(tx, staff.caller, reservation, Permission::SellAtDesk).await?;
        if locked.concert_id != row.concert_id {
            return Err(ApiError::reservation_not_found());
        }
        let now = db::now(tx).await?;
        if locked.status != ReservationStatus::Held || !locked.is_live_hold(now) {
            return Err(ApiError::new(
                ErrorCode::ReservationNotHeld,
                "only a running hold is sold at the desk",
            ));
        }
        let taken = sell_hold(tx, &state, &staff, actor, &locked, (None, None), now).await?;
        if let Some(payment) = taken {
            shifts_db::tag_payment(tx, payment, id, method).await?;
        }
        let after = json!({"reservationId": reservation.get(), "method": method.as_str()});
        record(
            tx,
            &staff,
            grant,
            row.concert_id,
            id,
            "desk.sale",
            changed(Value::Null, after),
        )
        .await?;
        db::reservations::find(tx, reservation, now)
            .await?
            .ok_or_else(ApiError::reservation_not_found)
    })
    .await?;
    Ok(Json(sold.into()))
}

/// Gives back tickets of an order at the desk (the shift's clerk, with
/// REFUND, within the organizer's `deskRefundLimit`): money taken by hand
/// goes back from the drawer (or to the card, as it was taken) and is
/// recorded on the shift at once; money taken by the provider goes back
/// through it, as any refund.
#[utoipa::path(post, path = "/api/desk/shifts/{id}/refunds", tag = "desk", security(("bearer" = [])),
    params(("id" = u64, Path)), request_body = DeskRefundRequest,
    responses((status = 200, body = RefundResult), (status = 400, body = Problem), (status = 401, body = Problem),
              (status = 403, body = Problem), (status = 404, body = Problem), (status = 409, body = Problem)))]
pub async fn refund(
    State(state): State<ReservationsState>,
    staff: Staff,
    ApiPath(id): ApiPath<ShiftId>,
    ApiJson(req): ApiJson<DeskRefundRequest>,
) -> ApiResult<Json<RefundResult>> {
    let named: Option<Vec<TicketId>> = req
        .ticket_ids
        .map(|ids| ids.into_iter().map(TicketId).collect());
    if named.as_ref().is_some_and(Vec::is_empty) {
        return Err(FieldError::new("ticketIds", "name at least one ticket").into());
    }
    let reservation = ReservationId(req.reservation_id);
    let mut conn = state.pool.acquire().await?;
    let given = whole::run(&mut conn, async |tx| {
        let row = open_shift(tx, id).await?;
        clerk_of(tx, staff.caller, &row, Permission::SellAtDesk).await?;
        let (locked, actor) =
            lock_acting(tx, staff.caller, reservation, Permission::Refund).await?;
        if locked.concert_id != row.concert_id || actor == Actor::Fan {
            return Err(ApiError::reservation_not_found());
        }
        let mut given = give_back_tickets(tx, &staff, actor, &locked, named.as_deref()).await?;
        let by_hand = match given.refund_id() {
            Some(refund) => db::refunds::provider_of(tx, refund).await? == Some(Provider::Manual),
            None => false,
        };
        if let (Some(refund), true) = (given.refund_id(), by_hand) {
            let method = shifts_db::method_of_order(tx, refund)
                .await?
                .unwrap_or(DeskMethod::Cash);
            let now = db::now(tx).await?;
            db::refunds::record_paid_back(tx, refund, Some(&format!("desk shift {id}")), now)
                .await?;
            shifts_db::tag_refund(tx, refund, id, method).await?;
            given = given.paid_back();
        }
        Ok::<_, ApiError>(given)
    })
    .await?;
    Ok(Json(given))
}

/// Closes a shift with the cash counted (its clerk, or READ_TAKINGS for
/// one left open): the answer shows expected against counted, by method,
/// and the shift's sales and refunds. Closed once (409 `SHIFT_CLOSED`).
#[utoipa::path(post, path = "/api/desk/shifts/{id}/close", tag = "desk", security(("bearer" = [])),
    params(("id" = u64, Path)), request_body = CloseShiftRequest,
    responses((status = 200, body = ShiftResponse), (status = 400, body = Problem), (status = 401, body = Problem),
              (status = 403, body = Problem), (status = 404, body = Problem), (status = 409, body = Problem)))]
pub async fn close(
    State(state): State<ReservationsState>,
    staff: Staff,
    ApiPath(id): ApiPath<ShiftId>,
    ApiJson(req): ApiJson<CloseShiftRequest>,
) -> ApiResult<Json<ShiftResponse>> {
    if req.counted_cash > MAX_COUNTED {
        return Err(FieldError::new("countedCash", "must be at most 10^12").into());
    }
    let mut conn = state.pool.acquire().await?;
    let closed = whole::run(&mut conn, async |tx| {
        let row = open_shift(tx, id).await?;
        let grant = clerk_or(tx, staff.caller, &row, Permission::ReadTakings).await?;
        let moved = shifts_db::movements(tx, id).await?;
        let movements: Vec<_> = moved.iter().filter_map(|m| m.movement()).collect();
        let expected = ShiftTotals::of(row.float_amount, &movements).expected_cash;
        let now = db::now(tx).await?;
        if !shifts_db::close(tx, id, expected, req.counted_cash, now).await? {
            return Err(shift_closed());
        }
        let counted = i64::try_from(req.counted_cash).unwrap_or(i64::MAX);
        let after = json!({"expectedCash": expected, "countedCash": req.counted_cash, "difference": counted - expected});
        record(tx, &staff, grant, row.concert_id, id, "desk.shift_close", changed(Value::Null, after))
            .await?;
        answer(tx, id).await
    })
    .await?;
    Ok(Json(closed))
}

/// Locks the shift; refused once closed.
async fn open_shift(tx: &mut MySqlConnection, id: ShiftId) -> ApiResult<ShiftRow> {
    let row = shifts_db::lock(tx, id)
        .await?
        .ok_or_else(ApiError::shift_not_found)?;
    if row.closed_at.is_some() {
        return Err(shift_closed());
    }
    Ok(row)
}

/// The shift's own clerk, whose role on its concert still gives `needs`:
/// a shift is one person's drawer.
async fn clerk_of(
    conn: &mut MySqlConnection,
    caller: AuthUser,
    shift: &ShiftRow,
    needs: Permission,
) -> ApiResult<Grant> {
    let grant = permit(conn, caller, On::Concert(shift.concert_id), needs)
        .await
        .map_err(|e| {
            if e.code() == ErrorCode::ConcertNotFound {
                ApiError::shift_not_found()
            } else {
                e
            }
        })?;
    if shift.user_id != Some(caller.id) {
        return Err(ApiError::new(
            ErrorCode::Forbidden,
            "a shift is its clerk's drawer: only they sell and give back on it",
        ));
    }
    Ok(grant)
}

/// The shift's clerk, or someone whose role gives `otherwise`.
async fn clerk_or(
    conn: &mut MySqlConnection,
    caller: AuthUser,
    shift: &ShiftRow,
    otherwise: Permission,
) -> ApiResult<Grant> {
    if shift.user_id == Some(caller.id) {
        return clerk_of(conn, caller, shift, Permission::SellAtDesk).await;
    }
    permit(conn, caller, On::Shift(shift.id), otherwise).await
}

async fn answer(conn: &mut MySqlConnection, id: ShiftId) -> ApiResult<ShiftResponse> {
    let row = shifts_db::find(conn, id)
        .await?
        .ok_or_else(ApiError::shift_not_found)?;
    let moved = shifts_db::movements(conn, id).await?;
    Ok(ShiftResponse::of(row, moved))
}

async fn record(
    tx: &mut MySqlConnection,
    staff: &Staff,
    grant: Grant,
    concert: ConcertId,
    shift: ShiftId,
    action: &'static str,
    changes: Value,
) -> ApiResult<()> {
    let did = Did {
        action,
        concert: Some(concert),
        target: Some(format!("shift {shift}")),
        changes: &changes,
    };
    staff.record(tx, grant, did).await
}

fn shift_closed() -> ApiError {
    ApiError::new(
        ErrorCode::ShiftClosed,
        "the shift was closed: open a new one to sell or give back",
    )
}
