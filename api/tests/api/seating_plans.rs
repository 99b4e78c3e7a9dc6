//! Venues as they are (issue 47): a concert's seats from a seating plan in
//! pretix's format (a stalls block with premium rows, a balcony), read back,
//! sold like any seat, in their plan category's price; refused plans that
//! change nothing; rows × seatsPerRow ranked for best available.
//!
//! Long because a plan is read back, sold and refused in many ways, each a
//! story with its venue.

use reqwest::Method;
use serde_json::{Value, json};
use ticket_core::domain::seating_plan::example;

use crate::helpers::*;

/// A concert priced by the example venue's categories; its id.
async fn venue_concert(app: &TestApp) -> u64 {
    app.concert(json!({"rows": 1, "seatsPerRow": 4, "categories": [
        {"name": "Stalls", "price": 6900, "currency": "EUR"},
        {"name": "Premium", "price": 12900, "currency": "EUR"},
        {"name": "Balcony", "price": 3900, "currency": "EUR"},
    ]}))
    .await["id"]
        .as_u64()
        .unwrap()
}

async fn put_plan(app: &TestApp, concert: u64, plan: &Value) -> Reply {
    app.request(
        Method::PUT,
        &format!("/api/concerts/{concert}/seating-plan"),
        Some(&app.admin_token),
        Some(plan.clone()),
    )
    .await
}

fn plan(stalls: u32, balcony: u32, width: u32) -> Value {
    serde_json::to_value(example::venue(stalls, balcony, width)).unwrap()
}

/// (number, category) of the concert's seats, as its seat map gives them.
async fn seats_with_categories(app: &TestApp, concert: u64) -> Vec<(String, String)> {
    let map = app
        .get(&format!("/api/concerts/{concert}/seat-map"), None)
        .await
        .assert_status(200)
        .clone();
    let names: Vec<String> = map["categories"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap().to_owned())
        .collect();
    map["seatNumbers"]
        .as_array()
        .unwrap()
        .iter()
        .zip(map["seatCategories"].as_array().unwrap())
        .map(|(n, c)| {
            (
                n.as_str().unwrap().to_owned(),
                names[c.as_u64().unwrap() as usize].clone(),
            )
        })
        .collect()
}

async fn rank_of(app: &TestApp, concert: u64, number: &str) -> (u32, u32, u32) {
    sqlx::query_as(
        "SELECT row_index, row_position, seat_rank FROM seats WHERE concert_id = ? AND seat_number = ?",
    )
    .bind(concert)
    .bind(number)
    .fetch_one(&app.pool)
    .await
    .unwrap()
}

#[tokio::test]
async fn a_venue_plan_becomes_the_concerts_seats_sold_in_their_plan_categorys_price() {
    let app = spawn_app().await;
    let concert = venue_concert(&app).await;
    let venue = plan(8, 3, 12);
    let put = put_plan(&app, concert, &venue).await;
    assert_eq!(
        put.assert_status(200).clone(),
        json!({"concertId": concert, "name": "Olympic Hall", "seatCount": 132})
    );
    let shown = app.get(&format!("/api/concerts/{concert}"), None).await;
    assert_eq!(shown.assert_status(200)["seatCount"], 132);
    let back = app
        .get(&format!("/api/concerts/{concert}/seating-plan"), None)
        .await;
    assert_eq!(back.assert_status(200).clone(), venue, "the plan as given");

    let seats = seats_with_categories(&app, concert).await;
    assert_eq!(seats.len(), 132);
    let category = |n: &str| seats.iter().find(|(s, _)| s == n).unwrap().1.clone();
    assert_eq!(category("Stalls-1-1"), "Premium");
    assert_eq!(category("Stalls-4-12"), "Stalls");
    assert_eq!(category("Balcony-3-6"), "Balcony");
    // The plan's order: front row's centre best, then the rest of it.
    assert_eq!(rank_of(&app, concert, "Stalls-1-6").await, (0, 5, 0));
    assert_eq!(rank_of(&app, concert, "Stalls-1-7").await, (0, 6, 1));
    assert_eq!(rank_of(&app, concert, "Balcony-1-1").await.0, 8);

    // Its seats sell like any: a Premium seat at the Premium price.
    let ids = app.seats(concert).await;
    let premium = ids
        .iter()
        .find(|s| s["seatNumber"] == "Stalls-1-6")
        .unwrap()["id"]
        .as_u64()
        .unwrap();
    let (_, fan) = app.user("plan-fan").await;
    let won = won(&app, &fan, &[premium]).await;
    let reservation = app
        .get(&format!("/api/reservations/{won}"), Some(&fan))
        .await;
    assert_eq!(reservation.assert_status(200)["total"], 12900);

    // Asked for once, the seats stay as they are.
    put_plan(&app, concert, &plan(2, 1, 4))
        .await
        .assert_problem(409, "SEATS_ALREADY_REQUESTED");
    assert_eq!(app.seats(concert).await.len(), 132);
    app.assert_invariants().await;
}

