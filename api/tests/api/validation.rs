//! Bad input of every kind gets a clear 4xx problem and changes nothing.

use reqwest::Method;
use serde_json::json;

use crate::helpers::spawn_app;

#[tokio::test]
async fn malformed_bodies_are_rejected_without_writes() {
    let app = spawn_app().await;
    let json_ct = Some("application/json");
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("not json", b"{nickName: alice".to_vec()),
        (
            "truncated",
            br#"{"nickName": "alice", "password": "#.to_vec(),
        ),
        ("empty", Vec::new()),
        ("array", b"[]".to_vec()),
        (
            "wrong types",
            br#"{"nickName": 12, "password": true}"#.to_vec(),
        ),
        ("missing field", br#"{"nickName": "alice"}"#.to_vec()),
        (
            "unknown field",
            br#"{"nickName": "alice", "password": "password123", "role": "ADMIN"}"#.to_vec(),
        ),
        (
            "trailing garbage",
            br#"{"nickName": "alice", "password": "password123"} x"#.to_vec(),
        ),
        ("null", b"null".to_vec()),
        (
            "invalid utf-8",
            b"{\"nickName\": \"\xff\xfe\", \"password\": \"password123\"}".to_vec(),
        ),
    ];
    for (name, body) in cases {
        let reply = app
            .raw(Method::POST, "/api/users", None, json_ct, body)
            .await;
        assert_eq!(reply.status.as_u16(), 400, "{name}: {}", reply.body);
        reply.assert_problem(400, "VALIDATION_ERROR");
    }
    let reply = app
        .raw(
            Method::POST,
            "/api/users",
            None,
            json_ct,
            br#"{"nickName": 12, "password": "password123"}"#.to_vec(),
        )
        .await;
    assert_eq!(
        reply.error_fields(),
        ["nickName"],
        "the problem names the field"
    );
    assert_eq!(app.count("users").await, 1, "only the admin exists");
}

#[tokio::test]
async fn wrong_types_in_numbers_are_rejected() {
    let app = spawn_app().await;
    let admin = Some(app.admin_token.as_str());
    for body in [
        json!({"title": "t", "venue": "v", "concertDate": "2099-01-01T00:00:00Z", "rows": -1}),
        json!({"title": "t", "venue": "v", "concertDate": "2099-01-01T00:00:00Z", "rows": "3"}),
        json!({"title": "t", "venue": "v", "concertDate": "2099-01-01T00:00:00Z", "seatsPerRow": 1.5}),
        json!({"title": "t", "venue": "v", "concertDate": 20990101}),
        json!({"title": "t", "venue": "v", "concertDate": "2099-01-01T00:00:00Z", "rows": 99999999999u64}),
    ] {
        let reply = app.post("/api/concerts", admin, body.clone()).await;
        assert_eq!(reply.status.as_u16(), 400, "{body}: {}", reply.body);
        reply.assert_problem(400, "VALIDATION_ERROR");
    }
    app.post(
        "/api/seats",
        admin,
        json!({"concertId": "1", "seatNumber": "A1"}),
    )
    .await
    .assert_problem(400, "VALIDATION_ERROR");
    app.post(
        "/api/seats",
        admin,
        json!({"concertId": -5, "seatNumber": "A1"}),
    )
    .await
    .assert_problem(400, "VALIDATION_ERROR");
    assert_eq!(app.count("concerts").await, 0);
}

#[tokio::test]
async fn hostile_strings_are_stored_verbatim_or_refused_never_executed() {
    let app = spawn_app().await;
    let hostile = "Robert'); DROP TABLE users;--";
    let reply = app
        .post(
            "/api/users",
            None,
            json!({"nickName": hostile, "password": "password123"}),
        )
        .await;
    assert_eq!(reply.assert_status(201)["nickName"], hostile);
    let token = app.login(hostile, "password123").await;
    assert_eq!(
        app.get("/api/users/me", Some(&token)).await.body["nickName"],
        hostile
    );
    let reply = app
        .post(
            "/api/users",
            None,
            json!({"nickName": "\u{202e}evil\u{0007}", "password": "password123"}),
        )
        .await;
    reply.assert_problem(400, "VALIDATION_ERROR");
    let concert = app
        .concert(json!({"title": "<script>alert(1)</script>", "venue": "🎤 Hall"}))
        .await;
    assert_eq!(concert["title"], "<script>alert(1)</script>");
    assert_eq!(concert["venue"], "🎤 Hall");
}

