//! Presale access codes: an admin makes them in bulk (shown once, kept as
//! hashes), lists what each has taken and revokes them. The codes are
//! spent by reservation requests during a concert's presale (see
//! `reservations::alone`).

pub mod routes;
pub mod state;

pub use routes::router;
