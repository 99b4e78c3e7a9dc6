//! Checkout: orders of several seats, all or nothing; holds that are
//! confirmed, cancelled or run out; the events each change writes.
//!
//! Long because each of a hold's ends (confirmed, cancelled, run out) and
//! each event it writes is a story of its own.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use ticket_worker::holds::HoldSweeper;
use tokio::sync::Barrier;

use crate::helpers::{TestApp, concert_with, order, spawn_app};

async fn queued(app: &TestApp, token: &str, seats: &[u64]) -> u64 {
    order(app, token, seats).await.assert_status(201)["queueId"]
        .as_u64()
        .unwrap()
}

async fn reservation_of(app: &TestApp, token: &str, queue_id: u64) -> Value {
    let status = app.queue_status(token, queue_id).await;
    assert_eq!(status["status"], "SUCCESS", "{status}");
    let id = status["reservationId"].as_u64().unwrap();
    app.get(&format!("/api/reservations/{id}"), Some(token))
        .await
        .assert_status(200)
        .clone()
}

async fn seat_status(app: &TestApp, seat: u64) -> String {
    app.get(&format!("/api/seats/{seat}"), None).await.body["status"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// The event types written for a reservation, in order.
async fn events(app: &TestApp, reservation: u64) -> Vec<String> {
    let rows: Vec<(String,)> =
        sqlx::query_as("SELECT event_type FROM outbox WHERE aggregate_id = ? ORDER BY id")
            .bind(reservation)
            .fetch_all(&app.pool)
            .await
            .unwrap();
    rows.into_iter().map(|(t,)| t).collect()
}

fn seat_ids_of(reservation: &Value) -> Vec<u64> {
    reservation["seats"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["seatId"].as_u64().unwrap())
        .collect()
}

#[tokio::test]
async fn an_order_is_all_or_nothing_and_what_it_lost_no_seat_of_goes_on() {
    let app = spawn_app().await;
    let (_, seats) = concert_with(&app, 5, json!({})).await;
    let (_, alice) = app.user("alice").await;
    let (_, bob) = app.user("bob").await;
    let (_, carol) = app.user("carol").await;
    let first = queued(&app, &alice, &[seats[1], seats[0]]).await;
    // Bob loses seat 1 to Alice, so takes none: seat 2 stays for Carol.
    let second = queued(&app, &bob, &[seats[1], seats[2]]).await;
    let third = queued(&app, &carol, &[seats[2]]).await;
    let status = app.queue_status(&bob, second).await;
    assert_eq!(status["seatIds"], json!([seats[1], seats[2]]));
    assert_eq!(status["seatId"], seats[1]);

    app.drain().await;
    let alices = reservation_of(&app, &alice, first).await;
    assert_eq!(seat_ids_of(&alices), [seats[0], seats[1]]);
    assert_eq!(alices["status"], "CONFIRMED");
    assert!(
        alices.get("seatId").is_none(),
        "several seats: no single seatId"
    );
    let lost = app.queue_status(&bob, second).await;
    assert_eq!(
        (lost["status"].as_str(), lost["reason"].as_str()),
        (Some("FAILED"), Some("SEAT_TAKEN"))
    );
    let carols = reservation_of(&app, &carol, third).await;
    assert_eq!(
        (carols["seatId"].as_u64(), carols["seatNumber"].as_str()),
        (Some(seats[2]), Some("A3")),
        "a one-seat reservation keeps its seatId and seatNumber"
    );
    for (seat, status) in [
        (0, "RESERVED"),
        (1, "RESERVED"),
        (2, "RESERVED"),
        (3, "AVAILABLE"),
    ] {
        assert_eq!(seat_status(&app, seats[seat]).await, status, "seat {seat}");
    }
    let mine = app.get("/api/users/me/reservations", Some(&alice)).await;
    assert_eq!(
        seat_ids_of(&mine.assert_status(200)[0]),
        [seats[0], seats[1]]
    );
    let id = alices["reservationId"].as_u64().unwrap();
    assert_eq!(events(&app, id).await, ["ReservationConfirmed"]);
    let payload: (String,) = sqlx::query_as("SELECT payload FROM outbox WHERE aggregate_id = ?")
        .bind(id)
        .fetch_one(&app.pool)
        .await
        .unwrap();
    let payload: Value = serde_json::from_str(&payload.0).unwrap();
    assert_eq!(payload["seats"][1]["seatNumber"], "A2");
    assert_eq!(payload["queueId"], first);
    app.assert_invariants().await;
}

#[tokio::test]
async fn a_bad_order_is_refused_with_its_reason_and_queues_nothing() {
    let app = spawn_app().await;
    let (_, seats) = concert_with(&app, 12, json!({"maxSeatsPerOrder": 3})).await;
    let (_, other) = concert_with(&app, 2, json!({})).await;
    let (_, token) = app.user("alice").await;
    for (body, status, code) in [
        (json!({"seatIds": []}), 400, "VALIDATION_ERROR"),
        (
            json!({"seatIds": [seats[0], seats[0]]}),
            400,
            "VALIDATION_ERROR",
        ),
        (json!({"seatIds": seats.clone()}), 400, "VALIDATION_ERROR"),
        (json!({"seatIds": &seats[..4]}), 400, "TOO_MANY_SEATS"),
        (
            json!({"seatIds": [seats[0], other[0]]}),
            400,
            "SEATS_OF_SEVERAL_CONCERTS",
        ),
        (
            json!({"seatIds": [seats[0], 999_999]}),
            404,
            "SEAT_NOT_FOUND",
        ),
        (
            json!({"seatId": seats[0], "seatIds": [seats[1]]}),
            400,
            "VALIDATION_ERROR",
        ),
        (json!({}), 400, "VALIDATION_ERROR"),
        (json!({"seatIds": ["1"]}), 400, "VALIDATION_ERROR"),
    ] {
        app.post("/api/reservations", Some(&token), body.clone())
            .await
            .assert_problem(status, code);
    }
    assert_eq!(app.count("reservation_queue").await, 0);
    assert_eq!(app.count("request_seats").await, 0);
}

#[tokio::test]
async fn one_open_request_per_user_and_seat_counts_every_seat_of_an_order() {
    let app = spawn_app().await;
    let (_, seats) = concert_with(&app, 4, json!({})).await;
    let (_, token) = app.user("alice").await;
    let first = queued(&app, &token, &[seats[0], seats[1]]).await;
    let again = order(&app, &token, &[seats[1], seats[2]]).await;
    assert_eq!(
        again.assert_problem(409, "QUEUE_DUPLICATED")["queueId"],
        first
    );
    let single = app.reserve(&token, seats[0]).await;
    assert_eq!(
        single.assert_problem(409, "QUEUE_DUPLICATED")["queueId"],
        first
    );
    // Nothing of the refused orders was kept: seat 2 is free to ask for.
    queued(&app, &token, &[seats[2], seats[3]]).await;
    assert_eq!(app.count("reservation_queue").await, 2);
    app.drain().await;
    app.assert_invariants().await;
}

#[tokio::test]
async fn a_hold_is_shown_held_and_confirmed_once() {
    let app = spawn_app().await;
    let (concert, seats) = concert_with(&app, 3, json!({"holdSeconds": 600})).await;
    let detail = app.get(&format!("/api/concerts/{concert}"), None).await;
    assert_eq!(
        (
            detail.body["holdSeconds"].as_u64(),
            detail.body["maxSeatsPerOrder"].as_u64()
        ),
        (Some(600), Some(4))
    );
    let (_, token) = app.user("alice").await;
    let queue_id = queued(&app, &token, &[seats[0], seats[1]]).await;
    app.drain().await;
    let held = reservation_of(&app, &token, queue_id).await;
    assert_eq!(held["status"], "HELD");
    assert!(held["holdExpiresAt"].is_string());
    app.seat_counts_become(concert, (1, 2, 0)).await;
    let listed = app
        .get(&format!("/api/concerts/{concert}/seats?status=HELD"), None)
        .await;
    assert_eq!(listed.assert_status(200).as_array().unwrap().len(), 2);

    let id = held["reservationId"].as_u64().unwrap();
    let confirm = format!("/api/reservations/{id}/confirm");
    let confirmed = app
        .post(
            &confirm,
            Some(&token),
            json!({"paymentReference": "pi_123"}),
        )
        .await;
    let body = confirmed.assert_status(200);
    assert_eq!(
        (body["status"].as_str(), body["paymentReference"].as_str()),
        (Some("CONFIRMED"), Some("pi_123"))
    );
    assert!(body["confirmedAt"].is_string());
    // Again, and with no body at all: the same answer, nothing new.
    let again = app
        .request(reqwest::Method::POST, &confirm, Some(&token), None)
        .await;
    assert_eq!(again.assert_status(200)["status"], "CONFIRMED");
    assert_eq!(seat_status(&app, seats[0]).await, "RESERVED");
    assert_eq!(
        events(&app, id).await,
        ["ReservationHeld", "ReservationConfirmed"]
    );
    let (_, mallory) = app.user("mallory").await;
    app.post(&confirm, Some(&mallory), json!({}))
        .await
        .assert_problem(404, "RESERVATION_NOT_FOUND");
    app.post(&confirm, Some(&token), json!({"paymentReference": ""}))
        .await
        .assert_problem(400, "VALIDATION_ERROR");
    app.assert_invariants().await;
}

#[tokio::test]
async fn an_idempotency_key_replays_a_confirm_and_refuses_another_payment() {
    let app = spawn_app().await;
    let (_, seats) = concert_with(&app, 1, json!({"holdSeconds": 600})).await;
    let (_, token) = app.user("alice").await;
    let queue_id = queued(&app, &token, &[seats[0]]).await;
    app.drain().await;
    let id = reservation_of(&app, &token, queue_id).await["reservationId"]
        .as_u64()
        .unwrap();
    let confirm = |payment: &'static str| {
        app.client
            .post(format!("{}/api/reservations/{id}/confirm", app.base))
            .bearer_auth(&token)
            .header("Idempotency-Key", "pay-1")
            .json(&json!({"paymentReference": payment}))
            .send()
    };
    let first = TestApp::reply(confirm("pi_1").await.unwrap()).await;
    first.assert_status(200);
    let replay = TestApp::reply(confirm("pi_1").await.unwrap()).await;
    replay.assert_status(200);
    assert_eq!(replay.headers.get("idempotent-replayed").unwrap(), "true");
    let other = TestApp::reply(confirm("pi_2").await.unwrap()).await;
    other.assert_problem(409, "IDEMPOTENCY_KEY_REUSED");
    assert_eq!(
        events(&app, id).await,
        ["ReservationHeld", "ReservationConfirmed"]
    );
}

/// A hold that ran out reads EXPIRED at once, refuses its confirm and
/// blocks nobody, before any sweep; the sweep then writes it down and
/// announces it.
#[tokio::test]
async fn an_expired_hold_frees_its_seats_at_once_and_the_sweep_writes_it_down() {
    let app = spawn_app().await;
    let (concert, seats) = concert_with(&app, 3, json!({"holdSeconds": 1})).await;
    let (_, alice) = app.user("alice").await;
    let (_, bob) = app.user("bob").await;
    let queue_id = queued(&app, &alice, &[seats[0], seats[1]]).await;
    app.drain().await;
    let held = reservation_of(&app, &alice, queue_id).await;
    let id = held["reservationId"].as_u64().unwrap();
    let end = chrono::DateTime::parse_from_rfc3339(held["holdExpiresAt"].as_str().unwrap())
        .unwrap()
        .with_timezone(&chrono::Utc);
    let wait = (end - chrono::Utc::now()).to_std().unwrap_or_default();
    tokio::time::sleep(wait + Duration::from_millis(50)).await;

    let shown = app
        .get(&format!("/api/reservations/{id}"), Some(&alice))
        .await;
    assert_eq!(shown.assert_status(200)["status"], "EXPIRED");
    app.post(
        &format!("/api/reservations/{id}/confirm"),
        Some(&alice),
        json!({}),
    )
    .await
    .assert_problem(409, "HOLD_EXPIRED");
    app.post(
        &format!("/api/reservations/{id}/cancel"),
        Some(&alice),
        json!({}),
    )
    .await
    .assert_problem(409, "HOLD_EXPIRED");

    // No sweep has run: Bob still gets seat 2, one of the expired hold's.
    let bobs = queued(&app, &bob, &[seats[1], seats[2]]).await;
    app.drain().await;
    let bobs = reservation_of(&app, &bob, bobs).await;
    assert_eq!(seat_ids_of(&bobs), [seats[1], seats[2]]);

    let swept = HoldSweeper::new(app.pool.clone())
        .sweep_once()
        .await
        .unwrap();
    assert_eq!(swept.holds, 1);
    assert_eq!(
        events(&app, id).await,
        ["ReservationHeld", "ReservationExpired"]
    );
    assert_eq!(seat_status(&app, seats[0]).await, "AVAILABLE");
    assert_eq!(
        seat_status(&app, seats[1]).await,
        "HELD",
        "Bob's hold, not freed by Alice's expiry"
    );
    app.seat_counts_become(concert, (1, 2, 0)).await;
    let (status,): (String,) = sqlx::query_as("SELECT status FROM reservations WHERE id = ?")
        .bind(id)
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(status, "EXPIRED");
    app.assert_invariants().await;
}

#[tokio::test]
async fn cancelling_a_hold_frees_every_seat_and_says_so() {
    let app = spawn_app().await;
    let (_, seats) = concert_with(&app, 2, json!({"holdSeconds": 600})).await;
    let (_, token) = app.user("alice").await;
    let queue_id = queued(&app, &token, &[seats[0], seats[1]]).await;
    app.drain().await;
    let id = reservation_of(&app, &token, queue_id).await["reservationId"]
        .as_u64()
        .unwrap();
    let cancelled = app
        .post(
            &format!("/api/reservations/{id}/cancel"),
            Some(&token),
            json!({}),
        )
        .await;
    assert_eq!(cancelled.assert_status(200)["status"], "CANCELLED");
    for seat in &seats {
        assert_eq!(seat_status(&app, *seat).await, "AVAILABLE");
    }
    app.post(
        &format!("/api/reservations/{id}/confirm"),
        Some(&token),
        json!({}),
    )
    .await
    .assert_problem(409, "RESERVATION_NOT_HELD");
    assert_eq!(
        events(&app, id).await,
        ["ReservationHeld", "ReservationCancelled"]
    );
    app.assert_invariants().await;
}

/// Confirms, cancels and the expiry sweep, all at once on the same holds:
/// each hold ends exactly one way, and the events say which.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn confirm_cancel_and_expiry_racing_on_a_hold_have_one_outcome() {
    let app = Arc::new(spawn_app().await);
    let holds = 12;
    let (_, seats) = concert_with(&app, holds, json!({"holdSeconds": 1})).await;
    let mut owners = Vec::new();
    for (i, seat) in seats.iter().enumerate() {
        let (_, token) = app.user(&format!("buyer{i}")).await;
        let queue_id = queued(&app, &token, &[*seat]).await;
        owners.push((token, queue_id));
    }
    app.drain().await;
    let mut reservations = Vec::new();
    for (token, queue_id) in &owners {
        let r = reservation_of(&app, token, *queue_id).await;
        reservations.push((token.clone(), r["reservationId"].as_u64().unwrap()));
    }
    // Fired together as the holds run out: two confirms and a cancel per
    // hold, and a sweep looping the whole time.
    let start = Arc::new(Barrier::new(reservations.len() * 3 + 1));
    let mut tasks = Vec::new();
    for (i, (token, id)) in reservations.iter().enumerate() {
        for action in ["confirm", "confirm", "cancel"] {
            let (app, start, token, id) = (app.clone(), start.clone(), token.clone(), *id);
            // Spread over the second around the end of the holds.
            let delay = Duration::from_millis(700 + 50 * i as u64);
            tasks.push(tokio::spawn(async move {
                start.wait().await;
                tokio::time::sleep(delay).await;
                let reply = app
                    .post(
                        &format!("/api/reservations/{id}/{action}"),
                        Some(&token),
                        json!({}),
                    )
                    .await;
                (id, action, reply.status.as_u16())
            }));
        }
    }
    let sweeper = HoldSweeper::new(app.pool.clone());
    let sweeping = tokio::spawn(async move {
        start.wait().await;
        let until = tokio::time::Instant::now() + Duration::from_secs(3);
        while tokio::time::Instant::now() < until {
            sweeper.sweep_once().await.unwrap();
        }
    });
    let mut answers = Vec::new();
    for t in tasks {
        answers.push(t.await.unwrap());
    }
    sweeping.await.unwrap();

    for (_, id) in &reservations {
        let ok = |action: &str| {
            answers
                .iter()
                .filter(|(r, a, s)| r == id && *a == action && *s == 200)
                .count()
        };
        for (r, _, status) in answers.iter().filter(|(r, ..)| r == id) {
            assert!(
                [200, 409].contains(status),
                "reservation {r} answered {status}"
            );
        }
        let history = events(&app, *id).await;
        let expected: Vec<&str> = match (ok("confirm") > 0, ok("cancel") > 0) {
            // Confirmed before the cancel (a cancel works on CONFIRMED too).
            (true, true) => vec![
                "ReservationHeld",
                "ReservationConfirmed",
                "ReservationCancelled",
            ],
            (true, false) => vec!["ReservationHeld", "ReservationConfirmed"],
            (false, true) => vec!["ReservationHeld", "ReservationCancelled"],
            (false, false) => vec!["ReservationHeld", "ReservationExpired"],
        };
        assert_eq!(history, expected, "reservation {id}: {answers:?}");
    }
    app.assert_invariants().await;
}

