//! Everything the ticket API and worker share: the domain types that parse
//! input at the edge, every SQL query (as small functions over a connection or
//! transaction), database configuration, and telemetry set-up.

pub mod config;
pub mod db;
pub mod domain;
pub mod metrics;
pub mod payments;
pub mod rates;
pub mod secret;
pub mod shutdown;
pub mod telemetry;
#[cfg(feature = "testing")]
pub mod testing;
pub mod tls;
