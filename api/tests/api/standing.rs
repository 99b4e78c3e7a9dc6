//! Standing areas (issue 47): floors without seat numbers, asked for by
//! `{concertId, area, count}`; the line gives entry numbers in its order.
//!
//! Long because each rule of a floor (entry numbers, counts, refusals, the
//! waiting list) is a story with its own line.

use std::collections::HashSet;

use serde_json::{Value, json};

use crate::helpers::{Reply, TestApp, spawn_app};

/// A small seated block (rows A–B of 4, "Seated") and a floor ("Floor",
/// the "Standing" category) of `capacity`.
async fn concert(app: &TestApp, capacity: u64, extra: Value) -> u64 {
    let mut body = json!({
        "rows": 2, "seatsPerRow": 4, "maxSeatsPerOrder": 4, "maxSeatsPerUser": 10,
        "categories": [
            {"name": "Seated", "price": 9000, "currency": "EUR"},
            {"name": "Standing", "price": 5000, "currency": "EUR"},
        ],
        "areas": [{"name": "Floor", "capacity": capacity, "category": "Standing"}],
    });
    if let (Some(body), Some(extra)) = (body.as_object_mut(), extra.as_object()) {
        body.extend(extra.clone());
    }
    app.concert(body).await["id"].as_u64().unwrap()
}

fn standing(concert: u64, area: &str, count: u64) -> Value {
    json!({"concertId": concert, "area": area, "count": count})
}

async fn ask(app: &TestApp, token: &str, body: Value) -> Reply {
    app.post("/api/reservations", Some(token), body).await
}

async fn queued(app: &TestApp, token: &str, body: Value) -> u64 {
    ask(app, token, body).await.assert_status(201)["queueId"]
        .as_u64()
        .unwrap()
}

/// The reservation a decided request made, or its failure reason.
async fn reservation_of(app: &TestApp, token: &str, queue_id: u64) -> Result<Value, String> {
    let status = app.queue_status(token, queue_id).await;
    match status["status"].as_str() {
        Some("SUCCESS") => {
            let id = status["reservationId"].as_u64().unwrap();
            let reservation = app
                .get(&format!("/api/reservations/{id}"), Some(token))
                .await;
            Ok(reservation.assert_status(200).clone())
        }
        Some("FAILED") => Err(status["reason"].as_str().unwrap().to_owned()),
        other => panic!("undecided: {other:?} {status}"),
    }
}

/// The entry numbers a reservation's places carry (`Floor #12` is 12).
fn entries(reservation: &Value) -> Vec<u64> {
    let mut numbers: Vec<u64> = reservation["seats"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let number = s["seatNumber"].as_str().unwrap();
            number.rsplit('#').next().unwrap().parse().unwrap()
        })
        .collect();
    numbers.sort_unstable();
    numbers
}

async fn availability(app: &TestApp, concert: u64) -> Value {
    app.get(&format!("/api/concerts/{concert}/availability"), None)
        .await
        .assert_status(200)
        .clone()
}

