//! `POST /api/reservations/{id}/payment`, `GET /api/reservations/{id}/payments`
//! and `POST /api/payments/stripe/webhook`.

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use chrono::{DateTime, Utc};
use serde::Serialize;
use ticket_core::db::payments::{self, NewPayment, PaymentRow};
use ticket_core::db::{self, concerts, refunds, whole};
use ticket_core::domain::events::total_of_seats;
use ticket_core::domain::payment::{PaymentStatus, Provider};
use ticket_core::domain::{RefundId, ReservationId, SeatId};
use ticket_core::payments::{self as provider, settle, stripe};
use utoipa::ToSchema;

use crate::error::{ApiError, ApiResult, ErrorCode, Problem};
use crate::extract::{ApiPath, AuthUser, ClientAddress};
use crate::payments::state::PaymentsState;
use crate::reservations::checkout::lock_own;

/// Where Stripe delivers its events.
pub const STRIPE_WEBHOOK: &str = "/api/payments/stripe/webhook";

pub fn router() -> Router<PaymentsState> {
    Router::new()
        .route("/api/reservations/{id}/payment", post(pay))
        .route("/api/reservations/{id}/payments", get(payments_of))
        .route(STRIPE_WEBHOOK, post(stripe_webhook))
        .route("/api/payments/config", get(config))
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PaymentsConfig {
    /// `stripe`: fans pay for their holds on the page; `manual`: the box
    /// office confirms paid orders by hand (bank transfer, at the desk).
    #[schema(example = "stripe")]
    provider: &'static str,
    /// What the page gives Stripe.js (not a secret); null when manual.
    publishable_key: Option<String>,
    /// The Stripe.js the page loads; null when manual.
    js_url: Option<String>,
}

/// How fans pay on this box office: what the page needs to take a card.
#[utoipa::path(get, path = "/api/payments/config", tag = "payments",
    responses((status = 200, body = PaymentsConfig)))]
pub async fn config(State(state): State<PaymentsState>) -> Json<PaymentsConfig> {
    Json(match state.stripe.as_deref() {
        Some(stripe) => PaymentsConfig {
            provider: Provider::Stripe.api_name(),
            publishable_key: Some(stripe.publishable_key.clone()),
            js_url: Some(stripe.js_url.clone()),
        },
        None => PaymentsConfig {
            provider: Provider::Manual.api_name(),
            publishable_key: None,
            js_url: None,
        },
    })
}

/// Seconds a client waits before asking again when the provider is down.
const PROVIDER_RETRY_SECS: u64 = 5;

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PaymentResponse {
    payment_id: u64,
    #[schema(example = "stripe")]
    provider: &'static str,
    /// OPEN (to be paid), SUCCEEDED, FAILED (declined: the hold runs on,
    /// ask again for another attempt) or CANCELED.
    #[schema(example = "OPEN")]
    status: &'static str,
    /// The hold's total, in `currency`'s minor units.
    amount: u64,
    #[schema(example = "EUR")]
    currency: String,
    /// What Stripe.js pays the PaymentIntent with (`confirmCardPayment`).
    client_secret: Option<String>,
    publishable_key: Option<String>,
    /// Why the last attempt was declined, in the provider's words.
    failure: Option<String>,
    created_at: DateTime<Utc>,
}

impl PaymentResponse {
    fn of(p: &PaymentRow, publishable_key: Option<&str>) -> Self {
        Self {
            payment_id: p.id.get(),
            provider: p.provider().api_name(),
            status: p.status().as_str(),
            amount: p.amount,
            currency: p.currency.clone(),
            client_secret: p.client_secret.clone(),
            publishable_key: publishable_key.map(str::to_owned),
            failure: p.failure.clone(),
            created_at: p.created_at,
        }
    }
}

/// Pays for a HELD reservation of a priced concert (its owner): the
/// provider's PaymentIntent of exactly the hold's total, created once per
/// hold (asked again: the same one, 200; after a declined attempt, a new
/// one). The hold is sold when the provider says the money moved.
#[utoipa::path(post, path = "/api/reservations/{id}/payment", tag = "payments", security(("bearer" = [])),
    params(("id" = u64, Path)),
    responses((status = 201, body = PaymentResponse), (status = 200, body = PaymentResponse),
              (status = 401, body = Problem), (status = 404, body = Problem), (status = 409, body = Problem),
              (status = 503, body = Problem)))]
