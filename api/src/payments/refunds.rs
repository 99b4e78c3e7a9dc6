//! `POST /api/reservations/{id}/refund`: tickets of a sold order given
//! back (all by default, or those named), their exact prices refunded
//! through the provider that took the money; and the rule of who may.

use axum::extract::State;
use axum::{Json, Router, routing::post};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use sqlx::MySqlConnection;
use ticket_core::db::refunds::RefundRefused;
use ticket_core::db::reservations::LockedReservation;
use ticket_core::db::tickets::PricedTicket;
use ticket_core::db::{self, concerts, whole};
use ticket_core::domain::events::total_of_seats;
use ticket_core::domain::payment::{Provider, RefundReason, RefundStatus};
use ticket_core::domain::{
    MemberRole, PaymentReference, Permission, RefundId, ReservationId, ReservationStatus, TicketId,
};
use ticket_core::payments::refund;
use utoipa::ToSchema;

use crate::error::{ApiError, ApiResult, ErrorCode, Problem};
use crate::extract::{ApiPath, OptionalJson};
use crate::organizers::access::{Actor, On};
use crate::organizers::audit::{Did, Staff, changed};
use crate::payments::routes::RefundResponse;
use crate::payments::state::PaymentsState;
use crate::reservations::checkout::lock_acting;
use serde_json::json;

pub fn router() -> Router<PaymentsState> {
    Router::new()
        .route("/api/reservations/{id}/refund", post(refund_tickets))
        .route("/api/refunds/{id}/paid-back", post(paid_back))
}

#[derive(Deserialize, Default, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PaidBackRequest {
    /// How the money went back (a bank transfer's id, a receipt number):
    /// 1 to 128 visible ASCII characters.
    payment_reference: Option<String>,
}

/// Records that the money of a refund of an order paid by hand (cash or a
/// transfer at the box office) was given back by hand (admin): until then
/// the refund stays PENDING, and nothing else marks it done.
#[utoipa::path(post, path = "/api/refunds/{id}/paid-back", tag = "payments", security(("bearer" = [])),
    params(("id" = u64, Path)), request_body(content = Option<PaidBackRequest>),
    responses((status = 200, body = RefundResponse), (status = 400, body = Problem), (status = 401, body = Problem),
              (status = 403, body = Problem), (status = 404, body = Problem), (status = 409, body = Problem)))]
pub async fn paid_back(
    State(state): State<PaymentsState>,
    staff: Staff,
    ApiPath(id): ApiPath<RefundId>,
    OptionalJson(req): OptionalJson<PaidBackRequest>,
) -> ApiResult<Json<RefundResponse>> {
    let grant = staff
        .permit(&state.pool, On::Refund(id), Permission::Refund)
        .await?;
    let reference = req
        .payment_reference
        .as_deref()
        .map(PaymentReference::parse)
        .transpose()?;
    let mut conn = state.pool.acquire().await?;
    let refund = whole::run(&mut conn, async |tx| {
        let now = db::now(tx).await?;
        let recorded = db::refunds::record_paid_back(
            tx,
            id,
            reference.as_ref().map(PaymentReference::as_str),
            now,
        )
        .await?;
        let found = db::refunds::find(tx, id)
            .await?
            .ok_or_else(|| ApiError::new(ErrorCode::RefundNotFound, "no such refund"))?;
        if !recorded {
            let by_hand = db::refunds::provider_of(tx, id).await? == Some(Provider::Manual);
            return Err(ApiError::new(
                ErrorCode::RefundNotByHand,
                if by_hand {
                    "this refund is not pending: it was recorded already"
                } else {
                    "this refund goes back through the payment provider; the workers carry it out"
                },
            ));
        }
        let after = json!({"status": "SUCCEEDED", "paymentReference": reference.as_ref().map(PaymentReference::as_str)});
        let did = Did {
            action: "refund.paid_back",
            concert: db::organizers::concert_of_refund(tx, id).await?,
            target: Some(format!("refund {id}")),
            changes: &changed(json!({"status": "PENDING"}), after),
        };
        staff.record(tx, grant, did).await?;
        Ok::<_, ApiError>(found)
    })
    .await?;
    Ok(Json(RefundResponse::from(refund)))
}

