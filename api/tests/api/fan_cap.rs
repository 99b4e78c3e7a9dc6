//! A cap per fan: the seats one user may have in a concert (held, confirmed
//! and asked for by open requests), refused at enqueue when that is
//! certain, decided FAILED when two orders written at once pass it, given
//! back by a cancel, an expired hold or a failed request.

use std::sync::Arc;

use serde_json::json;
use ticket_worker::holds::HoldSweeper;
use tokio::sync::Barrier;

use crate::helpers::{
    Reply, TestApp, concert_with, executable, order, send_all_at_once, spawn_app, start_server_with,
};

/// The seats `user` holds (before the hold's end) or has confirmed.
async fn seats_taken(app: &TestApp, user: u64) -> i64 {
    let (n,): (i64,) = sqlx::query_as(
        "SELECT COUNT(*) FROM reservation_seats rs JOIN reservations r ON r.id = rs.reservation_id \
         WHERE r.user_id = ? AND (rs.status = 'CONFIRMED' OR (rs.status = 'HELD' AND r.hold_expires_at > UTC_TIMESTAMP(6)))",
    )
    .bind(user)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    n
}

fn assert_over_the_cap(reply: &Reply, cap: u64, taken: u64) {
    let body = reply.assert_problem(409, "USER_LIMIT_REACHED");
    assert_eq!(body["maxSeatsPerUser"], cap, "{body}");
    assert_eq!(body["seatsTaken"], taken, "{body}");
}

#[tokio::test]
async fn the_cap_is_a_concert_setting_whose_default_is_the_order_size() {
    let app = spawn_app().await;
    let plain = app.concert(json!({})).await;
    assert_eq!(plain["maxSeatsPerUser"], 4, "{plain}");
    let small = app.concert(json!({"maxSeatsPerOrder": 2})).await;
    assert_eq!(small["maxSeatsPerUser"], 2, "{small}");
    let generous = app.concert(json!({"maxSeatsPerUser": 10})).await;
    assert_eq!(generous["maxSeatsPerUser"], 10);
    let id = generous["id"].as_u64().unwrap();
    let path = format!("/api/concerts/{id}");

    let changed = app
        .patch(
            &path,
            Some(&app.admin_token),
            json!({"maxSeatsPerUser": 100}),
        )
        .await;
    assert_eq!(changed.assert_status(200)["maxSeatsPerUser"], 100);
    for bad in [json!(0), json!(101), json!("6"), json!(2.5)] {
        let reply = app
            .patch(
                &path,
                Some(&app.admin_token),
                json!({"maxSeatsPerUser": bad}),
            )
            .await;
        reply.assert_problem(400, "VALIDATION_ERROR");
        assert_eq!(reply.error_fields(), ["maxSeatsPerUser"], "{bad}");
        let created = app
            .post(
                "/api/concerts",
                Some(&app.admin_token),
                json!({"title": "t", "venue": "v", "concertDate": "2099-05-01T19:00:00Z", "maxSeatsPerUser": bad}),
            )
            .await;
        created.assert_problem(400, "VALIDATION_ERROR");
    }
    let read = app.get(&path, None).await;
    assert_eq!(read.assert_status(200)["maxSeatsPerUser"], 100, "unchanged");
    assert_eq!(app.count("concerts").await, 3, "nothing half-created");
}

#[tokio::test]
async fn an_order_past_the_cap_is_refused_with_what_the_fan_has_and_writes_nothing() {
    let app = spawn_app().await;
    let (_, seats) = concert_with(&app, 10, json!({})).await;
    let (_, alice) = app.user("alice").await;
    order(&app, &alice, &seats[0..3]).await.assert_status(201);
    app.drain().await;
    // 3 confirmed: 2 more would make 5 of 4.
    assert_over_the_cap(&order(&app, &alice, &seats[3..5]).await, 4, 3);
    // Open requests count too: 1 asked for (not decided yet) makes 4.
    order(&app, &alice, &seats[3..4]).await.assert_status(201);
    assert_over_the_cap(&order(&app, &alice, &seats[5..6]).await, 4, 4);
    let keyed = app
        .client
        .post(format!("{}/api/reservations", app.base))
        .bearer_auth(&alice)
        .header("Idempotency-Key", "k-1")
        .json(&json!({"seatIds": [seats[6]]}))
        .send()
        .await
        .unwrap();
    assert_over_the_cap(&TestApp::reply(keyed).await, 4, 4);
    assert_eq!(app.count("reservation_queue").await, 2, "nothing written");
    // Another fan is not held back by Alice's seats.
    let (_, bob) = app.user("bob").await;
    order(&app, &bob, &seats[6..10]).await.assert_status(201);
    app.drain().await;
    app.assert_invariants().await;
}

