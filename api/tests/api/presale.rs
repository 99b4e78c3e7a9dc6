//! Presale with access codes: made in bulk by an admin and kept as hashes,
//! required from `presaleStartsAt` until `opensAt`, bound to the first
//! account that uses one, spent exactly once across instances.

use std::sync::Arc;

use chrono::{Duration, Utc};
use serde_json::{Value, json};
use tokio::sync::Barrier;

use crate::helpers::{Reply, TestApp, spawn_app, start_server_with};

/// A concert of one row of `n` seats whose presale runs now, until an
/// opening an hour away; (id, seat ids).
async fn in_presale(app: &TestApp, n: u32, extra: Value) -> (u64, Vec<u64>) {
    let now = Utc::now();
    let mut settings = json!({
        "rows": 1, "seatsPerRow": n, "maxSeatsPerUser": 10,
        "presaleStartsAt": (now - Duration::minutes(1)).to_rfc3339(),
        "opensAt": (now + Duration::hours(1)).to_rfc3339(),
    });
    settings
        .as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    app.concert_and_seats(settings).await
}

async fn order(app: &TestApp, token: &str, seats: &[u64], code: Option<&str>) -> Reply {
    let mut body = json!({"seatIds": seats});
    if let Some(code) = code {
        body["accessCode"] = json!(code);
    }
    app.post("/api/reservations", Some(token), body).await
}

async fn listed(app: &TestApp, concert: u64) -> Vec<Value> {
    app.get(
        &format!("/api/concerts/{concert}/access-codes"),
        Some(&app.admin_token),
    )
    .await
    .assert_status(200)
    .as_array()
    .unwrap()
    .clone()
}

#[tokio::test]
async fn an_admin_makes_lists_and_revokes_codes_and_only_their_hashes_are_kept() {
    let app = spawn_app().await;
    let (concert, _) = in_presale(&app, 4, json!({})).await;
    let made = app.access_codes(concert, 3, 2, 4).await;
    assert_eq!(made.len(), 3);
    for (_, code) in &made {
        assert_eq!(code.len(), 19, "{code}");
        assert_eq!(code.matches('-').count(), 3, "{code}");
    }
    let csv = app
        .client
        .post(format!("{}/api/concerts/{concert}/access-codes", app.base))
        .bearer_auth(&app.admin_token)
        .header("Accept", "text/csv")
        .json(&json!({"count": 2, "usesPerCode": 1, "seatsPerCode": 2}))
        .send()
        .await
        .unwrap();
    assert_eq!(csv.status(), 201);
    assert!(
        csv.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/csv")
    );
    let text = csv.text().await.unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "{text}");
    assert_eq!(lines[0], "id,code");

    let list = listed(&app, concert).await;
    assert_eq!(list.len(), 5);
    assert_eq!(
        list[0],
        json!({"id": made[0].0, "uses": 0, "usesLeft": 2, "seatsLeft": 4, "revoked": false, "userId": null})
    );
    assert!(
        !list.iter().any(|c| c.get("code").is_some()),
        "never the code"
    );
    // Only hashes: no stored value is any code.
    let stored: Vec<(Vec<u8>,)> = sqlx::query_as("SELECT code_hash FROM access_codes")
        .fetch_all(&app.pool)
        .await
        .unwrap();
    assert!(stored.iter().all(|(hash,)| hash.len() == 32));
    for (_, code) in &made {
        let plain = code.replace('-', "");
        assert!(
            !stored.iter().any(|(hash,)| {
                hash.as_slice() == code.as_bytes() || hash.as_slice() == plain.as_bytes()
            }),
            "a code stored as itself"
        );
    }

    let path = format!("/api/concerts/{concert}/access-codes/{}", made[1].0);
    app.delete(&path, Some(&app.admin_token))
        .await
        .assert_status(204);
    app.delete(&path, Some(&app.admin_token))
        .await
        .assert_status(204);
    assert_eq!(listed(&app, concert).await[1]["revoked"], true);
    app.delete(
        &format!("/api/concerts/{concert}/access-codes/999999"),
        Some(&app.admin_token),
    )
    .await
    .assert_problem(404, "ACCESS_CODE_NOT_FOUND");

    let (_, fan) = app.user("fan").await;
    app.get(&format!("/api/concerts/{concert}/access-codes"), Some(&fan))
        .await
        .assert_problem(403, "FORBIDDEN");
    for bad in [
        json!({"count": 0, "usesPerCode": 1, "seatsPerCode": 1}),
        json!({"count": 10001, "usesPerCode": 1, "seatsPerCode": 1}),
        json!({"count": 1, "usesPerCode": 0, "seatsPerCode": 1}),
        json!({"count": 1, "usesPerCode": 1}),
    ] {
        app.post(
            &format!("/api/concerts/{concert}/access-codes"),
            Some(&app.admin_token),
            bad,
        )
        .await
        .assert_problem(400, "VALIDATION_ERROR");
    }
    app.post(
        "/api/concerts/999999/access-codes",
        Some(&app.admin_token),
        json!({"count": 1, "usesPerCode": 1, "seatsPerCode": 1}),
    )
    .await
    .assert_problem(404, "CONCERT_NOT_FOUND");
    assert_eq!(app.count("access_codes").await, 5, "nothing more written");
}

