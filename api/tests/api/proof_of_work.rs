//! A price in work: with `proofOfWork` above 0, a request carries the
//! solution of a challenge given to its caller for its concert, good for a
//! minute and once, whichever instance sees it.

use base64::Engine as _;
use serde_json::{Value, json};

use crate::helpers::{Reply, TestApp, spawn_app, start_server_with};

async fn challenge(app: &TestApp, token: &str, concert: u64) -> altcha::Challenge {
    let reply = app
        .get(&format!("/api/concerts/{concert}/challenge"), Some(token))
        .await;
    serde_json::from_value(reply.assert_status(200).clone()).unwrap()
}

/// The `Proof-Of-Work` header ALTCHA's widget would send for `challenge`.
fn solved(challenge: &altcha::Challenge) -> String {
    let solution = altcha::solve_challenge(altcha::SolveChallengeOptions::new(challenge))
        .unwrap()
        .expect("solved within the timeout");
    let payload = json!({"challenge": challenge, "solution": solution});
    base64::engine::general_purpose::STANDARD.encode(payload.to_string())
}

async fn order(app: &TestApp, token: &str, seat: u64, proof: Option<&str>) -> Reply {
    let mut request = app
        .client
        .post(format!("{}/api/reservations", app.base))
        .bearer_auth(token)
        .json(&json!({"seatIds": [seat]}));
    if let Some(proof) = proof {
        request = request.header("Proof-Of-Work", proof);
    }
    TestApp::reply(request.send().await.unwrap()).await
}

#[tokio::test]
async fn a_request_pays_with_a_solved_challenge_of_its_own_once() {
    let here = spawn_app().await;
    let there = TestApp::sharing_database(&here, start_server_with(here.pool.clone(), None).await);
    let (concert, seats) = here
        .concert_and_seats(json!({"rows": 1, "seatsPerRow": 6, "proofOfWork": 1}))
        .await;
    assert_eq!(
        here.get(&format!("/api/concerts/{concert}"), None)
            .await
            .body["proofOfWork"],
        1
    );
    let (_, alice) = here.user("alice").await;
    let (_, bob) = here.user("bob").await;

    order(&here, &alice, seats[0], None)
        .await
        .assert_problem(400, "CHALLENGE_REQUIRED");
    for garbage in ["", "not base64!", "eyJ4IjoxfQ=="] {
        order(&here, &alice, seats[0], Some(garbage))
            .await
            .assert_problem(400, "CHALLENGE_INVALID");
    }
    let given = challenge(&here, &alice, concert).await;
    let proof = solved(&given);
    // Bob cannot spend Alice's work; a changed challenge breaks its signature.
    order(&here, &bob, seats[0], Some(&proof))
        .await
        .assert_problem(400, "CHALLENGE_INVALID");
    let mut cheaper = given.clone();
    cheaper.parameters.key_prefix = cheaper.parameters.key_prefix[..2].to_owned();
    order(&here, &alice, seats[0], Some(&solved(&cheaper)))
        .await
        .assert_problem(400, "CHALLENGE_INVALID");
    assert_eq!(here.count("reservation_queue").await, 0, "nothing written");

    order(&here, &alice, seats[0], Some(&proof))
        .await
        .assert_status(201);
    // The same solution again, here or on another instance: spent.
    for app in [&here, &there] {
        order(app, &alice, seats[1], Some(&proof))
            .await
            .assert_problem(400, "CHALLENGE_INVALID");
    }
    // A challenge for another concert is not one for this.
    let (other, _) = here
        .concert_and_seats(json!({"rows": 1, "seatsPerRow": 1, "proofOfWork": 1}))
        .await;
    let elsewhere = solved(&challenge(&here, &alice, other).await);
    order(&here, &alice, seats[1], Some(&elsewhere))
        .await
        .assert_problem(400, "CHALLENGE_INVALID");
    // A fresh one from the other instance works here.
    let fresh = solved(&challenge(&there, &alice, concert).await);
    order(&here, &alice, seats[1], Some(&fresh))
        .await
        .assert_status(201);
    assert_eq!(here.count("reservation_queue").await, 2);
}

