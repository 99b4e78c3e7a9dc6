//! Paying for holds (issue 46) against a real Stripe-compatible server
//! (localstripe): the PaymentIntent of a hold, the webhook that sells it,
//! declines, late payments refunded, lost webhooks found by the sweep,
//! the provider down, and the webhook racing the hold's end.
//!
//! Long because each path of a payment is a story with its hold, its
//! PaymentIntent and its webhook, checked against localstripe.

use std::time::Duration;

use serde_json::{Value, json};
use ticket_core::testing::localstripe::{self, LocalStripe};
use ticket_worker::holds::HoldSweeper;
use ticket_worker::payments::Money;

use crate::helpers::*;

/// A concert of `n` seats at €89.00, holds of `hold_seconds`; (id, seats).
async fn priced(app: &TestApp, n: u32, hold_seconds: u32) -> (u64, Vec<u64>) {
    concert_with(
        app,
        n,
        json!({"holdSeconds": hold_seconds, "maxSeatsPerOrder": 4,
               "categories": [{"name": "Standard", "price": 8900, "currency": "EUR"}]}),
    )
    .await
}

async fn app_paying_at(stripe: &LocalStripe, webhooks: bool) -> TestApp {
    if webhooks {
        paying_app(stripe).await
    } else {
        spawn_app_paid(stripe.provider()).await
    }
}

async fn reservation(app: &TestApp, token: &str, id: u64) -> Value {
    app.get(&format!("/api/reservations/{id}"), Some(token))
        .await
        .assert_status(200)
        .clone()
}