#[derive(Deserialize, Default, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RefundRequest {
    /// The tickets to give back (default: every valid one of the order).
    ticket_ids: Option<Vec<u64>>,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RefundResult {
    /// None when nothing was paid for the tickets (a free concert).
    refund_id: Option<u64>,
    /// What goes back, in `currency`'s minor units.
    amount: u64,
    currency: Option<String>,
    /// PENDING (the workers carry it out at the provider), SUCCEEDED
    /// (money taken by hand, given back by hand; or nothing to give back).
    status: &'static str,
    /// CONFIRMED (some tickets remain valid) or CANCELLED (all went).
    reservation_status: &'static str,
}

impl RefundResult {
    /// The refund made; None when nothing was paid for the tickets.
    pub(crate) fn refund_id(&self) -> Option<RefundId> {
        self.refund_id.map(RefundId)
    }

    /// The same refund, its money given back by hand now.
    pub(crate) fn paid_back(self) -> Self {
        Self {
            status: RefundStatus::Succeeded.as_str(),
            ..self
        }
    }
}

/// Gives back tickets of a CONFIRMED reservation (an admin: any; its
/// owner: while the concert's `refundableUntil` has not passed): they are
/// voided, their seats go back on sale, and exactly their prices are
/// refunded through the provider that took the money. A partial refund
/// leaves the rest of the order valid.
#[utoipa::path(post, path = "/api/reservations/{id}/refund", tag = "payments", security(("bearer" = [])),
    params(("id" = u64, Path)), request_body(content = Option<RefundRequest>),
    responses((status = 200, body = RefundResult), (status = 400, body = Problem), (status = 401, body = Problem),
              (status = 403, body = Problem), (status = 404, body = Problem), (status = 409, body = Problem)))]
pub async fn refund_tickets(
    State(state): State<PaymentsState>,
    staff: Staff,
    ApiPath(id): ApiPath<ReservationId>,
    OptionalJson(req): OptionalJson<RefundRequest>,
) -> ApiResult<Json<RefundResult>> {
    let named: Option<Vec<TicketId>> = req
        .ticket_ids
        .map(|ids| ids.into_iter().map(TicketId).collect());
    if named.as_ref().is_some_and(Vec::is_empty) {
        return Err(
            ticket_core::domain::FieldError::new("ticketIds", "name at least one ticket").into(),
        );
    }
    let mut conn = state.pool.acquire().await?;
    let result = whole::run(&mut conn, async |tx| {
        let (locked, actor) = lock_acting(tx, staff.caller, id, Permission::Refund).await?;
        give_back_tickets(tx, &staff, actor, &locked, named.as_deref()).await
    })
    .await?;
    Ok(Json(result))
}

