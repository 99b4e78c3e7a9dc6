//! `GET /api/concerts/{id}/availability`: every seat's state in about a
//! byte, cacheable, and read from the database at most once a second per
//! instance, however many ask.

use std::io::Read as _;
use std::time::Duration;

use serde_json::{Value, json};

use crate::helpers::{TestApp, spawn_app};

async fn get(app: &TestApp, concert: u64, headers: &[(&str, &str)]) -> reqwest::Response {
    app.fetch(&format!("/api/concerts/{concert}/availability"), headers)
        .await
}

fn header(response: &reqwest::Response, name: &str) -> String {
    response
        .headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn availability_shows_each_seat_and_is_cacheable() {
    let app = spawn_app().await;
    let (concert, seats) = app
        .concert_and_seats(json!({"rows": 1, "seatsPerRow": 5, "holdSeconds": 600}))
        .await;
    let (user, token) = app.user("buyer").await;
    app.book_directly(user, seats[0]).await;
    app.reserve(&token, seats[2]).await.assert_status(201);
    app.drain().await;

    let plain = get(&app, concert, &[]).await;
    assert_eq!(plain.status(), 200);
    assert_eq!(header(&plain, "cache-control"), "public, max-age=1");
    assert_eq!(header(&plain, "content-type"), "application/json");
    assert_eq!(header(&plain, "vary"), "Accept-Encoding");
    let etag = header(&plain, "etag");
    assert!(
        etag.starts_with('"') && etag.ends_with('"'),
        "a strong ETag: {etag}"
    );
    let body: Value = plain.json().await.unwrap();
    assert_eq!(body["concertId"], concert);
    assert_eq!(body["states"], "RAHAA");
    assert_eq!(body["seatRanges"], json!([[seats[0], 5]]));
    assert_eq!(
        (
            body["available"].clone(),
            body["held"].clone(),
            body["reserved"].clone()
        ),
        (json!(3), json!(1), json!(1))
    );

    // The same state again: 304, for either encoding's tag.
    let unchanged = get(&app, concert, &[("if-none-match", &etag)]).await;
    assert_eq!(unchanged.status(), 304);
    assert_eq!(header(&unchanged, "etag"), etag);
    let gzipped = get(&app, concert, &[("accept-encoding", "br, gzip;q=0.8")]).await;
    assert_eq!(gzipped.status(), 200);
    assert_eq!(header(&gzipped, "content-encoding"), "gzip");
    let gzip_etag = header(&gzipped, "etag");
    assert_ne!(gzip_etag, etag, "each encoding has its own strong tag");
    let mut text = String::new();
    flate2::read::GzDecoder::new(&gzipped.bytes().await.unwrap()[..])
        .read_to_string(&mut text)
        .unwrap();
    assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), body);
    assert_eq!(
        get(&app, concert, &[("if-none-match", &gzip_etag)])
            .await
            .status(),
        304
    );
    let refused = get(&app, concert, &[("accept-encoding", "gzip;q=0")]).await;
    assert_eq!(header(&refused, "content-encoding"), "");

    // A change shows within about a second, under a new tag.
    app.reserve(&token, seats[4]).await.assert_status(201);
    app.drain().await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let changed = loop {
        let response = get(&app, concert, &[("if-none-match", &etag)]).await;
        if response.status() == 200 {
            break response;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the change never showed"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_ne!(header(&changed, "etag"), etag);
    let body: Value = changed.json().await.unwrap();
    assert_eq!(body["states"], "RAHAH");

    let missing = app.get("/api/concerts/999999/availability", None).await;
    missing.assert_problem(404, "CONCERT_NOT_FOUND");
    app.get("/api/concerts/x/availability", None)
        .await
        .assert_problem(400, "VALIDATION_ERROR");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn many_readers_cost_one_read() {
    let app = spawn_app().await;
    let (concert, _) = app
        .concert_and_seats(json!({"rows": 100, "seatsPerRow": 1000}))
        .await;
    let before = app.metric("ticket_api_availability_queries_total").await;
    let answers = futures::future::join_all(
        (0..200).map(|_| get(&app, concert, &[("accept-encoding", "gzip")])),
    )
    .await;
    let mut sizes = Vec::new();
    for response in answers {
        assert_eq!(response.status(), 200);
        sizes.push(response.bytes().await.unwrap().len());
    }
    let reads = app.metric("ticket_api_availability_queries_total").await - before;
    assert!(reads <= 2.0, "{reads} reads for 200 readers");
    println!("100,000 seats: {} bytes gzipped", sizes[0]);
    assert!(
        sizes.iter().all(|&n| n == sizes[0] && n < 100_000),
        "{:?}",
        &sizes[..3]
    );
    let plain = get(&app, concert, &[]).await.bytes().await.unwrap().len();
    println!("100,000 seats: {plain} bytes plain");
    assert!(plain < 1_000_000);
}

#[tokio::test]
async fn the_seat_map_gives_every_seat_in_natural_order_once_cacheable() {
    let app = spawn_app().await;
    let (concert, seats) = app
        .concert_and_seats(json!({"rows": 2, "seatsPerRow": 3}))
        .await;
    // A seat added later has a later id but its place in the natural order.
    let added = app
        .post(
            "/api/seats",
            Some(&app.admin_token),
            json!({"concertId": concert, "seatNumber": "A10"}),
        )
        .await;
    let added = added.assert_status(201)["id"].as_u64().unwrap();
    let path = format!("/api/concerts/{concert}/seat-map");
    let response = app.fetch(&path, &[]).await;
    assert_eq!(response.status(), 200);
    assert_eq!(header(&response, "cache-control"), "public, max-age=5");
    let etag = header(&response, "etag");
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["concertId"], concert);
    assert_eq!(
        body["seatNumbers"],
        json!(["A1", "A2", "A3", "A10", "B1", "B2", "B3"])
    );
    // The ids, in the same order, as runs of consecutive ids.
    let mut ids = Vec::new();
    for range in body["idRanges"].as_array().unwrap() {
        let (first, count) = (range[0].as_u64().unwrap(), range[1].as_u64().unwrap());
        ids.extend(first..first + count);
    }
    let mut expected = seats[..3].to_vec();
    expected.push(added);
    expected.extend(&seats[3..]);
    assert_eq!(ids, expected);

    let again = app.fetch(&path, &[("If-None-Match", &etag)]).await;
    assert_eq!(again.status(), 304);
    let zipped = app.fetch(&path, &[("Accept-Encoding", "gzip")]).await;
    assert_eq!(header(&zipped, "content-encoding"), "gzip");
    let mut plain = String::new();
    flate2::read::GzDecoder::new(&zipped.bytes().await.unwrap()[..])
        .read_to_string(&mut plain)
        .unwrap();
    assert_eq!(serde_json::from_str::<Value>(&plain).unwrap(), body);

    app.get("/api/concerts/999999/seat-map", None)
        .await
        .assert_problem(404, "CONCERT_NOT_FOUND");
}

/// The concert's page reads its detail on every visit: the counts come from
/// the snapshot the seat maps share, so any number of visits cost the
/// database about one count per second, and they agree with the map.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_concerts_counts_come_from_the_availability_snapshot() {
    let app = spawn_app().await;
    let (alice, _) = app.user("alice").await;
    let (concert, seats) = app
        .concert_and_seats(json!({"rows": 1, "seatsPerRow": 5}))
        .await;
    app.book_directly(alice, seats[1]).await;
    let before = app.metric("ticket_api_availability_queries_total").await;
    let path = format!("/api/concerts/{concert}");
    let details = futures::future::join_all((0..100).map(|_| app.get(&path, None))).await;
    let reads = app.metric("ticket_api_availability_queries_total").await - before;
    assert!(
        (1.0..=2.0).contains(&reads),
        "{reads} snapshot reads for 100 visits"
    );
    let map: Value = get(&app, concert, &[]).await.json().await.unwrap();
    assert_eq!(map["states"], "ARAAA");
    for detail in &details {
        let body = detail.assert_status(200);
        assert_eq!(
            (&body["availableSeats"], &body["reservedSeats"]),
            (&map["available"], &map["reserved"])
        );
    }
    assert_eq!(details[0].body["availableSeats"], 4);
}

