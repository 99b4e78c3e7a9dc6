//! The presale feature's own state: what its handlers reach,
//! assembled once at startup (`crate::state`).

use sqlx::MySqlPool;

use crate::extract::Auth;

/// What the presale's handlers reach: its access codes.
#[derive(Clone)]
pub struct PresaleState {
    pub pool: MySqlPool,
    pub auth: Auth,
}

crate::with_auth!(PresaleState);
