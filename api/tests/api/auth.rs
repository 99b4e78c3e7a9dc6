use std::time::Duration;

use serde_json::json;
use ticket_core::domain::{Role, UserId};

use crate::helpers::{spawn_app, token_keys};

#[tokio::test]
async fn login_returns_a_bearer_token_that_works() {
    let app = spawn_app().await;
    let (id, _) = app.user("alice").await;
    let reply = app.try_login("alice", "password123").await;
    let body = reply.assert_status(200);
    assert_eq!(body["tokenType"], "Bearer");
    assert_eq!(body["expiresIn"], 3600);
    let token = body["accessToken"].as_str().unwrap();
    assert_eq!(
        app.get("/api/users/me", Some(token))
            .await
            .assert_status(200)["id"],
        id
    );
}

#[tokio::test]
async fn wrong_password_and_unknown_nickname_get_the_same_answer() {
    let app = spawn_app().await;
    app.user("alice").await;
    let wrong_password = app.try_login("alice", "not-the-password").await;
    let unknown_user = app.try_login("nobody", "password123").await;
    let implausible = app.try_login("", "x").await;
    for reply in [&wrong_password, &unknown_user, &implausible] {
        reply.assert_problem(401, "INVALID_CREDENTIALS");
    }
    assert_eq!(wrong_password.body, unknown_user.body);
    assert_eq!(wrong_password.body, implausible.body);
}

#[tokio::test]
async fn login_requires_both_fields() {
    let app = spawn_app().await;
    let reply = app
        .post("/api/auth/login", None, json!({"nickName": "alice"}))
        .await;
    reply.assert_problem(400, "VALIDATION_ERROR");
}

#[tokio::test]
async fn protected_routes_need_a_valid_token() {
    let app = spawn_app().await;
    let (_, token) = app.user("alice").await;
    app.get("/api/users/me", None)
        .await
        .assert_problem(401, "UNAUTHORIZED");
    let reply = app.get("/api/users/me", Some("not-a-token")).await;
    reply.assert_problem(401, "UNAUTHORIZED");
    assert_eq!(reply.headers.get("www-authenticate").unwrap(), "Bearer");

    // Not a Bearer scheme.
    let basic = app
        .client
        .get(format!("{}/api/users/me", app.base))
        .header("authorization", format!("Basic {token}"));
    crate::helpers::TestApp::reply(basic.send().await.unwrap())
        .await
        .assert_problem(401, "UNAUTHORIZED");
}

#[tokio::test]
async fn expired_tokens_are_rejected() {
    let app = spawn_app().await;
    let (id, _) = app.user("alice").await;
    let keys = token_keys(Duration::from_secs(60));
    let issued_long_ago = chrono::Utc::now() - chrono::Duration::seconds(61);
    let expired = keys.issue(UserId(id), Role::User, issued_long_ago).token;
    let reply = app.get("/api/users/me", Some(&expired)).await;
    assert!(
        reply.assert_problem(401, "UNAUTHORIZED")["detail"]
            .as_str()
            .unwrap()
            .contains("expired")
    );

    let fresh = keys.issue(UserId(id), Role::User, chrono::Utc::now()).token;
    app.get("/api/users/me", Some(&fresh))
        .await
        .assert_status(200);
}

#[tokio::test]
async fn tampered_tokens_are_rejected() {
    let app = spawn_app().await;
    let (_, token) = app.user("alice").await;
    let mut parts: Vec<String> = token.split('.').map(str::to_owned).collect();
    // Rewrite the claims to claim admin, keeping the old signature.
    use base64::Engine;
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let claims = String::from_utf8(b64.decode(&parts[1]).unwrap())
        .unwrap()
        .replace("\"USER\"", "\"ADMIN\"");
    parts[1] = b64.encode(claims);
    let forged = parts.join(".");
    app.get("/api/users/me", Some(&forged))
        .await
        .assert_problem(401, "UNAUTHORIZED");

    // A token signed with another key.
    let other =
        ticket_api::accounts::security::TokenKeys::new(&[9; 32], Duration::from_secs(60)).unwrap();
    let foreign = other
        .issue(UserId(1), Role::Admin, chrono::Utc::now())
        .token;
    let reply = app.post("/api/concerts", Some(&foreign), json!({})).await;
    reply.assert_problem(401, "UNAUTHORIZED");
}