#[tokio::test]
async fn a_floor_is_counted_apart_from_the_seat_map_and_sold_in_line_order() {
    let app = spawn_app().await;
    let concert = concert(&app, 6, json!({})).await;
    let shown = app
        .get(&format!("/api/concerts/{concert}"), None)
        .await
        .assert_status(200)
        .clone();
    assert_eq!(
        shown["areas"],
        json!([{"name": "Floor", "capacity": 6, "category": "Standing"}])
    );
    assert_eq!(shown["seatCount"], 14, "eight seats and six places");
    assert_eq!(shown["availableSeats"], 14);
    // The seats are listed and drawn; the places are not.
    assert_eq!(app.seats(concert).await.len(), 8);
    let map = app
        .get(&format!("/api/concerts/{concert}/seat-map"), None)
        .await;
    assert_eq!(
        map.assert_status(200)["seatNumbers"]
            .as_array()
            .unwrap()
            .len(),
        8
    );
    let before = availability(&app, concert).await;
    assert_eq!(before["states"].as_str().unwrap().len(), 8);
    // Seats only: the floor's category has no seat, and says 0 (issue 59:
    // the list ended at the last category with seats).
    assert_eq!(before["availableByCategory"], json!([8, 0]), "seats only");
    assert_eq!(before["availableByArea"], json!([6]));

    let mut line = Vec::new();
    for (name, count) in [("first", 2), ("second", 1), ("third", 3), ("fourth", 1)] {
        let (_, token) = app.user(name).await;
        let id = queued(&app, &token, standing(concert, "floor", count)).await;
        line.push((token, id));
    }
    app.drain().await;
    let mut got = Vec::new();
    for (token, id) in &line {
        got.push(reservation_of(&app, token, *id).await.map(|r| entries(&r)));
    }
    assert_eq!(
        got,
        vec![
            Ok(vec![1, 2]),
            Ok(vec![3]),
            Ok(vec![4, 5, 6]),
            Err("SOLD_OUT".to_owned())
        ],
        "entry numbers in line order, and never past the capacity"
    );
    // Held while their fans pay: the box office takes the money.
    for (token, id) in &line {
        if let Ok(won) = reservation_of(&app, token, *id).await {
            app.post(
                &format!("/api/reservations/{}/confirm", won["reservationId"]),
                Some(&app.admin_token),
                json!({}),
            )
            .await
            .assert_status(200);
        }
    }
    // Sold: eight seats left, no place (the snapshot is up to a second old).
    app.seat_counts_become(concert, (8, 0, 6)).await;
    let after = availability(&app, concert).await;
    assert_eq!(after["availableByArea"], json!([0]));
    assert_eq!(after["availableByCategory"], json!([8, 0]));
    assert_eq!(after["available"], 8);

    // Each place is a ticket with its area and entry number, at the
    // area's category's price.
    let (token, id) = &line[0];
    let reservation = reservation_of(&app, token, *id).await.unwrap();
    assert!(
        reservation["seats"]
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s["category"] == "Standing" && s["price"] == 5000),
        "{reservation}"
    );
    let tickets = app
        .get(
            &format!("/api/reservations/{}/tickets", reservation["reservationId"]),
            Some(token),
        )
        .await;
    let tickets = tickets.assert_status(200).as_array().unwrap().clone();
    let shown: Vec<(Value, Value)> = tickets
        .iter()
        .map(|t| (t["area"].clone(), t["entryNumber"].clone()))
        .collect();
    assert_eq!(
        shown,
        vec![(json!("Floor"), json!(1)), (json!("Floor"), json!(2))]
    );
    app.assert_invariants().await;
}

#[tokio::test]
async fn a_standing_request_is_held_confirmed_and_checked_in_like_a_seat() {
    let app = spawn_app().await;
    let concert = concert(&app, 10, json!({"holdSeconds": 600})).await;
    let (_, token) = app.user("fan").await;
    let id = queued(&app, &token, standing(concert, "Floor", 2)).await;
    app.drain().await;
    let held = reservation_of(&app, &token, id).await.unwrap();
    assert_eq!(held["status"], "HELD");
    assert_eq!(entries(&held), vec![1, 2]);
    let reservation = held["reservationId"].as_u64().unwrap();
    let confirmed = app
        .post(
            &format!("/api/reservations/{reservation}/confirm"),
            Some(&app.admin_token),
            json!({}),
        )
        .await;
    assert_eq!(confirmed.assert_status(200)["status"], "CONFIRMED");
    let tickets = app
        .get(
            &format!("/api/reservations/{reservation}/tickets"),
            Some(&token),
        )
        .await;
    let code = tickets.assert_status(200)[0]["code"]
        .as_str()
        .unwrap()
        .to_owned();
    let door = app
        .post(
            &format!("/api/concerts/{concert}/scanners"),
            Some(&app.admin_token),
            json!({"name": "Floor door"}),
        )
        .await;
    let door = door.assert_status(201)["token"]
        .as_str()
        .unwrap()
        .to_owned();
    let scan = json!({"code": code, "gate": "F1"});
    let admitted = app.post("/api/check-ins", Some(&door), scan.clone()).await;
    assert_eq!(admitted.assert_status(200)["seatNumber"], "Floor #1");
    app.post("/api/check-ins", Some(&door), scan)
        .await
        .assert_problem(409, "ALREADY_CHECKED_IN");
    app.assert_invariants().await;
}

