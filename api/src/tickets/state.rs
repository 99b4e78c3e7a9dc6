//! The tickets feature's own state: what its handlers reach,
//! assembled once at startup (`crate::state`).

use std::sync::Arc;

use sqlx::MySqlPool;

use crate::extract::Auth;

/// What the tickets' handlers reach: the codes' keys.
#[derive(Clone)]
pub struct TicketsState {
    pub pool: MySqlPool,
    pub auth: Auth,
    /// What ticket codes are signed with; None: not set up.
    pub ticket_keys: Option<Arc<ticket_core::domain::ticket_code::TicketKeys>>,
    /// Who may read the door's revoked list: its scanners.
    pub scanners: crate::check_in::door_staff::Scanners,
}

crate::with_auth!(TicketsState);

impl axum::extract::FromRef<TicketsState> for crate::check_in::door_staff::Scanners {
    fn from_ref(state: &TicketsState) -> Self {
        state.scanners.clone()
    }
}
