//! Stripe's API, the few calls the box office makes: PaymentIntents
//! (create, read, cancel), refunds (create, list) and the signature of its
//! webhooks. Written over the reqwest the workspace already builds rather
//! than a generated client: async-stripe with only its core types added
//! 143 s to a clean release build and 11.7 MB to the binary (a second HTTP
//! stack) for five endpoints; see docs/benchmarks.md.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use hmac::{Hmac, Mac};
use serde::Deserialize;
use sha2::Sha256;

use super::{ProviderError, ProviderPayment, ProviderPaymentStatus, ProviderRefund};
use crate::secret::Secret;

/// How long one call to Stripe may take before the provider counts as down.
const TIMEOUT: Duration = Duration::from_secs(10);
/// A signed webhook older (or newer) than this is refused: Stripe's own
/// tolerance, so a captured delivery cannot be replayed later.
pub const SIGNATURE_TOLERANCE_SECS: i64 = 300;

#[derive(Clone)]
pub struct StripeClient {
    http: reqwest::Client,
    base: reqwest::Url,
    key: Secret,
}

impl std::fmt::Debug for StripeClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StripeClient")
            .field("base", &self.base.as_str())
            .finish_non_exhaustive()
    }
}

#[derive(Deserialize)]
struct Intent {
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
}

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
            succeeded: r
                .status
                .as_deref()
                .is_none_or(|s| s == "succeeded" || s == "pending"),
            refund_id: r.metadata.get("refund_id").and_then(|v| v.parse().ok()),
        }
    }
}

impl StripeClient {
    pub fn new(base: reqwest::Url, key: Secret) -> anyhow::Result<Self> {
        let tls = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()?
        .with_root_certificates(rustls::RootCertStore {
            roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
        })
        .with_no_client_auth();
        let http = reqwest::Client::builder()
            .tls_backend_preconfigured(tls)
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
        Err(match status.as_u16() {
            429 => ProviderError::RateLimited(retry_after.unwrap_or(Duration::from_secs(1))),
            // A declined card answers 402 to the one confirming it (the
            // fan's browser); anything else of 4xx is a refusal for good.
            400..=499 => ProviderError::Refused(format!("Stripe {status}: {message}")),
            _ => ProviderError::Unavailable(format!("Stripe {status}: {message}")),
        })
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

    /// The refunds made of a PaymentIntent (the latest 100).
    pub async fn refunds_of(&self, payment: &str) -> Result<Vec<ProviderRefund>, ProviderError> {
        let request = self
            .http
            .get(self.url("v1/refunds")?)
            .query(&[("payment_intent", payment), ("limit", "100")]);
        let list: RefundList = self.call(request).await?;
        Ok(list.data.into_iter().map(Into::into).collect())
    }
}

/// Why a webhook's signature is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    #[error("no Stripe-Signature header, or no t= and v1= in it")]
    Malformed,
    #[error("the signature's timestamp is more than 5 minutes from now")]
    Stale,
    #[error("no v1 signature matches the payload")]
    Mismatch,
}

/// Checks `Stripe-Signature` (`t=…,v1=…[,v1=…]`): HMAC-SHA256 with the
/// endpoint's secret over `t.payload`, `t` within the tolerance of `now`
/// (Unix seconds).
pub fn verify_signature(
    header: &str,
    payload: &[u8],
    secret: &Secret,
    now: i64,
) -> Result<(), SignatureError> {
    let mut timestamp = None;
    let mut signatures = Vec::new();
    for part in header.split(',') {
        match part.trim().split_once('=') {
            Some(("t", t)) => timestamp = t.parse::<i64>().ok(),
            Some(("v1", v)) => signatures.push(v),
            _ => {}
        }
    }
    let Some(t) = timestamp else {
        return Err(SignatureError::Malformed);
    };
    if signatures.is_empty() {
        return Err(SignatureError::Malformed);
    }
    if (now - t).abs() > SIGNATURE_TOLERANCE_SECS {
        return Err(SignatureError::Stale);
    }
    for signature in signatures {
        let Some(expected) = hex_decode(signature) else {
            continue;
        };
        let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(secret.expose().as_bytes()) else {
            return Err(SignatureError::Mismatch);
        };
        mac.update(t.to_string().as_bytes());
        mac.update(b".");
        mac.update(payload);
        if mac.verify_slice(&expected).is_ok() {
            return Ok(());
        }
    }
    Err(SignatureError::Mismatch)
}

/// The `Stripe-Signature` header Stripe would send for `payload` at `t`
/// (for tests and the benchmark's fake deliveries).
pub fn sign(payload: &[u8], secret: &Secret, t: i64) -> String {
    let mut mac = match Hmac::<Sha256>::new_from_slice(secret.expose().as_bytes()) {
        Ok(mac) => mac,
        Err(_) => return String::new(),
    };
    mac.update(t.to_string().as_bytes());
    mac.update(b".");
    mac.update(payload);
    let digest = mac.finalize().into_bytes();
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("t={t},v1={hex}")
}

fn hex_decode(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

/// A webhook's event, as much of it as the box office reads.
#[derive(Debug, Deserialize)]
pub struct Event {
    pub id: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub data: EventData,
}

#[derive(Debug, Deserialize)]
pub struct EventData {
    pub object: serde_json::Value,
}

impl Event {
    /// The PaymentIntent's id of a `payment_intent.*` event.
    pub fn payment_intent(&self) -> Option<&str> {
        if !self.kind.starts_with("payment_intent.") {
            return None;
        }
        self.data.object.get("id")?.as_str()
    }

    /// The PaymentIntent as the event saw it, for a `payment_intent.*`
    /// event.
    pub fn payment(&self) -> Option<ProviderPayment> {
        self.payment_intent()?;
        serde_json::from_value::<Intent>(self.data.object.clone())
            .ok()
            .map(Into::into)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signature_verifies_within_five_minutes_only() {
        let secret = Secret::new("whsec_test");
        let payload = br#"{"id":"evt_1"}"#;
        let header = sign(payload, &secret, 1_700_000_000);
        assert_eq!(
            verify_signature(&header, payload, &secret, 1_700_000_000),
            Ok(())
        );
        assert_eq!(
            verify_signature(&header, payload, &secret, 1_700_000_299),
            Ok(())
        );
        assert_eq!(
            verify_signature(&header, payload, &secret, 1_700_000_301),
            Err(SignatureError::Stale)
        );
        assert_eq!(
            verify_signature(&header, br#"{"id":"evt_2"}"#, &secret, 1_700_000_000),
            Err(SignatureError::Mismatch)
        );
        assert_eq!(
            verify_signature(&header, payload, &Secret::new("other"), 1_700_000_000),
            Err(SignatureError::Mismatch)
        );
        assert_eq!(
            verify_signature("v1=00", payload, &secret, 1_700_000_000),
            Err(SignatureError::Malformed)
        );
    }

    #[test]
    fn the_signature_is_stripes() {
        // printf '1700000000.{"a":1}' | openssl dgst -sha256 -hmac whsec_test
        assert_eq!(
            sign(br#"{"a":1}"#, &Secret::new("whsec_test"), 1_700_000_000),
            "t=1700000000,v1=38877139021993b830af32feea6e18a8da83eb2f6e49ee50bd9e4cf4ca4d3789"
        );
    }
}
