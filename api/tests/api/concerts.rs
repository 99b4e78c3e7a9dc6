use serde_json::json;

use crate::helpers::spawn_app;

#[tokio::test]
async fn a_new_concert_gets_the_original_hundred_seats() {
    let app = spawn_app().await;
    let reply = app
        .post(
            "/api/concerts",
            Some(&app.admin_token),
            json!({"title": " IU Live ", "venue": "Olympic Hall", "concertDate": "2099-05-01T19:00:00+09:00"}),
        )
        .await;
    let concert = reply.assert_status(201);
    let id = concert["id"].as_u64().unwrap();
    assert_eq!(
        reply.headers.get("location").unwrap(),
        &format!("/api/concerts/{id}")
    );
    assert_eq!(concert["title"], "IU Live");
    assert_eq!(concert["seatCount"], 100);
    assert_eq!(
        concert["concertDate"], "2099-05-01T10:00:00Z",
        "stored and returned in UTC"
    );
    let seats = app.seats(id).await;
    let numbers: Vec<_> = seats
        .iter()
        .map(|s| s["seatNumber"].as_str().unwrap())
        .collect();
    assert_eq!(numbers.len(), 100);
    assert_eq!(
        (numbers[0], numbers[1], numbers[9], numbers[99]),
        ("A1", "A2", "A10", "A100")
    );
    assert!(seats.iter().all(|s| s["status"] == "AVAILABLE"));
}

#[tokio::test]
async fn layouts_letter_rows_past_z() {
    let app = spawn_app().await;
    let concert = app.concert(json!({"rows": 28, "seatsPerRow": 2})).await;
    assert_eq!(concert["seatCount"], 56);
    let seats = app.seats(concert["id"].as_u64().unwrap()).await;
    let numbers: Vec<_> = seats
        .iter()
        .map(|s| s["seatNumber"].as_str().unwrap())
        .collect();
    assert_eq!(&numbers[..3], ["A1", "A2", "B1"]);
    assert_eq!(&numbers[50..], ["Z1", "Z2", "AA1", "AA2", "AB1", "AB2"]);
}

#[tokio::test]
async fn a_hundred_thousand_seats_in_one_transaction_and_no_more() {
    let app = spawn_app().await;
    let concert = app.concert(json!({"rows": 100, "seatsPerRow": 1000})).await;
    assert_eq!(concert["seatCount"], 100_000);
    assert_eq!(app.count("seats").await, 100_000);
    let detail = app
        .get(&format!("/api/concerts/{}", concert["id"]), None)
        .await;
    assert_eq!(detail.assert_status(200)["availableSeats"], 100_000);

    let too_big = app
        .post(
            "/api/concerts",
            Some(&app.admin_token),
            json!({"title": "t", "venue": "v", "concertDate": "2099-01-01T00:00:00Z", "rows": 100, "seatsPerRow": 1001}),
        )
        .await;
    too_big.assert_problem(400, "VALIDATION_ERROR");
    assert_eq!(app.count("concerts").await, 1);
}

#[tokio::test]
async fn concert_input_is_validated_and_nothing_is_written_on_failure() {
    let app = spawn_app().await;
    let admin = Some(app.admin_token.as_str());
    let reply = app
        .post(
            "/api/concerts",
            admin,
            json!({"title": "", "venue": "", "concertDate": "2001-01-01T00:00:00Z", "rows": 0}),
        )
        .await;
    reply.assert_problem(400, "VALIDATION_ERROR");
    assert_eq!(
        reply.error_fields(),
        ["title", "venue", "concertDate", "rows"]
    );
    for date in ["2099-13-01T00:00:00Z", "2099-05-01", "next friday"] {
        let reply = app
            .post(
                "/api/concerts",
                admin,
                json!({"title": "t", "venue": "v", "concertDate": date}),
            )
            .await;
        reply.assert_problem(400, "VALIDATION_ERROR");
        assert_eq!(reply.error_fields(), ["concertDate"]);
    }
    assert_eq!(app.count("concerts").await, 0);
    assert_eq!(app.count("seats").await, 0);
}

