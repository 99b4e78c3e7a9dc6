//! Bearer tokens in JWT form (HS256), so that any API instance holding the
//! key verifies a token without a database call.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use chrono::{DateTime, Utc};
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;
use ticket_core::domain::{Role, UserId};

type HmacSha256 = Hmac<Sha256>;

/// `{"alg":"HS256","typ":"JWT"}`. Tokens must carry exactly this header:
/// comparing it whole rules out `alg: none` and algorithm-confusion tricks.
const HEADER: &str = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9";

/// Shortest signing key accepted: HS256 wants at least 256 bits.
pub const MIN_SECRET_BYTES: usize = 32;

#[derive(Clone)]
pub struct TokenKeys {
    key: Vec<u8>,
    ttl: chrono::Duration,
}

#[derive(Debug, Serialize, Deserialize)]
struct Claims {
    sub: String,
    role: Role,
    iat: i64,
    /// `iat` in milliseconds, for instances of the previous version during
    /// a rolling update. Absent in tokens of versions before it.
    #[serde(default)]
    iat_ms: Option<i64>,
    /// `iat` in microseconds, the precision revocations are recorded at: a
    /// login and a "log out everywhere" can fall in one millisecond, and
    /// the token must then be void, while one issued after it stays valid.
    /// Absent in tokens of older versions.
    #[serde(default)]
    iat_us: Option<i64>,
    exp: i64,
}

/// Who a valid token speaks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Principal {
    pub user: UserId,
    pub role: Role,
    /// When the token was issued (µs since the epoch), for revocations. A
    /// token of an older version says it less precisely: it is taken at the
    /// start of its millisecond (or second), so that a revocation in the
    /// same one voids it.
    pub issued_at_us: i64,
    /// When the token expires (seconds since the epoch).
    pub expires_at: i64,
}

#[derive(Debug)]
pub struct IssuedToken {
    pub token: String,
    pub expires_in: u64,
}

#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    #[error("malformed token")]
    Malformed,
    #[error("bad signature")]
    BadSignature,
    #[error("expired")]
    Expired,
}

impl TokenError {
    pub fn describe(&self) -> &'static str {
        match self {
            Self::Expired => "the token has expired; log in again",
            Self::Malformed | Self::BadSignature => "the token is invalid",
        }
    }
}

impl TokenKeys {
    pub fn new(secret: &[u8], ttl: std::time::Duration) -> anyhow::Result<Self> {
        anyhow::ensure!(
            secret.len() >= MIN_SECRET_BYTES,
            "the token signing secret must be at least {MIN_SECRET_BYTES} bytes"
        );
        Ok(Self {
            key: secret.to_vec(),
            ttl: chrono::Duration::from_std(ttl)?,
        })
    }

    fn mac(&self) -> HmacSha256 {
        // HMAC takes keys of any length; this cannot fail.
        match HmacSha256::new_from_slice(&self.key) {
            Ok(mac) => mac,
            Err(_) => unreachable!("HMAC accepts keys of any length"),
        }
    }

    pub fn issue(&self, user: UserId, role: Role, now: DateTime<Utc>) -> IssuedToken {
        let claims = Claims {
            sub: user.to_string(),
            role,
            iat: now.timestamp(),
            iat_ms: Some(now.timestamp_millis()),
            iat_us: Some(now.timestamp_micros()),
            exp: (now + self.ttl).timestamp(),
        };
        // Serialising a struct of strings and integers cannot fail.
        let payload = B64.encode(serde_json::to_vec(&claims).unwrap_or_default());
        let signing_input = format!("{HEADER}.{payload}");
        let mut mac = self.mac();
        mac.update(signing_input.as_bytes());
        let signature = B64.encode(mac.finalize().into_bytes());
        IssuedToken {
            token: format!("{signing_input}.{signature}"),
            expires_in: self.ttl.num_seconds().unsigned_abs(),
        }
    }

