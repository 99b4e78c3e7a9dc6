use serde_json::json;

use crate::helpers::{TestApp, spawn_app};

async fn concert_with_seats(app: &TestApp, rows: u32, per_row: u32) -> (u64, Vec<u64>) {
    app.concert_and_seats(json!({"rows": rows, "seatsPerRow": per_row}))
        .await
}

#[tokio::test]
async fn seats_are_listed_in_natural_order_and_filtered_by_status() {
    let app = spawn_app().await;
    let (alice, _) = app.user("alice").await;
    let (concert, seats) = concert_with_seats(&app, 2, 12).await;
    // Added seats take their natural place, whatever the insertion order.
    for number in ["A13", "A0", "B3a", "AA1"] {
        app.post(
            "/api/seats",
            Some(&app.admin_token),
            json!({"concertId": concert, "seatNumber": number}),
        )
        .await
        .assert_status(201);
    }
    let listed = app.seats(concert).await;
    let numbers: Vec<_> = listed
        .iter()
        .map(|s| s["seatNumber"].as_str().unwrap())
        .collect();
    assert_eq!(&numbers[..4], ["A0", "A1", "A2", "A3"]);
    assert_eq!(&numbers[9..15], ["A9", "A10", "A11", "A12", "A13", "B1"]);
    assert_eq!(numbers.last(), Some(&"AA1"));
    assert!(numbers.contains(&"B3a"));

    app.book_directly(alice, seats[3]).await;
    let reserved = app
        .get(
            &format!("/api/concerts/{concert}/seats?status=RESERVED"),
            None,
        )
        .await;
    let reserved = reserved.assert_status(200).as_array().unwrap().clone();
    assert_eq!(reserved.len(), 1);
    assert_eq!(reserved[0]["id"], seats[3]);
    let available = app
        .get(
            &format!("/api/concerts/{concert}/seats?status=AVAILABLE"),
            None,
        )
        .await;
    assert_eq!(available.body.as_array().unwrap().len(), 27);
    app.get(&format!("/api/concerts/{concert}/seats?status=SOLD"), None)
        .await
        .assert_problem(400, "VALIDATION_ERROR");
    app.get("/api/concerts/999999/seats", None)
        .await
        .assert_problem(404, "CONCERT_NOT_FOUND");
}

#[tokio::test]
async fn one_seat_by_id() {
    let app = spawn_app().await;
    let (concert, seats) = concert_with_seats(&app, 1, 3).await;
    let seat = app.get(&format!("/api/seats/{}", seats[2]), None).await;
    let body = seat.assert_status(200);
    assert_eq!(
        (body["seatNumber"].as_str(), body["concertId"].as_u64()),
        (Some("A3"), Some(concert))
    );
    assert_eq!(body["status"], "AVAILABLE");
    app.get("/api/seats/999999", None)
        .await
        .assert_problem(404, "SEAT_NOT_FOUND");
}

#[tokio::test]
async fn admins_add_seats_with_unique_numbers() {
    let app = spawn_app().await;
    let admin = Some(app.admin_token.as_str());
    let (_, user) = app.user("alice").await;
    let (concert, _) = concert_with_seats(&app, 1, 3).await;
    let reply = app
        .post(
            "/api/seats",
            admin,
            json!({"concertId": concert, "seatNumber": "VIP-1"}),
        )
        .await;
    let seat = reply.assert_status(201);
    assert_eq!(seat["status"], "AVAILABLE");
    assert_eq!(
        reply.headers.get("location").unwrap(),
        &format!("/api/seats/{}", seat["id"])
    );
    assert_eq!(
        app.get(&format!("/api/concerts/{concert}"), None)
            .await
            .body["seatCount"],
        4
    );

    for taken in ["A1", "a1", "VIP-1"] {
        let reply = app
            .post(
                "/api/seats",
                admin,
                json!({"concertId": concert, "seatNumber": taken}),
            )
            .await;
        reply.assert_problem(409, "SEAT_DUPLICATED");
    }
    app.post(
        "/api/seats",
        admin,
        json!({"concertId": 999999, "seatNumber": "Z1"}),
    )
    .await
    .assert_problem(404, "CONCERT_NOT_FOUND");
    app.post(
        "/api/seats",
        admin,
        json!({"concertId": concert, "seatNumber": "A 1"}),
    )
    .await
    .assert_problem(400, "VALIDATION_ERROR");
    app.post(
        "/api/seats",
        Some(&user),
        json!({"concertId": concert, "seatNumber": "Z1"}),
    )
    .await
    .assert_problem(403, "FORBIDDEN");
    app.post(
        "/api/seats",
        None,
        json!({"concertId": concert, "seatNumber": "Z1"}),
    )
    .await
    .assert_problem(401, "UNAUTHORIZED");
    assert_eq!(app.count("seats").await, 4);
    assert_eq!(
        app.get(&format!("/api/concerts/{concert}"), None)
            .await
            .body["seatCount"],
        4
    );
}

