//! The desk at the venue (issue 60): a BOX_OFFICE member opens a shift with
//! a float, sells through the same line as everyone (a desk request is
//! made for a buyer account of its own, marked as the desk's), takes cash
//! or the card terminal on the shift, gives money back from it, and closes
//! it with the cash counted against what the money rows say it should be.
//! Its sales go through the reservations' line, so it shares their state.

pub mod routes;
mod view;

pub use routes::router;
