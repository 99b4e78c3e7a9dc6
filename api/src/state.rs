use std::sync::Arc;

use sqlx::MySqlPool;

use crate::enqueue_batcher::EnqueueBatcher;
use crate::limits::Limits;
use crate::observability::ApiMetrics;
use crate::security::{PasswordHasher, Revocations, TokenKeys};

/// What every handler may reach: one shared value, so that each of the
/// several clones a request makes (every middleware and handler that takes
/// `State`) is one reference count, not one per field.
#[derive(Clone)]
pub struct AppState(Arc<Shared>);

impl AppState {
    pub fn new(shared: Shared) -> Self {
        Self(Arc::new(shared))
    }
}

impl std::ops::Deref for AppState {
    type Target = Shared;

    fn deref(&self) -> &Shared {
        &self.0
    }
}

pub struct Shared {
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
    /// Requests this instance accepted per concert, published for the
    /// operator's on-sale view.
    pub request_rates: Arc<crate::request_rates::RequestRates>,
    /// Every concert's seat layout, at most a few seconds old.
    pub seat_maps: Arc<crate::seat_map_cache::SeatMapCache>,
    /// When each concert's sale opens.
    pub sales: Arc<crate::sale_windows::SaleWindows>,
    pub metrics: Arc<ApiMetrics>,
    pub limits: Arc<Limits>,
    /// The event streams open on this instance, bounded.
    pub streams: Arc<crate::stream_permits::StreamPermits>,
    pub client_address_header: Option<Arc<crate::extract::ProxyHeader>>,
    /// Set once the database has answered since start (see `/readyz`).
    pub database_reached: Arc<std::sync::atomic::AtomicBool>,
}
