//! Stripe's webhooks: the `Stripe-Signature` check and the events.

use hmac::{Hmac, Mac};
use serde::Deserialize;
use sha2::Sha256;

use super::Intent;
use crate::payments::ProviderPayment;
use crate::secret::Secret;

/// A signed webhook older (or newer) than this is refused: Stripe's own
/// tolerance, so a captured delivery cannot be replayed later.
pub const SIGNATURE_TOLERANCE_SECS: i64 = 300;

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
    fresh(signed_at(header, payload, secret)?, now)
}

/// Whether a delivery signed at `t` is within the tolerance of `now`
/// (any `t`, however far, without overflowing).
pub fn fresh(t: i64, now: i64) -> Result<(), SignatureError> {
    if now.abs_diff(t) > SIGNATURE_TOLERANCE_SECS.unsigned_abs() {
        return Err(SignatureError::Stale);
    }
    Ok(())
}

/// The time a delivery was signed at, when one of its `v1` signatures is
/// the endpoint secret's over `t.payload` (whether `t` is fresh is
/// [`fresh`]'s to say, against the database's clock).
pub fn signed_at(header: &str, payload: &[u8], secret: &Secret) -> Result<i64, SignatureError> {
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
            return Ok(t);
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
    fn a_timestamp_at_the_ends_of_its_range_is_stale_not_a_panic() {
        let secret = Secret::new("whsec_test");
        let payload = br#"{"id":"evt_1"}"#;
        for t in [i64::MIN, i64::MAX] {
            let header = sign(payload, &secret, t);
            assert_eq!(
                verify_signature(&header, payload, &secret, 1_700_000_000),
                Err(SignatureError::Stale)
            );
        }
        assert_eq!(fresh(i64::MIN, i64::MAX), Err(SignatureError::Stale));
    }

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