/// One user's two orders sharing a seat, sent at the same instant (two tabs,
/// a double click): exactly one is queued, and the other names it.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_orders_of_one_user_sharing_a_seat_at_once_queue_exactly_one() {
    let app = Arc::new(spawn_app().await);
    let (_, seats) = concert_with(&app, 40, json!({"maxSeatsPerUser": 100})).await;
    let (_, token) = app.user("alice").await;
    for round in 0..10 {
        let orders = [
            vec![seats[4 * round], seats[4 * round + 1]],
            vec![seats[4 * round + 1], seats[4 * round + 2]],
        ];
        let start = Arc::new(Barrier::new(2));
        let sent: Vec<_> = orders
            .into_iter()
            .map(|o| {
                let (app, token, start) = (app.clone(), token.clone(), start.clone());
                tokio::spawn(async move {
                    start.wait().await;
                    order(&app, &token, &o).await
                })
            })
            .collect();
        let mut replies = Vec::new();
        for s in sent {
            replies.push(s.await.unwrap());
        }
        replies.sort_by_key(|r| r.status.as_u16());
        let queued = replies[0].assert_status(201)["queueId"].clone();
        assert_eq!(
            replies[1].assert_problem(409, "QUEUE_DUPLICATED")["queueId"],
            queued
        );
    }
    assert_eq!(app.count("reservation_queue").await, 10);
    assert_eq!(app.count("request_seats").await, 20);
    app.drain().await;
    app.assert_invariants().await;
}

