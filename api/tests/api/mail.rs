//! Mail (issue 31) through the API: a fan's address (optional at sign-up,
//! validated, changed and removed with the current password), and what the
//! workers mail a fan with one, against a real SMTP server: the order's
//! confirmation with its priced tickets (the codes the API shows), a
//! reminder of a hold still running (none for a hold confirmed), a waiting
//! list's offer; nothing for a fan without an address.

use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::{Value, json};
use ticket_core::secret::Secret;
use ticket_core::testing::smtp::{self, Behaviour, SmtpSink};
use ticket_worker::mail::{MailConfig, MailRelay, SmtpServer};
use ticket_worker::waiting_list::Offers;
use tokio_util::sync::CancellationToken;

use crate::helpers::{TestApp, concert_with, spawn_app, won};

const FROM: &str = "Box Office <tickets@box.example>";

/// Signs up `nick` with `email` (none: without one); returns (id, token).
async fn fan(app: &TestApp, nick: &str, email: Option<&str>) -> (u64, String) {
    let mut body = json!({"nickName": nick, "password": "password123"});
    if let Some(email) = email {
        body["email"] = json!(email);
    }
    let reply = app.post("/api/users", None, body).await;
    let user = reply.assert_status(201);
    // Kept as given, its domain lower-cased.
    assert_eq!(
        user["email"].as_str().map(str::to_lowercase),
        email.map(str::to_lowercase)
    );
    let id = user["id"].as_u64().unwrap();
    (id, app.login(nick, "password123").await)
}

fn relay(app: &TestApp, sink: &SmtpSink) -> MailRelay {
    let server = SmtpServer::new(Secret::new(sink.url()), None).unwrap();
    let mut config = MailConfig::new(
        server,
        FROM.parse().unwrap(),
        Arc::new(crate::helpers::ticket_keys()),
    );
    config.public_url = Some("https://box.example/".to_owned());
    config.poll_interval = Duration::from_millis(20);
    MailRelay::new(app.pool.clone(), config).unwrap()
}

/// The one arrived message with this Message-ID.
fn arrived<'a>(messages: &'a [Value], id: &str) -> &'a Value {
    let found: Vec<&Value> = messages
        .iter()
        .filter(|m| m["messageId"] == format!("<{id}>"))
        .collect();
    assert_eq!(found.len(), 1, "{id}: {messages:?}");
    found[0]
}

fn text_of(message: &Value) -> &str {
    smtp::parts(message, "text/plain")[0]["text"]
        .as_str()
        .unwrap()
}

#[tokio::test]
async fn a_fan_gives_changes_and_removes_an_address_with_the_current_password() {
    let app = spawn_app().await;
    let (id, token) = fan(&app, "alice", Some("Alice@Mail.Example")).await;
    let me = app.get("/api/users/me", Some(&token)).await;
    assert_eq!(me.assert_status(200)["email"], "Alice@mail.example");
    let path = format!("/api/users/{id}");

    // Without the current password, or with a wrong one: nothing changes.
    app.patch(&path, Some(&token), json!({"email": "new@mail.example"}))
        .await
        .assert_problem(400, "VALIDATION_ERROR");
    app.patch(
        &path,
        Some(&token),
        json!({"email": "new@mail.example", "currentPassword": "wrong-password"}),
    )
    .await
    .assert_problem(401, "INVALID_CREDENTIALS");
    let me = app.get("/api/users/me", Some(&token)).await;
    assert_eq!(me.assert_status(200)["email"], "Alice@mail.example");

    let changed = app
        .patch(
            &path,
            Some(&token),
            json!({"email": "new@mail.example", "currentPassword": "password123"}),
        )
        .await;
    assert_eq!(changed.assert_status(200)["email"], "new@mail.example");
    // A nickname alone needs no password, and leaves the address.
    let renamed = app
        .patch(&path, Some(&token), json!({"nickName": "alice2"}))
        .await;
    assert_eq!(renamed.assert_status(200)["email"], "new@mail.example");
    let removed = app
        .patch(
            &path,
            Some(&token),
            json!({"email": null, "currentPassword": "password123"}),
        )
        .await;
    assert_eq!(removed.assert_status(200)["email"], Value::Null);
    // An admin sets someone else's without their password.
    let set = app
        .patch(
            &path,
            Some(&app.admin_token),
            json!({"email": "by-admin@mail.example"}),
        )
        .await;
    assert_eq!(set.assert_status(200)["email"], "by-admin@mail.example");
    // Nobody else reads it.
    let (_, bob) = fan(&app, "bob", None).await;
    app.get(&path, Some(&bob))
        .await
        .assert_problem(403, "FORBIDDEN");
}

