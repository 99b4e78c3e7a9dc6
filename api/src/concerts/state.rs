//! The concerts feature's own state: what its handlers reach,
//! assembled once at startup (`crate::state`).

use std::sync::Arc;

use sqlx::MySqlPool;

use crate::extract::Auth;

/// What the concerts' handlers reach: the concerts, their seats, plans,
/// sale and availability.
#[derive(Clone)]
pub struct ConcertsState {
    pub pool: MySqlPool,
    pub auth: Auth,
    /// Where a caller's address is read (recorded with what staff do).
    pub client_addresses: crate::extract::ClientAddresses,
    /// When each concert's sale opens, its cap and pools.
    pub sales: Arc<super::sale_windows::SaleWindows>,
    /// Where open requests stand in line (the sale view).
    pub line: Arc<crate::reservations::line_watch::LineWatch>,
    /// Every seat's state per concert, at most a second old.
    pub availability: Arc<super::availability_cache::AvailabilityCache>,
    /// Every concert's seat layout, at most a few seconds old.
    pub seat_maps: Arc<super::seat_map_cache::SeatMapCache>,
    /// The zone of a concert created without one.
    pub time_zone: ticket_core::domain::VenueTimeZone,
}

crate::with_auth!(ConcertsState);
crate::with_client_addresses!(ConcertsState);