#[tokio::test]
async fn a_concerts_sale_settings_are_bounded_and_changed_by_an_admin() {
    let app = spawn_app().await;
    let base = json!({"title": "T", "venue": "V", "concertDate": "2099-01-01T00:00:00Z"});
    for (extra, field) in [
        (json!({"holdSeconds": 3601}), "holdSeconds"),
        (json!({"holdSeconds": -1}), "holdSeconds"),
        (json!({"maxSeatsPerOrder": 0}), "maxSeatsPerOrder"),
        (json!({"maxSeatsPerOrder": 11}), "maxSeatsPerOrder"),
    ] {
        let mut body = base.clone();
        body.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        let reply = app
            .post("/api/concerts", Some(&app.admin_token), body)
            .await;
        reply.assert_problem(400, "VALIDATION_ERROR");
        assert_eq!(reply.error_fields(), [field]);
    }
    assert_eq!(app.count("concerts").await, 0);
    let (id, _) = concert_with(&app, 1, json!({})).await;
    let path = format!("/api/concerts/{id}");
    let changed = app
        .patch(
            &path,
            Some(&app.admin_token),
            json!({"holdSeconds": 900, "maxSeatsPerOrder": 2}),
        )
        .await;
    let body = changed.assert_status(200);
    assert_eq!(
        (
            body["holdSeconds"].as_u64(),
            body["maxSeatsPerOrder"].as_u64()
        ),
        (Some(900), Some(2))
    );
    let (_, user) = app.user("alice").await;
    app.patch(&path, Some(&user), json!({"holdSeconds": 0}))
        .await
        .assert_problem(403, "FORBIDDEN");
    assert_eq!(app.get(&path, None).await.body["holdSeconds"], 900);
}
