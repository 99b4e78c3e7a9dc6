use std::sync::Arc;

use sqlx::MySqlPool;

use crate::enqueue_batcher::EnqueueBatcher;
use crate::limits::Limits;
use crate::observability::ApiMetrics;
use crate::security::{PasswordHasher, Revocations, TokenKeys};

/// What every handler may reach. Cheap to clone: everything is shared.
#[derive(Clone)]
pub struct AppState {
    pub pool: MySqlPool,
    pub tokens: Arc<TokenKeys>,
    /// Tokens voided before their expiry, followed from the database.
    pub revocations: Arc<Revocations>,
    pub passwords: PasswordHasher,
    pub enqueuer: EnqueueBatcher,
    /// Which concert each seat asked for belongs to.
    pub seats: Arc<crate::seat_directory::SeatDirectory>,
    /// Where open requests stand in line (status polls, event streams).
    pub line: Arc<crate::line_watch::LineWatch>,
    /// Every seat's state per concert, at most a second old.
    pub availability: Arc<crate::availability_cache::AvailabilityCache>,
    /// When each concert's sale opens.
    pub sales: Arc<crate::sale_windows::SaleWindows>,
    pub metrics: Arc<ApiMetrics>,
    pub limits: Arc<Limits>,
    pub client_address_header: Option<Arc<crate::extract::ProxyHeader>>,
    /// Set once the database has answered since start (see `/readyz`).
    pub database_reached: Arc<std::sync::atomic::AtomicBool>,
}