/// Waits (up to 15 s) until the reservation is `status`.
async fn becomes(app: &TestApp, token: &str, id: u64, status: &str) -> Value {
    for _ in 0..300 {
        let r = reservation(app, token, id).await;
        if r["status"] == status {
            return r;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!(
        "reservation {id} never became {status}: {}",
        reservation(app, token, id).await
    );
}

async fn payments_of(app: &TestApp, token: &str, id: u64) -> Value {
    app.get(&format!("/api/reservations/{id}/payments"), Some(token))
        .await
        .assert_status(200)
        .clone()
}

async fn pay_for(app: &TestApp, token: &str, id: u64) -> Value {
    let reply = app
        .post(
            &format!("/api/reservations/{id}/payment"),
            Some(token),
            json!({}),
        )
        .await;
    assert!(
        matches!(reply.status.as_u16(), 200 | 201),
        "{}: {}",
        reply.status,
        reply.body
    );
    reply.body
}

/// The PaymentIntent's id, from the client secret a payment answers with.
fn pi_of(payment: &Value) -> String {
    let secret = payment["clientSecret"].as_str().expect("a client secret");
    secret.split("_secret_").next().unwrap_or(secret).to_owned()
}

async fn events_of(app: &TestApp, id: u64) -> Vec<String> {
    let rows: Vec<(String,)> =
        sqlx::query_as("SELECT event_type FROM outbox WHERE aggregate_id = ? ORDER BY id")
            .bind(id)
            .fetch_all(&app.pool)
            .await
            .unwrap();
    rows.into_iter().map(|(e,)| e).collect()
}

/// Posts a `payment_intent.*` event for `pi` signed as Stripe would,
/// `age` seconds ago; the answer's status.
async fn deliver(
    app: &TestApp,
    event_id: &str,
    kind: &str,
    pi: &Value,
    age: i64,
    secret: &str,
) -> u16 {
    let t = chrono::Utc::now().timestamp() - age;
    deliver_event(app, event_id, kind, pi, t, secret)
        .await
        .status
        .as_u16()
}

#[tokio::test]
async fn a_hold_is_paid_through_stripe_and_sold_by_its_webhook() {
    let stripe = LocalStripe::start().await;
    let app = app_paying_at(&stripe, true).await;
    let (_, seats) = priced(&app, 2, 600).await;
    let (_, fan) = app.user("payer").await;
    let id = won(&app, &fan, &seats).await;

    // The fan cannot confirm a priced hold by word any more.
    app.post(
        &format!("/api/reservations/{id}/confirm"),
        Some(&fan),
        json!({"paymentReference": "trust-me"}),
    )
    .await
    .assert_problem(402, "PAYMENT_REQUIRED");

    let reply = app
        .post(
            &format!("/api/reservations/{id}/payment"),
            Some(&fan),
            json!({}),
        )
        .await;
    let payment = reply.assert_status(201).clone();
    assert_eq!(payment["provider"], "stripe");
    assert_eq!(payment["status"], "OPEN");
    assert_eq!(payment["amount"], 17800);
    assert_eq!(payment["currency"], "EUR");
    assert_eq!(payment["publishableKey"], localstripe::PUBLISHABLE_KEY);
    let pi = pi_of(&payment);
    // Asked again: the same payment, not a second PaymentIntent.
    let again = app
        .post(
            &format!("/api/reservations/{id}/payment"),
            Some(&fan),
            json!({}),
        )
        .await;
    assert_eq!(again.assert_status(200)["paymentId"], payment["paymentId"]);
    assert_eq!(again.body["clientSecret"], payment["clientSecret"]);
    let at_stripe = stripe.payment_intent(&pi).await;
    assert_eq!(at_stripe["amount"], 17800);
    assert_eq!(at_stripe["currency"], "eur");
    assert_eq!(at_stripe["metadata"]["reservation_id"], id.to_string());

    // Someone else's reservation is not theirs to pay.
    let (_, other) = app.user("other").await;
    app.post(
        &format!("/api/reservations/{id}/payment"),
        Some(&other),
        json!({}),
    )
    .await
    .assert_problem(404, "RESERVATION_NOT_FOUND");

    let (status, body) = stripe.pay(&pi, "pm_card_visa").await;
    assert_eq!(status, 200, "{body}");
    let sold = becomes(&app, &fan, id, "CONFIRMED").await;
    assert_eq!(sold["paymentReference"], pi.as_str());
    assert_eq!(app.count("tickets WHERE status = 'VALID'").await, 2);
    assert_eq!(
        events_of(&app, id).await,
        ["ReservationHeld", "ReservationConfirmed"]
    );
    let money = payments_of(&app, &fan, id).await;
    assert_eq!(money["payments"][0]["status"], "SUCCEEDED");
    assert_eq!(money["refunds"], json!([]));
    // Paid holds cannot be paid again.
    app.post(
        &format!("/api/reservations/{id}/payment"),
        Some(&fan),
        json!({}),
    )
    .await
    .assert_problem(409, "RESERVATION_NOT_HELD");
    app.assert_invariants().await;
}

#[tokio::test]
async fn a_declined_card_leaves_the_hold_running_and_another_attempt_pays() {
    let stripe = LocalStripe::start().await;
    let app = app_paying_at(&stripe, true).await;
    let (_, seats) = priced(&app, 1, 600).await;
    let (_, fan) = app.user("declined").await;
    let id = won(&app, &fan, &seats).await;
    let first = pay_for(&app, &fan, id).await;
    let pi = pi_of(&first);
    let (status, body) = stripe.pay(&pi, "pm_card_chargeCustomerFail").await;
    assert_eq!(status, 402, "{body}");
    // The webhook says so; the hold runs on.
    let mut failed = Value::Null;
    for _ in 0..300 {
        failed = payments_of(&app, &fan, id).await;
        if failed["payments"][0]["status"] == "FAILED" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(failed["payments"][0]["status"], "FAILED", "{failed}");
    assert!(
        failed["payments"][0]["failure"]
            .as_str()
            .is_some_and(|f| !f.is_empty()),
        "{failed}"
    );
    assert_eq!(reservation(&app, &fan, id).await["status"], "HELD");

    let second = pay_for(&app, &fan, id).await;
    assert_ne!(second["paymentId"], first["paymentId"]);
    let pi = pi_of(&second);
    let (status, _) = stripe.pay(&pi, "pm_card_visa").await;
    assert_eq!(status, 200);
    becomes(&app, &fan, id, "CONFIRMED").await;
    app.assert_invariants().await;
}

#[tokio::test]
async fn webhooks_badly_signed_stale_replayed_or_reordered_change_nothing() {
    let stripe = LocalStripe::start().await;
    let app = app_paying_at(&stripe, false).await;
    let (_, seats) = priced(&app, 1, 600).await;
    let (_, fan) = app.user("replayed").await;
    let id = won(&app, &fan, &seats).await;
    let payment = pay_for(&app, &fan, id).await;
    let pi_id = pi_of(&payment);
    let (status, _) = stripe.pay(&pi_id, "pm_card_visa").await;
    assert_eq!(status, 200);
    let pi = stripe.payment_intent(&pi_id).await;
    assert_eq!(pi["status"], "succeeded");

    let secret = localstripe::WEBHOOK_SECRET;
    assert_eq!(
        deliver(
            &app,
            "evt_bad",
            "payment_intent.succeeded",
            &pi,
            0,
            "whsec_wrong"
        )
        .await,
        400
    );
    assert_eq!(
        deliver(
            &app,
            "evt_old",
            "payment_intent.succeeded",
            &pi,
            301,
            secret
        )
        .await,
        400
    );
    let unsigned = app
        .raw(
            reqwest::Method::POST,
            "/api/payments/stripe/webhook",
            None,
            Some("application/json"),
            b"{}".to_vec(),
        )
        .await;
    unsigned.assert_problem(400, "WEBHOOK_SIGNATURE_INVALID");
    assert_eq!(reservation(&app, &fan, id).await["status"], "HELD");
    assert_eq!(app.count("payment_events").await, 0);

    assert_eq!(
        deliver(&app, "evt_1", "payment_intent.succeeded", &pi, 10, secret).await,
        200
    );
    assert_eq!(reservation(&app, &fan, id).await["status"], "CONFIRMED");
    // Replayed, and an older failure arriving after the success.
    assert_eq!(
        deliver(&app, "evt_1", "payment_intent.succeeded", &pi, 0, secret).await,
        200
    );
    let mut declined = pi.clone();
    declined["status"] = json!("requires_payment_method");
    declined["last_payment_error"] = json!({"message": "Your card was declined."});
    assert_eq!(
        deliver(
            &app,
            "evt_0",
            "payment_intent.payment_failed",
            &declined,
            0,
            secret
        )
        .await,
        200
    );
    assert_eq!(
        events_of(&app, id).await,
        ["ReservationHeld", "ReservationConfirmed"]
    );
    assert_eq!(
        payments_of(&app, &fan, id).await["payments"][0]["status"],
        "SUCCEEDED"
    );
    assert_eq!(app.count("refunds").await, 0);
    app.assert_invariants().await;
}

#[tokio::test]
async fn a_payment_after_the_hold_ended_is_refunded_in_full_and_the_fan_told() {
    let stripe = LocalStripe::start().await;
    let app = app_paying_at(&stripe, true).await;
    let (_, seats) = priced(&app, 2, 600).await;
    app.post(
        "/api/users",
        None,
        json!({"nickName": "late", "password": "password123", "email": "late@example.com"}),
    )
    .await
    .assert_status(201);
    let fan = app.login("late", "password123").await;
    let id = won(&app, &fan, &seats).await;
    let payment = pay_for(&app, &fan, id).await;
    let pi = pi_of(&payment);
    // The hold ends (its end moved to now, as a clock would), and is swept.
    sqlx::query("UPDATE reservations SET hold_expires_at = NOW(6) WHERE id = ?")
        .bind(id)
        .execute(&app.pool)
        .await
        .unwrap();
    HoldSweeper::new(app.pool.clone())
        .sweep_once()
        .await
        .unwrap();
    assert_eq!(reservation(&app, &fan, id).await["status"], "EXPIRED");

    let (status, _) = stripe.pay(&pi, "pm_card_visa").await;
    assert_eq!(status, 200);
    let mut money = Value::Null;
    for _ in 0..300 {
        money = payments_of(&app, &fan, id).await;
        if money["refunds"].as_array().is_some_and(|r| !r.is_empty()) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(money["refunds"][0]["reason"], "LATE_PAYMENT", "{money}");
    assert_eq!(money["refunds"][0]["amount"], 17800);
    let pass = Money::new(app.pool.clone(), stripe.client())
        .carry_out_refunds()
        .await
        .unwrap();
    assert_eq!(pass.refunds_succeeded, 1);
    let money = payments_of(&app, &fan, id).await;
    assert_eq!(money["refunds"][0]["status"], "SUCCEEDED");
    assert_eq!(money["payments"][0]["status"], "SUCCEEDED");
    assert_eq!(
        stripe
            .refunds_of(&pi)
            .await
            .iter()
            .map(|r| r.1)
            .collect::<Vec<_>>(),
        [17800]
    );
    // Carried out once, however often the executor looks.
    let again = Money::new(app.pool.clone(), stripe.client())
        .carry_out_refunds()
        .await
        .unwrap();
    assert_eq!(again.refunds_succeeded, 0);
    assert_eq!(stripe.refunds_of(&pi).await.len(), 1);
    assert_eq!(reservation(&app, &fan, id).await["status"], "EXPIRED");
    assert_eq!(app.count("tickets").await, 0);
    assert_eq!(
        events_of(&app, id).await,
        [
            "ReservationHeld",
            "ReservationExpired",
            "ReservationRefunded"
        ]
    );
    assert_eq!(app.count("mails WHERE kind = 'REFUND'").await, 1);
    app.assert_invariants().await;
}

#[tokio::test]
async fn a_lost_webhook_is_made_good_by_the_sweep_and_an_unpaid_ended_hold_cancelled() {
    let stripe = LocalStripe::start().await;
    let app = app_paying_at(&stripe, false).await;
    let (_, seats) = priced(&app, 2, 600).await;
    let (_, fan) = app.user("lost").await;
    let paid = won(&app, &fan, &seats[..1]).await;
    let unpaid = won(&app, &fan, &seats[1..]).await;
    let paid_pi = pi_of(&pay_for(&app, &fan, paid).await);
    let unpaid_pi = pi_of(&pay_for(&app, &fan, unpaid).await);
    let (status, _) = stripe.pay(&paid_pi, "pm_card_visa").await;
    assert_eq!(status, 200);
    let money = Money::new(app.pool.clone(), stripe.client());
    // Within its first minute the sweep leaves a payment to the webhook.
    assert_eq!(money.check_payments().await.unwrap().payments_checked, 0);
    assert_eq!(reservation(&app, &fan, paid).await["status"], "HELD");
    // A minute on (moved, as a clock would), the sweep asks Stripe.
    sqlx::query("UPDATE payments SET check_at = NOW(6)")
        .execute(&app.pool)
        .await
        .unwrap();
    sqlx::query("UPDATE reservations SET hold_expires_at = NOW(6) WHERE id = ?")
        .bind(unpaid)
        .execute(&app.pool)
        .await
        .unwrap();
    let pass = money.check_payments().await.unwrap();
    assert_eq!((pass.payments_checked, pass.confirmed), (2, 1));
    assert_eq!(reservation(&app, &fan, paid).await["status"], "CONFIRMED");
    // The ended hold's PaymentIntent can no longer be paid.
    assert_eq!(
        stripe.payment_intent(&unpaid_pi).await["status"],
        "canceled"
    );
    assert_eq!(
        payments_of(&app, &fan, unpaid).await["payments"][0]["status"],
        "CANCELED"
    );
    let (status, _) = stripe.pay(&unpaid_pi, "pm_card_visa").await;
    assert_ne!(status, 200);
    // Nothing is left to ask about.
    assert_eq!(app.count("payments WHERE check_at IS NOT NULL").await, 0);
    app.assert_invariants().await;
}

#[tokio::test]
async fn the_provider_down_answers_503_and_the_hold_is_unchanged() {
    let app = spawn_app_paid(localstripe::provider_at(
        "http://127.0.0.1:1/",
        "http://127.0.0.1:1/js",
    ))
    .await;
    let (_, seats) = priced(&app, 1, 600).await;
    let (_, fan) = app.user("down").await;
    let id = won(&app, &fan, &seats).await;
    let before = reservation(&app, &fan, id).await;
    let reply = app
        .post(
            &format!("/api/reservations/{id}/payment"),
            Some(&fan),
            json!({}),
        )
        .await;
    reply.assert_problem(503, "PAYMENTS_UNAVAILABLE");
    assert!(
        reply.headers.get("retry-after").is_some(),
        "{:?}",
        reply.headers
    );
    assert_eq!(reservation(&app, &fan, id).await, before);
    app.assert_invariants().await;

    // Without a provider at all, the original flow: a fan confirms.
    let plain = spawn_app().await;
    let (_, seats) = priced(&plain, 1, 600).await;
    let (_, fan) = plain.user("plain").await;
    let id = won(&plain, &fan, &seats).await;
    plain
        .post(
            &format!("/api/reservations/{id}/payment"),
            Some(&fan),
            json!({}),
        )
        .await
        .assert_problem(503, "PAYMENTS_UNAVAILABLE");
    // Without a provider the money is taken at the desk: a fan's own
    // confirm is no payment, the operator's is.
    let at_desk = format!("/api/reservations/{id}/confirm");
    plain
        .post(&at_desk, Some(&fan), json!({"paymentReference": "cash-17"}))
        .await
        .assert_problem(402, "PAYMENT_REQUIRED");
    plain
        .post(
            &at_desk,
            Some(&plain.admin_token),
            json!({"paymentReference": "cash-17"}),
        )
        .await
        .assert_status(200);
    plain.assert_invariants().await;
}

/// Webhooks land while the holds end and the sweep expires them: each
/// hold is sold or its money given back, never both, never neither.
#[tokio::test]
async fn the_webhook_racing_the_holds_end_sells_or_refunds_never_both() {
    const HOLDS: usize = 24;
    let stripe = LocalStripe::start().await;
    let app = app_paying_at(&stripe, false).await;
    let (_, seats) = priced(&app, HOLDS as u32, 600).await;
    let mut holds = Vec::new();
    for (i, seat) in seats.iter().enumerate() {
        let (_, fan) = app.user(&format!("racer{i}")).await;
        let id = won(&app, &fan, &[*seat]).await;
        let pi = pi_of(&pay_for(&app, &fan, id).await);
        let (status, _) = stripe.pay(&pi, "pm_card_visa").await;
        assert_eq!(status, 200);
        holds.push((id, fan, stripe.payment_intent(&pi).await));
    }
    // Every hold ends 300 ms from now; the events arrive spread around it.
    sqlx::query(
        "UPDATE reservations SET hold_expires_at = TIMESTAMPADD(MICROSECOND, 300000, NOW(6))",
    )
    .execute(&app.pool)
    .await
    .unwrap();
    let sweeping = tokio::spawn({
        let sweeper = HoldSweeper::new(app.pool.clone());
        async move {
            for _ in 0..60 {
                sweeper.sweep_once().await.unwrap();
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    });
    let deliveries = holds.iter().enumerate().map(|(i, (_, _, pi))| {
        let app = &app;
        async move {
            tokio::time::sleep(Duration::from_millis(25 * i as u64)).await;
            deliver(
                app,
                &format!("evt_race_{i}"),
                "payment_intent.succeeded",
                pi,
                0,
                localstripe::WEBHOOK_SECRET,
            )
            .await
        }
    });
    let answers = futures::future::join_all(deliveries).await;
    assert!(answers.iter().all(|&s| s == 200), "{answers:?}");
    sweeping.await.unwrap();
    HoldSweeper::new(app.pool.clone())
        .sweep_once()
        .await
        .unwrap();
    let money = Money::new(app.pool.clone(), stripe.client());
    while money.carry_out_refunds().await.unwrap().refunds_succeeded > 0 {}
    let (mut sold, mut refunded) = (0, 0);
    for (id, fan, pi) in &holds {
        let status = reservation(&app, fan, *id).await["status"].clone();
        let at_stripe = stripe.refunds_of(pi["id"].as_str().unwrap()).await;
        match status.as_str() {
            Some("CONFIRMED") => {
                assert!(at_stripe.is_empty(), "sold and refunded: {id}");
                sold += 1;
            }
            Some("EXPIRED") => {
                assert_eq!(
                    at_stripe.iter().map(|r| r.1).collect::<Vec<_>>(),
                    [8900],
                    "{id}"
                );
                refunded += 1;
            }
            other => panic!("reservation {id} is {other:?}"),
        }
    }
    assert_eq!(sold + refunded, HOLDS);
    assert_eq!(
        app.count("tickets WHERE status = 'VALID'").await,
        sold as i64
    );
    app.assert_invariants().await;
}

#[tokio::test]
async fn the_page_is_told_how_to_pay_and_may_load_stripe_js_from_its_origin_only() {
    let free = spawn_app().await;
    let manual = free.get("/api/payments/config", None).await;
    manual.assert_status(200);
    assert_eq!(
        manual.body,
        json!({"provider": "manual", "publishableKey": null, "jsUrl": null})
    );
    let strict = free.fetch("/", &[]).await;
    let strict = strict.headers()["content-security-policy"]
        .to_str()
        .unwrap();
    assert!(
        !strict.contains("frame-src") && !strict.contains("127.0.0.1"),
        "{strict}"
    );

    let stripe = LocalStripe::start().await;
    let app = app_paying_at(&stripe, false).await;
    let config = app.get("/api/payments/config", None).await;
    config.assert_status(200);
    assert_eq!(config.body["provider"], "stripe");
    assert_eq!(config.body["publishableKey"], localstripe::PUBLISHABLE_KEY);
    assert_eq!(config.body["jsUrl"], stripe.js_url());
    let origin = stripe.js_url().replace("/js.stripe.com/v3/", "");
    for path in ["/", "/assets/app.js"] {
        let page = app.fetch(path, &[]).await;
        let policy = page.headers()["content-security-policy"].to_str().unwrap();
        assert_eq!(
            policy,
            format!(
                "default-src 'none'; script-src 'self' {origin}; style-src 'self'; \
                 img-src 'self' data:; frame-src {origin}; connect-src 'self' {origin}; \
                 base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
            ),
            "{path}"
        );
    }
}