#[tokio::test]
async fn only_admins_manage_concerts() {
    let app = spawn_app().await;
    let (_, user) = app.user("alice").await;
    let concert = app.concert(json!({})).await;
    let path = format!("/api/concerts/{}", concert["id"]);
    let body = json!({"title": "t", "venue": "v", "concertDate": "2099-01-01T00:00:00Z"});
    app.post("/api/concerts", Some(&user), body.clone())
        .await
        .assert_problem(403, "FORBIDDEN");
    app.post("/api/concerts", None, body)
        .await
        .assert_problem(401, "UNAUTHORIZED");
    app.patch(&path, Some(&user), json!({"title": "x"}))
        .await
        .assert_problem(403, "FORBIDDEN");
    app.delete(&path, Some(&user))
        .await
        .assert_problem(403, "FORBIDDEN");
    app.delete(&path, None)
        .await
        .assert_problem(401, "UNAUTHORIZED");
    assert_eq!(app.count("concerts").await, 1);
}

#[tokio::test]
async fn concerts_are_listed_soonest_show_first_in_pages() {
    let app = spawn_app().await;
    // Made latest show first; one of them played already.
    let mut ids = Vec::new();
    for i in 0..5 {
        let date = format!("209{}-05-01T19:00:00+09:00", 9 - i);
        ids.push(
            app.concert(json!({"title": format!("concert {i}"), "rows": 1, "seatsPerRow": 1, "concertDate": date}))
                .await["id"]
                .as_u64()
                .unwrap(),
        );
    }
    sqlx::query("UPDATE concerts SET concert_date = '2020-01-01' WHERE id = ?")
        .bind(ids[2])
        .execute(&app.pool)
        .await
        .unwrap();
    let ids = [ids[2], ids[0], ids[1], ids[3], ids[4]];
    let page = app.get("/api/concerts?page=0&size=2", None).await;
    let body = page.assert_status(200);
    assert_eq!(body["totalElements"], 5);
    assert_eq!(body["totalPages"], 3);
    assert_eq!(
        (body["page"].as_u64(), body["size"].as_u64()),
        (Some(0), Some(2))
    );
    let first: Vec<_> = body["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_u64().unwrap())
        .collect();
    assert_eq!(first, [ids[4], ids[3]]);
    let last = app.get("/api/concerts?page=2&size=2", None).await;
    assert_eq!(last.body["content"].as_array().unwrap().len(), 1);
    assert_eq!(last.body["content"][0]["id"], ids[0]);
    let default = app.get("/api/concerts", None).await;
    assert_eq!(default.body["size"], 20);

    for query in [
        "size=0", "size=101", "page=-1", "page=abc", "size=1.5", "bogus=1",
    ] {
        app.get(&format!("/api/concerts?{query}"), None)
            .await
            .assert_problem(400, "VALIDATION_ERROR");
    }
}

#[tokio::test]
async fn a_concert_shows_its_seat_counts() {
    let app = spawn_app().await;
    let (alice, _) = app.user("alice").await;
    let concert = app.concert(json!({"rows": 2, "seatsPerRow": 5})).await;
    let id = concert["id"].as_u64().unwrap();
    let seats = app.seats(id).await;
    app.book_directly(alice, seats[0]["id"].as_u64().unwrap())
        .await;
    app.book_directly(alice, seats[7]["id"].as_u64().unwrap())
        .await;
    let detail = app.get(&format!("/api/concerts/{id}"), None).await;
    let body = detail.assert_status(200);
    assert_eq!(
        (
            body["availableSeats"].as_u64(),
            body["reservedSeats"].as_u64()
        ),
        (Some(8), Some(2))
    );
    assert_eq!(body["seatCount"], 10);
    app.get("/api/concerts/999999", None)
        .await
        .assert_problem(404, "CONCERT_NOT_FOUND");
}

#[tokio::test]
async fn admins_update_concerts() {
    let app = spawn_app().await;
    let admin = Some(app.admin_token.as_str());
    let concert = app.concert(json!({})).await;
    let path = format!("/api/concerts/{}", concert["id"]);
    let reply = app
        .patch(
            &path,
            admin,
            json!({"venue": "Gocheok Dome", "concertDate": "2099-06-01T18:00:00Z"}),
        )
        .await;
    let body = reply.assert_status(200);
    assert_eq!(body["venue"], "Gocheok Dome");
    assert_eq!(body["title"], "IU Live", "untouched fields stay");
    assert_eq!(body["concertDate"], "2099-06-01T18:00:00Z");
    app.patch(&path, admin, json!({"concertDate": "2000-01-01T00:00:00Z"}))
        .await
        .assert_problem(400, "VALIDATION_ERROR");
    app.patch(&path, admin, json!({"title": "x".repeat(201)}))
        .await
        .assert_problem(400, "VALIDATION_ERROR");
    app.patch("/api/concerts/999999", admin, json!({"title": "x"}))
        .await
        .assert_problem(404, "CONCERT_NOT_FOUND");
    assert_eq!(app.get(&path, None).await.body["venue"], "Gocheok Dome");
}

#[tokio::test]
async fn a_concert_with_sold_seats_cannot_be_deleted() {
    let app = spawn_app().await;
    let admin = Some(app.admin_token.as_str());
    let (alice, _) = app.user("alice").await;
    let sold = app.concert(json!({"rows": 1, "seatsPerRow": 3})).await;
    let seat = app.seats(sold["id"].as_u64().unwrap()).await[1]["id"]
        .as_u64()
        .unwrap();
    app.book_directly(alice, seat).await;
    let path = format!("/api/concerts/{}", sold["id"]);
    app.delete(&path, admin)
        .await
        .assert_problem(409, "CONCERT_DELETE_FORBIDDEN");
    assert_eq!(app.count("seats").await, 3, "nothing deleted");

    let unsold = app.concert(json!({"rows": 1, "seatsPerRow": 3})).await;
    let path = format!("/api/concerts/{}", unsold["id"]);
    app.delete(&path, admin).await.assert_status(204);
    app.get(&path, None)
        .await
        .assert_problem(404, "CONCERT_NOT_FOUND");
    app.get(&format!("{path}/seats"), None)
        .await
        .assert_problem(404, "CONCERT_NOT_FOUND");
    assert_eq!(
        app.count("seats").await,
        3,
        "only the unsold concert's seats went"
    );
    app.delete(&path, admin)
        .await
        .assert_problem(404, "CONCERT_NOT_FOUND");
}

/// A concert is shown in its venue's time zone: the zone is the server's
/// unless set, names the abbreviation at each time (by the season), and a
/// zone the tz database does not know changes nothing.
#[tokio::test]
async fn a_concert_has_its_venues_time_zone_and_its_names_by_the_season() {
    let app = spawn_app().await;
    let plain = app.concert(json!({"rows": 1, "seatsPerRow": 1})).await;
    assert_eq!(
        plain["timeZone"], "UTC",
        "the server's (the tests run in UTC)"
    );
    assert_eq!(plain["timeZoneNames"]["concertDate"], "UTC");

    let seoul = app
        .concert(json!({
            "rows": 1, "seatsPerRow": 1, "timeZone": "Asia/Seoul",
            "concertDate": "2099-09-09T18:00:00+09:00", "opensAt": "2099-01-09T10:00:00+09:00",
        }))
        .await;
    assert_eq!(seoul["timeZone"], "Asia/Seoul");
    assert_eq!(
        seoul["concertDate"], "2099-09-09T09:00:00Z",
        "times stay UTC"
    );
    assert_eq!(
        seoul["timeZoneNames"],
        json!({"concertDate": "KST", "opensAt": "KST", "presaleStartsAt": null, "refundableUntil": null})
    );
    let id = seoul["id"].as_u64().unwrap();
    let path = format!("/api/concerts/{id}");

    let moved = app
        .patch(
            &path,
            Some(&app.admin_token),
            json!({"timeZone": "Europe/Berlin"}),
        )
        .await;
    let moved = moved.assert_status(200);
    assert_eq!(moved["timeZone"], "Europe/Berlin");
    assert_eq!(moved["timeZoneNames"]["concertDate"], "CEST", "September");
    assert_eq!(moved["timeZoneNames"]["opensAt"], "CET", "January");

    for zone in ["Seoul", "", "Mars/Olympus_Mons"] {
        let reply = app
            .patch(
                &path,
                Some(&app.admin_token),
                json!({"timeZone": zone, "title": "Changed"}),
            )
            .await;
        reply.assert_problem(400, "VALIDATION_ERROR");
        assert_eq!(reply.error_fields(), vec!["timeZone".to_owned()], "{zone}");
    }
    let reply = app
        .post(
            "/api/concerts",
            Some(&app.admin_token),
            json!({"title": "T", "venue": "V", "concertDate": "2099-09-09T18:00:00+09:00", "timeZone": "KST"}),
        )
        .await;
    reply.assert_problem(400, "VALIDATION_ERROR");
    let after = app.get(&path, None).await;
    let after = after.assert_status(200);
    assert_eq!(
        (&after["title"], &after["timeZone"]),
        (&seoul["title"], &json!("Europe/Berlin"))
    );
}
