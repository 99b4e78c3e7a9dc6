//! The ticket HTTP API: feature folders (accounts, concerts, reservations,
//! the web page) over the shared `ticket-core` crate, the middleware that
//! wraps them, and the process around them (startup, server, state).

pub mod accounts;
pub mod cached_body;
pub mod check_in;
pub mod concerts;
pub mod config;
pub mod desk;
pub mod error;
pub mod extract;
pub mod fresh_cache;
pub mod health;
pub mod middleware;
pub mod openapi;
pub mod organizers;
pub mod payments;
pub mod presale;
pub mod proof_of_work;
pub mod reservations;
pub mod routes;
pub mod server;
pub mod startup;
pub mod state;
pub mod tickets;
pub mod waiting_list;
pub mod web;