#[tokio::test]
async fn an_address_that_cannot_be_delivered_to_is_refused_and_nothing_is_written() {
    let app = spawn_app().await;
    let before = app.count("users").await;
    for email in [
        "fan",
        "fan@localhost",
        "fan@exa mple.com",
        "a@b.c\r\nBcc: x@y.z",
    ] {
        let reply = app
            .post(
                "/api/users",
                None,
                json!({"nickName": "carol", "password": "password123", "email": email}),
            )
            .await;
        reply.assert_problem(400, "VALIDATION_ERROR");
        assert_eq!(reply.error_fields(), ["email"], "{email:?}");
    }
    let reply = app
        .post(
            "/api/users",
            None,
            json!({"nickName": "carol", "password": "password123", "email": 7}),
        )
        .await;
    assert_eq!(reply.status, 400, "{:?}", reply.body);
    assert_eq!(app.count("users").await, before);
    let (id, token) = fan(&app, "carol", Some("carol@mail.example")).await;
    let refused = app
        .patch(
            &format!("/api/users/{id}"),
            Some(&token),
            json!({"email": "@mail.example", "currentPassword": "password123"}),
        )
        .await;
    refused.assert_problem(400, "VALIDATION_ERROR");
    let me = app.get("/api/users/me", Some(&token)).await;
    assert_eq!(me.assert_status(200)["email"], "carol@mail.example");
}

