//! After a request is won: confirming a hold, cancelling a reservation.
//! Both lock the reservation's seats and then the reservation, as every
//! writer does, so a confirm racing an expiry, a cancel or another confirm
//! has exactly one outcome.

use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use sqlx::MySqlConnection;
use ticket_core::db::outbox;
use ticket_core::db::payments::{self, NewPayment};
use ticket_core::db::reservations::{self, LockedReservation};
use ticket_core::db::{self, concerts, seats, whole};
use ticket_core::domain::events::EventKind;
use ticket_core::domain::events::total_of_seats;
use ticket_core::domain::payment::{PaymentStatus, Provider, RefundReason};
use ticket_core::domain::{
    IdempotencyKey, PaymentId, PaymentReference, Permission, ReservationId, ReservationStatus,
    SeatId, SeatStatus,
};
use ticket_core::payments::refund;
use utoipa::ToSchema;

use super::view::{IdempotencyHeader, ReservationResponse, ensure_self};
use crate::error::{ApiError, ApiResult, ErrorCode, Problem};
use crate::extract::{ApiJson, ApiPath, AuthUser, OptionalJson, integral};
use crate::organizers::access::{Actor, acting_on};
use crate::organizers::audit::{Did, Staff, changed};
use crate::reservations::state::ReservationsState;
use serde_json::json;

pub fn router() -> Router<ReservationsState> {
    Router::new()
        .route("/api/reservations/{id}/confirm", post(confirm))
        .route("/api/reservations/{id}/cancel", post(cancel_by_path))
        .route("/api/reservations/cancel", post(cancel))
}

#[derive(Deserialize, Default, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ConfirmRequest {
    /// The payment that pays for the hold (a payment provider's id), kept
    /// with the reservation and sent in its ReservationConfirmed event.
    payment_reference: Option<String>,
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

/// Confirms a HELD reservation before its hold ends (its owner or an
/// admin): it becomes CONFIRMED and its seats RESERVED. A priced hold is
/// paid, not just confirmed: its payment sells it (the provider's
/// webhook), or an admin confirms it once paid at the desk; its owner's
/// confirm is 402. Confirming a confirmed reservation answers it again and
/// changes nothing.
#[utoipa::path(post, path = "/api/reservations/{id}/confirm", tag = "reservations", security(("bearer" = [])),
    params(("id" = u64, Path), IdempotencyHeader), request_body(content = Option<ConfirmRequest>),
    responses((status = 200, body = ReservationResponse), (status = 400, body = Problem), (status = 401, body = Problem),
              (status = 402, body = Problem), (status = 404, body = Problem), (status = 409, body = Problem), (status = 415, body = Problem),
              (status = 503, body = Problem)))]
pub async fn confirm(
    State(state): State<ReservationsState>,
    staff: Staff,
    ApiPath(id): ApiPath<ReservationId>,
    headers: HeaderMap,
    OptionalJson(req): OptionalJson<ConfirmRequest>,
) -> ApiResult<Response> {
    let payment = req
        .payment_reference
        .as_deref()
        .map(PaymentReference::parse)
        .transpose()?;
    let key = match headers.get("idempotency-key") {
        Some(v) => Some(IdempotencyKey::parse(v.to_str().unwrap_or("\u{0}"))?),
        None => None,
    };
    let mut conn = state.pool.acquire().await?;
    let caller = staff.caller;
    let (confirmed, replayed) = whole::run(&mut conn, async |tx| {
        let (locked, actor) = lock_acting(tx, caller, id, Permission::SellAtDesk).await?;
        let now = db::now(tx).await?;
        let replayed = match locked.status {
            ReservationStatus::Confirmed => {
                let same_key = key.as_ref().map(IdempotencyKey::as_str)
                    == locked.confirm_key.as_deref()
                    && key.is_some();
                if same_key
                    && payment.as_ref().map(PaymentReference::as_str)
                        != locked.payment_reference.as_deref()
                {
                    return Err(ApiError::new(
                        ErrorCode::IdempotencyKeyReused,
                        "this Idempotency-Key confirmed the reservation with another paymentReference",
                    ));
                }
                same_key
            }
            ReservationStatus::Held if locked.is_live_hold(now) => {
                let paid = (payment.as_ref(), key.as_ref());
                sell_hold(tx, &state, &staff, actor, &locked, paid, now).await?;
                false
            }
            ReservationStatus::Held | ReservationStatus::Expired => return Err(hold_expired()),
            ReservationStatus::Cancelled => {
                return Err(ApiError::new(
                    ErrorCode::ReservationNotHeld,
                    "the reservation was cancelled; only a HELD reservation can be confirmed",
                ));
            }
        };
        let confirmed = reservations::find(tx, id, now)
            .await?
            .ok_or_else(ApiError::reservation_not_found)?;
        Ok((confirmed, replayed))
    })
    .await?;
    let mut response = Json(ReservationResponse::from(confirmed)).into_response();
    if replayed {
        response
            .headers_mut()
            .insert("idempotent-replayed", HeaderValue::from_static("true"));
    }
    Ok(response)
}

