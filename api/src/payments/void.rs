//! Orders voided after a sale (issue 60): an owner or finance names the
//! orders (picked from the signals the box office has, never by a verdict
//! of its own), and each is voided and refunded in its own transaction:
//! its tickets on the revoked list at once, its money back through the
//! provider that took it (the refund job, once), its fan mailed, one audit
//! entry per order. A second call skips what is voided already.

use axum::extract::State;
use axum::{Json, Router, routing::get, routing::post};
use serde::{Deserialize, Serialize};
use serde_json::json;
use ticket_core::db::{self, order_signals, outbox, reservations, seats, whole};
use ticket_core::domain::events::EventKind;
use ticket_core::domain::payment::RefundReason;
use ticket_core::domain::{ConcertId, FieldError, Permission, ReservationId, ReservationStatus};
use ticket_core::payments::refund;
use utoipa::ToSchema;

use super::state::PaymentsState;
use crate::error::{ApiResult, Problem};
use crate::extract::{ApiJson, ApiPath, AuthUser};
use crate::organizers::access::{Grant, On, permit};
use crate::organizers::audit::{Did, Staff, changed};

pub fn router() -> Router<PaymentsState> {
    Router::new()
        .route("/api/concerts/{id}/orders/void", post(void))
        .route("/api/concerts/{id}/orders/signals", get(signals))
}

const MAX_ORDERS: usize = 500;

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct VoidRequest {
    /// 1 to 500 orders of the concert.
    reservation_ids: Vec<u64>,
    /// Why (1 to 500 characters), kept in each order's audit entry.
    reason: String,
    /// Must be true: a voided order's money always goes back.
    refund: bool,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct VoidOutcome {
    reservation_id: u64,
    /// VOIDED (sold: tickets voided, refunded), RELEASED (a hold ended),
    /// SKIPPED (ended already, or a ticket used at the door) or NOT_FOUND
    /// (no order of this concert).
    #[schema(example = "VOIDED")]
    outcome: &'static str,
    refund_id: Option<u64>,
    amount: u64,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct VoidResponse {
    voided: usize,
    released: usize,
    skipped: usize,
    results: Vec<VoidOutcome>,
}

/// Voids the named orders of the concert and refunds each (VOID_ORDERS).
#[utoipa::path(post, path = "/api/concerts/{id}/orders/void", tag = "payments", security(("bearer" = [])),
    params(("id" = u64, Path)), request_body = VoidRequest,
    responses((status = 200, body = VoidResponse), (status = 400, body = Problem), (status = 401, body = Problem),
              (status = 403, body = Problem), (status = 404, body = Problem)))]
pub async fn void(
    State(state): State<PaymentsState>,
    staff: Staff,
    ApiPath(concert): ApiPath<ConcertId>,
    ApiJson(req): ApiJson<VoidRequest>,
) -> ApiResult<Json<VoidResponse>> {
    let mut ids: Vec<ReservationId> = req
        .reservation_ids
        .iter()
        .copied()
        .map(ReservationId)
        .collect();
    ids.sort_unstable();
    ids.dedup();
    let mut errors = Vec::new();
    if ids.is_empty() || ids.len() > MAX_ORDERS {
        errors.push(FieldError::new("reservationIds", "name 1 to 500 orders"));
    }
    let reason = req.reason.trim();
    if reason.is_empty() || reason.chars().count() > 500 {
        errors.push(FieldError::new("reason", "must be 1 to 500 characters"));
    }
    if !req.refund {
        errors.push(FieldError::new(
            "refund",
            "must be true: a voided order's money goes back",
        ));
    }
    if !errors.is_empty() {
        return Err(errors.into());
    }
    let grant = staff
        .permit(&state.pool, On::Concert(concert), Permission::VoidOrders)
        .await?;
    let mut conn = state.pool.acquire().await?;
    let mut results = Vec::with_capacity(ids.len());
    // One order per transaction: a failure midway leaves those done done,
    // and asking again skips them.
    for id in ids {
        let outcome = whole::run(&mut conn, async |tx| {
            void_one(tx, &staff, grant, concert, id, reason).await
        })
        .await?;
        results.push(outcome);
    }
    let count = |o: &str| results.iter().filter(|r| r.outcome == o).count();
    Ok(Json(VoidResponse {
        voided: count("VOIDED"),
        released: count("RELEASED"),
        skipped: count("SKIPPED") + count("NOT_FOUND"),
        results,
    }))
}