#[tokio::test]
async fn during_the_presale_a_request_needs_a_valid_code_with_uses_and_seats_left() {
    let app = spawn_app().await;
    let (concert, seats) = in_presale(&app, 10, json!({"holdSeconds": 600})).await;
    let (other, _) = in_presale(&app, 2, json!({})).await;
    let made = app.access_codes(concert, 2, 1, 2).await;
    let (code, revoked) = (made[0].1.as_str(), &made[1]);
    let foreign = app.access_codes(other, 1, 1, 2).await;
    app.delete(
        &format!("/api/concerts/{concert}/access-codes/{}", revoked.0),
        Some(&app.admin_token),
    )
    .await
    .assert_status(204);
    let (alice_id, alice) = app.user("alice").await;
    let (_, bob) = app.user("bob").await;

    order(&app, &alice, &seats[0..1], None)
        .await
        .assert_problem(403, "ACCESS_CODE_REQUIRED");
    for bad in ["not-a-code", &revoked.1, &foreign[0].1] {
        order(&app, &alice, &seats[0..1], Some(bad))
            .await
            .assert_problem(403, "ACCESS_CODE_INVALID");
    }
    order(&app, &alice, &seats[0..3], Some(code))
        .await
        .assert_problem(409, "ACCESS_CODE_USED");
    assert_eq!(app.count("reservation_queue").await, 0, "nothing written");

    // Typed in lower case without dashes: the same code.
    let typed = code.replace('-', "").to_lowercase();
    let queued = order(&app, &alice, &seats[0..2], Some(&typed)).await;
    assert_eq!(queued.assert_status(201)["status"], "PENDING");
    let queue_id = queued.body["queueId"].as_u64().unwrap();
    // Decided in the presale, an hour before the opening.
    app.drain().await;
    let status = app.queue_status(&alice, queue_id).await;
    assert_eq!(status["status"], "SUCCESS", "{status}");
    order(&app, &alice, &seats[2..3], Some(code))
        .await
        .assert_problem(409, "ACCESS_CODE_USED");
    order(&app, &bob, &seats[2..3], Some(code))
        .await
        .assert_problem(409, "ACCESS_CODE_USED");
    let list = listed(&app, concert).await;
    assert_eq!(
        (
            &list[0]["uses"],
            &list[0]["usesLeft"],
            &list[0]["seatsLeft"],
            &list[0]["userId"]
        ),
        (&json!(1), &json!(0), &json!(0), &json!(alice_id))
    );

    // A cancel gives the use and the seats back, to Alice only.
    let reservation = status["reservationId"].as_u64().unwrap();
    app.post(
        &format!("/api/reservations/{reservation}/cancel"),
        Some(&alice),
        json!({}),
    )
    .await
    .assert_status(200);
    assert_eq!(listed(&app, concert).await[0]["usesLeft"], 1);
    order(&app, &bob, &seats[2..3], Some(code))
        .await
        .assert_problem(409, "ACCESS_CODE_USED");
    order(&app, &alice, &seats[2..4], Some(code))
        .await
        .assert_status(201);
    app.drain().await;
    app.assert_invariants().await;
}