#[tokio::test]
async fn seat_changes_never_contradict_a_confirmed_reservation() {
    let app = spawn_app().await;
    let admin = Some(app.admin_token.as_str());
    let (alice, user) = app.user("alice").await;
    let (_, seats) = concert_with_seats(&app, 1, 3).await;
    let (free, sold) = (
        format!("/api/seats/{}", seats[0]),
        format!("/api/seats/{}", seats[1]),
    );
    app.book_directly(alice, seats[1]).await;

    // The sold seat stays RESERVED and keeps its number.
    app.patch(&sold, admin, json!({"status": "AVAILABLE"}))
        .await
        .assert_problem(409, "SEAT_STATUS_CONFLICT");
    app.patch(&sold, admin, json!({"seatNumber": "A99"}))
        .await
        .assert_problem(409, "SEAT_STATUS_CONFLICT");
    assert_eq!(
        app.patch(&sold, admin, json!({"status": "RESERVED"}))
            .await
            .assert_status(200)["status"],
        "RESERVED"
    );
    // A free seat cannot be marked RESERVED without a reservation.
    app.patch(&free, admin, json!({"status": "RESERVED"}))
        .await
        .assert_problem(409, "SEAT_STATUS_CONFLICT");
    let renamed = app.patch(&free, admin, json!({"seatNumber": "A0"})).await;
    assert_eq!(renamed.assert_status(200)["seatNumber"], "A0");
    assert_eq!(
        app.seats(
            app.get(&free, None).await.body["concertId"]
                .as_u64()
                .unwrap()
        )
        .await[0]["seatNumber"],
        "A0"
    );
    app.patch(&free, admin, json!({"seatNumber": "A3"}))
        .await
        .assert_problem(409, "SEAT_DUPLICATED");
    app.patch(&free, admin, json!({"status": "GONE"}))
        .await
        .assert_problem(400, "VALIDATION_ERROR");
    app.patch(&free, Some(&user), json!({"seatNumber": "A7"}))
        .await
        .assert_problem(403, "FORBIDDEN");
    app.patch("/api/seats/999999", admin, json!({"seatNumber": "A7"}))
        .await
        .assert_problem(404, "SEAT_NOT_FOUND");

    // A seat left RESERVED without a reservation (repair) may be freed.
    sqlx::query("UPDATE seats SET status = 'RESERVED' WHERE id = ?")
        .bind(seats[2])
        .execute(&app.pool)
        .await
        .unwrap();
    let repaired = app
        .patch(
            &format!("/api/seats/{}", seats[2]),
            admin,
            json!({"status": "AVAILABLE"}),
        )
        .await;
    assert_eq!(repaired.assert_status(200)["status"], "AVAILABLE");
}

#[tokio::test]
async fn reserved_seats_cannot_be_deleted() {
    let app = spawn_app().await;
    let admin = Some(app.admin_token.as_str());
    let (alice, user) = app.user("alice").await;
    let (concert, seats) = concert_with_seats(&app, 1, 3).await;
    app.book_directly(alice, seats[0]).await;
    app.delete(&format!("/api/seats/{}", seats[0]), admin)
        .await
        .assert_problem(409, "SEAT_DELETE_FORBIDDEN");
    app.delete(&format!("/api/seats/{}", seats[1]), Some(&user))
        .await
        .assert_problem(403, "FORBIDDEN");
    app.delete(&format!("/api/seats/{}", seats[1]), admin)
        .await
        .assert_status(204);
    app.delete(&format!("/api/seats/{}", seats[1]), admin)
        .await
        .assert_problem(404, "SEAT_NOT_FOUND");
    assert_eq!(app.count("seats").await, 2);
    assert_eq!(
        app.get(&format!("/api/concerts/{concert}"), None)
            .await
            .body["seatCount"],
        2
    );
}

