//! Rate limits: 429 RATE_LIMITED with Retry-After, per user, per nickname
//! and per client address, and nothing written when refused.
//!
//! Long because each limit (user, nickname, address, password) is shown
//! refusing and writing nothing, with its own settings.

use std::sync::atomic::{AtomicU32, Ordering};

use reqwest::Method;
use serde_json::json;
use ticket_api::middleware::limits::LimitSettings;

use crate::helpers::{Reply, TestApp, spawn_app_with_limits};

fn assert_limited(reply: &Reply) {
    reply.assert_problem(429, "RATE_LIMITED");
    let wait: u64 = reply.headers["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=60).contains(&wait), "Retry-After: {wait}");
}

/// A request from `client` through the one trusted proxy, which appended the
/// client's address; each request also carries a different address that the
/// client wrote itself, as a bot would to dodge per-client limits.
async fn from(app: &TestApp, client: &str, path: &str, body: serde_json::Value) -> Reply {
    static SPOOFED: AtomicU32 = AtomicU32::new(1);
    let spoofed = SPOOFED.fetch_add(1, Ordering::Relaxed);
    let response = app
        .client
        .request(Method::POST, format!("{}{path}", app.base))
        .header(
            "x-forwarded-for",
            format!("192.0.2.{}, {client}", spoofed % 250),
        )
        .json(&body)
        .send()
        .await
        .unwrap();
    TestApp::reply(response).await
}

#[tokio::test]
async fn each_user_has_a_request_budget_of_their_own() {
    let app = spawn_app_with_limits(LimitSettings {
        user_requests_per_sec: 2,
        ..LimitSettings::OFF
    })
    .await;
    let (_, alice) = app.user("alice").await;
    let (_, bob) = app.user("bob").await;
    // Bursts of twice the rate pass, then the user waits.
    for _ in 0..4 {
        app.get("/api/users/me/reservations", Some(&alice))
            .await
            .assert_status(200);
    }
    assert_limited(&app.get("/api/users/me/reservations", Some(&alice)).await);
    assert_limited(
        &app.post("/api/reservations", Some(&alice), json!({"seatId": 1}))
            .await,
    );
    app.get("/api/users/me/reservations", Some(&bob))
        .await
        .assert_status(200);
    assert_eq!(
        app.count("reservation_queue").await,
        0,
        "a refused request writes nothing"
    );
}

#[tokio::test]
async fn login_attempts_are_limited_per_nickname_from_any_address() {
    let app = spawn_app_with_limits(LimitSettings {
        logins_per_minute_per_nickname: 3,
        ..LimitSettings::OFF
    })
    .await;
    app.user("carol").await; // one login spent
    // Credential stuffing: one guess from each of many addresses meets the
    // account-wide budget (ten times one address's).
    let wide = 3 * ticket_api::middleware::limits::ACCOUNT_WIDE_LOGINS;
    for i in 1..wide {
        from(
            &app,
            &format!("198.18.0.{i}"),
            "/api/auth/login",
            json!({"nickName": "carol", "password": "wrong-password"}),
        )
        .await
        .assert_problem(401, "INVALID_CREDENTIALS");
    }
    // Even the right password waits now, whatever the address or case.
    let right = json!({"nickName": "CAROL", "password": "password123"});
    assert_limited(&from(&app, "192.0.2.3", "/api/auth/login", right).await);
    let other = from(
        &app,
        "192.0.2.3",
        "/api/auth/login",
        json!({"nickName": "dave", "password": "password-123"}),
    )
    .await;
    other.assert_problem(401, "INVALID_CREDENTIALS");
}

#[tokio::test]
async fn wrong_passwords_from_one_address_do_not_lock_the_owner_out() {
    let app = spawn_app_with_limits(LimitSettings {
        logins_per_minute_per_nickname: 10,
        ..LimitSettings::OFF
    })
    .await;
    app.user("erin").await;
    let attacker = "203.0.113.66";
    let wrong = json!({"nickName": "erin", "password": "wrong-password"});
    let mut limited = 0;
    for _ in 0..12 {
        let reply = from(&app, attacker, "/api/auth/login", wrong.clone()).await;
        if reply.status == 429 {
            assert_limited(&reply);
            limited += 1;
        } else {
            reply.assert_problem(401, "INVALID_CREDENTIALS");
        }
    }
    assert_eq!(limited, 2, "the attacker's address met its limit");
    let right = json!({"nickName": "erin", "password": "password123"});
    from(&app, "198.51.100.7", "/api/auth/login", right.clone())
        .await
        .assert_status(200);
    assert_limited(&from(&app, attacker, "/api/auth/login", right).await);
}

#[tokio::test]
async fn a_signed_in_caller_is_limited_on_every_route() {
    let app = spawn_app_with_limits(LimitSettings {
        user_requests_per_sec: 2,
        ..LimitSettings::OFF
    })
    .await;
    let (_, alice) = app.user("alice").await;
    let (concert, _) = app
        .concert_and_seats(json!({"rows": 1, "seatsPerRow": 2}))
        .await;
    // Routes that never read the caller: a burst of twice the rate, then 429.
    let paths = [
        format!("/api/concerts/{concert}"),
        format!("/api/concerts/{concert}/seats"),
        format!("/api/concerts/{concert}/availability"),
        format!("/api/concerts/{concert}/seat-map"),
    ];
    let mut answers = Vec::new();
    for path in paths.iter().cycle().take(8) {
        answers.push(
            get_from(&app, "198.51.100.30", path, Some(&alice))
                .await
                .status,
        );
    }
    let limited = answers.iter().filter(|&&status| status == 429).count();
    assert!(
        (4..=6).contains(&limited),
        "a burst of 4 then limits: {answers:?}"
    );
    assert_limited(&get_from(&app, "198.51.100.30", &paths[0], Some(&alice)).await);
    // Another user's budget is their own.
    let (_, bob) = app.user("bob").await;
    get_from(&app, "198.51.100.30", &paths[0], Some(&bob))
        .await
        .assert_status(200);
}

#[tokio::test]
async fn keyed_orders_sent_at_once_obey_the_open_seat_limit_exactly() {
    let app = spawn_app_with_limits(LimitSettings {
        max_open_requests_per_user: 10,
        ..LimitSettings::OFF
    })
    .await;
    let (_, greedy) = app.user("greedy").await;
    let seats = app
        .concert_and_seats(
            json!({"rows": 10, "seatsPerRow": 10, "maxSeatsPerOrder": 4, "maxSeatsPerUser": 100}),
        )
        .await
        .1;
    let orders = seats.chunks(4).take(25).enumerate().map(|(i, order)| {
        let request = app
            .client
            .post(format!("{}/api/reservations", app.base))
            .bearer_auth(&greedy)
            .header("idempotency-key", format!("order-{i}"))
            .json(&json!({"seatIds": order}));
        async move { TestApp::reply(request.send().await.unwrap()).await }
    });
    let replies = futures::future::join_all(orders).await;
    for reply in replies.iter().filter(|r| r.status != 201) {
        assert_limited(reply);
    }
    let accepted = replies.iter().filter(|r| r.status == 201).count();
    assert_eq!(accepted, 2, "two orders of four seats fit under ten");
    assert_eq!(app.count("request_seats").await, 8, "every 429 left no row");
}

#[tokio::test]
async fn login_attempts_and_signups_are_limited_per_client_address() {
    let app = spawn_app_with_limits(LimitSettings {
        logins_per_minute_per_client: 3,
        signups_per_minute_per_client: 2,
        ..LimitSettings::OFF
    })
    .await;
    for nick in ["n1", "n2", "n3"] {
        from(
            &app,
            "198.51.100.7",
            "/api/auth/login",
            json!({"nickName": nick, "password": "password-123"}),
        )
        .await
        .assert_problem(401, "INVALID_CREDENTIALS");
    }
    assert_limited(
        &from(
            &app,
            "198.51.100.7",
            "/api/auth/login",
            json!({"nickName": "n4", "password": "password-123"}),
        )
        .await,
    );
    from(
        &app,
        "198.51.100.8",
        "/api/auth/login",
        json!({"nickName": "n4", "password": "password-123"}),
    )
    .await
    .assert_problem(401, "INVALID_CREDENTIALS");

    let users_before = app.count("users").await;
    for nick in ["s1", "s2"] {
        from(
            &app,
            "203.0.113.9",
            "/api/users",
            json!({"nickName": nick, "password": "password-123"}),
        )
        .await
        .assert_status(201);
    }
    assert_limited(
        &from(
            &app,
            "203.0.113.9",
            "/api/users",
            json!({"nickName": "s3", "password": "password-123"}),
        )
        .await,
    );
    assert_eq!(
        app.count("users").await,
        users_before + 2,
        "the refused sign-up wrote nothing"
    );
    from(
        &app,
        "203.0.113.10",
        "/api/users",
        json!({"nickName": "s3", "password": "password-123"}),
    )
    .await
    .assert_status(201);
}

#[tokio::test]
async fn a_user_may_have_only_so_many_open_requests() {
    let app = spawn_app_with_limits(LimitSettings {
        max_open_requests_per_user: 2,
        ..LimitSettings::OFF
    })
    .await;
    let (_, alice) = app.user("alice").await;
    let (_, bob) = app.user("bob").await;
    let seats = app.seat_ids(6).await;
    app.reserve(&alice, seats[0]).await.assert_status(201);
    // With an Idempotency-Key the request takes the other path; same limit.
    let keyed = |seat: u64, key: &'static str| {
        let token = alice.clone();
        let app = &app;
        async move {
            let response = app
                .client
                .post(format!("{}/api/reservations", app.base))
                .bearer_auth(token)
                .header("idempotency-key", key)
                .json(&json!({"seatId": seat}))
                .send()
                .await
                .unwrap();
            TestApp::reply(response).await
        }
    };
    let second = keyed(seats[1], "second").await;
    second.assert_status(201);
    assert_limited(&app.reserve(&alice, seats[2]).await);
    assert_limited(&keyed(seats[3], "third").await);
    // A retry of an accepted request is still answered as before.
    let replay = keyed(seats[1], "second").await;
    assert_eq!(replay.assert_status(201)["queueId"], second.body["queueId"]);
    app.reserve(&bob, seats[4]).await.assert_status(201);
    assert_eq!(app.count("reservation_queue").await, 3);
    // Once decided, the requests no longer count.
    app.drain().await;
    app.reserve(&alice, seats[5]).await.assert_status(201);
}