pub async fn pay(
    State(state): State<PaymentsState>,
    caller: AuthUser,
    ApiPath(id): ApiPath<ReservationId>,
) -> ApiResult<Response> {
    let Some(stripe) = state.stripe.clone() else {
        return Err(ApiError::payments_unavailable(
            "no payment provider is configured; the box office confirms by hand",
            60,
        ));
    };
    let mut conn = state.pool.acquire().await?;
    let payment = whole::run(&mut conn, async |tx| {
        let locked = lock_own(tx, caller, id).await?;
        let now = db::now(tx).await?;
        let concert = concerts::find(tx, locked.concert_id)
            .await?
            .ok_or_else(ApiError::reservation_not_found)?;
        if concert.cancelled_at.is_some() {
            return Err(concert_cancelled());
        }
        if !locked.is_live_hold(now) {
            return Err(ApiError::new(
                ErrorCode::ReservationNotHeld,
                "only a running hold can be paid for",
            ));
        }
        let Some((amount, currency)) =
            total_of_seats(&locked.seats).filter(|(amount, _)| amount.get() > 0)
        else {
            return Err(ApiError::new(
                ErrorCode::NothingToPay,
                "the reservation costs nothing: confirm it instead",
            ));
        };
        if let Some(latest) = payments::latest_of(tx, id).await?
            && matches!(
                latest.status(),
                PaymentStatus::Open | PaymentStatus::Succeeded
            )
        {
            return Ok(latest);
        }
        let new = NewPayment {
            concert: locked.concert_id,
            reservation: id,
            user: locked.user_id,
            provider: Provider::Stripe,
            amount: amount.get(),
            currency: currency.as_str().to_owned(),
        };
        let payment_id = payments::insert(tx, &new, PaymentStatus::Open, now).await?;
        payments::latest_of(tx, id)
            .await?
            .filter(|p| p.id == payment_id)
            .ok_or_else(|| ApiError::internal(anyhow::anyhow!("payment {payment_id} vanished")))
    })
    .await?;
    let key = Some(stripe.publishable_key.as_str());
    if payment.provider_payment_id.is_some() {
        return Ok((StatusCode::OK, Json(PaymentResponse::of(&payment, key))).into_response());
    }
    let metadata = [
        ("reservation_id", id.to_string()),
        ("concert_id", payment.concert_id.to_string()),
        ("payment_id", payment.id.to_string()),
    ];
    let made = stripe
        .client
        .create_payment(
            payment.amount,
            &payment.currency,
            &provider::payment_key(payment.id),
            &metadata,
        )
        .await
        .map_err(|e| {
            tracing::warn!(error = %e, reservation = %id, "the payment provider did not make a payment");
            ApiError::payments_unavailable(
                "the payment provider does not answer; your hold is unchanged, try again shortly",
                PROVIDER_RETRY_SECS,
            )
        })?;
    let now = db::now(&mut conn).await?;
    payments::record_provider_id(
        &mut conn,
        payment.id,
        &made.id,
        made.client_secret.as_deref(),
        now,
    )
    .await?;
    let stored = payments::latest_of(&mut conn, id)
        .await?
        .ok_or_else(ApiError::reservation_not_found)?;
    Ok((StatusCode::CREATED, Json(PaymentResponse::of(&stored, key))).into_response())
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RefundResponse {
    refund_id: u64,
    /// The payment it gives back (one of `payments`: its provider says
    /// whether the money goes back by hand).
    payment_id: u64,
    amount: u64,
    currency: String,
    /// LATE_PAYMENT, EXTRA_PAYMENT, REQUESTED or CONCERT_CANCELLED.
    reason: String,
    /// PENDING (being carried out), SUCCEEDED or FAILED.
    status: &'static str,
    created_at: DateTime<Utc>,
    /// The seats whose tickets it gives back (empty: the order as a whole).
    seat_ids: Vec<u64>,
}

impl From<refunds::RefundRow> for RefundResponse {
    fn from(r: refunds::RefundRow) -> Self {
        Self {
            refund_id: r.id.get(),
            payment_id: r.payment_id.get(),
            amount: r.amount,
            currency: r.currency.clone(),
            status: r.status().as_str(),
            reason: r.reason,
            created_at: r.created_at,
            seat_ids: Vec::new(),
        }
    }
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PaymentsResponse {
    payments: Vec<PaymentResponse>,
    refunds: Vec<RefundResponse>,
}

/// The reservation's payments (every attempt) and refunds (its owner or
/// an admin).
#[utoipa::path(get, path = "/api/reservations/{id}/payments", tag = "payments", security(("bearer" = [])),
    params(("id" = u64, Path)),
    responses((status = 200, body = PaymentsResponse), (status = 401, body = Problem), (status = 404, body = Problem)))]