/// During an outage the requests waiting for one concert's read share its
/// failure: the tenth does not wait ten connection timeouts, trying again
/// after each of the nine before it.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_failed_read_is_not_tried_again_by_every_waiter() {
    // A server that accepts connections and never says a word: every
    // connection attempt waits out the pool's timeout.
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = silent.local_addr().unwrap().port();
    let (connected, mut connections) = tokio::sync::watch::channel(0);
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = silent.accept().await {
            held.push(socket);
            connected.send_replace(held.len());
        }
    });
    let pool = sqlx::mysql::MySqlPoolOptions::new()
        .acquire_timeout(Duration::from_secs(2))
        .connect_lazy_with(ticket_core::testing::server_options().port(port));
    let app = TestApp::at(
        crate::helpers::start_server_with(pool.clone(), None).await,
        pool,
    );
    // The pool tries a few connections in one timeout: count them for
    // one request alone, then for eight at once.
    app.get("/api/concerts/1/availability", None)
        .await
        .assert_problem(503, "DATABASE_UNAVAILABLE");
    let alone = *connections.borrow_and_update();
    let replies =
        futures::future::join_all((0..8).map(|_| app.get("/api/concerts/1/availability", None)))
            .await;
    for reply in &replies {
        reply.assert_problem(503, "DATABASE_UNAVAILABLE");
    }
    let together = *connections.borrow_and_update() - alone;
    assert!(
        together <= 2 * alone,
        "{together} connections tried for 8 waiting requests, {alone} for one"
    );
}
