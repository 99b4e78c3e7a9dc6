//! The waiting list of a sold-out concert: joining, leaving, one's place,
//! and the offers of seats that come back: to the earliest fan whose count
//! they meet, never a seat an open request wants, never past the fan cap,
//! on to the next fan when not confirmed; and a freed seat goes to exactly
//! one of the line or the list while cancels, new requests and two offering
//! workers race.
//!
//! Long because each rule of the list is a story with its own line, list
//! and offers, and the races need their setup beside them.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use ticket_worker::holds::HoldSweeper;
use ticket_worker::waiting_list::Offers;
use tokio::sync::Barrier;

use crate::helpers::{Reply, TestApp, concert_with, executable, order, racing_offers, spawn_app};

async fn join(app: &TestApp, token: &str, concert: u64, seats: u64) -> Reply {
    app.post(
        &format!("/api/concerts/{concert}/waiting-list"),
        Some(token),
        json!({"seats": seats}),
    )
    .await
}

async fn mine(app: &TestApp, token: &str, concert: u64) -> Reply {
    app.get(
        &format!("/api/concerts/{concert}/waiting-list/me"),
        Some(token),
    )
    .await
}

/// Whether the server is running a statement whose text is `LIKE` this
/// (another connection's, waiting for a lock).
async fn running(app: &TestApp, like: &str) -> bool {
    let n: i64 =
        sqlx::query_scalar("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE ?")
            .bind(like)
            .fetch_one(&app.pool)
            .await
            .unwrap();
    n > 0
}

/// The reservation a won request made.
async fn reservation_of(app: &TestApp, token: &str, queue_id: u64) -> u64 {
    app.queue_status(token, queue_id).await["reservationId"]
        .as_u64()
        .expect("a won request has its reservation")
}

async fn cancel(app: &TestApp, token: &str, reservation: u64) {
    app.post(
        &format!("/api/reservations/{reservation}/cancel"),
        Some(token),
        json!({}),
    )
    .await
    .assert_status(200);
}

/// Orders `seats` and lets a worker decide; the reservation's id.
async fn bought(app: &TestApp, token: &str, seats: &[u64]) -> u64 {
    let queued = order(app, token, seats).await.assert_status(201)["queueId"]
        .as_u64()
        .unwrap();
    app.drain().await;
    reservation_of(app, token, queued).await
}

#[tokio::test]
async fn joining_is_for_a_sold_out_concert_and_says_where_you_stand() {
    let app = spawn_app().await;
    let (concert, seats) = concert_with(&app, 2, json!({})).await;
    let (_, alice) = app.user("alice").await;
    let (_, bob) = app.user("bob").await;
    let (_, carol) = app.user("carol").await;

    join(&app, &alice, concert, 1)
        .await
        .assert_problem(409, "SEATS_AVAILABLE");
    bought(&app, &bob, &seats).await;

    for bad in [json!(0), json!(5), json!("1"), json!(1.5)] {
        let reply = app
            .post(
                &format!("/api/concerts/{concert}/waiting-list"),
                Some(&alice),
                json!({"seats": bad}),
            )
            .await;
        reply.assert_problem(400, "VALIDATION_ERROR");
        assert_eq!(reply.error_fields(), ["seats"], "{bad}");
    }
    app.post(
        &format!("/api/concerts/{concert}/waiting-list"),
        None,
        json!({"seats": 1}),
    )
    .await
    .assert_problem(401, "UNAUTHORIZED");
    join(&app, &alice, 9999, 1)
        .await
        .assert_problem(404, "CONCERT_NOT_FOUND");
    assert_eq!(
        app.count("waiting_list_entries").await,
        0,
        "nothing written"
    );

    let joined = join(&app, &alice, concert, 1).await;
    let body = joined.assert_status(201);
    assert_eq!(body["position"], 1, "{body}");
    assert_eq!(body["status"], "WAITING");
    assert_eq!(body["offer"], Value::Null);
    join(&app, &alice, concert, 2)
        .await
        .assert_problem(409, "ALREADY_ON_WAITING_LIST");
    join(&app, &carol, concert, 2).await.assert_status(201);
    assert_eq!(
        mine(&app, &carol, concert).await.assert_status(200)["position"],
        2
    );

    app.delete(
        &format!("/api/concerts/{concert}/waiting-list"),
        Some(&alice),
    )
    .await
    .assert_status(204);
    assert_eq!(
        mine(&app, &carol, concert).await.assert_status(200)["position"],
        1
    );
    mine(&app, &alice, concert)
        .await
        .assert_problem(404, "NOT_ON_WAITING_LIST");
    app.delete(
        &format!("/api/concerts/{concert}/waiting-list"),
        Some(&alice),
    )
    .await
    .assert_problem(404, "NOT_ON_WAITING_LIST");
    // Leaving is not for good: a fan may join again, at the end.
    assert_eq!(
        join(&app, &alice, concert, 1).await.assert_status(201)["position"],
        2
    );
    app.assert_invariants().await;
}

