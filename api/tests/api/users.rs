use serde_json::json;

use crate::helpers::spawn_app;

#[tokio::test]
async fn sign_up_returns_the_user_without_its_password() {
    let app = spawn_app().await;
    let reply = app
        .post(
            "/api/users",
            None,
            json!({"nickName": "  alice  ", "password": "password123"}),
        )
        .await;
    let body = reply.assert_status(201);
    let id = body["id"].as_u64().unwrap();
    assert_eq!(body["nickName"], "alice", "trimmed");
    assert_eq!(body["role"], "USER");
    assert!(body["createdAt"].is_string());
    assert!(body.get("password").is_none() && body.get("passwordHash").is_none());
    assert_eq!(
        reply.headers.get("location").unwrap(),
        &format!("/api/users/{id}")
    );

    let (hash,): (String,) = sqlx::query_as("SELECT password_hash FROM users WHERE id = ?")
        .bind(id)
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert!(
        hash.starts_with("$argon2id$"),
        "stored as an Argon2id hash, got {hash}"
    );
}

#[tokio::test]
async fn sign_up_validates_every_field_at_once() {
    let app = spawn_app().await;
    let before = app.count("users").await;
    let reply = app
        .post(
            "/api/users",
            None,
            json!({"nickName": "   ", "password": "short"}),
        )
        .await;
    reply.assert_problem(400, "VALIDATION_ERROR");
    assert_eq!(reply.error_fields(), ["nickName", "password"]);

    for (nick, password, field) in [
        ("x".repeat(51), "password123".to_owned(), "nickName"),
        ("bob".to_owned(), "p".repeat(129), "password"),
        ("bob".to_owned(), "seven77".to_owned(), "password"),
        ("tab\tname".to_owned(), "password123".to_owned(), "nickName"),
    ] {
        let reply = app
            .post(
                "/api/users",
                None,
                json!({"nickName": nick, "password": password}),
            )
            .await;
        reply.assert_problem(400, "VALIDATION_ERROR");
        assert_eq!(reply.error_fields(), [field]);
    }
    // 50 multibyte characters is within the limit.
    app.post(
        "/api/users",
        None,
        json!({"nickName": "가".repeat(50), "password": "password123"}),
    )
    .await
    .assert_status(201);
    assert_eq!(
        app.count("users").await,
        before + 1,
        "no rejected sign-up was written"
    );
}

