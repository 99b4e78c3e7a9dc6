//! The presale feature's own state: what its handlers reach,
//! assembled once at startup (`crate::state`).

use sqlx::MySqlPool;

use crate::extract::Auth;

/// What the presale's handlers reach: its access codes.
#[derive(Clone)]
pub struct PresaleState {
    pub pool: MySqlPool,
    pub auth: Auth,
    /// Where a caller's address is read (recorded with what staff do).
    pub client_addresses: crate::extract::ClientAddresses,
}

crate::with_auth!(PresaleState);
crate::with_client_addresses!(PresaleState);
