use std::sync::Arc;

use sqlx::MySqlPool;

use crate::accounts::security::{PasswordHasher, Revocations, TokenKeys};
use crate::middleware::limits::Limits;
use crate::middleware::metrics::ApiMetrics;
use crate::reservations::enqueue_batcher::EnqueueBatcher;

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
    /// What ticket codes are signed and verified with; None: not set up.
    pub ticket_keys: Option<Arc<ticket_core::domain::ticket_code::TicketKeys>>,
    /// Scanners seen on this instance (their requests' rate budget).
    pub known_scanners: Arc<crate::check_in::known_scanners::KnownScanners>,
    pub tokens: Arc<TokenKeys>,
    /// Tokens voided before their expiry, followed from the database.
    pub revocations: Arc<Revocations>,
    pub passwords: PasswordHasher,
    pub enqueuer: EnqueueBatcher,
    /// Proof-of-work challenges: given and checked.
    pub challenges: Arc<crate::proof_of_work::Challenges>,
    /// Which concert each seat asked for belongs to.
    pub seats: Arc<crate::concerts::seat_directory::SeatDirectory>,
    /// Where open requests stand in line (status polls, event streams).
    pub line: Arc<crate::reservations::line_watch::LineWatch>,
    /// Every seat's state per concert, at most a second old.
    pub availability: Arc<crate::concerts::availability_cache::AvailabilityCache>,
    /// Requests this instance accepted per concert, published for the
    /// operator's on-sale view.
    pub request_rates: Arc<crate::reservations::request_rates::RequestRates>,
    /// Every concert's seat layout, at most a few seconds old.
    pub seat_maps: Arc<crate::concerts::seat_map_cache::SeatMapCache>,
    /// When each concert's sale opens.
    pub sales: Arc<crate::concerts::sale_windows::SaleWindows>,
    pub metrics: Arc<ApiMetrics>,
    pub limits: Arc<Limits>,
    /// The event streams open on this instance, bounded.
    pub streams: Arc<crate::reservations::stream_permits::StreamPermits>,
    pub client_address_header: Option<Arc<ProxyHeader>>,
    /// The payment provider (none: holds are confirmed by hand, as before).
    pub stripe: Option<Arc<ticket_core::payments::Stripe>>,
    /// The zone of a concert created without one.
    pub time_zone: ticket_core::domain::VenueTimeZone,
    /// Set once the database has answered since start (see `/readyz`).
    pub database_reached: Arc<std::sync::atomic::AtomicBool>,
}

/// Where the client's address is found behind proxies: each proxy appends
/// the address it received the connection from to `name` (as
/// `X-Forwarded-For` works), so the client is the entry the outermost of the
/// `trusted_proxies` appended. Entries further left are whatever the client
/// sent and are never believed: a bot would rotate them to dodge its limits.
#[derive(Debug, Clone)]
pub struct ProxyHeader {
    pub name: axum::http::HeaderName,
    pub trusted_proxies: usize,
}

impl ProxyHeader {
    pub fn client_in(&self, value: &str) -> Option<std::net::IpAddr> {
        let entries: Vec<&str> = value.split(',').map(str::trim).collect();
        // Fewer entries than proxies: the chain was shorter than configured,
        // and the leftmost entry is the nearest thing to the client.
        let index = entries.len().saturating_sub(self.trusted_proxies.max(1));
        entries.get(index)?.parse().ok()
    }
}