/// The cap per fan counts one concert's seats and the open-seat limit every
/// concert's: the enqueue reads a fan's open seats in its own concert only,
/// and the user's across concerts only for the limit.
#[tokio::test]
async fn the_cap_counts_one_concert_and_the_open_limit_every_concert() {
    let app = spawn_app_with_limits(LimitSettings {
        max_open_requests_per_user: 4,
        ..LimitSettings::OFF
    })
    .await;
    let (_, alice) = app.user("alice").await;
    let (_, first) = crate::helpers::concert_with(&app, 3, json!({"maxSeatsPerUser": 2})).await;
    let (_, second) = crate::helpers::concert_with(&app, 3, json!({"maxSeatsPerUser": 2})).await;
    app.reserve(&alice, first[0]).await.assert_status(201);
    app.reserve(&alice, first[1]).await.assert_status(201);
    app.reserve(&alice, first[2])
        .await
        .assert_problem(409, "USER_LIMIT_REACHED");
    // Two open in the first concert take nothing from the second's cap...
    app.reserve(&alice, second[0]).await.assert_status(201);
    app.reserve(&alice, second[1]).await.assert_status(201);
    // ...but count towards the limit over every concert (4 open now).
    let third = crate::helpers::concert_with(&app, 1, json!({})).await.1;
    assert_limited(&app.reserve(&alice, third[0]).await);
    assert_eq!(app.count("reservation_queue").await, 4);
}