#[tokio::test]
async fn a_taken_nickname_is_a_conflict_case_insensitively() {
    let app = spawn_app().await;
    app.user("alice").await;
    for nick in ["alice", "ALICE", " Alice "] {
        let reply = app
            .post(
                "/api/users",
                None,
                json!({"nickName": nick, "password": "password123"}),
            )
            .await;
        reply.assert_problem(409, "NICKNAME_DUPLICATED");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn twenty_racing_sign_ups_for_one_nickname_yield_one_account() {
    let app = spawn_app().await;
    let barrier = std::sync::Arc::new(tokio::sync::Barrier::new(20));
    let attempts = (0..20).map(|_| {
        let client = app.client.clone();
        let url = format!("{}/api/users", app.base);
        let barrier = barrier.clone();
        tokio::spawn(async move {
            barrier.wait().await;
            let response = client
                .post(url)
                .json(&json!({"nickName": "popular", "password": "password123"}))
                .send()
                .await
                .unwrap();
            crate::helpers::TestApp::reply(response).await
        })
    });
    let mut created = 0;
    for attempt in attempts.collect::<Vec<_>>() {
        let reply = attempt.await.unwrap();
        match reply.status.as_u16() {
            201 => created += 1,
            _ => {
                reply.assert_problem(409, "NICKNAME_DUPLICATED");
            }
        }
    }
    assert_eq!(created, 1);
    let (n,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM users WHERE nickname = 'popular'")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(n, 1);
}

#[tokio::test]
async fn users_see_only_themselves_admins_see_anyone() {
    let app = spawn_app().await;
    let (alice, alice_token) = app.user("alice").await;
    let (bob, _) = app.user("bob").await;

    let me = app.get("/api/users/me", Some(&alice_token)).await;
    assert_eq!(me.assert_status(200)["nickName"], "alice");
    app.get(&format!("/api/users/{alice}"), Some(&alice_token))
        .await
        .assert_status(200);
    app.get(&format!("/api/users/{bob}"), Some(&alice_token))
        .await
        .assert_problem(403, "FORBIDDEN");
    // Unknown ids look the same as others' ids to a non-admin: no enumeration.
    app.get("/api/users/999999", Some(&alice_token))
        .await
        .assert_problem(403, "FORBIDDEN");

    let admin = Some(app.admin_token.as_str());
    assert_eq!(
        app.get(&format!("/api/users/{bob}"), admin)
            .await
            .assert_status(200)["nickName"],
        "bob"
    );
    app.get("/api/users/999999", admin)
        .await
        .assert_problem(404, "USER_NOT_FOUND");
    app.get(&format!("/api/users/{bob}"), None)
        .await
        .assert_problem(401, "UNAUTHORIZED");
}

#[tokio::test]
async fn users_change_their_own_nickname_and_password() {
    let app = spawn_app().await;
    let (alice, token) = app.user("alice").await;
    app.user("bob").await;

    let reply = app
        .patch(
            &format!("/api/users/{alice}"),
            Some(&token),
            json!({"nickName": "alicia"}),
        )
        .await;
    assert_eq!(reply.assert_status(200)["nickName"], "alicia");
    let reply = app
        .patch(
            &format!("/api/users/{alice}"),
            Some(&token),
            json!({"password": "new-password", "currentPassword": "password123"}),
        )
        .await;
    assert_eq!(reply.assert_status(200)["nickName"], "alicia");
    app.try_login("alicia", "password123")
        .await
        .assert_problem(401, "INVALID_CREDENTIALS");
    // The change voided the old token (accounts.rs has the details).
    let token = app.login("alicia", "new-password").await;

    let taken = app
        .patch(
            &format!("/api/users/{alice}"),
            Some(&token),
            json!({"nickName": "BOB"}),
        )
        .await;
    taken.assert_problem(409, "NICKNAME_DUPLICATED");
    let invalid = app
        .patch(
            &format!("/api/users/{alice}"),
            Some(&token),
            json!({"nickName": "", "password": "x"}),
        )
        .await;
    invalid.assert_problem(400, "VALIDATION_ERROR");
    assert_eq!(invalid.error_fields(), ["nickName", "password"]);
    let unchanged = app.get("/api/users/me", Some(&token)).await;
    assert_eq!(
        unchanged.body["nickName"], "alicia",
        "a rejected change changes nothing"
    );
}

#[tokio::test]
async fn only_the_user_or_an_admin_may_change_or_delete_an_account() {
    let app = spawn_app().await;
    let (alice, alice_token) = app.user("alice").await;
    let (bob, bob_token) = app.user("bob").await;
    let (carol, _) = app.user("carol").await;

    app.patch(
        &format!("/api/users/{bob}"),
        Some(&alice_token),
        json!({"nickName": "mallory"}),
    )
    .await
    .assert_problem(403, "FORBIDDEN");
    app.delete(&format!("/api/users/{bob}"), Some(&alice_token))
        .await
        .assert_problem(403, "FORBIDDEN");
    assert_eq!(
        app.get("/api/users/me", Some(&bob_token)).await.body["nickName"],
        "bob"
    );

    let admin = Some(app.admin_token.as_str());
    let renamed = app
        .patch(
            &format!("/api/users/{carol}"),
            admin,
            json!({"nickName": "caroline"}),
        )
        .await;
    assert_eq!(renamed.assert_status(200)["nickName"], "caroline");
    app.delete(&format!("/api/users/{carol}"), admin)
        .await
        .assert_status(204);
    app.delete(&format!("/api/users/{carol}"), admin)
        .await
        .assert_problem(404, "USER_NOT_FOUND");
    app.patch("/api/users/999999", admin, json!({"nickName": "ghost"}))
        .await
        .assert_problem(404, "USER_NOT_FOUND");

    app.delete(&format!("/api/users/{alice}"), Some(&alice_token))
        .await
        .assert_status(204);
    // Deleting the account voided its tokens.
    app.get("/api/users/me", Some(&alice_token))
        .await
        .assert_problem(401, "UNAUTHORIZED");
    app.try_login("alice", "password123")
        .await
        .assert_problem(401, "INVALID_CREDENTIALS");
}

#[tokio::test]
async fn an_account_holding_tickets_cannot_be_deleted() {
    let app = spawn_app().await;
    let (alice, token) = app.user("alice").await;
    let concert = app.concert(json!({})).await;
    let seat = app.seats(concert["id"].as_u64().unwrap()).await[0]["id"]
        .as_u64()
        .unwrap();
    app.book_directly(alice, seat).await;

    app.delete(&format!("/api/users/{alice}"), Some(&token))
        .await
        .assert_problem(409, "USER_DELETE_FORBIDDEN");
    app.delete(&format!("/api/users/{alice}"), Some(&app.admin_token))
        .await
        .assert_problem(409, "USER_DELETE_FORBIDDEN");
    assert_eq!(app.count("reservations").await, 1);

    // Once the reservation is cancelled the account and its history can go.
    sqlx::query("UPDATE reservations SET status = 'CANCELLED'")
        .execute(&app.pool)
        .await
        .unwrap();
    sqlx::query("UPDATE seats SET status = 'AVAILABLE'")
        .execute(&app.pool)
        .await
        .unwrap();
    app.delete(&format!("/api/users/{alice}"), Some(&token))
        .await
        .assert_status(204);
    assert_eq!(app.count("reservations").await, 0);
}
