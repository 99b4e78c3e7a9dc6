//! E-tickets (issue 31): a confirmed seat's ticket with its signed code and
//! QR, the public keys scanners verify codes with, and the tickets voided
//! since a time (what an offline scanner must refuse).

pub mod routes;
pub mod state;

pub use routes::router;