#[tokio::test]
async fn a_plan_refused_names_the_seat_and_changes_nothing() {
    let app = spawn_app().await;
    let concert = venue_concert(&app).await;
    let before = seats_with_categories(&app, concert).await;

    let mut unknown = plan(2, 1, 4);
    unknown["zones"][1]["rows"][0]["seats"][2]["category"] = json!("Standing");
    let refused = put_plan(&app, concert, &unknown).await;
    refused.assert_problem(400, "VALIDATION_ERROR");
    assert_eq!(
        refused.body["errors"][0]["message"],
        "seat \"Balcony-1-3\" (row \"1\", zone \"Balcony\"): category \"Standing\" is not one of the concert's price categories"
    );

    let mut twice = plan(2, 1, 4);
    twice["zones"][0]["rows"][1]["seats"][0]["seat_guid"] = json!("Stalls-1-1");
    let refused = put_plan(&app, concert, &twice).await;
    refused.assert_problem(400, "VALIDATION_ERROR");
    assert_eq!(refused.body["errors"][0]["field"], "seat_guid");

    let mut unknown_field = plan(2, 1, 4);
    unknown_field["zones"][0]["rows"][0]["seats"][0]["price"] = json!(10);
    put_plan(&app, concert, &unknown_field)
        .await
        .assert_problem(400, "VALIDATION_ERROR");

    let too_big = plan(400, 1, 250);
    let refused = put_plan(&app, concert, &too_big).await;
    refused.assert_problem(400, "VALIDATION_ERROR");
    assert_eq!(
        refused.body["errors"][0]["message"],
        "the plan has 100250 seats; at most 100000"
    );

    assert_eq!(seats_with_categories(&app, concert).await, before);
    app.get(&format!("/api/concerts/{concert}/seating-plan"), None)
        .await
        .assert_problem(404, "SEATING_PLAN_NOT_FOUND");
    put_plan(&app, 999_999, &plan(1, 1, 2))
        .await
        .assert_problem(404, "CONCERT_NOT_FOUND");
}

#[tokio::test]
async fn a_plans_seats_keep_their_category_through_new_prices() {
    let app = spawn_app().await;
    let concert = venue_concert(&app).await;
    put_plan(&app, concert, &plan(4, 1, 4))
        .await
        .assert_status(200);
    let path = format!("/api/concerts/{concert}");
    let without_balcony = json!({"categories": [
        {"name": "Stalls", "price": 6900, "currency": "EUR"},
        {"name": "Premium", "price": 12900, "currency": "EUR"},
    ]});
    let refused = app
        .patch(&path, Some(&app.admin_token), without_balcony)
        .await;
    refused.assert_problem(400, "VALIDATION_ERROR");
    assert_eq!(
        refused.body["errors"][0]["message"],
        "the seating plan's category \"Balcony\" needs a price category of that name"
    );
    // Reordered and repriced: each seat follows its plan category's name,
    // whatever rows the categories name.
    let reordered = json!({"categories": [
        {"name": "Balcony", "price": 2900, "currency": "EUR"},
        {"name": "Premium", "price": 14900, "currency": "EUR", "rows": ["A"]},
        {"name": "Stalls", "price": 7900, "currency": "EUR"},
    ]});
    app.patch(&path, Some(&app.admin_token), reordered)
        .await
        .assert_status(200);
    let seats = seats_with_categories(&app, concert).await;
    let category = |n: &str| seats.iter().find(|(s, _)| s == n).unwrap().1.clone();
    assert_eq!(category("Stalls-1-1"), "Premium");
    assert_eq!(category("Stalls-4-1"), "Stalls");
    assert_eq!(category("Balcony-1-4"), "Balcony");
    app.assert_invariants().await;

    // `ticket-api check` finds a seat moved out of its plan category.
    sqlx::query(
        "UPDATE seats SET category = 0 WHERE concert_id = ? AND seat_number = 'Stalls-1-1'",
    )
    .bind(concert)
    .execute(&app.pool)
    .await
    .unwrap();
    let mut conn = app.pool.acquire().await.unwrap();
    let violations =
        ticket_core::db::invariants::check(&mut conn, chrono::Duration::minutes(5), 5, None)
            .await
            .unwrap();
    assert_eq!(
        violations,
        [ticket_core::db::invariants::Violation {
            invariant: "a seat of a seating plan is not in the price category of its plan category's name",
            rows: 1,
        }]
    );
}

