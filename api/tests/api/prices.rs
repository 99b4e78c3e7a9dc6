//! Prices (issue 31): a concert's categories by row, each seat's category
//! and price, the price a claim was decided at on holds, reservations and
//! events, and refusals that change nothing.
//!
//! Long because every place a price is carried (seats, claims, holds,
//! reservations, events) is checked on its own, beside the refusals.

use std::sync::Arc;

use serde_json::{Value, json};
use tokio::sync::Barrier;

use crate::helpers::{TestApp, order, spawn_app};

/// Standard (the first: rows no category names) and VIP (row A), in won.
fn two_categories(vip: u64) -> Value {
    json!([
        {"name": "Standard", "price": 90000, "currency": "KRW"},
        {"name": "VIP", "price": vip, "currency": "krw", "rows": ["a"]},
    ])
}

/// A concert of rows A–C, two seats each, priced; (id, seats by number).
async fn priced_concert(app: &TestApp, extra: Value) -> (u64, Vec<(String, u64)>) {
    let mut body = json!({"rows": 3, "seatsPerRow": 2, "categories": two_categories(150000)});
    if let (Some(body), Some(extra)) = (body.as_object_mut(), extra.as_object()) {
        body.extend(extra.clone());
    }
    let concert = app.concert(body).await;
    let id = concert["id"].as_u64().unwrap();
    let seats = app
        .seats(id)
        .await
        .iter()
        .map(|s| {
            (
                s["seatNumber"].as_str().unwrap().to_owned(),
                s["id"].as_u64().unwrap(),
            )
        })
        .collect();
    (id, seats)
}

fn seat(seats: &[(String, u64)], number: &str) -> u64 {
    seats.iter().find(|(n, _)| n == number).unwrap().1
}

async fn reservation_of_request(app: &TestApp, token: &str, queue_id: u64) -> Value {
    let status = app.queue_status(token, queue_id).await;
    assert_eq!(status["status"], "SUCCESS", "{status}");
    let id = status["reservationId"].as_u64().unwrap();
    app.get(&format!("/api/reservations/{id}"), Some(token))
        .await
        .assert_status(200)
        .clone()
}

async fn payloads(app: &TestApp, reservation: u64) -> Vec<Value> {
    let rows: Vec<(String,)> =
        sqlx::query_as("SELECT payload FROM outbox WHERE aggregate_id = ? ORDER BY id")
            .bind(reservation)
            .fetch_all(&app.pool)
            .await
            .unwrap();
    rows.into_iter()
        .map(|(p,)| serde_json::from_str(&p).unwrap())
        .collect()
}

