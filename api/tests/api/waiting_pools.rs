//! A waiting list per price category or standing area (issue 47): a fan
//! waits for any seat, for a category's seats or for an area's places, and
//! is offered only those; fans waiting for another pool neither stand
//! ahead of them nor keep a returned seat from them; a seat that comes back
//! goes to exactly one of the line's best-available requests or the list.

use std::sync::Arc;

use serde_json::{Value, json};
use ticket_worker::waiting_list::Offers;
use tokio::sync::Barrier;

use crate::helpers::{Reply, TestApp, executable, racing_offers, spawn_app};

/// Stalls (row A) and Balcony (row B) of `width` seats each, and a Floor of
/// `floor` places priced as the stalls; holds of ten minutes.
async fn venue(app: &TestApp, width: u64, floor: u64) -> u64 {
    app.concert(json!({
        "rows": 2, "seatsPerRow": width, "maxSeatsPerOrder": 4, "maxSeatsPerUser": 10,
        "holdSeconds": 600,
        "categories": [
            {"name": "Stalls", "price": 9000, "currency": "EUR", "rows": ["A"]},
            {"name": "Balcony", "price": 5000, "currency": "EUR", "rows": ["B"]},
        ],
        "areas": [{"name": "Floor", "capacity": floor, "category": "Stalls"}],
    }))
    .await["id"]
        .as_u64()
        .unwrap()
}

async fn join(app: &TestApp, token: &str, concert: u64, body: Value) -> Reply {
    app.post(
        &format!("/api/concerts/{concert}/waiting-list"),
        Some(token),
        body,
    )
    .await
}

async fn mine(app: &TestApp, token: &str, concert: u64) -> Value {
    app.get(
        &format!("/api/concerts/{concert}/waiting-list/me"),
        Some(token),
    )
    .await
    .assert_status(200)
    .clone()
}

/// One held reservation of one seat or place of `pool` (a request body's
/// `category` or `area` field and name) per owner: what they hold, by
/// owner, with its seat's number.
async fn hold_all(
    app: &TestApp,
    concert: u64,
    pool: (&str, &str),
    n: usize,
) -> Vec<(String, u64, String)> {
    let owners = app.many_users(&format!("{}-", pool.1), n).await;
    let mut queued = Vec::new();
    for (_, token) in &owners {
        let body = json!({"concertId": concert, pool.0: pool.1, "count": 1});
        let reply = app.post("/api/reservations", Some(token), body).await;
        queued.push(reply.assert_status(201)["queueId"].as_u64().unwrap());
    }
    app.drain().await;
    let mut held = Vec::new();
    for ((_, token), queue_id) in owners.iter().zip(queued) {
        let status = app.queue_status(token, queue_id).await;
        let id = status["reservationId"].as_u64().expect("won");
        let reservation = app
            .get(&format!("/api/reservations/{id}"), Some(token))
            .await;
        let number = reservation.assert_status(200)["seats"][0]["seatNumber"]
            .as_str()
            .unwrap()
            .to_owned();
        held.push((token.clone(), id, number));
    }
    held
}

async fn cancel(app: &TestApp, token: &str, reservation: u64) -> Reply {
    app.post(
        &format!("/api/reservations/{reservation}/cancel"),
        Some(token),
        json!({}),
    )
    .await
}