#[tokio::test]
async fn rows_and_seats_per_row_are_ranked_front_row_first_centre_first() {
    let app = spawn_app().await;
    let (concert, _) = app
        .concert_and_seats(json!({"rows": 2, "seatsPerRow": 4}))
        .await;
    let mut ranked = Vec::new();
    for number in ["A1", "A2", "A3", "A4", "B1", "B2", "B3", "B4"] {
        ranked.push(rank_of(&app, concert, number).await.2);
    }
    assert_eq!(ranked, [2, 0, 1, 3, 6, 4, 5, 7]);
    // A seat added one by one takes its row and place from its name, and
    // is offered after every seat of the layout.
    for number in ["C2", "VIP-1"] {
        app.post(
            "/api/seats",
            Some(&app.admin_token),
            json!({"concertId": concert, "seatNumber": number}),
        )
        .await
        .assert_status(201);
    }
    assert_eq!(
        rank_of(&app, concert, "C2").await,
        (2, 1, (1 << 31) + 2_001)
    );
    assert_eq!(
        rank_of(&app, concert, "VIP-1").await,
        (u32::MAX, 0, u32::MAX)
    );
}

#[tokio::test]
async fn a_concert_deleted_takes_its_plan_with_it() {
    let app = spawn_app().await;
    let concert = venue_concert(&app).await;
    put_plan(&app, concert, &plan(2, 1, 4))
        .await
        .assert_status(200);
    app.delete(&format!("/api/concerts/{concert}"), Some(&app.admin_token))
        .await
        .assert_status(204);
    assert_eq!(app.count("seating_plans").await, 0);
    assert_eq!(app.count("seats").await, 0);
}

/// A real-looking venue: the plan's stalls (premium rows in front) and
/// balcony, and a standing floor, sold from one line: the best two of the
/// stalls, the best two of the balcony, three places of the floor and a
/// premium seat by name, each at its category's price.
#[tokio::test]
async fn stalls_balcony_and_a_standing_floor_sell_from_one_line() {
    let app = spawn_app().await;
    let concert = app
        .concert(
            json!({"rows": 1, "seatsPerRow": 4, "maxSeatsPerOrder": 4, "categories": [
            {"name": "Stalls", "price": 6900, "currency": "EUR"},
            {"name": "Premium", "price": 12900, "currency": "EUR"},
            {"name": "Balcony", "price": 3900, "currency": "EUR"},
            {"name": "Standing", "price": 4900, "currency": "EUR"},
        ], "areas": [{"name": "Floor", "capacity": 20, "category": "Standing"}]}),
        )
        .await["id"]
        .as_u64()
        .unwrap();
    put_plan(&app, concert, &plan(8, 3, 12))
        .await
        .assert_status(200);
    let shown = app.get(&format!("/api/concerts/{concert}"), None).await;
    assert_eq!(
        shown.assert_status(200)["seatCount"],
        132 + 20,
        "the floor stays"
    );
    let premium = app
        .seats(concert)
        .await
        .iter()
        .find(|s| s["seatNumber"] == "Stalls-1-1")
        .unwrap()["id"]
        .as_u64()
        .unwrap();
    let asks = [
        json!({"concertId": concert, "category": "Stalls", "count": 2}),
        json!({"concertId": concert, "category": "Balcony", "count": 2}),
        json!({"concertId": concert, "area": "Floor", "count": 3}),
        json!({"seatId": premium}),
    ];
    let mut line = Vec::new();
    for (i, body) in asks.iter().enumerate() {
        let (_, token) = app.user(&format!("venue-fan{i}")).await;
        let queued = app
            .post("/api/reservations", Some(&token), body.clone())
            .await
            .assert_status(201)["queueId"]
            .as_u64()
            .unwrap();
        line.push((token, queued));
    }
    app.drain().await;
    let mut got = Vec::new();
    for (token, queued) in &line {
        let status = app.queue_status(token, *queued).await;
        assert_eq!(status["status"], "SUCCESS", "{status}");
        let reservation = app
            .get(
                &format!("/api/reservations/{}", status["reservationId"]),
                Some(token),
            )
            .await
            .assert_status(200)
            .clone();
        let mut numbers: Vec<String> = reservation["seats"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["seatNumber"].as_str().unwrap().to_owned())
            .collect();
        numbers.sort();
        got.push((numbers, reservation["total"].clone()));
    }
    let names = |list: &[&str]| list.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    assert_eq!(
        got,
        vec![
            // Premium takes rows 1 to 3: the stalls' best is row 4's centre.
            (names(&["Stalls-4-6", "Stalls-4-7"]), json!(13800)),
            (names(&["Balcony-1-6", "Balcony-1-7"]), json!(7800)),
            (names(&["Floor #1", "Floor #2", "Floor #3"]), json!(14700)),
            (names(&["Stalls-1-1"]), json!(12900)),
        ]
    );
    app.assert_invariants().await;
}

