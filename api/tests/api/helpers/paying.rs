//! A box office that takes payments at a real localstripe, and orders
//! sold through it.

use std::time::Duration;

use serde_json::{Value, json};
use ticket_core::testing::localstripe::LocalStripe;

use super::{Reply, TestApp, spawn_app_paid, won};

/// An app paid through `stripe`, which sends it its webhooks.
pub async fn paying_app(stripe: &LocalStripe) -> TestApp {
    let app = spawn_app_paid(stripe.provider()).await;
    stripe
        .send_webhooks_to(&format!("{}/api/payments/stripe/webhook", app.base))
        .await;
    app
}

/// Wins `seats` for `token` and pays for them at localstripe; the
/// reservation once sold, and its PaymentIntent.
pub async fn bought(
    app: &TestApp,
    stripe: &LocalStripe,
    token: &str,
    seats: &[u64],
) -> (u64, String) {
    let id = won(app, token, seats).await;
    let payment = app
        .post(
            &format!("/api/reservations/{id}/payment"),
            Some(token),
            json!({}),
        )
        .await;
    let secret = payment.assert_status(201)["clientSecret"]
        .as_str()
        .unwrap()
        .to_owned();
    let pi = secret.split("_secret_").next().unwrap().to_owned();
    let (status, body) = stripe.pay(&pi, "pm_card_visa").await;
    assert_eq!(status, 200, "{body}");
    for _ in 0..300 {
        let r = app
            .get(&format!("/api/reservations/{id}"), Some(token))
            .await;
        if r.body["status"] == "CONFIRMED" {
            return (id, pi);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("reservation {id} was not sold");
}

/// Posts a `payment_intent.*` event for `pi` to the webhook, signed with
/// `secret` at `signed_at` (Unix seconds) as Stripe would; the answer.
pub async fn deliver_event(
    app: &TestApp,
    event_id: &str,
    kind: &str,
    pi: &Value,
    signed_at: i64,
    secret: &str,
) -> Reply {
    let body = json!({"id": event_id, "type": kind, "object": "event", "data": {"object": pi}});
    let payload = serde_json::to_vec(&body).unwrap();
    let signature = ticket_core::payments::stripe::sign(
        &payload,
        &ticket_core::secret::Secret::new(secret),
        signed_at,
    );
    let response = app
        .client
        .post(format!("{}/api/payments/stripe/webhook", app.base))
        .header("content-type", "application/json")
        .header("stripe-signature", signature)
        .body(payload)
        .send()
        .await
        .unwrap();
    TestApp::reply(response).await
}
