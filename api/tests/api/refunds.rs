//! Refunds and a cancelled show (issue 46) against localstripe: tickets
//! given back in part and in whole, who may, a show cancelled with its
//! sale closed at once and every order refunded once, and a worker killed
//! in the middle of a thousand refunds while the provider asks it to slow
//! down.
//!
//! Long because each refund is a story with its payment at localstripe, and
//! the thousand-refund fault needs its workers beside it.

use std::time::Duration;

use serde_json::{Value, json};
use ticket_core::testing::localstripe::{self, LocalStripe};
use ticket_worker::cancellation::Cancellations;
use ticket_worker::payments::Money;

use crate::helpers::*;

/// Rows A (VIP, €150.00) and B (€89.00), two seats each; (id, seats by
/// number).
async fn two_prices(app: &TestApp) -> (u64, Vec<(String, u64)>) {
    let concert = app
        .concert(
            json!({"rows": 2, "seatsPerRow": 2, "holdSeconds": 600, "maxSeatsPerOrder": 4,
            "categories": [{"name": "Standard", "price": 8900, "currency": "EUR"},
                           {"name": "VIP", "price": 15000, "currency": "EUR", "rows": ["A"]}]}),
        )
        .await;
    let id = concert["id"].as_u64().unwrap();
    let seats = app
        .seats(id)
        .await
        .iter()
        .map(|s| {
            (
                s["seatNumber"].as_str().unwrap().to_owned(),
                s["id"].as_u64().unwrap(),
            )
        })
        .collect();
    (id, seats)
}

fn seat(seats: &[(String, u64)], number: &str) -> u64 {
    seats.iter().find(|(n, _)| n == number).unwrap().1
}

async fn tickets_of(app: &TestApp, token: &str, id: u64) -> Vec<Value> {
    app.get(&format!("/api/reservations/{id}/tickets"), Some(token))
        .await
        .assert_status(200)
        .as_array()
        .cloned()
        .unwrap_or_default()
}