/// A request by count in the presale takes its code as an order of seats
/// does: required, counted against the code's seats, spent once.
#[tokio::test]
async fn a_request_by_count_in_the_presale_spends_its_code_once() {
    let app = spawn_app().await;
    let categories = json!({"categories": [{"name": "Standard", "price": 0, "currency": "EUR"}]});
    let (concert, _) = in_presale(&app, 6, categories).await;
    let made = app.access_codes(concert, 1, 1, 2).await;
    let code = made[0].1.as_str();
    let (_, alice) = app.user("alice").await;
    let ask = |count: u64, code: Option<&str>| {
        let mut body = json!({"concertId": concert, "category": "Standard", "count": count});
        if let Some(code) = code {
            body["accessCode"] = json!(code);
        }
        app.post("/api/reservations", Some(&alice), body)
    };
    ask(2, None)
        .await
        .assert_problem(403, "ACCESS_CODE_REQUIRED");
    ask(3, Some(code))
        .await
        .assert_problem(409, "ACCESS_CODE_USED");
    assert_eq!(app.count("reservation_queue").await, 0, "nothing written");
    let queued = ask(2, Some(code)).await;
    assert_eq!(queued.assert_status(201)["status"], "PENDING");
    assert_eq!(listed(&app, concert).await[0]["usesLeft"], 0);
    ask(1, Some(code))
        .await
        .assert_problem(409, "ACCESS_CODE_USED");
    app.drain().await;
    let status = app
        .queue_status(&alice, queued.body["queueId"].as_u64().unwrap())
        .await;
    assert_eq!(status["status"], "SUCCESS", "{status}");
    app.assert_invariants().await;
}

#[tokio::test]
async fn presale_requests_keep_their_order_and_general_sale_still_joins_the_lottery() {
    let app = spawn_app().await;
    // The lottery window (10 minutes) covers now; the presale began before.
    let now = Utc::now();
    let (concert, seats) = app
        .concert_and_seats(json!({
            "rows": 1, "seatsPerRow": 4,
            "presaleStartsAt": (now - Duration::minutes(30)).to_rfc3339(),
            "opensAt": (now + Duration::minutes(5)).to_rfc3339(),
            "lotteryWindowSeconds": 600,
        }))
        .await;
    let made = app.access_codes(concert, 2, 1, 1).await;
    let (_, first) = app.user("first").await;
    let (_, second) = app.user("second").await;
    let (_, general) = app.user("general").await;
    let a = order(&app, &first, &seats[0..1], Some(&made[0].1)).await;
    let b = order(&app, &second, &seats[0..1], Some(&made[1].1)).await;
    assert_eq!(a.assert_status(201)["status"], "PENDING");
    assert_eq!(b.assert_status(201)["status"], "PENDING");
    let lottery = order(&app, &general, &seats[0..1], None).await;
    assert_eq!(lottery.assert_status(201)["status"], "WAITING");
    app.drain().await;
    let won = app
        .queue_status(&first, a.body["queueId"].as_u64().unwrap())
        .await;
    let lost = app
        .queue_status(&second, b.body["queueId"].as_u64().unwrap())
        .await;
    assert_eq!(won["status"], "SUCCESS", "{won}");
    assert_eq!(
        (lost["status"].as_str(), lost["reason"].as_str()),
        (Some("FAILED"), Some("SEAT_TAKEN"))
    );
    let waiting = app
        .queue_status(&general, lottery.body["queueId"].as_u64().unwrap())
        .await;
    assert_eq!(
        waiting["status"], "WAITING",
        "the lottery waits for the opening"
    );
}

