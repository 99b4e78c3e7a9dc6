//! Everything an instance shares, assembled once at startup, and each
//! feature's own state cut from it: a feature's handlers take their
//! feature's state (`State<ReservationsState>`…), and no feature names
//! this module, so that it depends on the features and not the other way.

use std::sync::Arc;

use axum::extract::FromRef;
use sqlx::MySqlPool;

use crate::accounts::security::{PasswordHasher, Revocations, TokenKeys};
use crate::accounts::state::AccountsState;
use crate::check_in::door_staff::Scanners;
use crate::check_in::state::CheckInState;
use crate::concerts::state::ConcertsState;
use crate::extract::{Auth, ClientAddresses, ProxyHeader};
use crate::health::HealthState;
use crate::middleware::Gate;
use crate::middleware::limits::Limits;
use crate::middleware::metrics::ApiMetrics;
use crate::middleware::observation::Observed;
use crate::organizers::state::OrganizersState;
use crate::payments::state::PaymentsState;
use crate::presale::state::PresaleState;
use crate::proof_of_work::state::ProofOfWorkState;
use crate::reservations::enqueue_batcher::EnqueueBatcher;
use crate::reservations::state::ReservationsState;
use crate::tickets::state::TicketsState;
use crate::waiting_list::state::WaitingListState;

/// What the instance shares, once: each feature's state is cut from it
/// when the routes are built.
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

impl Shared {
    fn auth(&self) -> Auth {
        Auth {
            tokens: self.tokens.clone(),
            revocations: self.revocations.clone(),
        }
    }

    fn client_addresses(&self) -> ClientAddresses {
        ClientAddresses(self.client_address_header.clone())
    }
}

impl FromRef<AppState> for HealthState {
    fn from_ref(app: &AppState) -> Self {
        Self {
            pool: app.pool.clone(),
            database_reached: app.database_reached.clone(),
        }
    }
}

impl FromRef<AppState> for Gate {
    fn from_ref(app: &AppState) -> Self {
        Self {
            auth: app.auth(),
            limits: app.limits.clone(),
            known_scanners: app.known_scanners.clone(),
            client_addresses: app.client_addresses(),
        }
    }
}

impl FromRef<AppState> for Observed {
    fn from_ref(app: &AppState) -> Self {
        Self {
            pool: app.pool.clone(),
            metrics: app.metrics.clone(),
            limits: app.limits.clone(),
        }
    }
}

impl FromRef<AppState> for AccountsState {
    fn from_ref(app: &AppState) -> Self {
        Self {
            pool: app.pool.clone(),
            auth: app.auth(),
            limits: app.limits.clone(),
            client_addresses: app.client_addresses(),
            passwords: app.passwords.clone(),
        }
    }
}

impl FromRef<AppState> for ConcertsState {
    fn from_ref(app: &AppState) -> Self {
        Self {
            pool: app.pool.clone(),
            auth: app.auth(),
            client_addresses: app.client_addresses(),
            sales: app.sales.clone(),
            line: app.line.clone(),
            availability: app.availability.clone(),
            seat_maps: app.seat_maps.clone(),
            time_zone: app.time_zone,
        }
    }
}

impl FromRef<AppState> for CheckInState {
    fn from_ref(app: &AppState) -> Self {
        Self {
            pool: app.pool.clone(),
            auth: app.auth(),
            client_addresses: app.client_addresses(),
            known_scanners: app.known_scanners.clone(),
            ticket_keys: app.ticket_keys.clone(),
            metrics: app.metrics.clone(),
        }
    }
}

impl FromRef<AppState> for PaymentsState {
    fn from_ref(app: &AppState) -> Self {
        Self {
            pool: app.pool.clone(),
            auth: app.auth(),
            limits: app.limits.clone(),
            stripe: app.stripe.clone(),
            sales: app.sales.clone(),
            client_addresses: app.client_addresses(),
        }
    }
}

impl FromRef<AppState> for OrganizersState {
    fn from_ref(app: &AppState) -> Self {
        Self {
            pool: app.pool.clone(),
            auth: app.auth(),
            client_addresses: app.client_addresses(),
        }
    }
}

impl FromRef<AppState> for PresaleState {
    fn from_ref(app: &AppState) -> Self {
        Self {
            pool: app.pool.clone(),
            auth: app.auth(),
            client_addresses: app.client_addresses(),
        }
    }
}

impl FromRef<AppState> for ProofOfWorkState {
    fn from_ref(app: &AppState) -> Self {
        Self {
            pool: app.pool.clone(),
            auth: app.auth(),
            challenges: app.challenges.clone(),
        }
    }
}

impl FromRef<AppState> for ReservationsState {
    fn from_ref(app: &AppState) -> Self {
        Self {
            pool: app.pool.clone(),
            auth: app.auth(),
            enqueuer: app.enqueuer.clone(),
            limits: app.limits.clone(),
            request_rates: app.request_rates.clone(),
            sales: app.sales.clone(),
            seats: app.seats.clone(),
            line: app.line.clone(),
            streams: app.streams.clone(),
            stripe: app.stripe.clone(),
            challenges: app.challenges.clone(),
            client_addresses: app.client_addresses(),
        }
    }
}

impl FromRef<AppState> for TicketsState {
    fn from_ref(app: &AppState) -> Self {
        Self {
            pool: app.pool.clone(),
            auth: app.auth(),
            ticket_keys: app.ticket_keys.clone(),
            scanners: Scanners {
                pool: app.pool.clone(),
                known: app.known_scanners.clone(),
            },
        }
    }
}

impl FromRef<AppState> for WaitingListState {
    fn from_ref(app: &AppState) -> Self {
        Self {
            pool: app.pool.clone(),
            auth: app.auth(),
            sales: app.sales.clone(),
            challenges: app.challenges.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    /// The assembly (this module, the routes and the startup that build
    /// it) may name every feature; no feature, middleware or extractor may
    /// name the assembly: each takes its own state, so no import circle
    /// runs through it.
    #[test]
    fn no_feature_names_the_assembled_state() {
        let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let assembly = ["state.rs", "routes.rs", "startup.rs", "main.rs", "lib.rs"];
        let mut naming = Vec::new();
        let mut stack = vec![src.clone()];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    stack.push(path);
                    continue;
                }
                let relative = path
                    .strip_prefix(&src)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                if path.extension().is_none_or(|e| e != "rs")
                    || assembly.contains(&relative.as_str())
                {
                    continue;
                }
                let text = std::fs::read_to_string(&path).unwrap();
                let assembled = [
                    "crate::state::",
                    "use crate::state;",
                    "AppState",
                    "crate::routes::",
                    "crate::startup::",
                ];
                if assembled.iter().any(|name| text.contains(name)) {
                    naming.push(relative);
                }
            }
        }
        naming.sort();
        assert_eq!(naming, Vec::<String>::new(), "these name the assembly");
    }
}