#[tokio::test]
async fn tickets_given_back_in_part_then_in_whole_refund_exactly_their_prices() {
    let stripe = LocalStripe::start().await;
    let app = paying_app(&stripe).await;
    let (concert, seats) = two_prices(&app).await;
    let (_, fan) = app.user("refunded").await;
    let (id, pi) = bought(
        &app,
        &stripe,
        &fan,
        &[seat(&seats, "A1"), seat(&seats, "B1")],
    )
    .await;
    let tickets = tickets_of(&app, &fan, id).await;
    assert_eq!(tickets.len(), 2);
    let standard = tickets.iter().find(|t| t["seatNumber"] == "B1").unwrap()["ticketId"].clone();

    // The concert allows no refunds by fans (none by default).
    let refund = format!("/api/reservations/{id}/refund");
    app.post(&refund, Some(&fan), json!({}))
        .await
        .assert_problem(403, "REFUND_NOT_ALLOWED");
    app.post(
        &refund,
        Some(&app.admin_token),
        json!({"ticketIds": [999_999]}),
    )
    .await
    .assert_problem(409, "TICKET_NOT_REFUNDABLE");
    assert_eq!(app.count("refunds").await, 0);

    // An operator gives back the Standard ticket: €89.00 exactly.
    let partial = app
        .post(
            &refund,
            Some(&app.admin_token),
            json!({"ticketIds": [standard]}),
        )
        .await;
    let partial = partial.assert_status(200).clone();
    assert_eq!(partial["amount"], 8900);
    assert_eq!(partial["currency"], "EUR");
    assert_eq!(partial["status"], "PENDING");
    assert_eq!(partial["reservationStatus"], "CONFIRMED");
    app.post(
        &refund,
        Some(&app.admin_token),
        json!({"ticketIds": [standard]}),
    )
    .await
    .assert_problem(409, "TICKET_NOT_REFUNDABLE");
    let money = Money::new(app.pool.clone(), stripe.client());
    assert_eq!(
        money.carry_out_refunds().await.unwrap().refunds_succeeded,
        1
    );
    assert_eq!(
        stripe
            .refunds_of(&pi)
            .await
            .iter()
            .map(|r| r.1)
            .collect::<Vec<_>>(),
        [8900]
    );
    // Its seat is on sale again, its ticket on the revoked list; the VIP
    // ticket still admits.
    let left = tickets_of(&app, &fan, id).await;
    assert_eq!(left.len(), 1);
    assert_eq!(left[0]["seatNumber"], "A1");
    let (status,): (String,) = sqlx::query_as("SELECT status FROM tickets WHERE id = ?")
        .bind(standard.as_u64())
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(status, "VOID");
    let (status,): (String,) = sqlx::query_as("SELECT status FROM seats WHERE id = ?")
        .bind(seat(&seats, "B1"))
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(status, "AVAILABLE");
    let (_, other) = app.user("next").await;
    won(&app, &other, &[seat(&seats, "B1")]).await;
    app.assert_invariants().await;

    // The takings say so, by category in the concert's order, and per order.
    let sales = app
        .get(
            &format!("/api/concerts/{concert}/sales"),
            Some(&app.admin_token),
        )
        .await;
    let sales = sales.assert_status(200).clone();
    assert_eq!(sales["currency"], "EUR");
    assert_eq!(
        sales["categories"],
        json!([
            {"category": "Standard", "sold": 1, "refunded": 1, "gross": 8900, "refundedAmount": 8900, "net": 0},
            {"category": "VIP", "sold": 1, "refunded": 0, "gross": 15000, "refundedAmount": 0, "net": 15000},
        ])
    );
    assert_eq!(sales["total"]["net"], 15000);
    assert_eq!(sales["total"]["gross"], 23900);
    let bearer = format!("Bearer {}", app.admin_token);
    let csv = app
        .fetch(
            &format!("/api/concerts/{concert}/sales"),
            &[("accept", "text/csv"), ("authorization", bearer.as_str())],
        )
        .await
        .text()
        .await
        .unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 2, "{csv}");
    assert!(
        lines[0].starts_with("reservation,fan,seats,amount,refunded"),
        "{csv}"
    );
    assert!(lines[1].starts_with(&format!("\"{id}\",\"refunded\",\"A1 B1\",\"23900\",\"8900\",\"EUR\",\"STRIPE\",\"{pi}\",\"CONFIRMED\"")), "{csv}");

    // While the concert allows it, the fan gives back the rest.
    let until = (chrono::Utc::now() + chrono::Duration::days(1)).to_rfc3339();
    let changed = app
        .patch(
            &format!("/api/concerts/{concert}"),
            Some(&app.admin_token),
            json!({"refundableUntil": until}),
        )
        .await;
    assert!(changed.assert_status(200)["refundableUntil"].is_string());
    let rest = app.post(&refund, Some(&fan), json!({})).await;
    let rest = rest.assert_status(200).clone();
    assert_eq!(rest["amount"], 15000);
    assert_eq!(rest["reservationStatus"], "CANCELLED");
    assert_eq!(
        money.carry_out_refunds().await.unwrap().refunds_succeeded,
        1
    );
    assert_eq!(
        stripe
            .refunds_of(&pi)
            .await
            .iter()
            .map(|r| r.1)
            .sum::<u64>(),
        23900
    );
    app.post(&refund, Some(&app.admin_token), json!({}))
        .await
        .assert_problem(409, "TICKET_NOT_REFUNDABLE");
    let refunds = app
        .get(&format!("/api/reservations/{id}/payments"), Some(&fan))
        .await;
    let refunds = refunds.assert_status(200)["refunds"].clone();
    assert_eq!(refunds.as_array().map(Vec::len), Some(2));
    assert!(
        refunds
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["status"] == "SUCCEEDED" && r["reason"] == "REQUESTED")
    );
    app.assert_invariants().await;
}