/// An open request by count counts against the cap when an exact order
/// comes through the enqueue's group writes (issue 59: their check read
/// only open seats and held ones).
#[tokio::test]
async fn an_open_request_by_count_counts_when_an_exact_order_is_written_in_a_group() {
    let app = spawn_app().await;
    let (concert, seats) = concert_with(
        &app,
        10,
        json!({"categories": [{"name": "Standard", "price": 0, "currency": "EUR"}]}),
    )
    .await;
    let (_, alice) = app.user("alice").await;
    app.post(
        "/api/reservations",
        Some(&alice),
        json!({"concertId": concert, "category": "Standard", "count": 3}),
    )
    .await
    .assert_status(201);
    // 3 asked for by count, not decided yet: 2 more would make 5 of 4.
    assert_over_the_cap(&order(&app, &alice, &seats[0..2]).await, 4, 3);
    assert_eq!(app.count("reservation_queue").await, 1, "nothing written");
    order(&app, &alice, &seats[0..1]).await.assert_status(201);
    app.drain().await;
    app.assert_invariants().await;
}

/// The other way round: a group of requests by count alone counts the
/// seats the fan's open exact orders name.
#[tokio::test]
async fn an_open_exact_order_counts_when_a_request_by_count_is_written_in_a_group() {
    let app = spawn_app().await;
    let (concert, seats) = concert_with(
        &app,
        10,
        json!({"categories": [{"name": "Standard", "price": 0, "currency": "EUR"}]}),
    )
    .await;
    let (_, alice) = app.user("alice").await;
    order(&app, &alice, &seats[0..3]).await.assert_status(201);
    let by_count =
        |count: u64| json!({"concertId": concert, "category": "Standard", "count": count});
    // 3 seats asked for, not decided yet: 2 more would make 5 of 4.
    let over = app
        .post("/api/reservations", Some(&alice), by_count(2))
        .await;
    assert_over_the_cap(&over, 4, 3);
    assert_eq!(app.count("reservation_queue").await, 1, "nothing written");
    app.post("/api/reservations", Some(&alice), by_count(1))
        .await
        .assert_status(201);
    app.drain().await;
    app.assert_invariants().await;
}

#[tokio::test]
async fn a_cancel_an_expired_hold_and_a_failed_request_give_the_seats_back() {
    let app = spawn_app().await;
    let (_, seats) = concert_with(&app, 16, json!({"holdSeconds": 600})).await;
    let (alice_id, alice) = app.user("alice").await;
    let (_, bob) = app.user("bob").await;

    // A hold of 4: nothing more, until it is cancelled.
    let queued = order(&app, &alice, &seats[0..4]).await.assert_status(201)["queueId"]
        .as_u64()
        .unwrap();
    app.drain().await;
    assert_over_the_cap(&order(&app, &alice, &seats[4..5]).await, 4, 4);
    let status = app.queue_status(&alice, queued).await;
    let reservation = status["reservationId"].as_u64().unwrap();
    app.post(
        &format!("/api/reservations/{reservation}/cancel"),
        Some(&alice),
        json!({}),
    )
    .await
    .assert_status(200);
    order(&app, &alice, &seats[4..8]).await.assert_status(201);
    app.drain().await;
    assert_eq!(seats_taken(&app, alice_id).await, 4);

    // That hold runs out (its end moved to the past, as time would): its
    // seats no longer count, before any sweep has seen it.
    sqlx::query(
        "UPDATE reservations SET hold_expires_at = UTC_TIMESTAMP(6) - INTERVAL 1 SECOND \
         WHERE user_id = ? AND status = 'HELD'",
    )
    .bind(alice_id)
    .execute(&app.pool)
    .await
    .unwrap();
    sqlx::query(
        "UPDATE seats SET held_until = UTC_TIMESTAMP(6) - INTERVAL 1 SECOND WHERE status = 'HELD'",
    )
    .execute(&app.pool)
    .await
    .unwrap();
    // Bob takes seat 9 first: Alice's order of 8–11 fails SEAT_TAKEN and
    // gives its 4 back, so 12–15 still fit.
    order(&app, &bob, &seats[9..10]).await.assert_status(201);
    let lost = order(&app, &alice, &seats[8..12]).await.assert_status(201)["queueId"]
        .as_u64()
        .unwrap();
    app.drain().await;
    let status = app.queue_status(&alice, lost).await;
    assert_eq!(
        (status["status"].as_str(), status["reason"].as_str()),
        (Some("FAILED"), Some("SEAT_TAKEN")),
        "{status}"
    );
    let won = order(&app, &alice, &seats[12..16]).await.assert_status(201)["queueId"]
        .as_u64()
        .unwrap();
    app.drain().await;
    assert_eq!(app.queue_status(&alice, won).await["status"], "SUCCESS");
    assert_eq!(seats_taken(&app, alice_id).await, 4);
    let swept = HoldSweeper::new(app.pool.clone())
        .sweep_once()
        .await
        .unwrap();
    assert_eq!(swept.holds, 1, "the hold that ran out");
    app.assert_invariants().await;
}

