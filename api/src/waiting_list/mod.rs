//! A waiting list for the sold-out crowd: a fan joins a concert's list when
//! no seat is free, learns their place, and is offered seats that come back
//! as a hold of theirs (the worker's `waiting_list` makes the offers).

pub mod routes;
pub mod state;

pub use routes::router;