#[tokio::test]
async fn a_challenge_past_its_minute_by_the_databases_clock_is_refused() {
    let app = spawn_app().await;
    let (concert, seats) = app
        .concert_and_seats(json!({"rows": 1, "seatsPerRow": 2, "proofOfWork": 1}))
        .await;
    let (_, alice) = app.user("alice").await;
    let proof = solved(&challenge(&app, &alice, concert).await);
    // A minute later by the database's clock: what the refusal compares
    // with. (The spent-challenge row is what ages; nothing is waited for.)
    let expired: Value = {
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(&proof)
            .unwrap();
        serde_json::from_slice(&decoded).unwrap()
    };
    let expires = expired["challenge"]["parameters"]["data"]["expires"]
        .as_i64()
        .unwrap();
    let (seconds_left,): (i64,) = sqlx::query_as(
        "SELECT TIMESTAMPDIFF(SECOND, UTC_TIMESTAMP(6), FROM_UNIXTIME(? / 1000000))",
    )
    .bind(expires)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert!((55..=61).contains(&seconds_left), "{seconds_left}");
    // The database's clock cannot be moved here; its comparison can be
    // tried with an end already past, as the spend statement sees it.
    let mut conn = app.pool.acquire().await.unwrap();
    let spent = ticket_core::db::spent_challenges::spend(
        &mut conn,
        ticket_core::domain::ConcertId(concert),
        &[7; 32],
        chrono::Utc::now() - chrono::Duration::seconds(1),
    )
    .await
    .unwrap();
    assert_eq!(spent, ticket_core::db::spent_challenges::Spend::Expired);
    order(&app, &alice, seats[0], Some(&proof))
        .await
        .assert_status(201);
}

#[tokio::test]
async fn without_proof_of_work_nothing_is_asked() {
    let app = spawn_app().await;
    let seat = app.seat_ids(1).await[0];
    let (_, alice) = app.user("alice").await;
    order(&app, &alice, seat, None).await.assert_status(201);
    let bad = app
        .patch(
            &format!("/api/concerts/{}", 1),
            Some(&app.admin_token),
            json!({"proofOfWork": 13}),
        )
        .await;
    bad.assert_problem(400, "VALIDATION_ERROR");
    assert_eq!(bad.error_fields(), ["proofOfWork"]);
}

/// A request by count pays as a request by seat does: refused without a
/// solution, taken with one, the solution spent.
#[tokio::test]
async fn a_request_by_count_pays_with_a_solved_challenge_once() {
    let app = spawn_app().await;
    let concert = app
        .concert(json!({
            "rows": 1, "seatsPerRow": 6, "proofOfWork": 1,
            "categories": [{"name": "Standard", "price": 0, "currency": "EUR"}],
        }))
        .await["id"]
        .as_u64()
        .unwrap();
    let (_, alice) = app.user("alice").await;
    let ask = |proof: Option<String>| {
        let mut request = app
            .client
            .post(format!("{}/api/reservations", app.base))
            .bearer_auth(&alice)
            .json(&json!({"concertId": concert, "category": "Standard", "count": 2}));
        if let Some(proof) = proof {
            request = request.header("Proof-Of-Work", proof);
        }
        async move { TestApp::reply(request.send().await.unwrap()).await }
    };
    ask(None).await.assert_problem(400, "CHALLENGE_REQUIRED");
    assert_eq!(app.count("reservation_queue").await, 0);
    let proof = solved(&challenge(&app, &alice, concert).await);
    ask(Some(proof.clone())).await.assert_status(201);
    app.drain().await;
    // Spent: the same solution again is refused.
    ask(Some(proof))
        .await
        .assert_problem(400, "CHALLENGE_INVALID");
    assert_eq!(app.count("reservation_queue").await, 1);
}

/// A careful client's retry (same `Idempotency-Key`, same body, the same
/// spent solution) is answered with the request it already has, not
/// refused for its work; and so after the show was cancelled meanwhile.
#[tokio::test]
async fn a_keyed_retry_is_replayed_though_its_work_is_spent_or_its_show_cancelled() {
    let app = spawn_app().await;
    let (concert, seats) = app
        .concert_and_seats(json!({"rows": 1, "seatsPerRow": 2, "proofOfWork": 1}))
        .await;
    let (_, alice) = app.user("alice").await;
    let proof = solved(&challenge(&app, &alice, concert).await);
    let send = |proof: &str| {
        let request = app
            .client
            .post(format!("{}/api/reservations", app.base))
            .bearer_auth(&alice)
            .header("Idempotency-Key", "retry-1")
            .header("Proof-Of-Work", proof)
            .json(&json!({"seatIds": [seats[0]]}));
        async move { TestApp::reply(request.send().await.unwrap()).await }
    };
    let first = send(&proof).await;
    let queue_id = first.assert_status(201)["queueId"].clone();
    let again = send(&proof).await;
    assert_eq!(again.assert_status(201)["queueId"], queue_id);
    assert_eq!(again.headers.get("idempotent-replayed").unwrap(), "true");
    app.post(
        &format!("/api/concerts/{concert}/cancel"),
        Some(&app.admin_token),
        json!({"reason": "the band is ill"}),
    )
    .await
    .assert_status(202);
    let after = send(&proof).await;
    assert_eq!(after.assert_status(201)["queueId"], queue_id);
    // Without a key there is nothing to replay: the refusal stands.
    order(&app, &alice, seats[0], Some(&proof))
        .await
        .assert_problem(409, "CONCERT_CANCELLED");
    assert_eq!(app.count("reservation_queue").await, 1);
}