async fn void_one(
    tx: &mut sqlx::MySqlConnection,
    staff: &Staff,
    grant: Grant,
    concert: ConcertId,
    id: ReservationId,
    reason: &str,
) -> ApiResult<VoidOutcome> {
    let outcome = |outcome, refund_id, amount| VoidOutcome {
        reservation_id: id.get(),
        outcome,
        refund_id,
        amount,
    };
    let Some(locked) = reservations::lock_with_seats(tx, id)
        .await?
        .filter(|r| r.concert_id == concert)
    else {
        return Ok(outcome("NOT_FOUND", None, 0));
    };
    let now = db::now(tx).await?;
    let (done, refund_id, amount) = match locked.status {
        ReservationStatus::Confirmed if !db::check_ins::any_admitted(tx, id).await? => {
            let valid = db::tickets::valid_with_prices(tx, id).await?;
            let given = refund::give_back(
                tx,
                &locked,
                &valid,
                &valid,
                RefundReason::Voided,
                Some(staff.caller.id),
                now,
            )
            .await
            .map_err(crate::payments::refunds::refused)?;
            let refund = given.refund.map(|r| (r.id.get(), r.amount));
            ("VOIDED", refund.map(|r| r.0), refund.map_or(0, |r| r.1))
        }
        ReservationStatus::Held if locked.is_live_hold(now) => {
            reservations::end(tx, &[id], ReservationStatus::Cancelled, now).await?;
            let seats: Vec<_> = locked.seats.iter().map(|s| s.seat_id).collect();
            seats::free_unclaimed(tx, &seats, now).await?;
            let event = locked.event(EventKind::Cancelled, None, now);
            outbox::record(tx, &[event], now).await?;
            ("RELEASED", None, 0)
        }
        _ => return Ok(outcome("SKIPPED", None, 0)),
    };
    let did = Did {
        action: "order.void",
        concert: Some(concert),
        target: Some(format!("reservation {id}")),
        changes: &changed(
            json!({"status": locked.status.as_str()}),
            json!({"status": "CANCELLED", "reason": reason, "refunded": amount}),
        ),
    };
    staff.record(tx, grant, did).await?;
    Ok(outcome(done, refund_id, amount))
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SignalResponse {
    /// SAME_ADDRESS (accounts made from one address within an hour, each
    /// holding an order of the concert) or SIGNUP_BURST (accounts made
    /// within a minute of each other in the hour before the opening).
    #[schema(example = "SAME_ADDRESS")]
    kind: String,
    /// How many accounts share it, the buyer's included.
    accounts: i64,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SignalledOrder {
    reservation_id: u64,
    status: String,
    buyer_id: u64,
    nick_name: String,
    signals: Vec<SignalResponse>,
}

/// The concert's live orders whose buyers share a signal the box office
/// has, to pick orders to void from (VOID_ORDERS): signals, not verdicts.
#[utoipa::path(get, path = "/api/concerts/{id}/orders/signals", tag = "payments", security(("bearer" = [])),
    params(("id" = u64, Path)),
    responses((status = 200, body = Vec<SignalledOrder>), (status = 400, body = Problem), (status = 401, body = Problem),
              (status = 403, body = Problem), (status = 404, body = Problem)))]
pub async fn signals(
    State(state): State<PaymentsState>,
    caller: AuthUser,
    ApiPath(concert): ApiPath<ConcertId>,
) -> ApiResult<Json<Vec<SignalledOrder>>> {
    let mut conn = state.pool.acquire().await?;
    permit(
        &mut conn,
        caller,
        On::Concert(concert),
        Permission::VoidOrders,
    )
    .await?;
    let mut orders: Vec<SignalledOrder> = Vec::new();
    for row in order_signals::of_concert(&mut conn, concert).await? {
        let signal = SignalResponse {
            kind: row.kind,
            accounts: row.accounts,
        };
        match orders.last_mut() {
            Some(last) if last.reservation_id == row.reservation_id => last.signals.push(signal),
            _ => orders.push(SignalledOrder {
                reservation_id: row.reservation_id,
                status: row.status,
                buyer_id: row.user_id,
                nick_name: row.nickname,
                signals: vec![signal],
            }),
        }
    }
    Ok(Json(orders))
}
