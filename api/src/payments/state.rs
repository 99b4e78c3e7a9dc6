//! The payments feature's own state: what its handlers reach,
//! assembled once at startup (`crate::state`).

use std::sync::Arc;

use sqlx::MySqlPool;

use crate::extract::{Auth, ClientAddresses};
use crate::middleware::limits::Limits;

/// What the payments' handlers reach: the provider, refunds, cancelled
/// shows, the takings.
#[derive(Clone)]
pub struct PaymentsState {
    pub pool: MySqlPool,
    pub auth: Auth,
    pub limits: Arc<Limits>,
    /// The payment provider (none: holds are confirmed by hand).
    pub stripe: Option<Arc<ticket_core::payments::Stripe>>,
    /// Forgotten when a show is cancelled, so that its sale stops at once.
    pub sales: Arc<crate::concerts::sale_windows::SaleWindows>,
    pub client_addresses: ClientAddresses,
}

crate::with_auth!(PaymentsState);

crate::with_client_addresses!(PaymentsState);
