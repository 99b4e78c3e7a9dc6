//! Accounts that can be trusted: login budgets by account whatever the
//! spelling, password changes that need the current password, tokens
//! revoked on every instance, and an admin bootstrap that never takes over
//! a user's account.

use std::time::{Duration, Instant};

use serde_json::json;
use ticket_api::middleware::limits::LimitSettings;
use ticket_api::startup::Application;
use ticket_core::domain::{NickName, Password};

use crate::helpers::{TestApp, spawn_app, spawn_app_with_limits, start_server_with, test_settings};

#[tokio::test]
async fn every_spelling_of_a_nickname_shares_its_login_budget() {
    let app = spawn_app_with_limits(LimitSettings {
        logins_per_minute_per_nickname: 10,
        ..LimitSettings::OFF
    })
    .await;
    app.user("alice").await; // one login spent
    for _ in 0..9 {
        app.try_login("alice", "wrong-password")
            .await
            .assert_problem(401, "INVALID_CREDENTIALS");
    }
    // What the collation takes for the same name: surrounding spaces, case,
    // accents. Each must meet the spent budget, the right password too.
    for spelling in [" alice", "alice ", "ALICE", "Alicé", "ÀLICE"] {
        app.try_login(spelling, "password123")
            .await
            .assert_problem(429, "RATE_LIMITED");
    }
    // Another account is not affected.
    app.user("bob").await;
}

#[tokio::test]
async fn changing_your_own_password_takes_the_current_one() {
    let app = spawn_app().await;
    let (alice, token) = app.user("alice").await;
    let path = format!("/api/users/{alice}");

    let missing = app
        .patch(&path, Some(&token), json!({"password": "stolen-account"}))
        .await;
    missing.assert_problem(400, "VALIDATION_ERROR");
    assert_eq!(missing.error_fields(), ["currentPassword"]);
    let wrong = app
        .patch(
            &path,
            Some(&token),
            json!({"password": "stolen-account", "currentPassword": "guess-guess"}),
        )
        .await;
    wrong.assert_problem(401, "INVALID_CREDENTIALS");
    // Nothing changed: the old password and the token still work.
    app.login("alice", "password123").await;
    app.get("/api/users/me", Some(&token))
        .await
        .assert_status(200);

    app.patch(
        &path,
        Some(&token),
        json!({"password": "new-password", "currentPassword": "password123"}),
    )
    .await
    .assert_status(200);
    app.login("alice", "new-password").await;

    // An admin resets someone else's password without knowing it.
    let (bob, _) = app.user("bob").await;
    app.patch(
        &format!("/api/users/{bob}"),
        Some(&app.admin_token),
        json!({"password": "reset-by-admin"}),
    )
    .await
    .assert_status(200);
    app.login("bob", "reset-by-admin").await;
}

#[tokio::test]
async fn guessing_the_current_password_spends_the_login_budget() {
    let app = spawn_app_with_limits(LimitSettings {
        logins_per_minute_per_nickname: 3,
        ..LimitSettings::OFF
    })
    .await;
    let (alice, token) = app.user("alice").await; // one spent
    let path = format!("/api/users/{alice}");
    let guess = json!({"password": "stolen-account", "currentPassword": "guess-guess"});
    for _ in 0..2 {
        app.patch(&path, Some(&token), guess.clone())
            .await
            .assert_problem(401, "INVALID_CREDENTIALS");
    }
    app.patch(&path, Some(&token), guess)
        .await
        .assert_problem(429, "RATE_LIMITED");
    app.try_login("alice", "password123")
        .await
        .assert_problem(429, "RATE_LIMITED");
}