#[tokio::test]
async fn a_cancelled_show_closes_its_sale_and_refunds_every_order_once() {
    let stripe = LocalStripe::start().await;
    let app = paying_app(&stripe).await;
    let (concert, seats) = two_prices(&app).await;
    let mut sold = Vec::new();
    for (i, number) in ["A1", "A2", "B1"].iter().enumerate() {
        let (_, fan) = app.user(&format!("buyer{i}")).await;
        let (id, pi) = bought(&app, &stripe, &fan, &[seat(&seats, number)]).await;
        sold.push((id, pi, fan));
    }
    let (_, holder) = app.user("holder").await;
    let held = won(&app, &holder, &[seat(&seats, "B2")]).await;
    let (_, late) = app.user("late").await;
    let open = order(&app, &late, &[seat(&seats, "B2")])
        .await
        .assert_status(201)["queueId"]
        .as_u64()
        .unwrap();

    let cancel = format!("/api/concerts/{concert}/cancel");
    app.post(&cancel, Some(&holder), json!({"reason": "storm"}))
        .await
        .assert_problem(403, "FORBIDDEN");
    app.post(&cancel, Some(&app.admin_token), json!({"reason": "  "}))
        .await
        .assert_problem(400, "VALIDATION_ERROR");
    let started = app
        .post(
            &cancel,
            Some(&app.admin_token),
            json!({"reason": "The singer lost her voice"}),
        )
        .await;
    let started = started.assert_status(202).clone();
    assert_eq!(started["status"], "REFUNDING");
    assert_eq!(started["pending"], 3);
    // The sale is closed at once.
    let (_, newcomer) = app.user("newcomer").await;
    order(&app, &newcomer, &[seat(&seats, "B2")])
        .await
        .assert_problem(409, "CONCERT_CANCELLED");
    app.post(
        &format!("/api/concerts/{concert}/waiting-list"),
        Some(&newcomer),
        json!({"seats": 1}),
    )
    .await
    .assert_problem(409, "CONCERT_CANCELLED");
    app.post(
        &format!("/api/reservations/{held}/payment"),
        Some(&holder),
        json!({}),
    )
    .await
    .assert_problem(409, "CONCERT_CANCELLED");
    app.post(
        &format!("/api/reservations/{held}/confirm"),
        Some(&app.admin_token),
        json!({"paymentReference": "cash"}),
    )
    .await
    .assert_problem(409, "CONCERT_CANCELLED");
    app.drain().await;
    let request = app.queue_status(&late, open).await;
    assert_eq!(request["status"], "FAILED");
    assert_eq!(request["reason"], "CONCERT_CANCELLED");

    // The workers end the hold, give back every order, refund each once.
    let cancellations = Cancellations::new(app.pool.clone());
    let pass = cancellations.pass().await.unwrap();
    assert_eq!((pass.holds_ended, pass.orders_given_back), (1, 3));
    assert_eq!(cancellations.pass().await.unwrap(), Default::default());
    let money = Money::new(app.pool.clone(), stripe.client());
    assert_eq!(
        money.carry_out_refunds().await.unwrap().refunds_succeeded,
        3
    );
    for (id, pi, fan) in &sold {
        let paid = stripe.payment_intent(pi).await["amount"].as_u64().unwrap();
        assert_eq!(
            stripe
                .refunds_of(pi)
                .await
                .iter()
                .map(|r| r.1)
                .collect::<Vec<_>>(),
            [paid]
        );
        let r = app.get(&format!("/api/reservations/{id}"), Some(fan)).await;
        assert_eq!(r.body["status"], "CANCELLED");
    }
    let done = app
        .get(
            &format!("/api/concerts/{concert}/cancellation"),
            Some(&app.admin_token),
        )
        .await;
    let done = done.assert_status(200).clone();
    assert_eq!(done["status"], "DONE", "{done}");
    assert_eq!(
        (
            done["refunded"].clone(),
            done["pending"].clone(),
            done["failed"].clone()
        ),
        (json!(3), json!(0), json!(0))
    );
    assert_eq!(done["reason"], "The singer lost her voice");
    // Asked again: the same cancellation, nothing new.
    app.post(&cancel, Some(&app.admin_token), json!({"reason": "again"}))
        .await
        .assert_status(202);
    assert_eq!(app.count("tickets WHERE status = 'VALID'").await, 0);
    assert_eq!(app.count("refunds").await, 3);
    app.assert_invariants().await;
}

