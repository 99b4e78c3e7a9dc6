//! The ticket HTTP API: feature routers over the shared `ticket-core` crate.

pub mod availability_cache;
pub mod bootstrap;
pub mod cached_body;
pub mod config;
pub mod enqueue_batcher;
pub mod error;
pub mod extract;
pub mod fresh_cache;
pub mod limits;
pub mod line_watch;
pub mod observability;
pub mod openapi;
pub mod request_rates;
pub mod routes;
pub mod sale_windows;
pub mod seat_directory;
pub mod seat_map_cache;
pub mod security;
pub mod server;
pub mod startup;
pub mod state;
pub mod stream_permits;