#[tokio::test]
async fn bad_standing_requests_and_areas_are_refused_and_change_nothing() {
    let app = spawn_app().await;
    let concert = concert(&app, 10, json!({})).await;
    let (_, token) = app.user("fan").await;
    let cases = [
        (standing(concert, "Balcony", 2), "area"),
        (standing(concert, "Floor", 0), "count"),
        (standing(concert, "Floor", 5), "count"),
        (json!({"area": "Floor", "count": 2}), "concertId"),
        (json!({"concertId": concert, "area": "Floor"}), "count"),
        (
            json!({"concertId": concert, "area": "Floor", "category": "Seated", "count": 1}),
            "area",
        ),
        (
            json!({"concertId": concert, "area": "Floor", "count": 1, "allowSplit": true}),
            "area",
        ),
        (
            json!({"seatId": 1, "area": "Floor", "count": 1, "concertId": concert}),
            "seatIds",
        ),
    ];
    for (body, field) in cases {
        let reply = ask(&app, &token, body.clone()).await;
        reply.assert_problem(400, "VALIDATION_ERROR");
        assert_eq!(reply.error_fields(), vec![field.to_owned()], "{body}");
    }
    // A place is not a seat to name.
    let (place,): (u64,) =
        sqlx::query_as("SELECT id FROM seats WHERE concert_id = ? AND area IS NOT NULL LIMIT 1")
            .bind(concert)
            .fetch_one(&app.pool)
            .await
            .unwrap();
    ask(&app, &token, json!({"seatId": place}))
        .await
        .assert_problem(404, "SEAT_NOT_FOUND");
    ask(&app, &token, json!({"seatIds": [place]}))
        .await
        .assert_problem(404, "SEAT_NOT_FOUND");
    // Nor one an operator changes or removes alone: its area is.
    app.delete(&format!("/api/seats/{place}"), Some(&app.admin_token))
        .await
        .assert_problem(404, "SEAT_NOT_FOUND");
    app.patch(
        &format!("/api/seats/{place}"),
        Some(&app.admin_token),
        json!({"seatNumber": "X1"}),
    )
    .await
    .assert_problem(404, "SEAT_NOT_FOUND");
    assert_eq!(app.count("reservation_queue").await, 0);
    assert_eq!(app.count("request_pools").await, 0);

    // Areas that cannot be.
    let seats_before = app.count("seats").await;
    for (areas, why) in [
        (json!([{"name": "Floor", "capacity": 0}]), "capacity"),
        (
            json!([{"name": "Pit", "capacity": 5}, {"name": "PIT", "capacity": 5}]),
            "twice",
        ),
        (
            json!([{"name": "Pit", "capacity": 5, "category": "Gold"}]),
            "Gold",
        ),
        (
            json!([{"name": "A", "capacity": 60000}, {"name": "B", "capacity": 40001}]),
            "in all",
        ),
    ] {
        let made = app
            .post(
                "/api/concerts",
                Some(&app.admin_token),
                json!({"title": "T", "venue": "V", "concertDate": "2031-01-01T19:00:00Z",
                       "categories": [{"name": "Seated", "price": 1, "currency": "EUR"}],
                       "areas": areas}),
            )
            .await;
        let body = made.assert_problem(400, "VALIDATION_ERROR");
        assert_eq!(made.error_fields(), vec!["areas".to_owned()], "{body}");
        assert!(body.to_string().contains(why), "{why}: {body}");
    }
    assert_eq!(app.count("seats").await, seats_before);
}

#[tokio::test]
async fn areas_change_until_a_place_is_asked_for() {
    let app = spawn_app().await;
    let concert = concert(&app, 10, json!({})).await;
    let patch = |areas: Value| {
        let app = &app;
        async move {
            app.patch(
                &format!("/api/concerts/{concert}"),
                Some(&app.admin_token),
                json!({"areas": areas}),
            )
            .await
        }
    };
    let changed = patch(json!([
        {"name": "Floor", "capacity": 30, "category": "Standing"},
        {"name": "Pit", "capacity": 5},
    ]))
    .await;
    assert_eq!(changed.assert_status(200)["seatCount"], 43);
    assert_eq!(
        availability(&app, concert).await["availableByArea"],
        json!([30, 5])
    );
    // A category change must keep every area's category.
    let dropped = app
        .patch(
            &format!("/api/concerts/{concert}"),
            Some(&app.admin_token),
            json!({"categories": [{"name": "Seated", "price": 1, "currency": "EUR"}]}),
        )
        .await;
    dropped.assert_problem(400, "VALIDATION_ERROR");
    // The pit (no category named) is in the first; moving the categories
    // moves its places' price.
    let (_, token) = app.user("fan").await;
    let id = queued(&app, &token, standing(concert, "Pit", 1)).await;
    patch(json!([]))
        .await
        .assert_problem(409, "AREAS_ALREADY_REQUESTED");
    app.drain().await;
    let reservation = reservation_of(&app, &token, id).await.unwrap();
    assert_eq!(reservation["seats"][0]["seatNumber"], "Pit #1");
    assert_eq!(reservation["seats"][0]["category"], "Seated");
    patch(json!([]))
        .await
        .assert_problem(409, "AREAS_ALREADY_REQUESTED");
    app.assert_invariants().await;
}

