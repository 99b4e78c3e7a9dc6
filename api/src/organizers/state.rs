//! The organizers feature's own state, assembled once at startup
//! (`crate::state`).

use sqlx::MySqlPool;

use crate::extract::Auth;

/// What the organizers' handlers reach.
#[derive(Clone)]
pub struct OrganizersState {
    pub pool: MySqlPool,
    pub auth: Auth,
}

crate::with_auth!(OrganizersState);