#[tokio::test]
async fn an_order_is_mailed_with_its_priced_tickets_and_a_running_hold_is_reminded() {
    let app = spawn_app().await;
    let sink = SmtpSink::start(Behaviour::default()).await;
    let (_, seats) = concert_with(
        &app,
        6,
        json!({"holdSeconds": 8, "timeZone": "Asia/Seoul", "categories": [
            {"name": "Floor", "price": 120_000, "currency": "KRW", "rows": ["A"]}]}),
    )
    .await;
    let (_, alice) = fan(&app, "alice", Some("alice@mail.example")).await;
    let (_, bob) = fan(&app, "bob", None).await;
    let (carol_id, carol) = fan(&app, "carol", Some("carol@mail.example")).await;
    // Carol reads Korean: her account says so (no password needed), and
    // her mail is written in it. A language the box office does not speak
    // is refused and changes nothing.
    let refused = app
        .patch(
            &format!("/api/users/{carol_id}"),
            Some(&carol),
            json!({"language": "fr"}),
        )
        .await;
    assert_eq!(
        refused.assert_problem(400, "VALIDATION_ERROR")["errors"][0]["field"],
        "language"
    );
    let korean = app
        .patch(
            &format!("/api/users/{carol_id}"),
            Some(&carol),
            json!({"language": "ko"}),
        )
        .await;
    assert_eq!(korean.assert_status(200)["language"], "ko");
    let alices = won(&app, &alice, &seats[0..2]).await;
    won(&app, &bob, &seats[2..3]).await;
    let carols = won(&app, &carol, &seats[3..4]).await;
    // Paid at the desk: the operator confirms.
    app.post(
        &format!("/api/reservations/{alices}/confirm"),
        Some(&app.admin_token),
        json!({"paymentReference": "pi_1"}),
    )
    .await
    .assert_status(200);

    let shutdown = CancellationToken::new();
    let running = tokio::spawn(relay(&app, &sink).run(shutdown.clone()));
    // Alice's order at once; Carol's reminder when a quarter of her 8 s hold
    // is left (6 s in); Alice's reminder skipped, as she confirmed.
    let messages = sink.wait_for(2, Duration::from_secs(30)).await;
    let deadline = Instant::now() + Duration::from_secs(20);
    while app.count("mails WHERE outcome IS NOT NULL").await < 3 {
        assert!(Instant::now() < deadline, "the mails did not all end");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    shutdown.cancel();
    running.await.unwrap();
    assert_eq!(sink.messages().len(), 2, "nothing more: {messages:?}");

    let order = arrived(
        &messages,
        &format!("reservation-{alices}.order-confirmation@box.example"),
    );
    assert_eq!(order["to"], "alice <alice@mail.example>");
    assert_eq!(order["subject"], "Your tickets for IU Live");
    let text = text_of(order);
    // The show's time in the venue's, Seoul's (the tests run in UTC).
    assert!(
        text.contains("Olympic Hall, Fri 1 May 2099, 19:00 KST"),
        "{text}"
    );
    assert!(text.contains("Floor  KRW 120,000"), "{text}");
    assert!(text.contains("Total: KRW 240,000"), "{text}");
    assert!(text.contains("https://box.example/#/me/tickets"), "{text}");
    let tickets = app
        .get(&format!("/api/reservations/{alices}/tickets"), Some(&alice))
        .await;
    let tickets = tickets.assert_status(200).as_array().unwrap().clone();
    assert_eq!(tickets.len(), 2);
    let images = smtp::parts(order, "image/png");
    for ticket in &tickets {
        let code = ticket["code"].as_str().unwrap();
        assert!(text.contains(code), "the API's code is in the mail");
        let cid = format!("<ticket-{}@box.example>", ticket["ticketId"]);
        let image = images.iter().find(|i| i["contentId"] == cid).unwrap();
        let png = base64::engine::general_purpose::STANDARD
            .decode(image["base64"].as_str().unwrap())
            .unwrap();
        assert_eq!(smtp::qr_text(&png), code, "the QR image reads as the code");
    }

    let reminder = arrived(
        &messages,
        &format!("reservation-{carols}.hold-reminder@box.example"),
    );
    assert_eq!(reminder["to"], "carol <carol@mail.example>");
    let subject = reminder["subject"].as_str().unwrap();
    assert!(
        subject.ends_with(" KST까지 IU Live 좌석을 확정해 주세요"),
        "{reminder}"
    );
    let text = text_of(reminder);
    assert!(text.contains("A4"), "{text}");
    assert!(text.contains("carol 님, 안녕하세요."), "{text}");
    assert!(
        text.contains("Olympic Hall, 2099년 5월 1일 (금) 19:00 KST"),
        "{text}"
    );
    assert!(
        smtp::parts(reminder, "image/png").is_empty(),
        "no tickets yet"
    );
    let outcomes: Vec<(u64, String, String)> =
        sqlx::query_as("SELECT reservation_id, kind, outcome FROM mails ORDER BY id")
            .fetch_all(&app.pool)
            .await
            .unwrap();
    assert_eq!(
        outcomes,
        [
            (alices, "HOLD_REMINDER".into(), "SKIPPED".into()),
            (carols, "HOLD_REMINDER".into(), "SENT".into()),
            (alices, "ORDER_CONFIRMATION".into(), "SENT".into()),
        ],
        "none for Bob, who has no address"
    );
    app.assert_invariants().await;
}

#[tokio::test]
async fn an_offer_from_the_waiting_list_is_mailed() {
    let app = spawn_app().await;
    let sink = SmtpSink::start(Behaviour::default()).await;
    let (concert, seats) = concert_with(&app, 1, json!({"waitingListOfferSeconds": 600})).await;
    let (_, bob) = fan(&app, "bob", None).await;
    let (_, carol) = fan(&app, "carol", Some("carol@mail.example")).await;
    let bobs = won(&app, &bob, &seats).await;
    app.post(
        &format!("/api/concerts/{concert}/waiting-list"),
        Some(&carol),
        json!({"seats": 1}),
    )
    .await
    .assert_status(201);
    app.post(
        &format!("/api/reservations/{bobs}/cancel"),
        Some(&bob),
        json!({}),
    )
    .await
    .assert_status(200);
    assert_eq!(
        Offers::new(app.pool.clone())
            .offer_once()
            .await
            .unwrap()
            .len(),
        1
    );
    let round = relay(&app, &sink).send_once().await.unwrap();
    assert_eq!(round.sent, 1, "the offer now; its reminder later");
    let messages = sink.messages();
    assert_eq!(
        messages[0]["subject"],
        "Seats for IU Live are yours to confirm"
    );
    let text = text_of(&messages[0]);
    assert!(
        text.contains("waiting list") && text.contains("A1"),
        "{text}"
    );
    assert!(text.contains("https://box.example/#/me"), "{text}");
    let reminder: (String,) =
        sqlx::query_as("SELECT kind FROM mails WHERE outcome IS NULL AND due_at > NOW(6)")
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(reminder.0, "HOLD_REMINDER");
}