#[tokio::test]
async fn open_requests_over_the_limit_in_one_burst_are_withdrawn_not_written() {
    let app = spawn_app_with_limits(LimitSettings {
        max_open_requests_per_user: 3,
        ..LimitSettings::OFF
    })
    .await;
    let (_, greedy) = app.user("greedy").await;
    let seats = app.seat_ids(12).await;
    // Twelve at once: they are written in groups, and each group withdraws
    // what would put the user over the limit.
    let replies =
        futures::future::join_all(seats.iter().map(|&seat| app.reserve(&greedy, seat))).await;
    let accepted = replies.iter().filter(|r| r.status == 201).count();
    let limited = replies.iter().filter(|r| r.status == 429).count();
    assert_eq!(accepted + limited, seats.len(), "only 201 or 429");
    assert!((1..seats.len()).contains(&accepted), "{accepted} accepted");
    for reply in replies.iter().filter(|r| r.status == 429) {
        assert_limited(reply);
    }
    assert_eq!(
        app.count("reservation_queue").await as usize,
        accepted,
        "every 429 left no row"
    );
}

/// A GET from `client` through the one trusted proxy.
async fn get_from(app: &TestApp, client: &str, path: &str, token: Option<&str>) -> Reply {
    let mut request = app
        .client
        .get(format!("{}{path}", app.base))
        .header("x-forwarded-for", client);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    TestApp::reply(request.send().await.unwrap()).await
}

#[tokio::test]
async fn requests_without_a_valid_token_are_limited_per_client_address() {
    let app = spawn_app_with_limits(LimitSettings {
        anonymous_requests_per_sec: 5,
        ..LimitSettings::OFF
    })
    .await;
    let (_, alice) = app.user("alice").await;
    let crowd = "198.51.100.20";
    // A burst of twice the rate passes, on any public route, then waits.
    for path in [
        "/api/concerts",
        "/api/concerts/1",
        "/api/seats/1",
        "/api/concerts/1/availability",
    ]
    .iter()
    .cycle()
    .take(10)
    {
        let reply = get_from(&app, crowd, path, None).await;
        assert_ne!(reply.status, 429, "{path}");
    }
    assert_limited(&get_from(&app, crowd, "/api/concerts", None).await);
    // `/metrics` on the public port (the default) is a route like any
    // other: each scrape reads the database.
    assert_limited(&get_from(&app, crowd, "/metrics", None).await);
    // A token that does not verify buys nothing.
    assert_limited(&get_from(&app, crowd, "/api/concerts", Some("not-a-token")).await);
    // A signed-in user behind the same address has a budget of their own,
    // another address its own, and the probes are never limited.
    get_from(&app, crowd, "/api/concerts", Some(&alice))
        .await
        .assert_status(200);
    get_from(&app, "198.51.100.21", "/api/concerts", None)
        .await
        .assert_status(200);
    for probe in ["/healthz", "/readyz"] {
        get_from(&app, crowd, probe, None).await.assert_status(200);
    }
}