/// Cancels a HELD or CONFIRMED reservation (its owner or an admin); every
/// one of its seats becomes AVAILABLE in the same transaction.
#[utoipa::path(post, path = "/api/reservations/{id}/cancel", tag = "reservations", security(("bearer" = [])),
    params(("id" = u64, Path)),
    responses((status = 200, body = CancelResponse), (status = 400, body = Problem), (status = 401, body = Problem),
              (status = 404, body = Problem), (status = 409, body = Problem), (status = 503, body = Problem)))]
pub async fn cancel_by_path(
    State(state): State<ReservationsState>,
    staff: Staff,
    ApiPath(id): ApiPath<ReservationId>,
) -> ApiResult<Json<CancelResponse>> {
    cancel_reservation(&state, &staff, id).await
}

/// Cancels a HELD or CONFIRMED reservation, named in the body (the
/// original route; `POST /api/reservations/{id}/cancel` does the same).
#[utoipa::path(post, path = "/api/reservations/cancel", tag = "reservations", security(("bearer" = [])),
    request_body = CancelRequest,
    responses((status = 200, body = CancelResponse), (status = 400, body = Problem), (status = 401, body = Problem),
              (status = 403, body = Problem), (status = 404, body = Problem), (status = 409, body = Problem)))]
pub async fn cancel(
    State(state): State<ReservationsState>,
    staff: Staff,
    ApiJson(req): ApiJson<CancelRequest>,
) -> ApiResult<Json<CancelResponse>> {
    ensure_self(staff.caller, req.user_id)?;
    cancel_reservation(&state, &staff, ReservationId(req.reservation_id)).await
}

async fn cancel_reservation(
    state: &ReservationsState,
    staff: &Staff,
    id: ReservationId,
) -> ApiResult<Json<CancelResponse>> {
    let caller = staff.caller;
    let mut conn = state.pool.acquire().await?;
    whole::run(&mut conn, async |tx| {
        let (locked, actor) = lock_acting(tx, caller, id, Permission::Refund).await?;
        let now = db::now(tx).await?;
        match locked.status {
            ReservationStatus::Confirmed => {}
            ReservationStatus::Held if locked.is_live_hold(now) => {}
            ReservationStatus::Held | ReservationStatus::Expired => return Err(hold_expired()),
            ReservationStatus::Cancelled => {
                return Err(ApiError::new(
                    ErrorCode::ReservationCancelForbidden,
                    "the reservation is already cancelled",
                ));
            }
        }
        if db::check_ins::any_admitted(tx, id).await? {
            return Err(ApiError::new(
                ErrorCode::ReservationCancelForbidden,
                "a ticket of this reservation was used at the door: it can no longer be cancelled",
            ));
        }
        if locked.status == ReservationStatus::Confirmed {
            // A sold order cancelled is a sold order given back.
            let valid = db::tickets::valid_with_prices(tx, id).await?;
            crate::payments::refunds::ensure_refundable(tx, actor, &locked, &valid, now).await?;
            refund::give_back(
                tx,
                &locked,
                &valid,
                &valid,
                RefundReason::Requested,
                Some(caller.id),
                now,
            )
            .await
            .map_err(crate::payments::refunds::refused)?;
        } else {
            reservations::end(tx, &[id], ReservationStatus::Cancelled, now).await?;
            seats::free_unclaimed(tx, &seat_ids(&locked), now).await?;
            announce(tx, EventKind::Cancelled, &locked, None, now).await?;
        }
        if let Actor::Staff(grant) = actor {
            let did = Did {
                action: "reservation.cancel",
                concert: Some(locked.concert_id),
                target: Some(format!("reservation {id}")),
                changes: &changed(
                    json!({"status": locked.status.as_str()}),
                    json!({"status": "CANCELLED"}),
                ),
            };
            staff.record(tx, grant, did).await?;
        }
        Ok(())
    })
    .await?;
    Ok(Json(CancelResponse {
        reservation_id: id.get(),
        status: ReservationStatus::Cancelled.as_str(),
    }))
}

