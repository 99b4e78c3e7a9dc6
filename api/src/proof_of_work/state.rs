//! The proof of work feature's own state: what its handlers reach,
//! assembled once at startup (`crate::state`).

use std::sync::Arc;

use sqlx::MySqlPool;

use crate::extract::Auth;

/// What the proof of work's handlers reach: its challenges.
#[derive(Clone)]
pub struct ProofOfWorkState {
    pub pool: MySqlPool,
    pub auth: Auth,
    pub challenges: Arc<super::Challenges>,
}

crate::with_auth!(ProofOfWorkState);
