//! The scanners an instance has seen, for the request budgets: kept in the
//! app's state, apart from who may scan (`door_staff`), which reads the
//! state.

use std::collections::HashMap;
use std::sync::RwLock;

use sha2::{Digest as _, Sha256};
use ticket_core::domain::ScannerId;

/// How a scanner's token starts: told apart from a user's at a glance.
pub const TOKEN_PREFIX: &str = "scn_";

/// The hex SHA-256 of a scanner token: what is stored and looked up.
pub fn token_hash(token: &str) -> String {
    Sha256::digest(token.trim().as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
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
    pub(super) fn remember(&self, hash: String, id: ScannerId) {
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