/// Fans asking for 1 to 3 places of a floor, and others for seats, all at
/// once, decided by four workers: no place twice, the floor never past its
/// capacity, and of two requests the earlier in line has the lower entry
/// numbers.
#[tokio::test]
async fn racing_standing_requests_keep_the_line_order_under_four_workers() {
    let app = spawn_app().await;
    let concert = concert(&app, 40, json!({})).await;
    let bodies: Vec<Value> = (0..32)
        .map(|i| {
            if i % 5 == 4 {
                json!({"concertId": concert, "category": "Seated", "count": 2})
            } else {
                standing(concert, "Floor", 1 + (i % 3) as u64)
            }
        })
        .collect();
    let requests = app.race(bodies, 4).await;

    let mut taken = HashSet::new();
    let mut last_entry = 0;
    for (id, token, body) in &requests {
        if body.get("area").is_none() {
            continue;
        }
        match reservation_of(&app, token, *id).await {
            Ok(reservation) => {
                let got = entries(&reservation);
                assert_eq!(got.len() as u64, body["count"].as_u64().unwrap());
                for entry in &got {
                    assert!(taken.insert(*entry), "entry {entry} sold twice");
                    assert!((1..=40).contains(entry), "past the capacity: {entry}");
                }
                assert!(
                    got[0] > last_entry,
                    "request {id} got {got:?}, not after an earlier request's {last_entry}"
                );
                last_entry = *got.last().unwrap();
            }
            Err(reason) => {
                assert_eq!(reason, "SOLD_OUT");
            }
        }
    }
    assert!(
        taken.len() >= 38,
        "the floor sold out: {} places",
        taken.len()
    );
}

/// Names the database cannot store as places, or cannot tell apart, are
/// refused in words and change nothing (before: 500s): forty characters
/// of letters and digits in turn (its places' sort key was longer than
/// its column), and Straße beside Strasse (one name to the database's
/// collation, two to Rust's lower case).
#[tokio::test]
async fn area_names_the_database_cannot_take_are_refused_never_a_500() {
    let app = spawn_app().await;
    let long = "A1".repeat(20);
    let made = app
        .concert(json!({"rows": 1, "seatsPerRow": 2,
            "areas": [{"name": long, "capacity": 3}]}))
        .await;
    let id = made["id"].as_u64().unwrap();
    assert_eq!(made["areas"][0]["name"], long.as_str());
    let (_, fan) = app.user("long-name").await;
    let asked = queued(&app, &fan, standing(id, &long, 2)).await;
    app.drain().await;
    assert_eq!(app.queue_status(&fan, asked).await["status"], "SUCCESS");

    let twins = json!({"title": "IU Live", "venue": "Olympic Hall",
        "concertDate": "2099-05-01T19:00:00+09:00", "rows": 1, "seatsPerRow": 2,
        "areas": [{"name": "Straße", "capacity": 2}, {"name": "Strasse", "capacity": 2}]});
    let concerts_before = app.count("concerts").await;
    let refused = app
        .post("/api/concerts", Some(&app.admin_token), twins)
        .await;
    refused.assert_problem(400, "VALIDATION_ERROR");
    assert_eq!(refused.error_fields(), ["areas"]);
    assert_eq!(app.count("concerts").await, concerts_before);
    let other = app.concert(json!({"rows": 1, "seatsPerRow": 2})).await;
    let change = app
        .patch(
            &format!("/api/concerts/{}", other["id"]),
            Some(&app.admin_token),
            json!({"areas": [{"name": "Straße", "capacity": 2}, {"name": "STRASSE", "capacity": 1}]}),
        )
        .await;
    change.assert_problem(400, "VALIDATION_ERROR");
    assert_eq!(app.count("standing_areas").await, 1);
    app.assert_invariants().await;
}