/// What the database or the process could not take is refused in words and
/// changes nothing (before: 500s, or the pod's memory): areas of any JSON
/// (now typed and bounded), a seat whose position adds up past what a
/// number holds, and a plan larger than its column.
#[tokio::test]
async fn a_plan_the_database_or_the_process_cannot_take_is_refused_never_a_500() {
    let app = spawn_app().await;
    let concert = venue_concert(&app).await;
    let before = seats_with_categories(&app, concert).await;

    let mut anything = plan(1, 1, 2);
    anything["zones"][0]["areas"] = json!([{"numbers": [1, 2, 3]}]);
    put_plan(&app, concert, &anything)
        .await
        .assert_problem(400, "VALIDATION_ERROR");
    let mut many = plan(1, 1, 2);
    many["zones"][0]["areas"] = json!(vec![
        json!({"width": 1, "height": 1, "position": {"x": 0, "y": 0}});
        1_001
    ]);
    let refused = put_plan(&app, concert, &many).await;
    refused.assert_problem(400, "VALIDATION_ERROR");
    assert_eq!(refused.error_fields(), ["areas"]);
    let mut far = plan(1, 1, 2);
    far["zones"][0]["position"]["x"] = json!(1e308);
    far["zones"][0]["rows"][0]["seats"][0]["position"]["x"] = json!(1e308);
    let refused = put_plan(&app, concert, &far).await;
    refused.assert_problem(400, "VALIDATION_ERROR");
    assert_eq!(refused.error_fields(), ["position"]);
    let mut named = plan(1, 1, 2);
    named["name"] = json!("n".repeat(201));
    let refused = put_plan(&app, concert, &named).await;
    refused.assert_problem(400, "VALIDATION_ERROR");
    assert_eq!(refused.error_fields(), ["name"]);
    let mut long = plan(1, 1, 2);
    long["name"] = json!("x".repeat(16 * 1024 * 1024));
    put_plan(&app, concert, &long)
        .await
        .assert_problem(413, "PAYLOAD_TOO_LARGE");
    assert_eq!(seats_with_categories(&app, concert).await, before);

    // The schema's areas and the editor's shapes are kept as given.
    let mut drawn = plan(1, 1, 2);
    drawn["zones"][0]["areas"] = json!([
        {"width": 200.0, "height": 40.0, "position": {"x": 0.0, "y": 0.0}, "text": "Stage", "color": "#333333"},
        {"uuid": "a1", "shape": "polygon", "position": {"x": 5.0, "y": 5.0}, "rotation": 0.0,
         "polygon": {"points": [{"x": 0.0, "y": 0.0}, {"x": 10.0, "y": 0.0}, {"x": 5.0, "y": 8.0}]},
         "text": {"text": "Bar", "position": {"x": 1.0, "y": 1.0}, "color": "#000000", "size": 12.0}},
    ]);
    put_plan(&app, concert, &drawn).await.assert_status(200);
    let kept = app
        .get(&format!("/api/concerts/{concert}/seating-plan"), None)
        .await;
    assert_eq!(
        kept.assert_status(200)["zones"][0]["areas"],
        drawn["zones"][0]["areas"]
    );
    app.assert_invariants().await;
}
