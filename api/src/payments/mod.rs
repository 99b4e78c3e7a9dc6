//! Money (issue 46): paying for a hold (the PaymentIntent a fan pays with
//! Stripe.js, the provider's webhook that says the money moved), refunds
//! of sold tickets, and a cancelled concert.

pub mod cancellation;
pub mod refunds;
pub mod routes;
pub mod state;
pub mod takings;
pub mod void;

pub fn router() -> axum::Router<crate::payments::state::PaymentsState> {
    routes::router()
        .merge(refunds::router())
        .merge(cancellation::router())
        .merge(takings::router())
        .merge(void::router())
}