/// Polls `path` with `token` on `app` until it answers 401, for at most
/// `within`; returns how long that took.
async fn rejected_within(app: &TestApp, path: &str, token: &str, within: Duration) -> Duration {
    let started = Instant::now();
    loop {
        let reply = app.get(path, Some(token)).await;
        if reply.status == 401 {
            reply.assert_problem(401, "UNAUTHORIZED");
            return started.elapsed();
        }
        reply.assert_status(200);
        assert!(
            started.elapsed() < within,
            "the revoked token still works on the other instance after {within:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_password_change_voids_older_tokens_here_at_once_and_elsewhere_within_two_seconds() {
    let here = spawn_app().await;
    let elsewhere =
        TestApp::sharing_database(&here, start_server_with(here.pool.clone(), None).await);
    let (alice, old) = here.user("alice").await;
    let (_, bob) = here.user("bob").await;
    elsewhere
        .get("/api/users/me", Some(&old))
        .await
        .assert_status(200);

    here.patch(
        &format!("/api/users/{alice}"),
        Some(&old),
        json!({"password": "new-password", "currentPassword": "password123"}),
    )
    .await
    .assert_status(200);
    here.get("/api/users/me", Some(&old))
        .await
        .assert_problem(401, "UNAUTHORIZED");
    let took = rejected_within(&elsewhere, "/api/users/me", &old, Duration::from_secs(2)).await;
    eprintln!("revocation reached the other instance in {took:?}");
    // Tokens issued after the change work on both, and other users'
    // tokens were never affected.
    let new = here.login("alice", "new-password").await;
    for app in [&here, &elsewhere] {
        app.get("/api/users/me", Some(&new))
            .await
            .assert_status(200);
        app.get("/api/users/me", Some(&bob))
            .await
            .assert_status(200);
    }
}

#[tokio::test]
async fn logout_everywhere_voids_every_token_of_the_caller_only() {
    let here = spawn_app().await;
    let elsewhere =
        TestApp::sharing_database(&here, start_server_with(here.pool.clone(), None).await);
    let (_, phone) = here.user("alice").await;
    let laptop = here.login("alice", "password123").await;
    let (_, bob) = here.user("bob").await;

    here.post("/api/auth/logout-all", Some(&laptop), json!({}))
        .await
        .assert_status(204);
    for token in [&phone, &laptop] {
        here.get("/api/users/me", Some(token))
            .await
            .assert_problem(401, "UNAUTHORIZED");
        rejected_within(&elsewhere, "/api/users/me", token, Duration::from_secs(2)).await;
    }
    here.post("/api/auth/logout-all", Some(&laptop), json!({}))
        .await
        .assert_problem(401, "UNAUTHORIZED");
    elsewhere
        .get("/api/users/me", Some(&bob))
        .await
        .assert_status(200);
    let fresh = here.login("alice", "password123").await;
    elsewhere
        .get("/api/users/me", Some(&fresh))
        .await
        .assert_status(200);
}

#[tokio::test]
async fn an_instance_started_after_a_revocation_knows_it() {
    let here = spawn_app().await;
    let (_, token) = here.user("alice").await;
    here.post("/api/auth/logout-all", Some(&token), json!({}))
        .await
        .assert_status(204);
    let later = TestApp::sharing_database(&here, start_server_with(here.pool.clone(), None).await);
    rejected_within(&later, "/api/users/me", &token, Duration::from_secs(2)).await;
}

#[tokio::test]
async fn admin_bootstrap_never_takes_over_a_user_account() {
    let app = spawn_app().await;
    let (id, token) = app.user("boss").await;
    // The same name as the collation compares it.
    let admin = Some((
        NickName::parse(" BOSS").unwrap(),
        Password::parse("new-admin-password").unwrap(),
    ));
    let refused = Application::build(test_settings(admin, LimitSettings::OFF), app.pool.clone())
        .await
        .err()
        .expect("start-up must fail");
    let message = format!("{refused:#}");
    assert!(
        message.contains("not an admin") && message.contains(&format!("id {id}")),
        "{message}"
    );
    // The account is untouched.
    let me = app.get("/api/users/me", Some(&token)).await;
    assert_eq!(me.assert_status(200)["role"], "USER");
    app.login("boss", "password123").await;
}

#[tokio::test]
async fn admin_bootstrap_sets_the_admins_password_and_voids_only_then_its_tokens() {
    let app = spawn_app().await;
    let admin = |password: &str| {
        Some((
            NickName::parse(crate::helpers::ADMIN_NICK).unwrap(),
            Password::parse(password).unwrap(),
        ))
    };
    // A restart with the same password: tokens stay valid.
    let same = TestApp::sharing_database(
        &app,
        start_server_with(app.pool.clone(), admin(crate::helpers::ADMIN_PASSWORD)).await,
    );
    same.get("/api/users/me", Some(&app.admin_token))
        .await
        .assert_status(200);
    // A new password in the configuration: the old tokens go.
    let changed = TestApp::sharing_database(
        &app,
        start_server_with(app.pool.clone(), admin("rotated-admin-password")).await,
    );
    rejected_within(
        &changed,
        "/api/users/me",
        &app.admin_token,
        Duration::from_secs(2),
    )
    .await;
    let token = changed
        .login(crate::helpers::ADMIN_NICK, "rotated-admin-password")
        .await;
    let me = changed.get("/api/users/me", Some(&token)).await;
    assert_eq!(me.assert_status(200)["role"], "ADMIN");
    assert_eq!(app.count("users").await, 1);
}