#[tokio::test]
async fn oversized_bodies_get_413_and_wrong_media_types_415() {
    let app = spawn_app().await;
    let big = json!({"nickName": "alice", "password": "x".repeat(70 * 1024)})
        .to_string()
        .into_bytes();
    let reply = app
        .raw(
            Method::POST,
            "/api/users",
            None,
            Some("application/json"),
            big,
        )
        .await;
    reply.assert_problem(413, "PAYLOAD_TOO_LARGE");
    let form = b"nickName=alice&password=password123".to_vec();
    let reply = app
        .raw(
            Method::POST,
            "/api/users",
            None,
            Some("application/x-www-form-urlencoded"),
            form.clone(),
        )
        .await;
    reply.assert_problem(415, "UNSUPPORTED_MEDIA_TYPE");
    app.raw(Method::POST, "/api/users", None, None, form)
        .await
        .assert_problem(415, "UNSUPPORTED_MEDIA_TYPE");
    // A JSON body just under the limit is read (and validated) normally.
    let near = json!({"nickName": "alice", "password": "x".repeat(60 * 1024)})
        .to_string()
        .into_bytes();
    let reply = app
        .raw(
            Method::POST,
            "/api/users",
            None,
            Some("application/json; charset=utf-8"),
            near,
        )
        .await;
    reply.assert_problem(400, "VALIDATION_ERROR");
    assert_eq!(app.count("users").await, 1);
}

#[tokio::test]
async fn non_numeric_and_out_of_range_ids_are_400() {
    let app = spawn_app().await;
    let admin = Some(app.admin_token.as_str());
    for id in ["abc", "-1", "1.0", "18446744073709551616", "%27%20OR%201=1"] {
        app.get(&format!("/api/concerts/{id}"), None)
            .await
            .assert_problem(400, "VALIDATION_ERROR");
        app.get(&format!("/api/seats/{id}"), None)
            .await
            .assert_problem(400, "VALIDATION_ERROR");
        app.get(&format!("/api/concerts/{id}/seats"), None)
            .await
            .assert_problem(400, "VALIDATION_ERROR");
        app.get(&format!("/api/users/{id}"), admin)
            .await
            .assert_problem(400, "VALIDATION_ERROR");
        app.delete(&format!("/api/concerts/{id}"), admin)
            .await
            .assert_problem(400, "VALIDATION_ERROR");
    }
}

#[tokio::test]
async fn unknown_routes_and_methods_are_problems_too() {
    let app = spawn_app().await;
    app.get("/api/nothing-here", None)
        .await
        .assert_problem(404, "ROUTE_NOT_FOUND");
    let wrong_method = app
        .request(Method::PUT, "/api/concerts", None, Some(json!({})))
        .await;
    wrong_method.assert_problem(405, "METHOD_NOT_ALLOWED");
    // RFC 9110 requires a 405 to list the methods the route does accept.
    let allow = wrong_method
        .headers
        .get("allow")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let mut allowed: Vec<&str> = allow.split(',').map(str::trim).collect();
    allowed.sort_unstable();
    assert_eq!(allowed, ["GET", "HEAD", "POST"], "Allow: {allow:?}");
}

#[tokio::test]
async fn a_body_that_is_not_a_json_object_is_rejected() {
    // Found by fuzzing: serde reads a struct from an array too, so
    // `[null, null]` passed as an empty update.
    let app = spawn_app().await;
    let (id, token) = app.user("shape").await;
    for body in ["[null, null]", "[]", "\"text\"", "42", "null"] {
        for (method, path) in [
            (Method::PATCH, format!("/api/users/{id}")),
            (Method::POST, "/api/reservations".to_owned()),
            (Method::POST, "/api/users".to_owned()),
        ] {
            let reply = app
                .raw(
                    method.clone(),
                    &path,
                    Some(&token),
                    Some("application/json"),
                    body.as_bytes().to_vec(),
                )
                .await;
            reply.assert_problem(400, "VALIDATION_ERROR");
            assert_eq!(reply.error_fields(), ["body"], "{method} {path} {body}");
        }
    }
    assert_eq!(app.count("reservation_queue").await, 0);
    assert_eq!(app.count("users").await, 2, "the admin and one user");
}

#[tokio::test]
async fn ids_may_be_written_as_whole_floats_but_nothing_else() {
    // JSON Schema counts 59.0 as an integer; fuzzing the OpenAPI document
    // found it refused.
    let app = spawn_app().await;
    let (_, token) = app.user("floaty").await;
    let seats = app.seat_ids(3).await;
    let whole = app
        .post(
            "/api/reservations",
            Some(&token),
            json!({"seatId": seats[0] as f64}),
        )
        .await;
    whole.assert_status(201);
    for bad in [
        json!(seats[1] as f64 + 0.5),
        json!(-1),
        json!(-1.0),
        json!(1e30),
        json!(seats[1].to_string()),
        json!(true),
    ] {
        let reply = app
            .post("/api/reservations", Some(&token), json!({"seatId": bad}))
            .await;
        reply.assert_problem(400, "VALIDATION_ERROR");
        assert_eq!(reply.error_fields(), ["seatId"], "{bad}");
    }
    assert_eq!(app.count("reservation_queue").await, 1);
}