/// One code of one use, sent by 20 accounts at once through two API
/// instances: exactly one request is taken, every time.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_code_sent_by_twenty_accounts_at_once_is_taken_once() {
    let here = spawn_app().await;
    let there = TestApp::sharing_database(&here, start_server_with(here.pool.clone(), None).await);
    let (concert, seats) = in_presale(&here, 20, json!({})).await;
    let fans = here.many_users("p", 20).await;
    for round in 0..3 {
        let code = here.access_codes(concert, 1, 1, 1).await.remove(0).1;
        let barrier = Arc::new(Barrier::new(fans.len()));
        let sends: Vec<_> = fans
            .iter()
            .enumerate()
            .map(|(i, (_, token))| {
                let app = if i % 2 == 0 { &here } else { &there };
                let (client, base) = (app.client.clone(), app.base.clone());
                let (token, code, barrier) = (token.clone(), code.clone(), barrier.clone());
                let seat = seats[i];
                tokio::spawn(async move {
                    barrier.wait().await;
                    let response = client
                        .post(format!("{base}/api/reservations"))
                        .bearer_auth(&token)
                        .json(&json!({"seatIds": [seat], "accessCode": code}))
                        .send()
                        .await
                        .unwrap();
                    TestApp::reply(response).await
                })
            })
            .collect();
        let mut taken = 0;
        for send in sends {
            let reply = send.await.unwrap();
            if reply.status == 201 {
                taken += 1;
            } else {
                reply.assert_problem(409, "ACCESS_CODE_USED");
            }
        }
        assert_eq!(taken, 1, "round {round}");
        here.drain().await;
    }
    here.assert_invariants().await;
}

#[tokio::test]
async fn a_presale_starts_before_its_opening() {
    let app = spawn_app().await;
    let now = Utc::now();
    let opens = (now + Duration::hours(2)).to_rfc3339();
    for bad in [
        json!({"presaleStartsAt": opens.clone(), "opensAt": opens.clone()}),
        json!({"presaleStartsAt": (now + Duration::hours(1)).to_rfc3339()}),
        json!({"presaleStartsAt": "tomorrow", "opensAt": opens.clone()}),
    ] {
        let mut body = json!({"title": "t", "venue": "v", "concertDate": "2099-05-01T19:00:00Z"});
        body.as_object_mut()
            .unwrap()
            .extend(bad.as_object().unwrap().clone());
        let reply = app
            .post("/api/concerts", Some(&app.admin_token), body)
            .await;
        reply.assert_problem(400, "VALIDATION_ERROR");
        assert_eq!(reply.error_fields(), ["presaleStartsAt"], "{bad}");
    }
    let (concert, _) = in_presale(&app, 1, json!({})).await;
    let path = format!("/api/concerts/{concert}");
    for bad in [
        json!({"opensAt": null}),
        json!({"presaleStartsAt": (now + Duration::hours(3)).to_rfc3339()}),
    ] {
        let reply = app.patch(&path, Some(&app.admin_token), bad.clone()).await;
        reply.assert_problem(400, "VALIDATION_ERROR");
        assert_eq!(reply.error_fields(), ["presaleStartsAt"], "{bad}");
    }
    let read = app.get(&path, None).await;
    assert!(read.body["opensAt"].is_string(), "unchanged: {}", read.body);
    let cleared = app
        .patch(
            &path,
            Some(&app.admin_token),
            json!({"presaleStartsAt": null}),
        )
        .await;
    assert!(cleared.assert_status(200)["presaleStartsAt"].is_null());
}