#[tokio::test]
async fn a_seat_that_comes_back_is_held_for_the_earliest_fan_whose_count_it_meets() {
    let app = spawn_app().await;
    let (concert, seats) = concert_with(&app, 3, json!({"waitingListOfferSeconds": 600})).await;
    let (_, bob) = app.user("bob").await;
    let (_, alice) = app.user("alice").await;
    let (carol_id, carol) = app.user("carol").await;
    let one = bought(&app, &bob, &seats[0..1]).await;
    let two = bought(&app, &bob, &seats[1..3]).await;
    join(&app, &alice, concert, 2).await.assert_status(201);
    join(&app, &carol, concert, 1).await.assert_status(201);
    let offers = Offers::new(app.pool.clone());
    assert!(
        offers.offer_once().await.unwrap().is_empty(),
        "nothing free"
    );

    // One seat back: Alice waits for two, so Carol (one) is offered it.
    cancel(&app, &bob, one).await;
    let made = offers.offer_once().await.unwrap();
    assert_eq!(made.len(), 1, "{made:?}");
    assert_eq!(made[0].seats, vec![ticket_core::domain::SeatId(seats[0])]);
    let carols = mine(&app, &carol, concert).await;
    let entry = carols.assert_status(200);
    assert_eq!(entry["status"], "OFFERED", "{entry}");
    assert_eq!(entry["position"], Value::Null);
    let offer = &entry["offer"];
    assert_eq!(offer["status"], "HELD", "{offer}");
    assert_eq!(offer["source"], "WAITING_LIST");
    assert_eq!(offer["seatId"], seats[0]);
    let ends = chrono::DateTime::parse_from_rfc3339(offer["holdExpiresAt"].as_str().unwrap())
        .unwrap()
        .with_timezone(&chrono::Utc);
    let left = ends - chrono::Utc::now();
    assert!(
        left > chrono::Duration::seconds(590) && left <= chrono::Duration::seconds(601),
        "{left}"
    );
    assert_eq!(
        mine(&app, &alice, concert).await.assert_status(200)["position"],
        1
    );
    let listed = app.get("/api/users/me/reservations", Some(&carol)).await;
    let listed = listed.assert_status(200).to_string();
    assert!(listed.contains("\"source\":\"WAITING_LIST\""), "{listed}");
    let (event, payload): (String, String) = sqlx::query_as(
        "SELECT event_type, payload FROM outbox WHERE event_type = 'WaitingListOffered'",
    )
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!(event, "WaitingListOffered");
    let payload: Value = serde_json::from_str(&payload).unwrap();
    assert_eq!(payload["userId"], carol_id, "{payload}");
    assert_eq!(payload["status"], "HELD");
    assert_eq!(payload["concertId"], concert);
    // The seat is held: nobody else can have it, and nobody may join while
    // nothing is free.
    app.seat_counts_become(concert, (0, 1, 2)).await;

    // Two back: Alice's turn.
    cancel(&app, &bob, two).await;
    let made = offers.offer_once().await.unwrap();
    assert_eq!(made.len(), 1);
    assert_eq!(made[0].seats.len(), 2);
    let alices = mine(&app, &alice, concert).await;
    assert_eq!(
        alices.assert_status(200)["offer"]["seats"]
            .as_array()
            .unwrap()
            .len(),
        2
    );

    // An offer is confirmed like any hold.
    let reservation = offer["reservationId"].as_u64().unwrap();
    let confirmed = app
        .post(
            &format!("/api/reservations/{reservation}/confirm"),
            Some(&carol),
            json!({}),
        )
        .await;
    assert_eq!(confirmed.assert_status(200)["status"], "CONFIRMED");
    assert!(
        offers.offer_once().await.unwrap().is_empty(),
        "nobody left waiting"
    );
    app.assert_invariants().await;
}

