//! Ticket-open day: the pre-opening lottery. Requests placed inside the
//! window are put in a uniformly random order at the opening, all ahead of
//! later requests; nothing is decided before the opening; first in line wins.

use std::collections::HashMap;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::json;
use ticket_worker::Mode;
use tokio_util::sync::CancellationToken;

use crate::helpers::{TestApp, spawn_app};

/// Sends every (token, seat) request at once; all must be accepted with
/// `status`. Returns their queue ids in the order given.
async fn reserve_each(app: &TestApp, requests: &[(String, u64)], status: &str) -> Vec<u64> {
    let replies = app.reserve_all_at_once(requests.to_vec()).await;
    replies
        .iter()
        .map(|reply| {
            let body = reply.assert_status(201);
            assert_eq!(body["status"], status, "{body}");
            body["queueId"].as_u64().expect("a queueId")
        })
        .collect()
}

fn at(value: &serde_json::Value) -> DateTime<Utc> {
    value
        .as_str()
        .and_then(|s| DateTime::parse_from_rfc3339(s).ok())
        .map(|d| d.with_timezone(&Utc))
        .unwrap_or_else(|| panic!("not a date-time: {value}"))
}

async fn until(instant: DateTime<Utc>) {
    // Waiting for a time of day (the opening), not for another task.
    if let Ok(left) = (instant - Utc::now()).to_std() {
        tokio::time::sleep(left).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn too_early_is_refused_and_writes_nothing() {
    let app = spawn_app().await;
    let opens_at = Utc::now() + chrono::Duration::hours(1);
    let (concert, seats) = app
        .concert_and_seats(json!({
            "rows": 1, "seatsPerRow": 3, "opensAt": opens_at.to_rfc3339(),
            "lotteryWindowSeconds": 600,
            "categories": [{"name": "Standard", "price": 0, "currency": "EUR"}],
        }))
        .await;
    let (_, token) = app.user("early").await;
    let reply = app.reserve(&token, seats[0]).await;
    let problem = reply.assert_problem(409, "SALE_NOT_OPEN");
    assert_eq!(at(&problem["opensAt"]), opens_at.trunc_subsecs_micros());
    assert_eq!(
        at(&problem["acceptsRequestsFrom"]),
        opens_at.trunc_subsecs_micros() - chrono::Duration::seconds(600)
    );
    let order = app
        .post(
            "/api/reservations",
            Some(&token),
            json!({"seatIds": [seats[1], seats[2]]}),
        )
        .await;
    order.assert_problem(409, "SALE_NOT_OPEN");
    let by_count = app
        .post(
            "/api/reservations",
            Some(&token),
            json!({"concertId": concert, "category": "Standard", "count": 2}),
        )
        .await;
    by_count.assert_problem(409, "SALE_NOT_OPEN");
    assert_eq!(app.count("reservation_queue").await, 0);
    assert_eq!(app.count("request_seats").await, 0);
    assert_eq!(app.count("request_pools").await, 0);
}

#[tokio::test]
async fn sale_settings_are_checked() {
    let app = spawn_app().await;
    let base = json!({"title": "t", "venue": "v", "concertDate": "2099-05-01T19:00:00Z"});
    for (extra, field) in [
        (json!({"lotteryWindowSeconds": 60}), "lotteryWindowSeconds"),
        (
            json!({"opensAt": "2099-01-01T00:00:00Z", "lotteryWindowSeconds": 86_401}),
            "lotteryWindowSeconds",
        ),
        (json!({"opensAt": "tomorrow"}), "opensAt"),
        (json!({"opensAt": 5}), "opensAt"),
    ] {
        let mut body = base.clone();
        body.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        let reply = app
            .post("/api/concerts", Some(&app.admin_token), body.clone())
            .await;
        reply.assert_problem(400, "VALIDATION_ERROR");
        assert!(
            reply.error_fields().iter().any(|f| f == field),
            "{body}: {:?}",
            reply.error_fields()
        );
    }
    assert_eq!(app.count("concerts").await, 0);

    let concert = app
        .concert(json!({"opensAt": "2099-01-01T10:00:00+09:00", "lotteryWindowSeconds": 900}))
        .await;
    assert_eq!(concert["opensAt"], "2099-01-01T01:00:00Z");
    assert_eq!(concert["lotteryWindowSeconds"], 900);
    let path = format!("/api/concerts/{}", concert["id"]);
    let changed = app
        .patch(&path, Some(&app.admin_token), json!({"opensAt": null}))
        .await;
    assert_eq!(
        changed.assert_status(200)["opensAt"],
        serde_json::Value::Null
    );
    assert_eq!(changed.assert_status(200)["lotteryWindowSeconds"], 900);
    let refused = app
        .patch(
            &path,
            Some(&app.admin_token),
            json!({"lotteryWindowSeconds": -1}),
        )
        .await;
    refused.assert_problem(400, "VALIDATION_ERROR");
}

/// The permutation of three requests per seat (arriving A, B, C in that
/// order) over 600 seats, one lottery each: every one of the 6 orders is
/// equally likely, whatever the arrival order. A chi-square test with 5
/// degrees of freedom; 25.74 is its 1-in-10,000 critical value. Requests
/// placed after the opening (D) come after all of them, nothing is decided
/// before the opening, and each seat goes to the first in line.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_lottery_is_a_uniform_permutation_ahead_of_later_requests() {
    const SEATS: usize = 600;
    let app = spawn_app().await;
    let opens_at = Utc::now() + chrono::Duration::seconds(6);
    let (concert, seats) = app
        .concert_and_seats(
            json!({"rows": 6, "seatsPerRow": 100, "opensAt": opens_at.to_rfc3339(),
                   "lotteryWindowSeconds": 600, "maxSeatsPerUser": 100}),
        )
        .await;
    assert_eq!(seats.len(), SEATS);
    // Three contenders, A, B and C, for every seat; each contender is six
    // users of 100 seats (the most a user may have), and one late user.
    let users = app.many_users("l", 19).await;
    // Workers run all along: they must leave the lottery alone until the opening.
    let shutdown = CancellationToken::new();
    let workers: Vec<_> = (0..2)
        .map(|i| {
            let worker = app.worker(&format!("w{i}"), Mode::Batch, 100, Duration::from_secs(30));
            let shutdown = shutdown.clone();
            tokio::spawn(async move { worker.run(shutdown).await })
        })
        .collect();

    let mut early: Vec<Vec<u64>> = Vec::new();
    for contender in users[..18].chunks(6) {
        let requests: Vec<(String, u64)> = seats
            .iter()
            .enumerate()
            .map(|(i, &s)| (contender[i / 100].1.clone(), s))
            .collect();
        early.push(reserve_each(&app, &requests, "WAITING").await);
    }
    let checked_at = Utc::now();
    let counts = app.queue_counts().await;
    if checked_at < opens_at {
        assert_eq!(
            counts,
            HashMap::from([("WAITING".to_owned(), 3 * SEATS as i64)]),
            "nothing is claimed or decided before the opening"
        );
    }

    until(opens_at).await;
    let (_, late_token) = &users[18];
    let late_requests: Vec<(String, u64)> = seats[..100]
        .iter()
        .map(|&s| (late_token.clone(), s))
        .collect();
    let late = reserve_each(&app, &late_requests, "PENDING").await;

    // The two workers started above decide it all; none is added.
    app.run_workers_until_drained(0).await;
    shutdown.cancel();
    for w in workers {
        w.await.unwrap();
    }

    let rows: Vec<Decided> = sqlx::query_as(
        "SELECT id, line_key, status, decided_at FROM reservation_queue WHERE concert_id = ?",
    )
    .bind(concert)
    .fetch_all(&app.pool)
    .await
    .unwrap();
    let by_id: HashMap<u64, Decided> = rows.into_iter().map(|row| (row.id, row)).collect();
    let opened = opens_at.trunc_subsecs_micros();
    for (id, row) in &by_id {
        let decided = row
            .decided_at
            .unwrap_or_else(|| panic!("request {id} undecided: {}", row.status));
        assert!(
            decided >= opened,
            "request {id} decided at {decided}, before {opened}"
        );
    }
    let mut permutations: HashMap<[usize; 3], u32> = HashMap::new();
    for (i, _) in seats.iter().enumerate() {
        let ids = [early[0][i], early[1][i], early[2][i]];
        let mut order = [0usize, 1, 2];
        order.sort_by_key(|&k| by_id[&ids[k]].line_key);
        *permutations.entry(order).or_default() += 1;
        let winner = ids[order[0]];
        assert_eq!(
            by_id[&winner].status, "SUCCESS",
            "the first in line wins seat {}",
            seats[i]
        );
        for &k in &order[1..] {
            assert_eq!(by_id[&ids[k]].status, "FAILED");
        }
    }
    for id in &late {
        assert_eq!(
            by_id[id].status, "FAILED",
            "a request after the opening is behind the whole lottery"
        );
        assert_eq!(
            by_id[id].line_key,
            1 << 62,
            "after the opening: behind every draw"
        );
    }
    let expected = SEATS as f64 / 6.0;
    let chi_square: f64 = permutations
        .values()
        .map(|&n| (f64::from(n) - expected).powi(2) / expected)
        .sum::<f64>()
        + (6 - permutations.len()) as f64 * expected;
    println!(
        "lottery orders of (A, B, C) over {SEATS} seats: {permutations:?}, chi-square {chi_square:.2}"
    );
    assert_eq!(permutations.len(), 6, "every order occurs");
    assert!(
        chi_square < 25.74,
        "the draw is not uniform: chi-square {chi_square:.2} ({permutations:?})"
    );
    app.assert_invariants().await;
}

/// Requests by count take part in the lottery as requests by seat do:
/// refused before the window, WAITING inside it (written together), and
/// all of them ahead of a request after the opening, which finds the
/// category sold out.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn requests_by_count_are_drawn_ahead_of_later_ones() {
    let app = spawn_app().await;
    let opens_at = Utc::now() + chrono::Duration::seconds(4);
    let concert = app
        .concert(json!({
            "rows": 1, "seatsPerRow": 8, "opensAt": opens_at.to_rfc3339(),
            "lotteryWindowSeconds": 600,
            "categories": [{"name": "Standard", "price": 0, "currency": "EUR"}],
        }))
        .await["id"]
        .as_u64()
        .unwrap();
    let best =
        json!({"concertId": concert, "category": "Standard", "count": 2, "allowSplit": true});
    let users = app.many_users("b", 5).await;
    let early: Vec<_> = futures::future::join_all(users[..4].iter().map(|(_, token)| {
        let (app, best) = (&app, best.clone());
        async move { app.post("/api/reservations", Some(token), best).await }
    }))
    .await;
    let early: Vec<u64> = early
        .iter()
        .map(|reply| {
            let body = reply.assert_status(201);
            assert_eq!(body["status"], "WAITING", "{body}");
            body["queueId"].as_u64().unwrap()
        })
        .collect();
    until(opens_at).await;
    let late = app.post("/api/reservations", Some(&users[4].1), best).await;
    let late_body = late.assert_status(201);
    assert_eq!(late_body["status"], "PENDING", "{late_body}");
    app.run_workers_until_drained(2).await;
    for (id, (_, token)) in early.iter().zip(&users) {
        let status = app.queue_status(token, *id).await;
        assert_eq!(status["status"], "SUCCESS", "{status}");
    }
    let late_status = app
        .queue_status(&users[4].1, late_body["queueId"].as_u64().unwrap())
        .await;
    assert_eq!(late_status["status"], "FAILED", "{late_status}");
    app.assert_invariants().await;
}

