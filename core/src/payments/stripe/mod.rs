//! Stripe's API, the few calls the box office makes: PaymentIntents
//! (create, read, cancel), refunds (create, list) and the signature of its
//! webhooks. Written over the reqwest the workspace already builds rather
//! than a generated client: async-stripe with only its core types added
//! 143 s to a clean release build and 11.7 MB to the binary (a second HTTP
//! stack) for five endpoints; see docs/benchmarks.md.

mod webhook;

pub use webhook::{
    Event, EventData, SIGNATURE_TOLERANCE_SECS, SignatureError, fresh, sign, signed_at,
    verify_signature,
};

use std::collections::HashMap;
use std::time::Duration;

use serde::Deserialize;

use super::{
    ProviderError, ProviderPayment, ProviderPaymentStatus, ProviderRefund, ProviderRefundStatus,
};
use crate::secret::Secret;

/// How long one call to Stripe may take before the provider counts as down.
const TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Clone)]
pub struct StripeClient {
    http: reqwest::Client,
    base: reqwest::Url,
    key: Secret,
}

impl StripeClient {
    /// The API's address (Stripe.js in the page calls the same one).
    pub fn base(&self) -> &reqwest::Url {
        &self.base
    }
}

impl std::fmt::Debug for StripeClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StripeClient")
            .field("base", &self.base.as_str())
            .finish_non_exhaustive()
    }
}

#[derive(Deserialize)]
pub(super) struct Intent {
    id: String,
    status: String,
    amount: u64,
    currency: String,
    client_secret: Option<String>,
    last_payment_error: Option<PaymentError>,
}

#[derive(Deserialize)]
struct PaymentError {
    message: Option<String>,
    code: Option<String>,
}

#[derive(Deserialize)]
struct Refund {
    id: String,
    amount: u64,
    status: Option<String>,
    #[serde(default)]
    metadata: HashMap<String, String>,
}

#[derive(Deserialize)]
struct RefundList {
    data: Vec<Refund>,
    #[serde(default)]
    has_more: bool,
}

/// Pages of a payment's refunds read at most (100 each): a payment is
/// refunded in a few parts, never thousands.
const MOST_REFUND_PAGES: usize = 100;

#[derive(Deserialize)]
struct ErrorBody {
    error: Option<ErrorDetail>,
}

#[derive(Deserialize)]
struct ErrorDetail {
    message: Option<String>,
}

impl From<Intent> for ProviderPayment {
    fn from(i: Intent) -> Self {
        let declined = i
            .last_payment_error
            .map(|e| e.message.or(e.code).unwrap_or_else(|| "declined".into()));
        let status = match i.status.as_str() {
            "succeeded" => ProviderPaymentStatus::Succeeded,
            "canceled" => ProviderPaymentStatus::Canceled,
            "processing" | "requires_capture" => ProviderPaymentStatus::Processing,
            "requires_payment_method" if declined.is_some() => ProviderPaymentStatus::Declined,
            _ => ProviderPaymentStatus::AwaitingPayer,
        };
        Self {
            id: i.id,
            status,
            amount: i.amount,
            currency: i.currency.to_ascii_uppercase(),
            client_secret: i.client_secret,
            failure: declined,
        }
    }
}

impl From<Refund> for ProviderRefund {
    fn from(r: Refund) -> Self {
        Self {
            id: r.id,
            amount: r.amount,
            status: refund_status(r.status.as_deref()),
            refund_id: r.metadata.get("refund_id").and_then(|v| v.parse().ok()),
        }
    }
}

/// A Stripe refund's `status`: only `succeeded` is money back; an unknown
/// or missing one is read again later rather than taken for done.
fn refund_status(status: Option<&str>) -> ProviderRefundStatus {
    match status {
        Some("succeeded") => ProviderRefundStatus::Succeeded,
        Some("failed" | "canceled") => ProviderRefundStatus::Failed,
        _ => ProviderRefundStatus::Pending,
    }
}

/// What an answer other than 2xx means. A 409 is a request with the same
/// idempotency key still in flight at Stripe: its outcome is not known
/// yet, so it is asked again, never taken for a refusal.
fn error_of(
    status: reqwest::StatusCode,
    retry_after: Option<Duration>,
    message: &str,
) -> ProviderError {
    match status.as_u16() {
        429 => ProviderError::RateLimited(retry_after.unwrap_or(Duration::from_secs(1))),
        409 => ProviderError::Unavailable(format!("Stripe {status} (in flight): {message}")),
        // A declined card answers 402 to the one confirming it (the fan's
        // browser); anything else of 4xx is a refusal for good.
        400..=499 => ProviderError::Refused(format!("Stripe {status}: {message}")),
        _ => ProviderError::Unavailable(format!("Stripe {status}: {message}")),
    }
}

impl StripeClient {
    pub fn new(base: reqwest::Url, key: Secret) -> anyhow::Result<Self> {
        let http = reqwest::Client::builder()
            .tls_backend_preconfigured(crate::tls::client_config()?)
            .timeout(TIMEOUT)
            .connect_timeout(TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("ticket/", env!("CARGO_PKG_VERSION")))
            .build()?;
        Ok(Self { http, base, key })
    }

    fn url(&self, path: &str) -> Result<reqwest::Url, ProviderError> {
        self.base
            .join(path)
            .map_err(|e| ProviderError::Unavailable(format!("bad Stripe URL: {e}")))
    }