/// Gives back `named` tickets (None: every valid one) of the locked
/// order, as `actor` may: the refund, its audit entry for staff.
pub(crate) async fn give_back_tickets(
    tx: &mut MySqlConnection,
    staff: &Staff,
    actor: Actor,
    locked: &LockedReservation,
    named: Option<&[TicketId]>,
) -> ApiResult<RefundResult> {
    let (id, caller) = (locked.id, staff.caller);
    let now = db::now(tx).await?;
    if locked.status != ReservationStatus::Confirmed {
        return Err(not_refundable(
            "only a confirmed order's tickets can be refunded",
        ));
    }
    let valid = db::tickets::valid_with_prices(tx, id).await?;
    let chosen: Vec<_> = match &named {
        None => valid.clone(),
        Some(named) => {
            let mut chosen = Vec::new();
            for ticket in named.iter() {
                let Some(found) = valid.iter().find(|t| t.id == *ticket) else {
                    return Err(not_refundable(format!(
                        "ticket {ticket} is not a valid ticket of this order"
                    )));
                };
                if !chosen
                    .iter()
                    .any(|c: &db::tickets::PricedTicket| c.id == found.id)
                {
                    chosen.push(*found);
                }
            }
            chosen
        }
    };
    if chosen.iter().any(|t| t.checked_in) {
        return Err(not_refundable(
            "a ticket used at the door cannot be refunded",
        ));
    }
    ensure_refundable(tx, actor, locked, &chosen, now).await?;
    let given = refund::give_back(
        tx,
        locked,
        &valid,
        &chosen,
        RefundReason::Requested,
        Some(caller.id),
        now,
    )
    .await
    .map_err(refused)?;
    let status = if given.whole_order {
        ReservationStatus::Cancelled
    } else {
        ReservationStatus::Confirmed
    };
    if let Actor::Staff(grant) = actor {
        let tickets: Vec<u64> = chosen.iter().map(|t| t.id.get()).collect();
        let amount: u64 = chosen.iter().map(|t| t.price).sum();
        let did = Did {
            action: "reservation.refund",
            concert: Some(locked.concert_id),
            target: Some(format!("reservation {id}")),
            changes: &changed(
                json!({"status": "CONFIRMED"}),
                json!({"status": status.as_str(), "refundedTickets": tickets, "amount": amount}),
            ),
        };
        staff.record(tx, grant, did).await?;
    }
    Ok(match given.refund {
        Some(r) => RefundResult {
            refund_id: Some(r.id.get()),
            amount: r.amount,
            currency: Some(r.currency),
            status: r.status.as_str(),
            reservation_status: status.as_str(),
        },
        None => RefundResult {
            refund_id: None,
            amount: 0,
            currency: total_of_seats(&locked.seats).map(|(_, c)| c.as_str().to_owned()),
            status: RefundStatus::Succeeded.as_str(),
            reservation_status: status.as_str(),
        },
    })
}

/// Who may give back `giving` of a sold order: staff with the refund
/// permission (the desk up to its organizer's limit per refund); its fan
/// while the concert's `refundableUntil` has not passed (by the
/// database's clock), whoever took the money, provider or box office. An
/// order that cost nothing its fan cancels as they always could.
pub(crate) async fn ensure_refundable(
    tx: &mut MySqlConnection,
    actor: Actor,
    locked: &LockedReservation,
    giving: &[PricedTicket],
    now: DateTime<Utc>,
) -> ApiResult<()> {
    if let Actor::Staff(grant) = actor {
        if grant.role != Some(MemberRole::BoxOffice) {
            return Ok(());
        }
        let amount: u64 = giving.iter().map(|t| t.price).sum();
        return match db::organizers::desk_refund_limit(tx, grant.organizer).await? {
            Some(limit) if amount > limit => Err(ApiError::desk_refund_limit(limit)),
            _ => Ok(()),
        };
    }
    if !refund::paid_for(tx, locked.id).await? {
        return Ok(());
    }
    let refundable = concerts::find(tx, locked.concert_id)
        .await?
        .and_then(|c| c.refundable_until)
        .is_some_and(|until| until > now);
    if refundable {
        Ok(())
    } else {
        Err(ApiError::new(
            ErrorCode::RefundNotAllowed,
            "this concert's tickets can no longer be refunded by their buyer; ask the box office",
        ))
    }
}

/// A refund the payment's records refuse.
pub(crate) fn refused(e: RefundRefused) -> ApiError {
    match e {
        RefundRefused::MoreThanPaid => not_refundable("the order was refunded already"),
        RefundRefused::Database(e) => e.into(),
    }
}

fn not_refundable(detail: impl Into<String>) -> ApiError {
    ApiError::new(ErrorCode::TicketNotRefundable, detail)
}