    pub fn verify(&self, token: &str, now: DateTime<Utc>) -> Result<Principal, TokenError> {
        let mut parts = token.split('.');
        let (Some(header), Some(payload), Some(signature), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(TokenError::Malformed);
        };
        if header != HEADER {
            return Err(TokenError::Malformed);
        }
        let signature = B64.decode(signature).map_err(|_| TokenError::Malformed)?;
        let mut mac = self.mac();
        mac.update(header.as_bytes());
        mac.update(b".");
        mac.update(payload.as_bytes());
        // Constant-time comparison.
        mac.verify_slice(&signature)
            .map_err(|_| TokenError::BadSignature)?;
        let claims: Claims = B64
            .decode(payload)
            .ok()
            .and_then(|json| serde_json::from_slice(&json).ok())
            .ok_or(TokenError::Malformed)?;
        if claims.exp <= now.timestamp() {
            return Err(TokenError::Expired);
        }
        let user = UserId::parse(&claims.sub).map_err(|_| TokenError::Malformed)?;
        Ok(Principal {
            user,
            role: claims.role,
            issued_at_us: claims
                .iat_us
                .or_else(|| claims.iat_ms.map(|ms| ms.saturating_mul(1000)))
                .unwrap_or_else(|| claims.iat.saturating_mul(1_000_000)),
            expires_at: claims.exp,
        })
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn keys(secret: &[u8]) -> TokenKeys {
        TokenKeys::new(secret, Duration::from_secs(3600)).unwrap()
    }

    #[test]
    fn header_constant_is_the_hs256_header() {
        assert_eq!(
            B64.decode(HEADER).unwrap(),
            br#"{"alg":"HS256","typ":"JWT"}"#
        );
    }

    #[test]
    fn round_trip_and_expiry() {
        let k = keys(&[7; 32]);
        let now = Utc::now();
        let t = k.issue(UserId(42), Role::Admin, now);
        assert_eq!(t.expires_in, 3600);
        assert_eq!(
            k.verify(&t.token, now),
            Ok(Principal {
                user: UserId(42),
                role: Role::Admin,
                issued_at_us: now.timestamp_micros(),
                expires_at: now.timestamp() + 3600,
            })
        );
        let later = now + chrono::Duration::seconds(3600);
        assert_eq!(k.verify(&t.token, later), Err(TokenError::Expired));
    }

    #[test]
    fn rejects_tampering_and_other_keys() {
        let k = keys(&[7; 32]);
        let now = Utc::now();
        let t = k.issue(UserId(1), Role::User, now).token;
        assert_eq!(
            keys(&[8; 32]).verify(&t, now),
            Err(TokenError::BadSignature)
        );

        // Same signature over a payload claiming admin.
        let parts: Vec<_> = t.split('.').collect();
        let forged_claims = format!(
            r#"{{"sub":"1","role":"ADMIN","iat":0,"exp":{}}}"#,
            now.timestamp() + 99
        );
        let forged = format!("{}.{}.{}", parts[0], B64.encode(forged_claims), parts[2]);
        assert_eq!(k.verify(&forged, now), Err(TokenError::BadSignature));

        let none_header = B64.encode(r#"{"alg":"none","typ":"JWT"}"#);
        let unsigned = format!("{none_header}.{}.", parts[1]);
        assert_eq!(k.verify(&unsigned, now), Err(TokenError::Malformed));

        for junk in ["", "a.b", "a.b.c.d", "....", &format!("{HEADER}.!!.??")] {
            assert!(k.verify(junk, now).is_err(), "{junk:?}");
        }
    }

    /// Tokens of older versions, which said when they were issued to the
    /// millisecond or the second, are dated at its start.
    #[test]
    fn older_tokens_are_dated_at_the_start_of_their_millisecond_or_second() {
        let k = keys(&[7; 32]);
        let now = Utc::now();
        let signed = |claims: String| {
            let input = format!("{HEADER}.{}", B64.encode(claims));
            let mut mac = k.mac();
            mac.update(input.as_bytes());
            format!("{input}.{}", B64.encode(mac.finalize().into_bytes()))
        };
        let exp = now.timestamp() + 99;
        let (s, ms) = (now.timestamp(), now.timestamp_millis());
        let with_ms = signed(format!(
            r#"{{"sub":"1","role":"USER","iat":{s},"iat_ms":{ms},"exp":{exp}}}"#
        ));
        assert_eq!(k.verify(&with_ms, now).unwrap().issued_at_us, ms * 1000);
        let seconds_only = signed(format!(
            r#"{{"sub":"1","role":"USER","iat":{s},"exp":{exp}}}"#
        ));
        assert_eq!(
            k.verify(&seconds_only, now).unwrap().issued_at_us,
            s * 1_000_000
        );
    }

    #[test]
    fn short_secrets_are_refused() {
        assert!(TokenKeys::new(&[1; 31], Duration::from_secs(60)).is_err());
    }
}