    async fn call<T: for<'de> Deserialize<'de>>(
        &self,
        request: reqwest::RequestBuilder,
    ) -> Result<T, ProviderError> {
        let response = request
            .bearer_auth(self.key.expose())
            .send()
            .await
            .map_err(|e| ProviderError::Unavailable(format!("Stripe: {e}")))?;
        let status = response.status();
        if status.is_success() {
            return response
                .json()
                .await
                .map_err(|e| ProviderError::Unavailable(format!("Stripe answered: {e}")));
        }
        let retry_after = response
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(Duration::from_secs);
        let message = response
            .json::<ErrorBody>()
            .await
            .ok()
            .and_then(|b| b.error)
            .and_then(|e| e.message)
            .unwrap_or_else(|| status.to_string());
        Err(error_of(status, retry_after, &message))
    }

    /// A PaymentIntent of `amount` minor units of `currency` for cards,
    /// created once per `idempotency_key`.
    pub async fn create_payment(
        &self,
        amount: u64,
        currency: &str,
        idempotency_key: &str,
        metadata: &[(&str, String)],
    ) -> Result<ProviderPayment, ProviderError> {
        let mut form: Vec<(String, String)> = vec![
            ("amount".into(), amount.to_string()),
            ("currency".into(), currency.to_ascii_lowercase()),
            ("payment_method_types[]".into(), "card".into()),
        ];
        form.extend(
            metadata
                .iter()
                .map(|(k, v)| (format!("metadata[{k}]"), v.clone())),
        );
        let request = self
            .http
            .post(self.url("v1/payment_intents")?)
            .header("Idempotency-Key", idempotency_key)
            .form(&form);
        Ok(self.call::<Intent>(request).await?.into())
    }

    pub async fn payment(&self, id: &str) -> Result<ProviderPayment, ProviderError> {
        let request = self
            .http
            .get(self.url(&format!("v1/payment_intents/{id}"))?);
        Ok(self.call::<Intent>(request).await?.into())
    }

    /// Cancels a PaymentIntent nobody paid, so that it never can be. One
    /// already paid is refused: read it again to learn that.
    pub async fn cancel_payment(&self, id: &str) -> Result<ProviderPayment, ProviderError> {
        let request = self
            .http
            .post(self.url(&format!("v1/payment_intents/{id}/cancel"))?)
            .form(&[("", ""); 0]);
        Ok(self.call::<Intent>(request).await?.into())
    }

    /// Refunds `amount` of the PaymentIntent, once per `refund_id` (the
    /// idempotency key, and the refund's metadata for [`Self::refunds_of`]).
    pub async fn refund(
        &self,
        payment: &str,
        amount: u64,
        refund_id: u64,
    ) -> Result<ProviderRefund, ProviderError> {
        let form = [
            ("payment_intent", payment.to_owned()),
            ("amount", amount.to_string()),
            ("metadata[refund_id]", refund_id.to_string()),
        ];
        let request = self
            .http
            .post(self.url("v1/refunds")?)
            .header("Idempotency-Key", format!("ticket-refund-{refund_id}"))
            .form(&form);
        Ok(self.call::<Refund>(request).await?.into())
    }

    /// Every refund of the payment, page after page (Stripe gives 100 at
    /// most at a time).
    pub async fn refunds_of(&self, payment: &str) -> Result<Vec<ProviderRefund>, ProviderError> {
        let mut refunds: Vec<ProviderRefund> = Vec::new();
        for _ in 0..MOST_REFUND_PAGES {
            let mut query = vec![("payment_intent", payment), ("limit", "100")];
            let after = refunds.last().map(|r| r.id.clone());
            if let Some(after) = after.as_deref() {
                query.push(("starting_after", after));
            }
            let request = self.http.get(self.url("v1/refunds")?).query(&query);
            let page: RefundList = self.call(request).await?;
            let more = page.has_more && !page.data.is_empty();
            refunds.extend(page.data.into_iter().map(ProviderRefund::from));
            if !more {
                return Ok(refunds);
            }
        }
        Err(ProviderError::Unavailable(format!(
            "Stripe lists more than {} refunds of {payment}",
            MOST_REFUND_PAGES * 100
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_succeeded_refund_is_money_back() {
        assert_eq!(
            refund_status(Some("succeeded")),
            ProviderRefundStatus::Succeeded
        );
        for waiting in [
            Some("pending"),
            Some("requires_action"),
            Some("something new"),
            None,
        ] {
            assert_eq!(
                refund_status(waiting),
                ProviderRefundStatus::Pending,
                "{waiting:?}"
            );
        }
        for failed in ["failed", "canceled"] {
            assert_eq!(refund_status(Some(failed)), ProviderRefundStatus::Failed);
        }
    }

    #[test]
    fn a_request_in_flight_is_asked_again_and_a_refusal_is_final() {
        let in_flight = error_of(
            reqwest::StatusCode::CONFLICT,
            None,
            "idempotency key in use",
        );
        assert!(
            matches!(in_flight, ProviderError::Unavailable(_)),
            "{in_flight:?}"
        );
        let refused = error_of(reqwest::StatusCode::BAD_REQUEST, None, "no such payment");
        assert!(matches!(refused, ProviderError::Refused(_)), "{refused:?}");
        let slow = error_of(
            reqwest::StatusCode::TOO_MANY_REQUESTS,
            Some(Duration::from_secs(3)),
            "",
        );
        assert_eq!(slow, ProviderError::RateLimited(Duration::from_secs(3)));
    }
}
