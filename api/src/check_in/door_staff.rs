//! Who may check people in: a scanner of the concert (its own bearer
//! token, made by an admin, good for check-ins and the revoked list of that
//! concert only), or an admin.

use std::collections::HashMap;
use std::sync::RwLock;

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use sha2::{Digest as _, Sha256};
use ticket_core::db;
use ticket_core::domain::{ConcertId, ScannerId};

use crate::error::{ApiError, ErrorCode};
use crate::extract::{AuthUser, bearer};
use crate::state::AppState;

/// How a scanner's token starts: told apart from a user's at a glance.
pub const TOKEN_PREFIX: &str = "scn_";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DoorStaff {
    Scanner { id: ScannerId, concert: ConcertId },
    Admin,
}

impl DoorStaff {
    /// A scanner works the door of its own concert only.
    pub fn ensure_concert(self, concert: ConcertId) -> Result<(), ApiError> {
        match self {
            Self::Scanner { concert: own, .. } if own != concert => Err(ApiError::new(
                ErrorCode::Forbidden,
                "this scanner works another concert's door",
            )),
            _ => Ok(()),
        }
    }

    pub fn scanner(self) -> Option<ScannerId> {
        match self {
            Self::Scanner { id, .. } => Some(id),
            Self::Admin => None,
        }
    }
}

/// The hex SHA-256 of a scanner token: what is stored and looked up.
pub fn token_hash(token: &str) -> String {
    Sha256::digest(token.trim().as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

impl FromRequestParts<AppState> for DoorStaff {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        if let Some(token) = bearer(&parts.headers).filter(|t| t.starts_with(TOKEN_PREFIX)) {
            // Read every time: a revoked scanner stops at once.
            let hash = token_hash(token);
            let mut conn = state.pool.acquire().await?;
            let scanner = db::check_ins::scanner_by_token(&mut conn, &hash)
                .await?
                .ok_or_else(|| {
                    ApiError::new(
                        ErrorCode::Unauthorized,
                        "the scanner token is unknown or was revoked",
                    )
                })?;
            state.known_scanners.remember(hash, scanner.id);
            return Ok(Self::Scanner {
                id: scanner.id,
                concert: scanner.concert_id,
            });
        }
        let user = AuthUser::from_request_parts(parts, state).await?;
        if user.is_admin() {
            Ok(Self::Admin)
        } else {
            Err(ApiError::forbidden())
        }
    }
}

/// Scanners this instance has seen, by their token's hash: their requests
/// spend a budget of their own (a venue's scanners share one address, whose
/// anonymous budget would throttle the door), while a token nobody issued
/// spends its address's. Only ever a key for the budget: who a scanner is
/// is read from the database on every request.
#[derive(Debug, Default)]
pub struct KnownScanners {
    by_hash: RwLock<HashMap<String, ScannerId>>,
}

/// Scanners remembered before the map starts again empty.
const MAX_KNOWN: usize = 65_536;

impl KnownScanners {
    fn remember(&self, hash: String, id: ScannerId) {
        let mut known = self.by_hash.write().unwrap_or_else(|e| e.into_inner());
        if known.len() >= MAX_KNOWN {
            known.clear();
        }
        known.insert(hash, id);
    }

    /// The scanner a bearer token is, if it is a scanner token seen before.
    pub fn of_token(&self, token: &str) -> Option<ScannerId> {
        if !token.starts_with(TOKEN_PREFIX) {
            return None;
        }
        let known = self.by_hash.read().unwrap_or_else(|e| e.into_inner());
        known.get(&token_hash(token)).copied()
    }
}