/// A missing or unknown field is a field error in words, like every other:
/// an empty create names every field it needs at once, and no message
/// points at a line and column of the body.
#[tokio::test]
async fn missing_and_unknown_fields_are_named_in_words() {
    let app = spawn_app().await;
    let admin = Some(app.admin_token.as_str());
    let empty = app.post("/api/concerts", admin, json!({"rows": 1})).await;
    let problem = empty.assert_problem(400, "VALIDATION_ERROR").clone();
    assert_eq!(empty.error_fields(), ["title", "venue", "concertDate"]);
    for error in problem["errors"].as_array().unwrap() {
        assert_eq!(error["message"], "required", "{problem}");
    }
    let no_password = app
        .post("/api/users", None, json!({"nickName": "alice"}))
        .await;
    let problem = no_password.assert_problem(400, "VALIDATION_ERROR").clone();
    assert_eq!(no_password.error_fields(), ["password"]);
    assert_eq!(problem["errors"][0]["message"], "required");
    let unknown = app
        .post(
            "/api/users",
            None,
            json!({"nickName": "alice", "password": "password123", "role": "ADMIN"}),
        )
        .await;
    unknown.assert_problem(400, "VALIDATION_ERROR");
    assert_eq!(unknown.error_fields(), ["role"]);
    let mistyped = app
        .post(
            "/api/concerts",
            admin,
            json!({"title": "t", "venue": "v", "concertDate": "2099-01-01T00:00:00Z", "rows": "3"}),
        )
        .await;
    let problem = mistyped.assert_problem(400, "VALIDATION_ERROR").clone();
    assert_eq!(mistyped.error_fields(), ["rows"]);
    assert!(
        !problem.to_string().contains("at line"),
        "a position in the body: {problem}"
    );
    assert_eq!(app.count("concerts").await, 0);
}

/// A sale or presale that opens at or after its concert sells nothing: 400
/// on the field, in a create and in a change (checked against what the
/// concert becomes), and nothing written.
#[tokio::test]
async fn a_sale_opens_before_its_concert() {
    let app = spawn_app().await;
    let admin = Some(app.admin_token.as_str());
    let concert = json!({"title": "t", "venue": "v", "concertDate": "2099-05-01T19:00:00Z"});
    let with = |extra: serde_json::Value| {
        let mut body = concert.clone();
        body.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        body
    };
    let late = app
        .post(
            "/api/concerts",
            admin,
            with(json!({"opensAt": "2099-05-01T19:00:00Z"})),
        )
        .await;
    late.assert_problem(400, "VALIDATION_ERROR");
    assert_eq!(late.error_fields(), ["opensAt"]);
    let both = app
        .post(
            "/api/concerts",
            admin,
            with(json!({"opensAt": "2099-06-01T10:00:00Z", "presaleStartsAt": "2099-05-20T10:00:00Z"})),
        )
        .await;
    both.assert_problem(400, "VALIDATION_ERROR");
    assert_eq!(both.error_fields(), ["opensAt", "presaleStartsAt"]);
    assert_eq!(app.count("concerts").await, 0);

    let made = app
        .post(
            "/api/concerts",
            admin,
            with(json!({"opensAt": "2099-04-01T10:00:00Z", "presaleStartsAt": "2099-03-01T10:00:00Z"})),
        )
        .await;
    let id = made.assert_status(201)["id"].as_u64().unwrap();
    // Moving the concert before its opening, or the opening after it.
    for change in [
        json!({"concertDate": "2099-03-15T19:00:00Z"}),
        json!({"opensAt": "2099-05-02T10:00:00Z"}),
    ] {
        let refused = app
            .patch(&format!("/api/concerts/{id}"), admin, change.clone())
            .await;
        refused.assert_problem(400, "VALIDATION_ERROR");
        assert!(
            refused.error_fields().contains(&"opensAt".to_owned()),
            "{change}: {}",
            refused.body
        );
    }
    let kept = app.get(&format!("/api/concerts/{id}"), None).await;
    let kept = kept.assert_status(200);
    assert_eq!(kept["concertDate"], "2099-05-01T19:00:00Z");
    assert_eq!(kept["opensAt"], "2099-04-01T10:00:00Z");
}