/// A thousand paid orders of a show that is cancelled; the worker (the
/// real binary) is SIGKILLed in the middle of their refunds while the
/// provider answers its first refunds 429. Restarted, it finishes: each
/// payment refunded exactly once.
#[tokio::test]
async fn a_worker_killed_in_the_middle_of_a_thousand_refunds_refunds_each_once() {
    const ORDERS: usize = 1000;
    let stripe = LocalStripe::start_with(&["--fail-refunds", "20"]).await;
    let app = spawn_app_paid(stripe.provider()).await;
    let (concert, seats) = concert_with(
        &app,
        ORDERS as u32,
        json!({"holdSeconds": 600, "categories": [{"name": "Standard", "price": 2500, "currency": "EUR"}]}),
    )
    .await;
    let users = app.many_users("fan", ORDERS).await;
    let mut pis = Vec::with_capacity(ORDERS);
    for ((user, _), seat) in users.iter().zip(&seats) {
        app.book_directly(*user, *seat).await;
        pis.push(stripe.paid_payment_intent(2500, "eur").await);
    }
    // The orders as a sale through Stripe leaves them: priced, paid.
    sqlx::query(
        "UPDATE reservation_seats SET price = 2500, currency = 'EUR', category = 'Standard'",
    )
    .execute(&app.pool)
    .await
    .unwrap();
    let reservations: Vec<(u64, u64)> =
        sqlx::query_as("SELECT id, user_id FROM reservations ORDER BY id")
            .fetch_all(&app.pool)
            .await
            .unwrap();
    for ((id, user), pi) in reservations.iter().zip(&pis) {
        sqlx::query("UPDATE reservations SET payment_reference = ? WHERE id = ?")
            .bind(pi)
            .bind(id)
            .execute(&app.pool)
            .await
            .unwrap();
        sqlx::query(
            "INSERT INTO payments (concert_id, reservation_id, user_id, provider, provider_payment_id, amount, \
                                   currency, status, created_at, updated_at, succeeded_at) \
             VALUES (?, ?, ?, 'STRIPE', ?, 2500, 'EUR', 'SUCCEEDED', NOW(6), NOW(6), NOW(6))",
        )
        .bind(concert)
        .bind(id)
        .bind(user)
        .bind(pi)
        .execute(&app.pool)
        .await
        .unwrap();
    }
    app.assert_invariants().await;
    app.post(
        &format!("/api/concerts/{concert}/cancel"),
        Some(&app.admin_token),
        json!({"reason": "cancelled"}),
    )
    .await
    .assert_status(202);

    let start_worker = || {
        Running(
            executable("ticket-worker", &app.database_url())
                .env("TICKET_WORKER_HEALTH_ADDR", "127.0.0.1:0")
                .env("TICKET_STRIPE_SECRET_KEY", localstripe::SECRET_KEY)
                .env("TICKET_STRIPE_API_BASE", stripe.base())
                .env("RUST_LOG", "error")
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .unwrap(),
        )
    };
    let refunded = || async { app.count("refunds WHERE status = 'SUCCEEDED'").await as usize };
    let mut worker = start_worker();
    let started = std::time::Instant::now();
    while refunded().await < ORDERS / 3 {
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "the worker refunds nothing"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    worker.0.kill().unwrap();
    worker.0.wait().unwrap();
    let at_kill = refunded().await;
    assert!(
        at_kill < ORDERS,
        "the kill came too late to matter: {at_kill}"
    );

    let _worker = start_worker();
    let started = std::time::Instant::now();
    loop {
        let progress = app
            .get(
                &format!("/api/concerts/{concert}/cancellation"),
                Some(&app.admin_token),
            )
            .await;
        if progress.body["status"] == "DONE" {
            assert_eq!(
                progress.body["refunded"], ORDERS as u64,
                "{}",
                progress.body
            );
            assert_eq!(progress.body["failed"], 0);
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(180),
            "not done: {}",
            progress.body
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    for pi in &pis {
        assert_eq!(
            stripe
                .refunds_of(pi)
                .await
                .iter()
                .map(|r| r.1)
                .collect::<Vec<_>>(),
            [2500],
            "{pi}"
        );
    }
    // The provider's 429s were waited out, not given up on.
    assert!(app.count("refunds WHERE attempts > 1").await > 0);
    assert_eq!(app.count("tickets WHERE status = 'VALID'").await, 0);
    app.assert_invariants().await;
}