/// A request already queued when the opening is moved later waits for the
/// new opening: no worker decides anything of a sale before it opens.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_request_is_not_decided_before_a_postponed_opening() {
    let app = spawn_app().await;
    let (concert, seats) = app
        .concert_and_seats(json!({"rows": 1, "seatsPerRow": 2}))
        .await;
    let (_, token) = app.user("queued").await;
    let queued = app.reserve(&token, seats[0]).await;
    let id = queued.assert_status(201)["queueId"].as_u64().unwrap();
    let opens_at = Utc::now() + chrono::Duration::seconds(2);
    app.patch(
        &format!("/api/concerts/{concert}"),
        Some(&app.admin_token),
        json!({"opensAt": opens_at.to_rfc3339()}),
    )
    .await
    .assert_status(200);
    let worker = app.worker("w", Mode::Batch, 100, Duration::from_secs(30));
    let cycle = worker.process_once().await.unwrap();
    assert_eq!(cycle.claimed, 1);
    assert_eq!(cycle.decided.deferred, 1, "{cycle:?}");
    assert_eq!(app.queue_status(&token, id).await["status"], "PENDING");
    until(opens_at).await;
    app.drain().await;
    let status = app.queue_status(&token, id).await;
    assert_eq!(status["status"], "SUCCESS");
    assert!(at(&status["decidedAt"]) >= opens_at.trunc_subsecs_micros());
}

#[derive(sqlx::FromRow)]
struct Decided {
    id: u64,
    line_key: u64,
    status: String,
    decided_at: Option<DateTime<Utc>>,
}

trait Micros {
    fn trunc_subsecs_micros(self) -> Self;
}

impl Micros for DateTime<Utc> {
    fn trunc_subsecs_micros(self) -> Self {
        chrono::SubsecRound::trunc_subsecs(self, 6)
    }
}
