//! Deletes and edits never lose or change an accepted request.

use std::time::Duration;

use serde_json::json;
use ticket_worker::Mode;
use tokio_util::sync::CancellationToken;

use crate::helpers::{Reply, TestApp, spawn_app};

/// (queue id, seat) of every accepted request, and every other answer.
type Answers = (Vec<(u64, u64)>, Vec<Reply>);

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn deleting_a_concert_while_people_enqueue_loses_no_accepted_request() {
    let app = spawn_app().await;
    let fans = app.many_users("fan", 40).await;
    let shutdown = CancellationToken::new();
    let worker = app.worker("w", Mode::Batch, 50, Duration::from_secs(30));
    let deciding = tokio::spawn({
        let shutdown = shutdown.clone();
        async move { worker.run(shutdown).await }
    });
    let mut refused = 0;
    for round in 0..4 {
        let concert = app
            .concert(json!({"rows": 2, "seatsPerRow": 10, "maxSeatsPerUser": 100}))
            .await["id"]
            .as_u64()
            .unwrap();
        let seats: Vec<u64> = app
            .seats(concert)
            .await
            .iter()
            .map(|s| s["id"].as_u64().unwrap())
            .collect();
        let enqueuers: Vec<_> = fans
            .iter()
            .enumerate()
            .map(|(i, (_, token))| {
                let app = TestApp::at(app.base.clone(), app.pool.clone());
                let token = token.clone();
                let seats = seats.clone();
                tokio::spawn(async move {
                    let mut answers: Answers = (Vec::new(), Vec::new());
                    for j in 0..5 {
                        let seat = seats[(i + j * 7) % seats.len()];
                        let reply = app.reserve(&token, seat).await;
                        match reply.status.as_u16() {
                            201 => answers
                                .0
                                .push((reply.body["queueId"].as_u64().unwrap(), seat)),
                            _ => answers.1.push(reply),
                        }
                    }
                    answers
                })
            })
            .collect();
        // The first round deletes at once, racing the first requests; the
        // others once some requests are in.
        if round > 0 {
            let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
            while app.count("reservation_queue").await < i64::from(round) * 10 {
                assert!(tokio::time::Instant::now() < deadline, "nothing enqueued");
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        }
        let delete = app
            .delete(&format!("/api/concerts/{concert}"), Some(&app.admin_token))
            .await;
        match delete.status.as_u16() {
            204 => {}
            _ => {
                delete.assert_problem(409, "CONCERT_DELETE_FORBIDDEN");
                refused += 1;
            }
        }
        let mut accepted = Vec::new();
        for task in enqueuers {
            let (ok, other) = task.await.unwrap();
            accepted.extend(ok);
            for reply in other {
                // After a delete the seats are gone; a second click on a seat
                // is told about its first request. Nothing else.
                match reply.status.as_u16() {
                    404 => reply.assert_problem(404, "SEAT_NOT_FOUND"),
                    _ => reply.assert_problem(409, "QUEUE_DUPLICATED"),
                };
            }
        }
        if delete.status == 204 {
            assert!(
                accepted.is_empty(),
                "round {round}: the concert was deleted although {} requests were accepted",
                accepted.len()
            );
        }
        // Every accepted request is still there and gets its decision.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        for (queue_id, seat) in accepted {
            loop {
                let reply = app
                    .get(
                        &format!("/api/reservations/status/{queue_id}"),
                        Some(&app.admin_token),
                    )
                    .await;
                let status = reply.assert_status(200);
                assert_eq!(status["seatId"], seat);
                if status["status"] == "SUCCESS" || status["status"] == "FAILED" {
                    break;
                }
                assert!(
                    tokio::time::Instant::now() < deadline,
                    "round {round}: request {queue_id} never decided"
                );
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    }
    shutdown.cancel();
    deciding.await.unwrap();
    assert!(refused >= 3, "the rounds with requests in were refused");
    app.assert_invariants().await;
}

#[tokio::test]
async fn a_seat_with_pending_requests_keeps_its_number() {
    let app = spawn_app().await;
    let admin = Some(app.admin_token.as_str());
    let (_, token) = app.user("alice").await;
    let seat = app.seat_ids(2).await[0];
    let path = format!("/api/seats/{seat}");
    let number = app.get(&path, None).await.body["seatNumber"].clone();
    app.reserve(&token, seat).await.assert_status(201);
    app.patch(&path, admin, json!({"seatNumber": "Z99"}))
        .await
        .assert_problem(409, "SEAT_STATUS_CONFLICT");
    app.drain().await;
    let mine = app.get("/api/users/me/reservations", Some(&token)).await;
    assert_eq!(mine.assert_status(200)[0]["seatNumber"], number);
    assert_eq!(app.get(&path, None).await.body["seatNumber"], number);
}

#[tokio::test]
async fn a_concert_or_seat_with_history_is_not_deleted() {
    let app = spawn_app().await;
    let admin = Some(app.admin_token.as_str());
    let (_, token) = app.user("alice").await;
    let concert = app.concert(json!({"rows": 1, "seatsPerRow": 2})).await["id"]
        .as_u64()
        .unwrap();
    let seat = app.seats(concert).await[0]["id"].as_u64().unwrap();
    app.reserve(&token, seat).await.assert_status(201);
    app.drain().await;
    let reservation = app
        .get("/api/users/me/reservations", Some(&token))
        .await
        .body[0]["reservationId"]
        .as_u64()
        .unwrap();
    app.post(
        "/api/reservations/cancel",
        Some(&token),
        json!({"reservationId": reservation}),
    )
    .await
    .assert_status(200);
    // Nothing is sold any more, but the cancelled reservation and the
    // request are the buyer's history.
    app.delete(&format!("/api/seats/{seat}"), admin)
        .await
        .assert_problem(409, "SEAT_DELETE_FORBIDDEN");
    app.delete(&format!("/api/concerts/{concert}"), admin)
        .await
        .assert_problem(409, "CONCERT_DELETE_FORBIDDEN");
    let history = app.get("/api/users/me/reservations", Some(&token)).await;
    assert_eq!(history.assert_status(200)[0]["status"], "CANCELLED");
    assert_eq!(app.count("reservation_queue").await, 1);
}
