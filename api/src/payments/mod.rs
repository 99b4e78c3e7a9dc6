//! Paying for a hold (issue 46): the PaymentIntent a fan pays with
//! Stripe.js, the provider's webhook that says the money moved, and what a
//! reservation's payments and refunds are.

pub mod routes;

pub use routes::router;