#[tokio::test]
async fn seats_take_their_rows_category_and_price_everywhere_they_are_listed() {
    let app = spawn_app().await;
    let (concert, seats) = priced_concert(&app, json!({})).await;
    let detail = app.get(&format!("/api/concerts/{concert}"), None).await;
    let categories = &detail.assert_status(200)["categories"];
    assert_eq!(
        categories,
        &json!([
            {"name": "Standard", "price": 90000, "currency": "KRW", "rows": [], "colour": null},
            {"name": "VIP", "price": 150000, "currency": "KRW", "rows": ["A"], "colour": null},
        ])
    );
    let listed = app.seats(concert).await;
    let priced: Vec<(String, String, u64)> = listed
        .iter()
        .map(|s| {
            (
                s["seatNumber"].as_str().unwrap().to_owned(),
                s["category"].as_str().unwrap().to_owned(),
                s["price"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        priced,
        [
            ("A1", "VIP", 150000),
            ("A2", "VIP", 150000),
            ("B1", "Standard", 90000),
            ("B2", "Standard", 90000),
            ("C1", "Standard", 90000),
            ("C2", "Standard", 90000),
        ]
        .map(|(n, c, p)| (n.to_owned(), c.to_owned(), p))
    );
    let one = app
        .get(&format!("/api/seats/{}", seat(&seats, "A1")), None)
        .await;
    assert_eq!(
        (
            &one.body["category"],
            &one.body["price"],
            &one.body["currency"]
        ),
        (&json!("VIP"), &json!(150000), &json!("KRW"))
    );
    let map = app
        .get(&format!("/api/concerts/{concert}/seat-map"), None)
        .await;
    let map = map.assert_status(200);
    assert_eq!(map["seatCategories"], json!([1, 1, 0, 0, 0, 0]));
    assert_eq!(map["categories"][1]["name"], "VIP");
    assert_eq!(map["categories"][0]["price"], 90000);

    // A concert without categories: no prices anywhere, as before.
    let plain = app.concert(json!({"rows": 1, "seatsPerRow": 2})).await;
    let plain_id = plain["id"].as_u64().unwrap();
    assert_eq!(plain["categories"], json!([]));
    let seat = &app.seats(plain_id).await[0];
    assert!(seat["category"].is_null() && seat["price"].is_null());
}

#[tokio::test]
async fn bad_categories_are_refused_and_change_nothing() {
    let app = spawn_app().await;
    let admin = app.admin_token.clone();
    for (categories, why) in [
        (json!([]), "at least one"),
        (
            json!([{"name": "A", "price": 1, "currency": "EUR"}, {"name": "B", "price": 1, "currency": "USD"}]),
            "same currency",
        ),
        (
            json!([{"name": "VIP", "price": 1, "currency": "EUR"}, {"name": "vip", "price": 2, "currency": "EUR"}]),
            "twice",
        ),
        (
            json!([{"name": "X", "price": 1, "currency": "EUR", "rows": ["A"]}, {"name": "Y", "price": 1, "currency": "EUR", "rows": ["A"]}]),
            "two categories",
        ),
        (
            json!([{"name": "X", "price": 1, "currency": "EUX"}]),
            "ISO 4217",
        ),
        (
            json!([{"name": "X", "price": 100000000001_u64, "currency": "EUR"}]),
            "at most",
        ),
    ] {
        let reply = app
            .post(
                "/api/concerts",
                Some(&admin),
                json!({"title": "T", "venue": "V", "concertDate": "2099-05-01T19:00:00Z", "categories": categories}),
            )
            .await;
        let body = reply.assert_problem(400, "VALIDATION_ERROR").to_string();
        assert!(body.contains(why), "{why}: {body}");
    }
    // Not a whole number of minor units: no floating point anywhere.
    for price in [json!(1.5), json!(-1), json!("100")] {
        app.post(
            "/api/concerts",
            Some(&admin),
            json!({"title": "T", "venue": "V", "concertDate": "2099-05-01T19:00:00Z",
                   "categories": [{"name": "X", "price": price, "currency": "EUR"}]}),
        )
        .await
        .assert_problem(400, "VALIDATION_ERROR");
    }
    assert_eq!(app.count("concerts").await, 0);

    let (concert, _) = priced_concert(&app, json!({})).await;
    let reply = app
        .patch(
            &format!("/api/concerts/{concert}"),
            Some(&admin),
            json!({"title": "Renamed", "categories": [{"name": "X", "price": 1, "currency": "EUR"}, {"name": "x", "price": 1, "currency": "EUR"}]}),
        )
        .await;
    reply.assert_problem(400, "VALIDATION_ERROR");
    let detail = app.get(&format!("/api/concerts/{concert}"), None).await;
    assert_ne!(detail.body["title"], "Renamed");
    assert_eq!(detail.body["categories"][1]["price"], 150000);
    let user = app.user("alice").await.1;
    app.patch(
        &format!("/api/concerts/{concert}"),
        Some(&user),
        json!({"categories": two_categories(1)}),
    )
    .await
    .assert_problem(403, "FORBIDDEN");
}

#[tokio::test]
async fn a_hold_carries_the_prices_it_was_decided_at_to_the_confirm_and_its_event() {
    let app = spawn_app().await;
    let (concert, seats) = priced_concert(&app, json!({"holdSeconds": 600})).await;
    let (_, alice) = app.user("alice").await;
    let queued = order(&app, &alice, &[seat(&seats, "A1"), seat(&seats, "B1")])
        .await
        .assert_status(201)["queueId"]
        .as_u64()
        .unwrap();
    app.drain().await;
    let held = reservation_of_request(&app, &alice, queued).await;
    assert_eq!(held["status"], "HELD");
    assert_eq!(
        (&held["total"], &held["currency"]),
        (&json!(240000), &json!("KRW"))
    );
    let prices: Vec<(&str, u64)> = held["seats"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["category"].as_str().unwrap(),
                s["price"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(prices, [("VIP", 150000), ("Standard", 90000)]);

    // The VIP price goes up during the hold: the hold keeps its price, a
    // seat decided afterwards has the new one.
    app.patch(
        &format!("/api/concerts/{concert}"),
        Some(&app.admin_token),
        json!({"categories": two_categories(200000)}),
    )
    .await
    .assert_status(200);
    let id = held["reservationId"].as_u64().unwrap();
    let confirmed = app
        .post(
            &format!("/api/reservations/{id}/confirm"),
            Some(&app.admin_token),
            json!({"paymentReference": "pi_1"}),
        )
        .await;
    assert_eq!(confirmed.assert_status(200)["total"], 240000);
    let events = payloads(&app, id).await;
    assert_eq!(events.len(), 2);
    for event in &events {
        assert_eq!(
            (&event["total"], &event["currency"]),
            (&json!(240000), &json!("KRW"))
        );
        assert_eq!(event["seats"][0]["price"], 150000);
        assert_eq!(event["seats"][0]["category"], "VIP");
    }
    let (_, bob) = app.user("bob").await;
    let later = order(&app, &bob, &[seat(&seats, "A2")])
        .await
        .assert_status(201)["queueId"]
        .as_u64()
        .unwrap();
    app.drain().await;
    let later = reservation_of_request(&app, &bob, later).await;
    assert_eq!(later["total"], 200000);

    // The cancel's event names what to refund: what was paid (a fan may
    // not give back a paid order past `refundableUntil`: the box office
    // does).
    app.post(
        &format!("/api/reservations/{id}/cancel"),
        Some(&app.admin_token),
        json!({}),
    )
    .await
    .assert_status(200);
    let events = payloads(&app, id).await;
    assert_eq!(events[2]["status"], "CANCELLED");
    assert_eq!(events[2]["total"], 240000);
    app.assert_invariants().await;
}

#[tokio::test]
async fn an_unsold_seat_changes_category_and_a_held_one_does_not() {
    let app = spawn_app().await;
    let (_, seats) = priced_concert(&app, json!({"holdSeconds": 600})).await;
    let admin = app.admin_token.clone();
    let c1 = seat(&seats, "C1");
    let moved = app
        .patch(
            &format!("/api/seats/{c1}"),
            Some(&admin),
            json!({"category": "vip"}),
        )
        .await;
    let moved = moved.assert_status(200);
    assert_eq!(
        (&moved["category"], &moved["price"]),
        (&json!("VIP"), &json!(150000))
    );
    app.patch(
        &format!("/api/seats/{c1}"),
        Some(&admin),
        json!({"category": "Balcony"}),
    )
    .await
    .assert_problem(400, "VALIDATION_ERROR");

    let (_, alice) = app.user("alice").await;
    let b1 = seat(&seats, "B1");
    order(&app, &alice, &[b1]).await.assert_status(201);
    app.drain().await;
    app.patch(
        &format!("/api/seats/{b1}"),
        Some(&admin),
        json!({"category": "VIP"}),
    )
    .await
    .assert_problem(409, "SEAT_STATUS_CONFLICT");
    let b1_now = app.get(&format!("/api/seats/{b1}"), None).await;
    assert_eq!(b1_now.body["category"], "Standard");

    // A seat added later takes its row's category.
    let concert = app.get(&format!("/api/seats/{b1}"), None).await.body["concertId"]
        .as_u64()
        .unwrap();
    let added = app
        .post(
            "/api/seats",
            Some(&admin),
            json!({"concertId": concert, "seatNumber": "A9"}),
        )
        .await;
    assert_eq!(added.assert_status(201)["category"], "VIP");
}

/// Prices change while two-seat orders are decided: a reservation's seats
/// are priced all before the change or all after it, never half and half,
/// and each claim's price is one the category had.
#[tokio::test]
async fn a_price_change_during_decisions_prices_each_order_wholly_old_or_new() {
    let app = spawn_app().await;
    let (concert, seats) = app
        .concert_and_seats(json!({"rows": 1, "seatsPerRow": 40, "maxSeatsPerUser": 2,
            "categories": [{"name": "Floor", "price": 1000, "currency": "EUR"}]}))
        .await;
    let users = app.many_users("fan", 20).await;
    for ((_, token), pair) in users.iter().zip(seats.chunks(2)) {
        order(&app, token, pair).await.assert_status(201);
    }
    let barrier = Arc::new(Barrier::new(2));
    let change = {
        let app = TestApp::sharing_database(&app, app.base.clone());
        let barrier = barrier.clone();
        tokio::spawn(async move {
            barrier.wait().await;
            app.patch(
                &format!("/api/concerts/{concert}"),
                Some(&app.admin_token),
                json!({"categories": [{"name": "Floor", "price": 2000, "currency": "EUR"}]}),
            )
            .await
            .assert_status(200);
        })
    };
    barrier.wait().await;
    app.run_workers_until_drained(2).await;
    change.await.unwrap();
    let rows: Vec<(u64, u64, u64)> = sqlx::query_as(
        "SELECT reservation_id, MIN(price), MAX(price) FROM reservation_seats GROUP BY reservation_id",
    )
    .fetch_all(&app.pool)
    .await
    .unwrap();
    assert_eq!(rows.len(), 20);
    for (reservation, low, high) in rows {
        assert_eq!(low, high, "reservation {reservation} has two prices");
        assert!(
            low == 1000 || low == 2000,
            "reservation {reservation}: {low}"
        );
    }
    app.assert_invariants().await;
}

/// A category's colour (what the seat map paints it in) is kept as sent,
/// lowercase; one that is no `#rrggbb` is refused and nothing is written.
#[tokio::test]
async fn a_category_keeps_its_colour_and_a_bad_one_is_refused() {
    let app = spawn_app().await;
    let made = app
        .concert(json!({"rows": 1, "seatsPerRow": 2, "categories": [
            {"name": "VIP", "price": 100, "currency": "EUR", "colour": "#C0392B"}]}))
        .await;
    assert_eq!(made["categories"][0]["colour"], "#c0392b");
    let concert = made["id"].as_u64().unwrap();
    let before = app.count("concerts").await;
    let refused = app
        .post(
            "/api/concerts",
            Some(&app.admin_token),
            json!({"title": "T", "venue": "V", "concertDate": "2099-01-01T10:00:00Z",
                   "categories": [{"name": "VIP", "price": 100, "currency": "EUR", "colour": "red"}]}),
        )
        .await;
    assert_eq!(
        refused.assert_problem(400, "VALIDATION_ERROR")["errors"][0]["field"],
        "categories"
    );
    assert_eq!(app.count("concerts").await, before);
    let unchanged = app
        .patch(
            &format!("/api/concerts/{concert}"),
            Some(&app.admin_token),
            json!({"categories": [{"name": "VIP", "price": 100, "currency": "EUR", "colour": "#12345"}]}),
        )
        .await;
    unchanged.assert_problem(400, "VALIDATION_ERROR");
    let shown = app.get(&format!("/api/concerts/{concert}"), None).await;
    assert_eq!(
        shown.assert_status(200)["categories"][0]["colour"],
        "#c0392b"
    );
}

/// A category that an open request by count or a waiting fan names keeps
/// its place and its name while they wait: a list that moves or renames
/// it is refused (before, the request was asked of another category at
/// another price); its price may change, and once the request is decided
/// the categories are free to change.
#[tokio::test]
async fn a_category_asked_for_by_count_keeps_its_place_and_name_while_asked() {
    let app = spawn_app().await;
    let (concert, _) = priced_concert(&app, json!({"holdSeconds": 600})).await;
    let (_, fan) = app.user("counting").await;
    let asked = app
        .post(
            "/api/reservations",
            Some(&fan),
            json!({"concertId": concert, "category": "VIP", "count": 1}),
        )
        .await;
    let asked = asked.assert_status(201)["queueId"].as_u64().unwrap();
    let path = format!("/api/concerts/{concert}");
    let swapped = json!({"categories": [
        {"name": "VIP", "price": 150000, "currency": "KRW", "rows": ["A"]},
        {"name": "Standard", "price": 90000, "currency": "KRW"}]});
    let renamed = json!({"categories": [
        {"name": "Standard", "price": 90000, "currency": "KRW"},
        {"name": "Royal", "price": 150000, "currency": "KRW", "rows": ["A"]}]});
    for refused in [swapped.clone(), renamed] {
        app.patch(&path, Some(&app.admin_token), refused)
            .await
            .assert_problem(409, "CATEGORIES_IN_USE");
    }
    let shown = app.get(&path, None).await;
    assert_eq!(shown.body["categories"][1]["name"], "VIP");
    // A new price, or a category added after, is fine.
    app.patch(
        &path,
        Some(&app.admin_token),
        json!({"categories": two_categories(160000)}),
    )
    .await
    .assert_status(200);
    app.drain().await;
    let decided = app.queue_status(&fan, asked).await;
    assert_eq!(decided["status"], "SUCCESS", "{decided}");
    let won = reservation_of_request(&app, &fan, asked).await;
    assert_eq!(won["seats"][0]["category"], "VIP");
    assert_eq!(won["seats"][0]["price"], 160000);
    // Decided: the list may change as the operator likes.
    app.patch(&path, Some(&app.admin_token), swapped)
        .await
        .assert_status(200);
    app.assert_invariants().await;
}

/// Requests by count and the operator's reordering of the categories at
/// the same moment: each request is decided in the category it named,
/// whichever committed first. The name is read where the request is
/// written, under the line's lock that the change takes too (before, a
/// place read just ahead of a swap was written after it, and the request
/// was decided in the other category, at the other price).
#[tokio::test]
async fn requests_by_count_racing_a_reorder_are_each_decided_in_the_category_they_named() {
    let app = spawn_app().await;
    let rows = |from: char, to: char| (from..=to).map(String::from).collect::<Vec<_>>();
    let standard = |rows: Option<Vec<String>>| {
        let mut c = json!({"name": "Standard", "price": 90000, "currency": "KRW"});
        if let Some(rows) = rows {
            c["rows"] = json!(rows);
        }
        c
    };
    let vip = json!({"name": "VIP", "price": 150000, "currency": "KRW", "rows": rows('A', 'J')});
    // The same seats in each category either way round.
    let in_order = json!({"categories": [standard(None), vip.clone()]});
    let swapped = json!({"categories": [vip, standard(Some(rows('K', 'T')))]});
    let concert = app
        .concert(json!({"rows": 20, "seatsPerRow": 10, "holdSeconds": 600,
            "categories": in_order["categories"].clone()}))
        .await["id"]
        .as_u64()
        .unwrap();
    let fans = app.many_users("reorder", 40).await;
    let path = format!("/api/concerts/{concert}");
    let ask = |i: usize, token: String| {
        let app = &app;
        async move {
            let category = if i.is_multiple_of(2) {
                "VIP"
            } else {
                "Standard"
            };
            let reply = app
                .post(
                    "/api/reservations",
                    Some(&token),
                    json!({"concertId": concert, "category": category, "count": 1}),
                )
                .await;
            let queued = reply.assert_status(201)["queueId"].as_u64().unwrap();
            (token, queued, category)
        }
    };
    let operator = async {
        let mut answers = Vec::new();
        for round in 0..12 {
            let list = if round % 2 == 0 { &swapped } else { &in_order };
            let reply = app.patch(&path, Some(&app.admin_token), list.clone()).await;
            answers.push(reply.status.as_u16());
        }
        answers
    };
    let (asked, answers) = tokio::join!(
        futures::future::join_all(
            fans.into_iter()
                .enumerate()
                .map(|(i, (_, token))| ask(i, token))
        ),
        operator
    );
    assert!(
        answers.iter().all(|s| *s == 200 || *s == 409),
        "{answers:?}"
    );
    app.drain().await;
    for (token, queued, category) in asked {
        let won = reservation_of_request(&app, &token, queued).await;
        assert_eq!(
            won["seats"][0]["category"], category,
            "request {queued} (operator's answers {answers:?})"
        );
    }
    app.assert_invariants().await;
}