/// The offer's seat numbers on a fan's entry.
fn offered(entry: &Value) -> Vec<String> {
    entry["offer"]["seats"]
        .as_array()
        .map(|seats| {
            seats
                .iter()
                .map(|s| s["seatNumber"].as_str().unwrap().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn a_fan_is_offered_only_the_category_or_area_they_wait_for() {
    let app = spawn_app().await;
    let concert = venue(&app, 2, 2).await;
    let stalls = hold_all(&app, concert, ("category", "Stalls"), 2).await;
    let balcony = hold_all(&app, concert, ("category", "Balcony"), 2).await;
    let floor = hold_all(&app, concert, ("area", "Floor"), 2).await;

    let (_, alice) = app.user("alice").await;
    let (_, bob) = app.user("bob").await;
    let (_, carol) = app.user("carol").await;
    let (_, dave) = app.user("dave").await;
    let entry = join(
        &app,
        &alice,
        concert,
        json!({"seats": 1, "category": "Balcony"}),
    )
    .await;
    let entry = entry.assert_status(201);
    assert_eq!(
        (&entry["category"], &entry["area"], &entry["position"]),
        (&json!("Balcony"), &Value::Null, &json!(1)),
        "{entry}"
    );
    // Alice waits for the balcony: she is not ahead of a fan waiting for
    // the stalls; any seat comes after both, a floor's place after nobody.
    let entry = join(
        &app,
        &bob,
        concert,
        json!({"seats": 1, "category": "Stalls"}),
    )
    .await;
    assert_eq!(entry.assert_status(201)["position"], 1);
    let entry = join(&app, &carol, concert, json!({"seats": 1})).await;
    let entry = entry.assert_status(201);
    assert_eq!(
        (&entry["position"], &entry["category"]),
        (&json!(3), &Value::Null)
    );
    let entry = join(&app, &dave, concert, json!({"seats": 1, "area": "Floor"})).await;
    let entry = entry.assert_status(201);
    assert_eq!(
        (&entry["position"], &entry["area"]),
        (&json!(1), &json!("Floor"))
    );

    // What does not name a pool of the concert changes nothing.
    let (_, erin) = app.user("erin").await;
    for (body, field) in [
        (json!({"seats": 1, "category": "Gallery"}), "category"),
        (json!({"seats": 1, "area": "Pit"}), "area"),
        (
            json!({"seats": 1, "category": "Stalls", "area": "Floor"}),
            "area",
        ),
    ] {
        let reply = join(&app, &erin, concert, body.clone()).await;
        reply.assert_problem(400, "VALIDATION_ERROR");
        assert_eq!(reply.error_fields(), vec![field.to_owned()], "{body}");
    }
    let listed = app
        .get(
            &format!("/api/concerts/{concert}/waiting-list"),
            Some(&app.admin_token),
        )
        .await;
    let listed = listed.assert_status(200).clone();
    assert_eq!(listed.as_array().unwrap().len(), 4, "{listed}");
    assert_eq!(listed[3]["area"], "Floor", "{listed}");
    let offers = Offers::new(app.pool.clone());
    assert!(offers.offer_once().await.unwrap().is_empty());

    // A place comes back: Dave's, not Carol's (any seat is not a place).
    cancel(&app, &floor[0].0, floor[0].1)
        .await
        .assert_status(200);
    assert_eq!(offers.offer_once().await.unwrap().len(), 1);
    let daves = mine(&app, &dave, concert).await;
    assert_eq!(offered(&daves), vec![floor[0].2.clone()], "{daves}");
    assert!(floor[0].2.starts_with("Floor #"), "{floor:?}");

    // A stalls seat: Bob's, though Alice joined first.
    cancel(&app, &stalls[1].0, stalls[1].1)
        .await
        .assert_status(200);
    // While it is free, nobody joins for the stalls; the balcony is full.
    let (_, frank) = app.user("frank").await;
    join(
        &app,
        &frank,
        concert,
        json!({"seats": 1, "category": "Stalls"}),
    )
    .await
    .assert_problem(409, "SEATS_AVAILABLE");
    join(
        &app,
        &frank,
        concert,
        json!({"seats": 1, "category": "Balcony"}),
    )
    .await
    .assert_status(201);
    assert_eq!(offers.offer_once().await.unwrap().len(), 1);
    assert_eq!(
        offered(&mine(&app, &bob, concert).await),
        vec![stalls[1].2.clone()]
    );
    assert_eq!(mine(&app, &alice, concert).await["status"], "WAITING");

    // A balcony seat: Alice's, before Frank (same pool, joined later) and
    // Carol (any seat, joined later).
    cancel(&app, &balcony[0].0, balcony[0].1)
        .await
        .assert_status(200);
    assert_eq!(offers.offer_once().await.unwrap().len(), 1);
    assert_eq!(
        offered(&mine(&app, &alice, concert).await),
        vec![balcony[0].2.clone()]
    );
    let caroles = mine(&app, &carol, concert).await;
    assert_eq!(
        (&caroles["status"], &caroles["position"]),
        (&json!("WAITING"), &json!(1))
    );

    // Another stalls seat: Carol's (any seat), not Frank's (balcony).
    cancel(&app, &stalls[0].0, stalls[0].1)
        .await
        .assert_status(200);
    assert_eq!(offers.offer_once().await.unwrap().len(), 1);
    assert_eq!(
        offered(&mine(&app, &carol, concert).await),
        vec![stalls[0].2.clone()]
    );
    assert_eq!(mine(&app, &frank, concert).await["position"], 1);
    app.assert_invariants().await;
}

/// The balcony's seat given to a fan who waited for the floor is what
/// `ticket-api check` names.
#[tokio::test]
async fn check_names_an_offer_outside_what_the_fan_waited_for() {
    let app = spawn_app().await;
    let concert = venue(&app, 1, 1).await;
    hold_all(&app, concert, ("category", "Stalls"), 1).await;
    let balcony = hold_all(&app, concert, ("category", "Balcony"), 1).await;
    hold_all(&app, concert, ("area", "Floor"), 1).await;
    let (_, alice) = app.user("alice").await;
    join(&app, &alice, concert, json!({"seats": 1, "area": "Floor"}))
        .await
        .assert_status(201);
    let (_, bob) = app.user("bob").await;
    join(
        &app,
        &bob,
        concert,
        json!({"seats": 1, "category": "Balcony"}),
    )
    .await
    .assert_status(201);
    cancel(&app, &balcony[0].0, balcony[0].1)
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
    let check = || {
        executable("ticket-api", &app.database_url())
            .arg("check")
            .output()
            .unwrap()
    };
    assert!(check().status.success());
    // Bob's offer, written as if he had waited for the floor.
    sqlx::query("UPDATE waiting_list_entries SET pool = 256 WHERE status = 'OFFERED'")
        .execute(&app.pool)
        .await
        .unwrap();
    let broken = check();
    assert!(!broken.status.success());
    let report = String::from_utf8_lossy(&broken.stdout);
    assert!(
        report.contains(
            "an offer from a waiting list gave a seat or place not of what the fan waited for"
        ),
        "{report}"
    );
}

/// Owners cancel their stalls seats while best-available requests for the
/// stalls come in and two offering workers run: each seat ends with one
/// owner (a request that won it, or an offer to a fan waiting for the
/// stalls or any seat), none goes to the fans waiting for the balcony, and
/// none is left free while someone waits for it.
#[tokio::test]
async fn a_returned_seat_goes_to_one_of_the_categorys_line_or_its_list() {
    for round in 0..3usize {
        let app = spawn_app().await;
        let width = 6;
        let concert = venue(&app, width, 1).await;
        let stalls = hold_all(&app, concert, ("category", "Stalls"), width as usize).await;
        hold_all(&app, concert, ("category", "Balcony"), width as usize).await;
        let fans = app.many_users(&format!("fan{round}-"), 6).await;
        for (i, (_, token)) in fans.iter().enumerate() {
            let body = match i % 3 {
                0 => json!({"seats": 1}),
                1 => json!({"seats": 1, "category": "Stalls"}),
                _ => json!({"seats": 1, "category": "Balcony"}),
            };
            join(&app, token, concert, body).await.assert_status(201);
        }
        let newcomers = app.many_users(&format!("new{round}-"), 3).await;

        let barrier = Arc::new(Barrier::new(stalls.len() + newcomers.len() + 2));
        let mut tasks = Vec::new();
        for (token, reservation, _) in stalls.clone() {
            let (app, barrier) = (
                TestApp::sharing_database(&app, app.base.clone()),
                barrier.clone(),
            );
            tasks.push(tokio::spawn(async move {
                barrier.wait().await;
                app.cancel_under_load(&token, reservation).await;
            }));
        }
        for (_, token) in newcomers.clone() {
            let (app, barrier) = (
                TestApp::sharing_database(&app, app.base.clone()),
                barrier.clone(),
            );
            tasks.push(tokio::spawn(async move {
                barrier.wait().await;
                let body = json!({"concertId": concert, "category": "Stalls", "count": 1});
                app.post("/api/reservations", Some(&token), body)
                    .await
                    .assert_status(201);
            }));
        }
        tasks.extend(racing_offers(&app.pool, &barrier));
        for task in tasks {
            task.await.unwrap();
        }
        app.drain().await;
        Offers::new(app.pool.clone()).offer_once().await.unwrap();
        app.assert_invariants().await;

        let ids: Vec<String> = newcomers.iter().map(|(id, _)| id.to_string()).collect();
        let (won, offered_stalls, offered_balcony, free): (i64, i64, i64, i64) =
            sqlx::query_as(sqlx::AssertSqlSafe(format!(
                "SELECT \
               (SELECT COUNT(*) FROM reservations WHERE status = 'HELD' AND user_id IN ({})), \
               (SELECT COUNT(*) FROM waiting_list_entries WHERE status = 'OFFERED' \
                   AND (pool IS NULL OR pool = 0)), \
               (SELECT COUNT(*) FROM waiting_list_entries WHERE status = 'OFFERED' AND pool = 1), \
               (SELECT COUNT(*) FROM seats WHERE status = 'AVAILABLE' AND area IS NULL)",
                ids.join(",")
            )))
            .fetch_one(&app.pool)
            .await
            .unwrap();
        assert_eq!(offered_balcony, 0, "round {round}");
        // Four fans may have the stalls' seats: every seat the line did not
        // win went to them while they waited, and the rest stayed free.
        assert_eq!(
            offered_stalls,
            (width as i64 - won).min(4),
            "round {round}: {won} won in line, {offered_stalls} offered"
        );
        assert_eq!(free, width as i64 - won - offered_stalls, "round {round}");
    }
}