/// One fan's six orders of four seats at once, three through each of two
/// API instances, decided by four workers: never more than the cap of 8,
/// and exactly 8 (the seats are free), every time.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_fans_orders_through_two_instances_and_four_workers_never_pass_the_cap() {
    let here = spawn_app().await;
    let there = TestApp::sharing_database(&here, start_server_with(here.pool.clone(), None).await);
    for round in 0..5 {
        let (_, seats) =
            concert_with(&here, 24, json!({"holdSeconds": 600, "maxSeatsPerUser": 8})).await;
        let (fan_id, fan) = here.user(&format!("fan{round}")).await;
        let barrier = Arc::new(Barrier::new(6));
        let sends: Vec<_> = seats
            .chunks(4)
            .enumerate()
            .map(|(i, four)| {
                let app = if i % 2 == 0 { &here } else { &there };
                let (client, base) = (app.client.clone(), app.base.clone());
                let (fan, four, barrier) = (fan.clone(), four.to_vec(), barrier.clone());
                tokio::spawn(async move {
                    barrier.wait().await;
                    let response = client
                        .post(format!("{base}/api/reservations"))
                        .bearer_auth(&fan)
                        .json(&json!({"seatIds": four}))
                        .send()
                        .await
                        .unwrap();
                    TestApp::reply(response).await
                })
            })
            .collect();
        let mut queued = Vec::new();
        for send in sends {
            let reply = send.await.unwrap();
            match reply.status.as_u16() {
                201 => queued.push(reply.body["queueId"].as_u64().unwrap()),
                _ => {
                    reply.assert_problem(409, "USER_LIMIT_REACHED");
                }
            }
        }
        here.run_workers_until_drained(4).await;
        let mut won = 0;
        for id in &queued {
            let status = here.queue_status(&fan, *id).await;
            match status["status"].as_str() {
                Some("SUCCESS") => won += 1,
                _ => assert_eq!(status["reason"], "USER_LIMIT_REACHED", "{status}"),
            }
        }
        assert_eq!(won, 2, "round {round}: {queued:?}");
        assert_eq!(seats_taken(&here, fan_id).await, 8, "round {round}");
        here.assert_invariants().await;
    }
}

/// One fan's requests by count for three pools at once (two categories and
/// a standing area, two places each), through two API instances, under a
/// cap of 4: two at most are taken in line, the rest refused
/// USER_LIMIT_REACHED, and the fan ends with exactly 4, every time.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_fans_requests_by_count_through_two_instances_never_pass_the_cap() {
    let here = spawn_app().await;
    let there = TestApp::sharing_database(&here, start_server_with(here.pool.clone(), None).await);
    for round in 0..5 {
        let concert = here
            .concert(json!({
                "rows": 2, "seatsPerRow": 6, "maxSeatsPerUser": 4, "holdSeconds": 600,
                "categories": [
                    {"name": "Stalls", "price": 0, "currency": "EUR"},
                    {"name": "Circle", "price": 0, "currency": "EUR", "rows": ["A"]},
                    {"name": "Standing", "price": 0, "currency": "EUR"},
                ],
                "areas": [{"name": "Floor", "capacity": 20, "category": "Standing"}],
            }))
            .await["id"]
            .as_u64()
            .unwrap();
        let (fan_id, fan) = here.user(&format!("fan{round}")).await;
        let asks = [
            json!({"concertId": concert, "category": "Stalls", "count": 2}),
            json!({"concertId": concert, "category": "Circle", "count": 2}),
            json!({"concertId": concert, "area": "Floor", "count": 2}),
        ];
        let sends = asks
            .into_iter()
            .enumerate()
            .map(|(i, ask)| {
                let app = if i % 2 == 0 { &here } else { &there };
                app.client
                    .post(format!("{}/api/reservations", app.base))
                    .bearer_auth(&fan)
                    .json(&ask)
            })
            .collect();
        let mut queued = Vec::new();
        for reply in send_all_at_once(sends).await {
            match reply.status.as_u16() {
                201 => queued.push(reply.body["queueId"].as_u64().unwrap()),
                _ => {
                    reply.assert_problem(409, "USER_LIMIT_REACHED");
                }
            }
        }
        assert_eq!(
            queued.len(),
            2,
            "round {round}: refused at enqueue past the cap"
        );
        here.run_workers_until_drained(2).await;
        for id in &queued {
            let status = here.queue_status(&fan, *id).await;
            assert_eq!(status["status"], "SUCCESS", "round {round}: {status}");
        }
        assert_eq!(seats_taken(&here, fan_id).await, 4, "round {round}");
        here.assert_invariants().await;
    }
}

#[tokio::test]
async fn check_names_a_fan_above_the_cap() {
    let app = spawn_app().await;
    let (concert, seats) = concert_with(&app, 6, json!({"maxSeatsPerUser": 6})).await;
    let (_, alice) = app.user("alice").await;
    order(&app, &alice, &seats[0..4]).await.assert_status(201);
    app.drain().await;
    let check = || {
        executable("ticket-api", &app.database_url())
            .arg("check")
            .output()
            .unwrap()
    };
    assert!(check().status.success());
    // The operator lowers the cap below what Alice has.
    app.patch(
        &format!("/api/concerts/{concert}"),
        Some(&app.admin_token),
        json!({"maxSeatsPerUser": 2}),
    )
    .await
    .assert_status(200);
    let broken = check();
    assert!(!broken.status.success());
    let report = String::from_utf8_lossy(&broken.stdout);
    assert!(
        report.contains("more seats of a concert than its maxSeatsPerUser (1 rows)"),
        "{report}"
    );
}
