//! The check in feature's own state: what its handlers reach,
//! assembled once at startup (`crate::state`).

use std::sync::Arc;

use sqlx::MySqlPool;

use crate::extract::Auth;
use crate::middleware::metrics::ApiMetrics;

/// What the door's handlers reach: scanners, check-ins, the codes' keys.
#[derive(Clone)]
pub struct CheckInState {
    pub pool: MySqlPool,
    pub auth: Auth,
    /// Where a caller's address is read (recorded with what staff do).
    pub client_addresses: crate::extract::ClientAddresses,
    /// Scanners seen on this instance (their requests' rate budget).
    pub known_scanners: Arc<super::known_scanners::KnownScanners>,
    /// What ticket codes are verified with; None: not set up.
    pub ticket_keys: Option<Arc<ticket_core::domain::ticket_code::TicketKeys>>,
    pub metrics: Arc<ApiMetrics>,
}

crate::with_auth!(CheckInState);
crate::with_client_addresses!(CheckInState);

impl axum::extract::FromRef<CheckInState> for super::door_staff::Scanners {
    fn from_ref(state: &CheckInState) -> Self {
        Self {
            pool: state.pool.clone(),
            known: state.known_scanners.clone(),
        }
    }
}