#[tokio::test]
async fn seat_lists_come_in_pages_with_their_totals_and_links() {
    let app = spawn_app().await;
    let (alice, _) = app.user("alice").await;
    // 2,500 seats: more than one page of the largest size.
    let (concert, seats) = {
        let concert = app.concert(json!({"rows": 25, "seatsPerRow": 100})).await;
        let id = concert["id"].as_u64().unwrap();
        (id, app.seats(id).await)
    };
    assert_eq!(seats.len(), 1_000, "the default page is 1,000 seats");
    let path = format!("/api/concerts/{concert}/seats");

    let first = app.get(&path, None).await;
    first.assert_status(200);
    assert_eq!(first.headers["x-total-count"], "2500");
    assert_eq!(
        first.headers["link"],
        format!(
            "<{path}?page=0&size=1000>; rel=\"first\", <{path}?page=1&size=1000>; rel=\"next\", \
             <{path}?page=2&size=1000>; rel=\"last\""
        )
    );
    // Walking every page of 700 gives each seat once, in order.
    let mut walked = Vec::new();
    for page in 0..4 {
        let reply = app.get(&format!("{path}?page={page}&size=700"), None).await;
        walked.extend(reply.assert_status(200).as_array().unwrap().clone());
    }
    assert_eq!(walked.len(), 2_500);
    let mut ids: Vec<u64> = walked.iter().map(|s| s["id"].as_u64().unwrap()).collect();
    assert_eq!(
        &ids[..1_000],
        seats
            .iter()
            .map(|s| s["id"].as_u64().unwrap())
            .collect::<Vec<_>>()
    );
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 2_500);
    let beyond = app.get(&format!("{path}?page=9&size=700"), None).await;
    assert!(beyond.assert_status(200).as_array().unwrap().is_empty());
    let last = app.get(&format!("{path}?page=3&size=700"), None).await;
    let link = last.headers["link"].to_str().unwrap();
    assert!(
        link.contains("page=2&size=700>; rel=\"prev\"") && !link.contains("rel=\"next\""),
        "{link}"
    );

    // The filter's total counts only the matching seats.
    app.book_directly(alice, seats[0]["id"].as_u64().unwrap())
        .await;
    let reserved = app.get(&format!("{path}?status=RESERVED"), None).await;
    assert_eq!(reserved.headers["x-total-count"], "1");
    assert!(
        reserved.headers["link"]
            .to_str()
            .unwrap()
            .contains("?status=RESERVED&page=0&size=1000")
    );
    let available = app
        .get(&format!("{path}?status=AVAILABLE&size=1"), None)
        .await;
    assert_eq!(available.headers["x-total-count"], "2499");

    for bad in ["size=0", "size=1001", "page=10001", "page=-1", "size=ten"] {
        app.get(&format!("{path}?{bad}"), None)
            .await
            .assert_problem(400, "VALIDATION_ERROR");
    }
}

/// A sale's opening asks for thousands of seats nobody asked for before:
/// the first seat of a concert brings in all of its seats, so the others
/// cost no query (one of them deleted behind the directory's back is still
/// known, which only a remembered seat can be); other concerts, seats added
/// later and unknown seats are still looked up.
#[tokio::test]
async fn the_seat_directory_learns_a_whole_concert_from_its_first_seat() {
    use ticket_api::concerts::seat_directory::SeatDirectory;
    use ticket_api::error::ErrorCode;
    use ticket_core::domain::{ConcertId, SeatId};

    let app = spawn_app().await;
    let (concert, seats) = concert_with_seats(&app, 2, 5).await;
    let (other, other_seats) = concert_with_seats(&app, 1, 3).await;
    let directory = SeatDirectory::default();
    // Cold, and asked for many seats of the concert at once.
    let lookups = seats[..6]
        .iter()
        .map(|&s| directory.concert_of(&app.pool, SeatId(s)));
    for found in futures::future::join_all(lookups).await {
        assert_eq!(found.ok(), Some(ConcertId(concert)));
    }
    let last = seats[9];
    sqlx::query("DELETE FROM seats WHERE id = ?")
        .bind(last)
        .execute(&app.pool)
        .await
        .unwrap();
    assert_eq!(
        directory.concert_of(&app.pool, SeatId(last)).await.ok(),
        Some(ConcertId(concert)),
        "a seat of a concert already read must be known without a query"
    );
    assert_eq!(
        directory
            .concert_of(&app.pool, SeatId(other_seats[0]))
            .await
            .ok(),
        Some(ConcertId(other))
    );
    let added = app
        .post(
            "/api/seats",
            Some(&app.admin_token),
            json!({"concertId": concert, "seatNumber": "C1"}),
        )
        .await;
    let added = added.assert_status(201)["id"].as_u64().unwrap();
    assert_eq!(
        directory.concert_of(&app.pool, SeatId(added)).await.ok(),
        Some(ConcertId(concert))
    );
    let unknown = directory
        .concert_of(&app.pool, SeatId(last + 1_000_000))
        .await
        .err()
        .map(|e| e.code());
    assert_eq!(unknown, Some(ErrorCode::SeatNotFound));
}