#[tokio::test]
async fn an_offer_not_confirmed_in_time_goes_to_the_next_fan() {
    let app = spawn_app().await;
    let (concert, seats) = concert_with(&app, 1, json!({"waitingListOfferSeconds": 1})).await;
    let (_, bob) = app.user("bob").await;
    let (_, alice) = app.user("alice").await;
    let (_, carol) = app.user("carol").await;
    let sold = bought(&app, &bob, &seats).await;
    join(&app, &alice, concert, 1).await.assert_status(201);
    join(&app, &carol, concert, 1).await.assert_status(201);
    cancel(&app, &bob, sold).await;
    let offers = Offers::new(app.pool.clone());
    assert_eq!(offers.offer_once().await.unwrap().len(), 1);
    // Alice holds it; while her offer runs she cannot join again.
    join(&app, &alice, concert, 1)
        .await
        .assert_problem(409, "ALREADY_ON_WAITING_LIST");

    // Her second passes; the sweep ends her hold; Carol is offered the seat.
    let sweeper = HoldSweeper::new(app.pool.clone());
    let started = std::time::Instant::now();
    while sweeper.sweep_once().await.unwrap().holds == 0 {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the offer never ended"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let made = offers.offer_once().await.unwrap();
    assert_eq!(made.len(), 1);
    let carols = mine(&app, &carol, concert).await;
    assert_eq!(carols.assert_status(200)["offer"]["status"], "HELD");
    let alices = mine(&app, &alice, concert).await;
    let alices = alices.assert_status(200);
    assert_eq!(alices["status"], "OFFERED");
    assert_eq!(alices["offer"]["status"], "EXPIRED", "{alices}");
    // She may join again, behind whoever waits.
    join(&app, &alice, concert, 1).await.assert_status(201);
    app.assert_invariants().await;
}

#[tokio::test]
async fn a_seat_an_open_request_wants_goes_to_the_line_first() {
    let app = spawn_app().await;
    let (concert, seats) = concert_with(&app, 1, json!({})).await;
    let (_, bob) = app.user("bob").await;
    let (_, alice) = app.user("alice").await;
    let (_, dave) = app.user("dave").await;
    let (_, eve) = app.user("eve").await;
    let sold = bought(&app, &bob, &seats).await;
    join(&app, &alice, concert, 1).await.assert_status(201);
    // Dave asks for the sold seat; his request waits in line.
    let queued = order(&app, &dave, &seats).await.assert_status(201)["queueId"]
        .as_u64()
        .unwrap();
    cancel(&app, &bob, sold).await;
    let offers = Offers::new(app.pool.clone());
    assert!(
        offers.offer_once().await.unwrap().is_empty(),
        "the line's seat"
    );
    // Free but wanted: still nothing a newcomer could reserve, so Eve may join.
    join(&app, &eve, concert, 1).await.assert_status(201);
    app.drain().await;
    assert_eq!(app.queue_status(&dave, queued).await["status"], "SUCCESS");
    assert!(offers.offer_once().await.unwrap().is_empty());
    assert_eq!(
        mine(&app, &alice, concert).await.assert_status(200)["position"],
        1
    );
    app.assert_invariants().await;
}

#[tokio::test]
async fn nobody_is_offered_more_than_the_fan_cap() {
    let app = spawn_app().await;
    let (concert, seats) = concert_with(
        &app,
        3,
        json!({"maxSeatsPerUser": 2, "maxSeatsPerOrder": 2}),
    )
    .await;
    let (alice_id, alice) = app.user("alice").await;
    let (_, carol) = app.user("carol").await;
    let (_, dave) = app.user("dave").await;
    bought(&app, &carol, &seats[0..1]).await;
    let daves = bought(&app, &dave, &seats[1..3]).await;
    // Dave has two of two: joining for more is refused at once.
    let refused = join(&app, &dave, concert, 1).await;
    let body = refused.assert_problem(409, "USER_LIMIT_REACHED");
    assert_eq!(body["seatsTaken"], 2, "{body}");
    join(&app, &carol, concert, 1).await.assert_status(201);
    join(&app, &alice, concert, 1).await.assert_status(201);
    // The operator lowers the cap: Carol (one seat) is at it now.
    app.patch(
        &format!("/api/concerts/{concert}"),
        Some(&app.admin_token),
        json!({"maxSeatsPerUser": 1}),
    )
    .await
    .assert_status(200);
    cancel(&app, &dave, daves).await;
    let made = Offers::new(app.pool.clone()).offer_once().await.unwrap();
    assert_eq!(made.len(), 1, "{made:?}");
    assert_eq!(
        made[0].fan,
        ticket_core::domain::UserId(alice_id),
        "Carol is passed over"
    );
    let carols = mine(&app, &carol, concert).await;
    let carols = carols.assert_status(200);
    assert_eq!(
        (carols["status"].as_str(), carols["position"].as_u64()),
        (Some("WAITING"), Some(1))
    );
    app.patch(
        &format!("/api/concerts/{concert}"),
        Some(&app.admin_token),
        json!({"maxSeatsPerUser": 2}),
    )
    .await
    .assert_status(200);
    let made = Offers::new(app.pool.clone()).offer_once().await.unwrap();
    assert_eq!(made.len(), 1, "Carol, first in order, has room again");
    assert_eq!(
        mine(&app, &carol, concert).await.assert_status(200)["status"],
        "OFFERED"
    );
    app.assert_invariants().await;
}

/// Cancels, new requests and two offering workers at once: every freed
/// seat ends with one owner (a request that won it, or an offer), the fans
/// on the list are offered in the order they joined, and the invariants hold.
#[tokio::test]
async fn a_freed_seat_goes_to_exactly_one_of_the_line_or_the_list() {
    for round in 0..4 {
        let app = spawn_app().await;
        let n = 12;
        let (concert, seats) =
            concert_with(&app, n, json!({"holdSeconds": 600, "maxSeatsPerUser": 4})).await;
        let owners = app.many_users(&format!("owner{round}-"), n as usize).await;
        let mut held = Vec::new();
        for ((_, token), seat) in owners.iter().zip(&seats) {
            held.push(bought(&app, token, &[*seat]).await);
        }
        let fans = app.many_users(&format!("fan{round}-"), 8).await;
        for (_, token) in &fans {
            join(&app, token, concert, 1).await.assert_status(201);
        }
        let newcomers = app.many_users(&format!("new{round}-"), 6).await;

        let barrier = Arc::new(Barrier::new(n as usize + newcomers.len() + 2));
        let mut tasks = Vec::new();
        for ((_, token), reservation) in owners.iter().zip(held) {
            let (app, token, barrier) = (
                TestApp::sharing_database(&app, app.base.clone()),
                token.clone(),
                barrier.clone(),
            );
            tasks.push(tokio::spawn(async move {
                barrier.wait().await;
                app.cancel_under_load(&token, reservation).await;
            }));
        }
        for (i, (_, token)) in newcomers.iter().enumerate() {
            let (app, token, barrier) = (
                TestApp::sharing_database(&app, app.base.clone()),
                token.clone(),
                barrier.clone(),
            );
            let seat = seats[(i * 5 + round) % seats.len()];
            tasks.push(tokio::spawn(async move {
                barrier.wait().await;
                order(&app, &token, &[seat]).await.assert_status(201);
            }));
        }
        tasks.extend(racing_offers(&app.pool, &barrier));
        for task in tasks {
            task.await.unwrap();
        }
        app.drain().await;
        Offers::new(app.pool.clone()).offer_once().await.unwrap();

        // Each seat: one live claim at most, and the counts agree.
        app.assert_invariants().await;
        let (live, seats_held): (i64, i64) = sqlx::query_as(
            "SELECT (SELECT COUNT(*) FROM reservation_seats WHERE live_seat_id IS NOT NULL), \
                    (SELECT COUNT(*) FROM seats WHERE status <> 'AVAILABLE')",
        )
        .fetch_one(&app.pool)
        .await
        .unwrap();
        assert_eq!(live, seats_held, "round {round}");
        // Fans were offered in the order they joined: those offered are the
        // first of the list (each waits for one seat).
        let entries: Vec<(String,)> =
            sqlx::query_as("SELECT status FROM waiting_list_entries ORDER BY id")
                .fetch_all(&app.pool)
                .await
                .unwrap();
        let offered = entries.iter().filter(|(s,)| s == "OFFERED").count();
        assert!(
            entries[..offered].iter().all(|(s,)| s == "OFFERED"),
            "round {round}: {entries:?}"
        );
        // Every seat not won in line went to the list while fans waited.
        let won: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM reservations WHERE source = 'LINE' AND status = 'HELD'",
        )
        .fetch_one(&app.pool)
        .await
        .unwrap();
        assert_eq!(
            offered as i64,
            (n as i64 - won).min(fans.len() as i64),
            "round {round}: {won} won in line, {offered} offered"
        );
    }
}