pub async fn payments_of(
    State(state): State<PaymentsState>,
    caller: AuthUser,
    ApiPath(id): ApiPath<ReservationId>,
) -> ApiResult<Json<PaymentsResponse>> {
    let mut conn = state.pool.acquire().await?;
    crate::reservations::view::readable(&mut conn, caller, id).await?;
    let key = state.stripe.as_ref().map(|s| s.publishable_key.as_str());
    let payments = payments::of_reservation(&mut conn, id).await?;
    let refunds = refunds::of_reservations(&mut conn, &[id]).await?;
    let ids: Vec<RefundId> = refunds.iter().map(|r| r.id).collect();
    let mut seats = refunds::seats_of(&mut conn, &ids).await?;
    Ok(Json(PaymentsResponse {
        payments: payments
            .iter()
            .map(|p| PaymentResponse::of(p, key))
            .collect(),
        refunds: refunds
            .into_iter()
            .map(|r| {
                let seat_ids = seats.remove(&r.id).unwrap_or_default();
                RefundResponse {
                    seat_ids: seat_ids.into_iter().map(SeatId::get).collect(),
                    ..r.into()
                }
            })
            .collect(),
    }))
}

#[derive(Serialize, ToSchema)]
pub struct WebhookResponse {
    received: bool,
    /// This event was applied before: this delivery changed nothing.
    replayed: bool,
}

/// Stripe's webhook: `payment_intent.succeeded` sells the hold (or, when
/// the hold has ended, refunds the payment), `payment_intent.payment_failed`
/// notes the decline. Signed (`Stripe-Signature`), applied once per event.
#[utoipa::path(post, path = "/api/payments/stripe/webhook", tag = "payments",
    request_body(content = String, content_type = "application/json"),
    responses((status = 200, body = WebhookResponse), (status = 400, body = Problem), (status = 404, body = Problem),
              (status = 503, body = Problem)))]
pub async fn stripe_webhook(
    State(state): State<PaymentsState>,
    client: ClientAddress,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Json<WebhookResponse>> {
    // A server without the provider has no such endpoint (Stripe, sent
    // here by mistake, keeps retrying and says so in its dashboard).
    let Some(stripe) = state.stripe.clone() else {
        return Err(ApiError::new(
            ErrorCode::PaymentsNotConfigured,
            "no payment provider is configured on this server",
        ));
    };
    let signature = headers
        .get("stripe-signature")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let invalid = |e: stripe::SignatureError| {
        ApiError::new(ErrorCode::WebhookSignatureInvalid, e.to_string())
    };
    // The provider's deliveries have a budget of their own (a rush of them
    // must not be refused as one address's, or a hold paid in time would
    // be refunded as late); an unsigned one spends its address's, as any
    // anonymous request, before the database is asked anything.
    let signed_at = match stripe::signed_at(signature, &body, &stripe.webhook_secret) {
        Ok(t) => {
            state.limits.provider_delivery()?;
            t
        }
        Err(e) => {
            state.limits.anonymous_request(client.0)?;
            return Err(invalid(e));
        }
    };
    let mut conn = state.pool.acquire().await?;
    let now = db::now(&mut conn).await?;
    stripe::fresh(signed_at, now.timestamp()).map_err(invalid)?;
    let event: stripe::Event = serde_json::from_slice(&body).map_err(|e| {
        ApiError::new(
            ErrorCode::ValidationError,
            format!("not a Stripe event: {e}"),
        )
    })?;
    let Some(news) = event.payment() else {
        return Ok(Json(WebhookResponse {
            received: true,
            replayed: false,
        }));
    };
    let applied = whole::run(&mut conn, async |tx| {
        let now = db::now(tx).await?;
        if !payments::record_event(tx, Provider::Stripe, &event.id, None, now).await? {
            return Ok::<_, ApiError>(None);
        }
        Ok(Some(settle::apply(tx, Provider::Stripe, &news, now).await?))
    })
    .await?;
    tracing::info!(event = %event.id, kind = %event.kind, ?applied, "payment webhook applied");
    Ok(Json(WebhookResponse {
        received: true,
        replayed: applied.is_none(),
    }))
}

pub(crate) fn concert_cancelled() -> ApiError {
    ApiError::new(
        ErrorCode::ConcertCancelled,
        "the concert was cancelled: nothing more is sold, every ticket is refunded",
    )
}