/// Sells the live hold `locked` as `actor` confirms it: CONFIRMED, its
/// seats RESERVED, its event written; staff confirming a priced hold
/// record the money they took (the payment returned), and the entry.
pub(crate) async fn sell_hold(
    tx: &mut MySqlConnection,
    state: &ReservationsState,
    staff: &Staff,
    actor: Actor,
    locked: &LockedReservation,
    (payment, key): (Option<&PaymentReference>, Option<&IdempotencyKey>),
    now: chrono::DateTime<chrono::Utc>,
) -> ApiResult<Option<PaymentId>> {
    let id = locked.id;
    let owed = owed_by(tx, state, actor, locked).await?;
    let confirmed = reservations::confirm(
        tx,
        id,
        locked.seats.len(),
        payment,
        key.map(IdempotencyKey::as_str),
        now,
    )
    .await?;
    if !confirmed {
        return Err(hold_expired());
    }
    seats::mark(tx, &seat_ids(locked), SeatStatus::Reserved, None, now).await?;
    let mut taken = None;
    if let Some(owed) = &owed {
        // The operator's word that the money was taken.
        taken = Some(payments::insert(tx, owed, PaymentStatus::Succeeded, now).await?);
    }
    if let Actor::Staff(grant) = actor {
        let paid = owed
            .as_ref()
            .map(|o| json!({"amount": o.amount, "currency": o.currency}));
        let did = Did {
            action: "reservation.confirm",
            concert: Some(locked.concert_id),
            target: Some(format!("reservation {id}")),
            changes: &changed(
                json!({"status": "HELD"}),
                json!({"status": "CONFIRMED", "paidByHand": paid}),
            ),
        };
        staff.record(tx, grant, did).await?;
    }
    announce(
        tx,
        EventKind::Confirmed,
        locked,
        payment.map(PaymentReference::as_str),
        now,
    )
    .await?;
    Ok(taken)
}

/// What confirming `locked` by hand records as its (manual) payment: none
/// for a free reservation. Refused when the concert was cancelled, and for
/// a fan when a payment provider takes the money (an admin confirms money
/// taken at the box office).
async fn owed_by(
    tx: &mut MySqlConnection,
    state: &ReservationsState,
    actor: Actor,
    locked: &LockedReservation,
) -> ApiResult<Option<NewPayment>> {
    let cancelled = concerts::find(tx, locked.concert_id)
        .await?
        .is_some_and(|c| c.cancelled_at.is_some());
    if cancelled {
        return Err(crate::payments::routes::concert_cancelled());
    }
    let Some((amount, currency)) =
        total_of_seats(&locked.seats).filter(|(amount, _)| amount.get() > 0)
    else {
        return Ok(None);
    };
    // A fan's word is no payment: with a provider they pay it, without
    // one the money is taken at the desk, by an operator who confirms.
    if actor == Actor::Fan {
        return Err(ApiError::new(
            ErrorCode::PaymentRequired,
            if state.stripe.is_some() {
                "pay for the hold (POST /api/reservations/{id}/payment); it is confirmed when the payment arrives"
            } else {
                "this box office takes payment at its desk: the hold is confirmed there once it is paid"
            },
        ));
    }
    Ok(Some(NewPayment {
        concert: locked.concert_id,
        reservation: locked.id,
        user: locked.user_id,
        provider: Provider::Manual,
        amount: amount.get(),
        currency: currency.as_str().to_owned(),
    }))
}

/// Locks the reservation with its seats for its fan, or for staff whose
/// role on its concert gives `needs`; anyone else's answer is exactly a
/// missing one's, so ids cannot be probed.
pub(crate) async fn lock_acting(
    tx: &mut MySqlConnection,
    caller: AuthUser,
    id: ReservationId,
    needs: Permission,
) -> ApiResult<(LockedReservation, Actor)> {
    let locked = reservations::lock_with_seats(tx, id)
        .await?
        .ok_or_else(ApiError::reservation_not_found)?;
    let (owner, concert) = (locked.user_id, locked.concert_id);
    let actor = acting_on(
        tx,
        caller,
        owner,
        concert,
        needs,
        ApiError::reservation_not_found,
    )
    .await?;
    Ok((locked, actor))
}

/// Locks the reservation with its seats; someone else's answers exactly
/// like a missing one, so ids cannot be probed through these routes.
pub(crate) async fn lock_own(
    tx: &mut MySqlConnection,
    caller: AuthUser,
    id: ReservationId,
) -> ApiResult<LockedReservation> {
    reservations::lock_with_seats(tx, id)
        .await?
        .filter(|r| caller.can_act_on(r.user_id))
        .ok_or_else(ApiError::reservation_not_found)
}

fn seat_ids(r: &LockedReservation) -> Vec<SeatId> {
    r.seats.iter().map(|s| s.seat_id).collect()
}

async fn announce(
    tx: &mut MySqlConnection,
    kind: EventKind,
    r: &LockedReservation,
    payment_reference: Option<&str>,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<(), sqlx::Error> {
    outbox::record(tx, &[r.event(kind, payment_reference, now)], now).await?;
    Ok(())
}

fn hold_expired() -> ApiError {
    ApiError::new(
        ErrorCode::HoldExpired,
        "the hold has run out; its seats are offered again",
    )
}