#[tokio::test]
async fn check_names_an_offer_that_is_not_the_fans() {
    let app = spawn_app().await;
    let (concert, seats) = concert_with(&app, 1, json!({})).await;
    let (_, bob) = app.user("bob").await;
    let (alice_id, alice) = app.user("alice").await;
    let sold = bought(&app, &bob, &seats).await;
    join(&app, &alice, concert, 1).await.assert_status(201);
    cancel(&app, &bob, sold).await;
    Offers::new(app.pool.clone()).offer_once().await.unwrap();
    let check = || {
        executable("ticket-api", &app.database_url())
            .arg("check")
            .output()
            .unwrap()
    };
    assert!(check().status.success());
    // A hand-made fix gives Alice's offer to Bob.
    sqlx::query("UPDATE reservations SET user_id = (SELECT id FROM users WHERE nickname = 'bob') WHERE source = 'WAITING_LIST'")
        .execute(&app.pool)
        .await
        .unwrap();
    let broken = check();
    assert!(!broken.status.success());
    let report = String::from_utf8_lossy(&broken.stdout);
    assert!(
        report.contains("an offer from a waiting list is not a hold of that fan's seats"),
        "{report} (alice {alice_id})"
    );
}

/// A worker killed in the middle of an offer (the list, the entry and the
/// seat locked, the reservation being written) leaves nothing of it: the transaction goes with its connection, and the next
/// pass makes the offer once.
#[tokio::test]
async fn a_worker_killed_in_the_middle_of_an_offer_leaves_nothing_half_made() {
    let app = spawn_app().await;
    let (concert, seats) = concert_with(&app, 1, json!({})).await;
    let (_, bob) = app.user("bob").await;
    let (alice_id, alice) = app.user("alice").await;
    let sold = bought(&app, &bob, &seats).await;
    join(&app, &alice, concert, 1).await.assert_status(201);
    // Alice's account row is locked here: the worker's offer, with the list,
    // her entry and the seat locked, stops at its reservation's insert (its
    // foreign key to her).
    let mut blocker = app.pool.begin().await.unwrap();
    sqlx::query("SELECT id FROM users WHERE nickname = 'alice' FOR UPDATE")
        .fetch_all(&mut *blocker)
        .await
        .unwrap();
    cancel(&app, &bob, sold).await;
    let mut worker = executable("ticket-worker", &app.database_url())
        .env("TICKET_WORKER_HEALTH_ADDR", "127.0.0.1:0")
        .env("RUST_LOG", "error")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    loop {
        if running(
            &app,
            "INSERT INTO reservations (user_id, concert_id, seat_id, queue_id, source%",
        )
        .await
        {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the worker never offered"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    worker.kill().unwrap();
    worker.wait().unwrap();
    blocker.rollback().await.unwrap();

    // The killed offer is rolled back once the server sees its connection
    // gone; until then its list is skipped. Then the offer is made, once.
    let offers = Offers::new(app.pool.clone());
    let started = std::time::Instant::now();
    let made = loop {
        let made = offers.offer_once().await.unwrap();
        if !made.is_empty() {
            break made;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "no offer after the kill"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(made.len(), 1);
    assert_eq!(made[0].fan, ticket_core::domain::UserId(alice_id));
    let offers_made: i64 =
        sqlx::query_scalar("SELECT COUNT(*) FROM reservations WHERE source = 'WAITING_LIST'")
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(offers_made, 1);
    app.assert_invariants().await;
}

/// An offer and a new request of the same fan at once: the request is
/// written after the offer counted the fan's seats, and decided while the
/// offer is not yet committed. The decision waits for the offer (the fan's
/// entry is the offer's) and then counts its hold: the request fails at the
/// cap instead of taking the fan past it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_decided_during_an_offer_to_its_fan_counts_the_offer() {
    let app = spawn_app().await;
    let (concert, seats) = concert_with(
        &app,
        2,
        json!({"holdSeconds": 600, "maxSeatsPerUser": 1, "maxSeatsPerOrder": 1}),
    )
    .await;
    let (_, bob) = app.user("bob").await;
    let (_, carol) = app.user("carol").await;
    let (fan_id, fan) = app.user("fan").await;
    let bobs = bought(&app, &bob, &seats[0..1]).await;
    let carols = bought(&app, &carol, &seats[1..2]).await;
    join(&app, &fan, concert, 1).await.assert_status(201);
    cancel(&app, &bob, bobs).await;
    cancel(&app, &carol, carols).await;

    // The offer of one seat to the fan (they wait for one), made and not
    // yet committed; the other seat stays free.
    let mut offering = app.pool.begin().await.unwrap();
    let now = ticket_core::db::now(&mut offering).await.unwrap();
    let made = ticket_core::db::waiting_list::offer_step(
        &mut offering,
        ticket_core::domain::ConcertId(concert),
        now,
    )
    .await
    .unwrap();
    assert_eq!(made.len(), 1);
    // The fan asks for the other seat: nothing they hold is committed yet,
    // so the request is accepted.
    let queued = order(&app, &fan, &seats[1..2]).await.assert_status(201)["queueId"]
        .as_u64()
        .unwrap();
    let deciding = {
        let app = TestApp::sharing_database(&app, app.base.clone());
        tokio::spawn(async move { app.drain().await })
    };
    // The decision either waits for the offer's entry or (were it not to)
    // finishes without it: commit the offer once one of the two is so.
    let started = std::time::Instant::now();
    loop {
        if running(&app, "SELECT id FROM waiting_list_entries FORCE INDEX%").await
            || deciding.is_finished()
        {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the request was never decided"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    offering.commit().await.unwrap();
    deciding.await.unwrap();

    let status = app.queue_status(&fan, queued).await;
    assert_eq!(status["status"], "FAILED", "{status}");
    assert_eq!(status["reason"], "USER_LIMIT_REACHED", "{status}");
    let held: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM reservation_seats rs JOIN reservations r ON r.id = rs.reservation_id \
          WHERE r.user_id = ? AND rs.live_seat_id IS NOT NULL",
    )
    .bind(fan_id)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!(held, 1, "the fan holds the offer only");
    app.assert_invariants().await;
}

/// Joining asks what reserving asks: in the presale a code, and an offer
/// goes only to a fan who could reserve when it is made (a code with a use
/// left in the presale; anyone once the sale opens).
#[tokio::test]
async fn the_presales_list_keeps_the_presales_rules() {
    let app = spawn_app().await;
    let opens = chrono::Utc::now() + chrono::Duration::days(2);
    let presale = chrono::Utc::now() - chrono::Duration::hours(1);
    let (concert, seats) = concert_with(
        &app,
        2,
        json!({"opensAt": opens.to_rfc3339(), "presaleStartsAt": presale.to_rfc3339(),
               "waitingListOfferSeconds": 600}),
    )
    .await;
    let codes: Vec<String> = app
        .access_codes(concert, 3, 2, 4)
        .await
        .into_iter()
        .map(|(_, code)| code)
        .collect();
    let (_, bob) = app.user("bob").await;
    let mut reservations = Vec::new();
    for seat in &seats {
        let queued = app
            .post(
                "/api/reservations",
                Some(&bob),
                json!({"seatId": seat, "accessCode": codes[0]}),
            )
            .await;
        let queue_id = queued.assert_status(201)["queueId"].as_u64().unwrap();
        app.drain().await;
        reservations.push(reservation_of(&app, &bob, queue_id).await);
    }
    // Sold out to a code holder. A fan without a code may not wait.
    let (alice_id, alice) = app.user("alice").await;
    join(&app, &alice, concert, 1)
        .await
        .assert_problem(403, "ACCESS_CODE_REQUIRED");
    app.post(
        &format!("/api/concerts/{concert}/waiting-list"),
        Some(&alice),
        json!({"seats": 1, "accessCode": "NOT-A-CODE-AT-ALL"}),
    )
    .await
    .assert_problem(403, "ACCESS_CODE_INVALID");
    assert_eq!(app.count("waiting_list_entries").await, 0);
    // Alice is on the list all the same, as a fan who joined before these
    // rules were kept would be; Carol joins after her with a code.
    app.waiting_directly(concert, alice_id).await;
    let (_, carol) = app.user("carol").await;
    app.post(
        &format!("/api/concerts/{concert}/waiting-list"),
        Some(&carol),
        json!({"seats": 1, "accessCode": codes[1]}),
    )
    .await
    .assert_status(201);

    // A seat back in the presale: Carol (a code) is offered it, not Alice.
    let offers = Offers::new(app.pool.clone());
    cancel(&app, &bob, reservations[0]).await;
    let made = offers.offer_once().await.unwrap();
    assert_eq!(made.len(), 1, "{made:?}");
    assert_eq!(
        mine(&app, &carol, concert).await.assert_status(200)["status"],
        "OFFERED"
    );
    assert_eq!(
        mine(&app, &alice, concert).await.assert_status(200)["status"],
        "WAITING"
    );
    // Another back while the presale runs: Alice still cannot reserve.
    cancel(&app, &bob, reservations[1]).await;
    assert!(offers.offer_once().await.unwrap().is_empty());
    // The sale opens: now she could, and is offered it.
    sqlx::query(
        "UPDATE concerts SET opens_at = UTC_TIMESTAMP(6) - INTERVAL 1 SECOND, \
                presale_starts_at = UTC_TIMESTAMP(6) - INTERVAL 2 HOUR WHERE id = ?",
    )
    .bind(concert)
    .execute(&app.pool)
    .await
    .unwrap();
    let made = offers.offer_once().await.unwrap();
    assert_eq!(made.len(), 1, "{made:?}");
    assert_eq!(
        mine(&app, &alice, concert).await.assert_status(200)["status"],
        "OFFERED"
    );
    app.assert_invariants().await;
}

/// A concert that asks for proof of work asks it of those who wait too;
/// one whose sale has not opened has no list to join.
#[tokio::test]
async fn joining_pays_the_proof_of_work_and_waits_for_the_sale() {
    let app = spawn_app().await;
    let (concert, seats) = concert_with(&app, 1, json!({"proofOfWork": 1})).await;
    let (bob_id, _) = app.user("bob").await;
    app.book_directly(bob_id, seats[0]).await;
    let (_, alice) = app.user("alice").await;
    join(&app, &alice, concert, 1)
        .await
        .assert_problem(400, "CHALLENGE_REQUIRED");
    let later = chrono::Utc::now() + chrono::Duration::days(2);
    let (not_yet, seats) = concert_with(&app, 1, json!({"opensAt": later.to_rfc3339()})).await;
    app.book_directly(bob_id, seats[0]).await;
    join(&app, &alice, not_yet, 1)
        .await
        .assert_problem(409, "SALE_NOT_OPEN");
    assert_eq!(app.count("waiting_list_entries").await, 0);
}
