//! A price in work for standing in line: when a concert asks for it, a
//! request carries the solution of an ALTCHA PoW v2 challenge (the `altcha`
//! crate) in its `Proof-Of-Work` header. Challenges are HMAC-signed,
//! bound to the caller and the concert through their signed data, end a
//! minute after they are given (by the database's clock) and are spent
//! once, whichever instance sees them. The algorithm is iterated SHA-256 at
//! cost 1 in deterministic mode: a client hashes until it reaches the
//! counter the server drew (see `ProofOfWork`), and verifying is one HMAC
//! and one hash.

pub mod routes;
pub mod state;

use std::collections::BTreeMap;

use axum::http::HeaderValue;
use base64::Engine as _;
use chrono::{DateTime, Utc};
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};
use ticket_core::domain::{ConcertId, ProofOfWork, UserId};

use crate::error::{ApiError, ErrorCode};

/// Checks the solution in `headers` for `user` in `concert` and spends
/// it, before anything else is written: a request refused later (a
/// duplicate, a full cap) has spent its work all the same.
pub async fn pay(
    challenges: &Challenges,
    pool: &sqlx::MySqlPool,
    headers: &axum::http::HeaderMap,
    user: UserId,
    concert: ConcertId,
) -> Result<(), ApiError> {
    let solved = challenges.check(headers.get("proof-of-work"), user, concert)?;
    let mut conn = pool.acquire().await?;
    match ticket_core::db::spent_challenges::spend(
        &mut conn,
        concert,
        &solved.id,
        solved.expires_at,
    )
    .await?
    {
        ticket_core::db::spent_challenges::Spend::Fresh => Ok(()),
        ticket_core::db::spent_challenges::Spend::Expired
        | ticket_core::db::spent_challenges::Spend::Replayed => Err(ApiError::new(
            ErrorCode::ChallengeInvalid,
            "this proof of work has expired or was spent: solve a new challenge",
        )),
    }
}

/// How long a challenge may be solved and spent.
pub const CHALLENGE_LIFETIME: chrono::Duration = chrono::Duration::seconds(60);

/// Signs and checks challenges with a key of their own, derived from the
/// tokens' secret (every instance derives the same).
pub struct Challenges {
    secret: String,
}

/// A checked solution, to be spent.
#[derive(Debug, Clone, Copy)]
pub struct Solved {
    /// A hash of the challenge's signature: what is recorded as spent.
    pub id: [u8; 32],
    pub expires_at: DateTime<Utc>,
}

impl Challenges {
    pub fn new(auth_secret: &[u8]) -> Self {
        let secret = match Hmac::<Sha256>::new_from_slice(auth_secret) {
            Ok(mut mac) => {
                mac.update(b"ticket proof-of-work challenges");
                hex(&mac.finalize().into_bytes())
            }
            // HMAC takes keys of any length; never reached.
            Err(_) => hex(&Sha256::digest(auth_secret)),
        };
        Self { secret }
    }

    /// A challenge for `user` in `concert` at `level` (at least 1), ending
    /// at `expires_at`.
    pub fn issue(
        &self,
        user: UserId,
        concert: ConcertId,
        level: ProofOfWork,
        expires_at: DateTime<Utc>,
    ) -> Result<altcha::Challenge, ApiError> {
        let (low, high) = level
            .counters()
            .or_else(|| ProofOfWork::parse(1).ok().and_then(ProofOfWork::counters))
            .unwrap_or((1, 1500));
        let mut bytes = [0u8; 4];
        getrandom::getrandom(&mut bytes)
            .map_err(|e| ApiError::internal(anyhow::anyhow!("no randomness: {e}")))?;
        let counter = low + u32::from_le_bytes(bytes) % (high - low);
        let data: BTreeMap<String, serde_json::Value> = [
            ("concert".to_owned(), concert.get().into()),
            ("user".to_owned(), user.get().into()),
            ("expires".to_owned(), expires_at.timestamp_micros().into()),
        ]
        .into_iter()
        .collect();
        altcha::create_challenge(altcha::CreateChallengeOptions {
            algorithm: "SHA-256".to_owned(),
            cost: 1,
            counter: Some(counter),
            data: Some(data),
            hmac_signature_secret: Some(self.secret.clone()),
            ..Default::default()
        })
        .map_err(|e| ApiError::internal(anyhow::anyhow!("creating a challenge: {e}")))
    }

    /// The solution in `header` for `user` in `concert`: 400
    /// CHALLENGE_REQUIRED without one, CHALLENGE_INVALID when it is not a
    /// solution of a challenge this service gave that caller for that
    /// concert. (Its end and its spending are the database's to judge.)
    pub fn check(
        &self,
        header: Option<&HeaderValue>,
        user: UserId,
        concert: ConcertId,
    ) -> Result<Solved, ApiError> {
        let Some(header) = header else {
            return Err(ApiError::new(
                ErrorCode::ChallengeRequired,
                format!(
                    "this concert asks for a proof of work: solve a challenge from \
                     GET /api/concerts/{}/challenge and send it in the Proof-Of-Work header",
                    concert.get()
                ),
            ));
        };
        let invalid = || {
            ApiError::new(
                ErrorCode::ChallengeInvalid,
                "the proof of work is not a solution of a challenge given to you for this concert",
            )
        };
        let payload: altcha::Payload = header
            .to_str()
            .ok()
            .and_then(|text| {
                base64::engine::general_purpose::STANDARD
                    .decode(text.trim())
                    .ok()
            })
            .and_then(|json| serde_json::from_slice(&json).ok())
            .ok_or_else(invalid)?;
        let verified = altcha::verify_solution(altcha::VerifySolutionOptions::new(
            &payload.challenge,
            &payload.solution,
            self.secret.clone(),
        ))
        .map(|result| result.verified)
        .unwrap_or(false);
        if !verified {
            return Err(invalid());
        }
        let data = payload
            .challenge
            .parameters
            .data
            .as_ref()
            .ok_or_else(invalid)?;
        let number = |key: &str| data.get(key).and_then(serde_json::Value::as_i64);
        let ours = number("user") == i64::try_from(user.get()).ok()
            && number("concert") == i64::try_from(concert.get()).ok();
        let expires_at = number("expires").and_then(DateTime::<Utc>::from_timestamp_micros);
        let (true, Some(expires_at), Some(signature)) =
            (ours, expires_at, payload.challenge.signature.as_ref())
        else {
            return Err(invalid());
        };
        Ok(Solved {
            id: Sha256::digest(signature.as_bytes()).into(),
            expires_at,
        })
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
