//! The organizers feature's own state, assembled once at startup
//! (`crate::state`).

use sqlx::MySqlPool;

use crate::extract::Auth;

/// What the organizers' handlers reach.
#[derive(Clone)]
pub struct OrganizersState {
    pub pool: MySqlPool,
    pub auth: Auth,
    /// Where a caller's address is read (recorded with what staff do).
    pub client_addresses: crate::extract::ClientAddresses,
}

crate::with_auth!(OrganizersState);
crate::with_client_addresses!(OrganizersState);
