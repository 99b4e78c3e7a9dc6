//! The reservations feature's own state: what its handlers reach,
//! assembled once at startup (`crate::state`).

use std::sync::Arc;

use sqlx::MySqlPool;

use crate::extract::Auth;
use crate::middleware::limits::Limits;

/// What the reservations' handlers reach: the line and its writers, the
/// status polls and streams, checkout.
#[derive(Clone)]
pub struct ReservationsState {
    pub pool: MySqlPool,
    pub auth: Auth,
    pub enqueuer: super::enqueue_batcher::EnqueueBatcher,
    pub limits: Arc<Limits>,
    /// Requests this instance accepted per concert.
    pub request_rates: Arc<super::request_rates::RequestRates>,
    /// When each concert's sale opens, its cap and pools.
    pub sales: Arc<crate::concerts::sale_windows::SaleWindows>,
    /// Which concert each seat asked for belongs to.
    pub seats: Arc<crate::concerts::seat_directory::SeatDirectory>,
    /// Where open requests stand in line (status polls, event streams).
    pub line: Arc<super::line_watch::LineWatch>,
    /// The event streams open on this instance, bounded.
    pub streams: Arc<super::stream_permits::StreamPermits>,
    /// The payment provider (none: holds are confirmed by hand).
    pub stripe: Option<Arc<ticket_core::payments::Stripe>>,
    /// Proof-of-work challenges, paid with a request.
    pub challenges: Arc<crate::proof_of_work::Challenges>,
    /// Where staff's requests come from, for their audit entries.
    pub client_addresses: crate::extract::ClientAddresses,
}

crate::with_auth!(ReservationsState);

crate::with_client_addresses!(ReservationsState);
