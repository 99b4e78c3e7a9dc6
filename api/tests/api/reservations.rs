//! Reservation requests in the line: accepted, decided, polled, refused,
//! repeated with an idempotency key, and raced. Long because each way a
//! request enters and leaves the line is a story of its own.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use ticket_worker::Mode;
use tokio::sync::Barrier;

use crate::helpers::{TestApp, send_all_at_once, spawn_app, start_server_with};

#[tokio::test]
async fn a_request_is_queued_then_decided() {
    let app = spawn_app().await;
    let (alice, token) = app.user("alice").await;
    let seat = app.seat_ids(3).await[1];

    let reply = app.reserve(&token, seat).await;
    let body = reply.assert_status(201);
    assert_eq!(body["status"], "PENDING");
    let queue_id = body["queueId"].as_u64().unwrap();
    assert_eq!(
        reply.headers.get("location").unwrap(),
        &format!("/api/reservations/status/{queue_id}")
    );
    let pending = app.queue_status(&token, queue_id).await;
    assert_eq!(
        (pending["status"].as_str(), pending["seatId"].as_u64()),
        (Some("PENDING"), Some(seat))
    );
    assert!(pending["reservationId"].is_null());
    assert!(pending["decidedAt"].is_null());

    app.drain().await;
    let done = app.queue_status(&token, queue_id).await;
    assert_eq!(done["status"], "SUCCESS");
    assert!(done["reason"].is_null());
    let time =
        |v: &serde_json::Value| chrono::DateTime::parse_from_rfc3339(v.as_str().unwrap()).unwrap();
    assert_eq!(done["requestedAt"], pending["requestedAt"]);
    assert!(time(&done["decidedAt"]) >= time(&done["requestedAt"]));
    let reservation_id = done["reservationId"].as_u64().unwrap();
    let reservation = app
        .get(&format!("/api/reservations/{reservation_id}"), Some(&token))
        .await;
    let r = reservation.assert_status(200);
    assert_eq!(
        (r["userId"].as_u64(), r["seatId"].as_u64()),
        (Some(alice), Some(seat))
    );
    assert_eq!(
        (r["seatNumber"].as_str(), r["status"].as_str()),
        (Some("A2"), Some("CONFIRMED"))
    );
    assert_eq!(
        app.get(&format!("/api/seats/{seat}"), None).await.body["status"],
        "RESERVED"
    );
    let mine = app.get("/api/users/me/reservations", Some(&token)).await;
    assert_eq!(mine.assert_status(200).as_array().unwrap().len(), 1);
    let (events,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM outbox WHERE event_type = 'ReservationConfirmed' AND aggregate_id = ?")
        .bind(reservation_id)
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(events, 1, "the event was written with the reservation");

    // Someone else asking for the same seat later is refused.
    let (_, bob) = app.user("bob").await;
    let late = app.reserve(&bob, seat).await.assert_status(201)["queueId"]
        .as_u64()
        .unwrap();
    app.drain().await;
    let refused = app.queue_status(&bob, late).await;
    assert_eq!(
        (refused["status"].as_str(), refused["reason"].as_str()),
        (Some("FAILED"), Some("SEAT_TAKEN"))
    );
    assert!(refused["reservationId"].is_null());
    app.assert_invariants().await;
}

#[tokio::test]
async fn bad_reservation_requests_are_refused_without_writes() {
    let app = spawn_app().await;
    let (alice, token) = app.user("alice").await;
    let (bob, _) = app.user("bob").await;
    let seat = app.seat_ids(1).await[0];
    let forged = app
        .post(
            "/api/reservations",
            Some(&token),
            json!({"seatId": seat, "userId": bob}),
        )
        .await;
    forged.assert_problem(403, "FORBIDDEN");
    app.post(
        "/api/reservations",
        Some(&token),
        json!({"seatId": seat, "userId": alice}),
    )
    .await
    .assert_status(201);
    app.reserve(&token, 999_999)
        .await
        .assert_problem(404, "SEAT_NOT_FOUND");
    app.post("/api/reservations", None, json!({"seatId": seat}))
        .await
        .assert_problem(401, "UNAUTHORIZED");
    app.post("/api/reservations", Some(&token), json!({"seatId": "A1"}))
        .await
        .assert_problem(400, "VALIDATION_ERROR");
    app.post("/api/reservations", Some(&token), json!({}))
        .await
        .assert_problem(400, "VALIDATION_ERROR");
    assert_eq!(app.count("reservation_queue").await, 1);
    app.get("/api/reservations/status/999999", Some(&token))
        .await
        .assert_problem(404, "QUEUE_NOT_FOUND");
    app.get("/api/reservations/999999", Some(&token))
        .await
        .assert_problem(404, "RESERVATION_NOT_FOUND");
    app.get("/api/reservations/status/abc", Some(&token))
        .await
        .assert_problem(400, "VALIDATION_ERROR");
}

#[tokio::test]
async fn a_deleted_account_cannot_queue_with_its_old_token() {
    let app = spawn_app().await;
    let (alice, token) = app.user("alice").await;
    let seat = app.seat_ids(1).await[0];
    app.delete(&format!("/api/users/{alice}"), Some(&token))
        .await
        .assert_status(204);
    app.reserve(&token, seat)
        .await
        .assert_problem(401, "UNAUTHORIZED");
    assert_eq!(app.count("reservation_queue").await, 0);
}

#[tokio::test]
async fn others_requests_and_reservations_are_invisible() {
    let app = spawn_app().await;
    let (_, alice) = app.user("alice").await;
    let (_, bob) = app.user("bob").await;
    let seat = app.seat_ids(1).await[0];
    let queue_id = app.reserve(&alice, seat).await.body["queueId"]
        .as_u64()
        .unwrap();
    app.drain().await;
    let reservation_id = app.queue_status(&alice, queue_id).await["reservationId"]
        .as_u64()
        .unwrap();

    app.get(&format!("/api/reservations/status/{queue_id}"), Some(&bob))
        .await
        .assert_problem(404, "QUEUE_NOT_FOUND");
    app.get(&format!("/api/reservations/{reservation_id}"), Some(&bob))
        .await
        .assert_problem(404, "RESERVATION_NOT_FOUND");
    assert_eq!(
        app.get("/api/users/me/reservations", Some(&bob)).await.body,
        json!([])
    );
    let admin = Some(app.admin_token.as_str());
    app.get(&format!("/api/reservations/status/{queue_id}"), admin)
        .await
        .assert_status(200);
    app.get(&format!("/api/reservations/{reservation_id}"), admin)
        .await
        .assert_status(200);
    app.get(&format!("/api/reservations/{reservation_id}"), None)
        .await
        .assert_problem(401, "UNAUTHORIZED");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn identical_requests_racing_leave_one_open_request() {
    let app = spawn_app().await;
    let (_, token) = app.user("alice").await;
    let seat = app.seat_ids(1).await[0];
    let replies = app
        .reserve_all_at_once(vec![(token.clone(), seat); 20])
        .await;
    let created = replies.iter().filter(|r| r.status.as_u16() == 201).count();
    assert_eq!(created, 1);
    for reply in replies.iter().filter(|r| r.status.as_u16() != 201) {
        reply.assert_problem(409, "QUEUE_DUPLICATED");
    }
    // Once decided, the same user may ask again (and is refused by the worker, seat taken by them).
    app.drain().await;
    app.reserve(&token, seat).await.assert_status(201);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_idempotency_key_replays_the_original_answer() {
    let app = spawn_app().await;
    let (_, token) = app.user("alice").await;
    let seats = app.seat_ids(2).await;
    let send = |seat: u64, key: &str| {
        app.client
            .post(format!("{}/api/reservations", app.base))
            .bearer_auth(&token)
            .header("Idempotency-Key", key)
            .json(&json!({"seatId": seat}))
            .send()
    };
    let first = TestApp::reply(send(seats[0], "key-1").await.unwrap()).await;
    let queue_id = first.assert_status(201)["queueId"].clone();
    let again = TestApp::reply(send(seats[0], "key-1").await.unwrap()).await;
    assert_eq!(again.assert_status(201)["queueId"], queue_id);
    assert_eq!(again.headers.get("idempotent-replayed").unwrap(), "true");
    app.drain().await;
    let after_decision = TestApp::reply(send(seats[0], "key-1").await.unwrap()).await;
    assert_eq!(
        after_decision.assert_status(201)["queueId"],
        queue_id,
        "replays after the decision too"
    );
    let other_request = TestApp::reply(send(seats[1], "key-1").await.unwrap()).await;
    other_request.assert_problem(409, "IDEMPOTENCY_KEY_REUSED");
    let bad_key = TestApp::reply(send(seats[1], "with space").await.unwrap()).await;
    bad_key.assert_problem(400, "VALIDATION_ERROR");
    assert_eq!(app.count("reservation_queue").await, 1);

    // Concurrent retries with one key: one request, the same answer for all.
    let barrier = Arc::new(Barrier::new(10));
    let tasks: Vec<_> = (0..10)
        .map(|_| {
            let request = app
                .client
                .post(format!("{}/api/reservations", app.base))
                .bearer_auth(&token)
                .header("Idempotency-Key", "key-2")
                .json(&json!({"seatId": seats[1]}));
            let barrier = barrier.clone();
            tokio::spawn(async move {
                barrier.wait().await;
                TestApp::reply(request.send().await.unwrap()).await
            })
        })
        .collect();
    let mut ids = std::collections::HashSet::new();
    for task in tasks {
        let reply = task.await.unwrap();
        ids.insert(reply.assert_status(201)["queueId"].as_u64().unwrap());
    }
    assert_eq!(ids.len(), 1);
    assert_eq!(app.count("reservation_queue").await, 2);
}

/// A careful client's retries, through the group writes: a request by
/// count replays with its key like one by seat, another body with the key
/// is refused, and the same key sent at once to two API instances (each
/// with its own batcher) is one request in line, every time.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_key_sent_at_once_to_two_instances_is_one_request_by_seat_or_by_count() {
    let here = spawn_app().await;
    let there = TestApp::sharing_database(&here, start_server_with(here.pool.clone(), None).await);
    let concert = here
        .concert(json!({
            "rows": 4, "seatsPerRow": 5, "maxSeatsPerUser": 100,
            "categories": [{"name": "Standard", "price": 0, "currency": "EUR"}],
        }))
        .await["id"]
        .as_u64()
        .unwrap();
    let seats = here.seat_ids(20).await;
    let (_, token) = here.user("alice").await;
    let send = |app: &TestApp, key: &str, body: Value| {
        app.client
            .post(format!("{}/api/reservations", app.base))
            .bearer_auth(&token)
            .header("Idempotency-Key", key)
            .json(&body)
            .send()
    };
    let best = |count: u64| json!({"concertId": concert, "category": "Standard", "count": count});
    let first = TestApp::reply(send(&here, "best-1", best(2)).await.unwrap()).await;
    let queue_id = first.assert_status(201)["queueId"].clone();
    let again = TestApp::reply(send(&there, "best-1", best(2)).await.unwrap()).await;
    assert_eq!(again.assert_status(201)["queueId"], queue_id);
    assert_eq!(again.headers.get("idempotent-replayed").unwrap(), "true");
    let other = TestApp::reply(send(&here, "best-1", best(1)).await.unwrap()).await;
    other.assert_problem(409, "IDEMPOTENCY_KEY_REUSED");
    here.drain().await;

    for (round, seat) in seats.iter().take(6).enumerate() {
        let key = format!("round-{round}");
        let body = match round % 2 {
            0 => json!({"seatId": seat}),
            _ => best(1),
        };
        let sends = (0..8)
            .map(|i| {
                let app = if i % 2 == 0 { &here } else { &there };
                app.client
                    .post(format!("{}/api/reservations", app.base))
                    .bearer_auth(&token)
                    .header("Idempotency-Key", &key)
                    .json(&body)
            })
            .collect();
        let mut ids = std::collections::HashSet::new();
        let mut replayed = 0;
        for reply in send_all_at_once(sends).await {
            ids.insert(reply.assert_status(201)["queueId"].as_u64().unwrap());
            replayed += usize::from(reply.headers.contains_key("idempotent-replayed"));
        }
        assert_eq!(ids.len(), 1, "round {round}: {ids:?}");
        assert_eq!(
            replayed, 7,
            "round {round}: one first answer, seven replays"
        );
        let (rows,): (i64,) =
            sqlx::query_as("SELECT COUNT(*) FROM reservation_queue WHERE idempotency_key = ?")
                .bind(&key)
                .fetch_one(&here.pool)
                .await
                .unwrap();
        assert_eq!(rows, 1, "round {round}");
        here.drain().await;
    }
    here.assert_invariants().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_hundred_users_race_for_one_seat() {
    let app = spawn_app().await;
    let users = app.many_users("fan", 100).await;
    let seat = app.seat_ids(1).await[0];
    let requests = users.iter().map(|(_, t)| (t.clone(), seat)).collect();
    let drain = {
        let app = TestApp::sharing_database(&app, app.base.clone());
        tokio::spawn(async move { app.run_workers_until_drained(2).await })
    };
    let replies = app.reserve_all_at_once(requests).await;
    assert!(replies.iter().all(|r| r.status.as_u16() == 201));
    drain.await.unwrap();
    app.run_workers_until_drained(1).await;
    let mut statuses = Vec::new();
    for (reply, (_, token)) in replies.iter().zip(&users) {
        statuses.push(
            app.queue_status(token, reply.body["queueId"].as_u64().unwrap())
                .await,
        );
    }
    let count = |s: &str| {
        statuses
            .iter()
            .filter(|v: &&Value| v["status"] == s)
            .count()
    };
    assert_eq!((count("SUCCESS"), count("FAILED")), (1, 99));
    assert!(
        statuses
            .iter()
            .filter(|v| v["status"] == "FAILED")
            .all(|v| v["reason"] == "SEAT_TAKEN")
    );
    assert_eq!(app.count("reservations").await, 1);
    app.assert_invariants().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn five_hundred_users_on_a_hundred_seats() {
    let app = spawn_app().await;
    let users = app.many_users("fan", 500).await;
    let seats = app.seat_ids(100).await;
    let requests = users
        .iter()
        .enumerate()
        .map(|(i, (_, t))| (t.clone(), seats[i % 100]))
        .collect();
    let replies = app.reserve_all_at_once(requests).await;
    assert!(replies.iter().all(|r| r.status.as_u16() == 201));
    app.run_workers_until_drained(2).await;
    let counts = app.queue_counts().await;
    assert_eq!(
        (
            counts.get("SUCCESS").copied(),
            counts.get("FAILED").copied()
        ),
        (Some(100), Some(400))
    );
    let (reserved,): (i64,) =
        sqlx::query_as("SELECT COUNT(*) FROM seats WHERE status = 'RESERVED'")
            .fetch_one(&app.pool)
            .await
            .unwrap();
    let (confirmed,): (i64,) =
        sqlx::query_as("SELECT COUNT(*) FROM reservations WHERE status = 'CONFIRMED'")
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!((reserved, confirmed), (100, 100));
    app.assert_invariants().await;
}

#[tokio::test]
async fn within_a_batch_the_earliest_request_wins() {
    let app = spawn_app().await;
    let users = app.many_users("fan", 5).await;
    let seat = app.seat_ids(1).await[0];
    let mut queue_ids = Vec::new();
    for (_, token) in &users {
        queue_ids.push(
            app.reserve(token, seat).await.body["queueId"]
                .as_u64()
                .unwrap(),
        );
    }
    app.drain().await;
    let first = app.queue_status(&users[0].1, queue_ids[0]).await;
    assert_eq!(first["status"], "SUCCESS");
    for (id, (_, token)) in queue_ids.iter().zip(&users).skip(1) {
        assert_eq!(app.queue_status(token, *id).await["status"], "FAILED");
    }
}

async fn book(app: &TestApp, token: &str, seat: u64) -> u64 {
    let queue_id = app.reserve(token, seat).await.assert_status(201)["queueId"]
        .as_u64()
        .unwrap();
    app.drain().await;
    let status = app.queue_status(token, queue_id).await;
    assert_eq!(status["status"], "SUCCESS", "{status}");
    status["reservationId"].as_u64().unwrap()
}

fn cancel_body(reservation: u64) -> Value {
    json!({"reservationId": reservation})
}

#[tokio::test]
async fn ten_booked_five_cancelled_and_booked_again() {
    let app = spawn_app().await;
    let (_, alice) = app.user("alice").await;
    let (_, bob) = app.user("bob").await;
    let seats = app.seat_ids(10).await;
    let mut reservations = Vec::new();
    for &seat in &seats {
        reservations.push(book(&app, &alice, seat).await);
    }
    for &r in &reservations[..5] {
        let reply = app
            .post("/api/reservations/cancel", Some(&alice), cancel_body(r))
            .await;
        assert_eq!(
            reply.assert_status(200),
            &json!({"reservationId": r, "status": "CANCELLED"})
        );
    }
    for (i, &seat) in seats.iter().enumerate() {
        let expected = if i < 5 { "AVAILABLE" } else { "RESERVED" };
        assert_eq!(
            app.get(&format!("/api/seats/{seat}"), None).await.body["status"],
            expected
        );
    }
    let cancelled = app
        .get(
            &format!("/api/reservations/{}", reservations[0]),
            Some(&alice),
        )
        .await;
    assert_eq!(cancelled.body["status"], "CANCELLED");
    for &seat in &seats[..5] {
        book(&app, &bob, seat).await;
    }
    let (confirmed,): (i64,) =
        sqlx::query_as("SELECT COUNT(*) FROM reservations WHERE status = 'CONFIRMED'")
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(confirmed, 10);
    app.assert_invariants().await;
}

#[tokio::test]
async fn cancelling_is_for_the_owner_and_only_once() {
    let app = spawn_app().await;
    let (alice_id, alice) = app.user("alice").await;
    let (bob_id, bob) = app.user("bob").await;
    let seats = app.seat_ids(2).await;
    let reservation = book(&app, &alice, seats[0]).await;
    app.post(
        "/api/reservations/cancel",
        Some(&bob),
        cancel_body(reservation),
    )
    .await
    .assert_problem(404, "RESERVATION_NOT_FOUND");
    app.post(
        "/api/reservations/cancel",
        Some(&alice),
        json!({"reservationId": reservation, "userId": bob_id}),
    )
    .await
    .assert_problem(403, "FORBIDDEN");
    app.post(
        "/api/reservations/cancel",
        Some(&alice),
        cancel_body(999_999),
    )
    .await
    .assert_problem(404, "RESERVATION_NOT_FOUND");
    app.post(
        "/api/reservations/cancel",
        Some(&alice),
        json!({"reservationId": reservation, "userId": alice_id}),
    )
    .await
    .assert_status(200);
    app.post(
        "/api/reservations/cancel",
        Some(&alice),
        cancel_body(reservation),
    )
    .await
    .assert_problem(409, "RESERVATION_CANCEL_FORBIDDEN");
    // An admin may cancel anyone's reservation.
    let other = book(&app, &bob, seats[1]).await;
    app.post(
        "/api/reservations/cancel",
        Some(&app.admin_token),
        cancel_body(other),
    )
    .await
    .assert_status(200);
    app.assert_invariants().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_double_cancel_succeeds_once() {
    let app = spawn_app().await;
    let (_, alice) = app.user("alice").await;
    let seat = app.seat_ids(1).await[0];
    let reservation = book(&app, &alice, seat).await;
    let barrier = Arc::new(Barrier::new(8));
    let tasks: Vec<_> = (0..8)
        .map(|_| {
            let (client, url, token, barrier) = (
                app.client.clone(),
                format!("{}/api/reservations/cancel", app.base),
                alice.clone(),
                barrier.clone(),
            );
            tokio::spawn(async move {
                barrier.wait().await;
                let r = client
                    .post(url)
                    .bearer_auth(token)
                    .json(&cancel_body(reservation))
                    .send()
                    .await
                    .unwrap();
                TestApp::reply(r).await
            })
        })
        .collect();
    let mut ok = 0;
    for t in tasks {
        let reply = t.await.unwrap();
        if reply.status.as_u16() == 200 {
            ok += 1;
        } else {
            reply.assert_problem(409, "RESERVATION_CANCEL_FORBIDDEN");
        }
    }
    assert_eq!(ok, 1);
    let (events,): (i64,) =
        sqlx::query_as("SELECT COUNT(*) FROM outbox WHERE event_type = 'ReservationCancelled'")
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(events, 1);
    app.assert_invariants().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn cancel_racing_a_new_booking_never_leaves_two_confirmed() {
    let app = spawn_app().await;
    let (_, alice) = app.user("alice").await;
    let users = app.many_users("rival", 20).await;
    let seat = app.seat_ids(1).await[0];
    for (_, rival) in &users {
        let reservation = book(&app, &alice, seat).await;
        let worker = app.worker("racer", Mode::Batch, 100, Duration::from_secs(30));
        let cancel = app.post(
            "/api/reservations/cancel",
            Some(&alice),
            cancel_body(reservation),
        );
        let rebook = async {
            app.reserve(rival, seat).await.assert_status(201);
            worker.process_once().await.unwrap()
        };
        let (cancelled, _) = tokio::join!(cancel, rebook);
        cancelled.assert_status(200);
        app.drain().await;
        app.assert_invariants().await;
        // Free the seat again for the next round, whoever holds it.
        let holder: Option<(u64,)> = sqlx::query_as(
            "SELECT id FROM reservations WHERE seat_id = ? AND status = 'CONFIRMED'",
        )
        .bind(seat)
        .fetch_optional(&app.pool)
        .await
        .unwrap();
        if let Some((id,)) = holder {
            app.post(
                "/api/reservations/cancel",
                Some(&app.admin_token),
                cancel_body(id),
            )
            .await
            .assert_status(200);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn grouped_requests_each_get_their_own_answer() {
    let app = spawn_app().await;
    let users = app.many_users("fan", 150).await;
    let seats = app.seat_ids(50).await;
    // 150 valid requests, 30 repeats of earlier ones, 20 for a seat that does not exist.
    let mut requests: Vec<(String, u64)> = users
        .iter()
        .enumerate()
        .map(|(i, (_, t))| (t.clone(), seats[i % 50]))
        .collect();
    requests.extend(
        users
            .iter()
            .take(30)
            .enumerate()
            .map(|(i, (_, t))| (t.clone(), seats[i % 50])),
    );
    requests.extend(
        users
            .iter()
            .skip(100)
            .take(20)
            .map(|(_, t)| (t.clone(), 999_999)),
    );
    let replies = app.reserve_all_at_once(requests.clone()).await;
    let count = |status: u16| {
        replies
            .iter()
            .filter(|r| r.status.as_u16() == status)
            .count()
    };
    assert_eq!((count(201), count(409), count(404)), (150, 30, 20));
    for r in replies.iter().filter(|r| r.status.as_u16() == 409) {
        r.assert_problem(409, "QUEUE_DUPLICATED");
    }
    for r in replies.iter().filter(|r| r.status.as_u16() == 404) {
        r.assert_problem(404, "SEAT_NOT_FOUND");
    }
    // Every 201 names a distinct row that really is the caller's request.
    let ids: std::collections::HashSet<u64> = replies
        .iter()
        .filter(|r| r.status.as_u16() == 201)
        .map(|r| r.body["queueId"].as_u64().unwrap())
        .collect();
    assert_eq!(ids.len(), 150);
    assert_eq!(app.count("reservation_queue").await, 150);
    for (reply, (token, seat)) in replies
        .iter()
        .zip(&requests)
        .filter(|(r, _)| r.status.as_u16() == 201)
    {
        let status = app
            .queue_status(token, reply.body["queueId"].as_u64().unwrap())
            .await;
        assert_eq!(
            status["seatId"], *seat,
            "a caller got someone else's queueId"
        );
    }
}
