//! Invitations to a team (issue 60): an owner invites by nickname or
//! e-mail address, the invitee accepts or declines within a week (the
//! database's clock), an owner takes one back; an accepted finance member
//! reads the takings and cannot cancel the show; accepting and taking
//! back at once leave exactly one of them.

use serde_json::{Value, json};

use crate::helpers::*;

async fn invite(app: &TestApp, token: &str, organizer: u64, body: Value) -> Reply {
    app.post(
        &format!("/api/organizers/{organizer}/invitations"),
        Some(token),
        body,
    )
    .await
}

async fn answer(app: &TestApp, token: &str, invitation: u64, how: &str) -> Reply {
    app.post(
        &format!("/api/invitations/{invitation}/{how}"),
        Some(token),
        json!({}),
    )
    .await
}

async fn signed_up_with(app: &TestApp, nick: &str, email: &str) -> (u64, String) {
    let body = json!({"nickName": nick, "password": "password123", "email": email});
    let reply = app.post("/api/users", None, body).await;
    let id = reply.assert_status(201)["id"].as_u64().unwrap();
    (id, app.login(nick, "password123").await)
}

#[tokio::test]
async fn an_owner_invites_finance_who_reads_the_takings_and_cannot_cancel() {
    let app = spawn_app().await;
    let team = Team::new(&app, "seoul").await;
    let owner = team.token("OWNER");
    let concert = app
        .post(
            "/api/concerts",
            Some(owner),
            json!({"title": "Night", "venue": "Hall", "concertDate": "2099-05-01T19:00:00Z"}),
        )
        .await;
    let concert = concert.assert_status(201)["id"].as_u64().unwrap();
    let (_, accountant) = signed_up_with(&app, "accountant", "books@example.com").await;
    let (_, stranger) = app.user("stranger").await;

    // Only the team's manager of members invites.
    invite(
        &app,
        team.token("DOOR"),
        team.id,
        json!({"nickName": "accountant", "role": "FINANCE"}),
    )
    .await
    .assert_problem(403, "PERMISSION_REQUIRED");
    let made = invite(
        &app,
        owner,
        team.id,
        json!({"email": "books@example.com", "role": "FINANCE"}),
    )
    .await;
    let made = made.assert_status(201).clone();
    assert_eq!(
        (made["status"].clone(), made["nickName"].clone()),
        (json!("PENDING"), json!("accountant"))
    );
    let id = made["id"].as_u64().unwrap();

    let waiting = app
        .get("/api/users/me/invitations", Some(&accountant))
        .await;
    let waiting = waiting.assert_status(200).clone();
    assert_eq!(waiting[0]["organizerName"], "Promoter seoul", "{waiting}");
    assert_eq!(
        app.get("/api/users/me/invitations", Some(&stranger))
            .await
            .assert_status(200),
        &json!([])
    );
    answer(&app, &stranger, id, "accept")
        .await
        .assert_problem(404, "INVITATION_NOT_FOUND");
    app.get(&format!("/api/concerts/{concert}/sales"), Some(&accountant))
        .await
        .assert_problem(403, "FORBIDDEN");

    let joined = answer(&app, &accountant, id, "accept").await;
    assert_eq!(joined.assert_status(200)["role"], "FINANCE");
    answer(&app, &accountant, id, "accept")
        .await
        .assert_problem(409, "INVITATION_CLOSED");
    app.get(&format!("/api/concerts/{concert}/sales"), Some(&accountant))
        .await
        .assert_status(200);
    let cancelled = app
        .post(
            &format!("/api/concerts/{concert}/cancel"),
            Some(&accountant),
            json!({"reason": "no"}),
        )
        .await;
    assert_eq!(
        cancelled.assert_problem(403, "PERMISSION_REQUIRED")["permission"],
        "CANCEL_SHOW"
    );
    invite(
        &app,
        owner,
        team.id,
        json!({"nickName": "accountant", "role": "DOOR"}),
    )
    .await
    .assert_problem(409, "ALREADY_MEMBER");

    // Recorded: the owner's invitation and the accountant's acceptance.
    let entries = app
        .get(
            &format!("/api/organizers/{}/audit?action=invitation.accept", team.id),
            Some(owner),
        )
        .await;
    let entries = entries.assert_status(200).clone();
    assert_eq!(
        (entries[0]["nickName"].clone(), entries[0]["role"].clone()),
        (json!("accountant"), json!("FINANCE"))
    );
    let listed = app
        .get(
            &format!("/api/organizers/{}/invitations", team.id),
            Some(owner),
        )
        .await;
    assert_eq!(listed.assert_status(200)[0]["status"], "ACCEPTED");
    app.assert_invariants().await;
}

#[tokio::test]
async fn invitations_are_declined_taken_back_and_lapse_by_the_databases_clock() {
    let app = spawn_app().await;
    let team = Team::new(&app, "busan").await;
    let owner = team.token("OWNER");
    let (_, one) = app.user("one").await;
    let (_, two) = app.user("two").await;
    let (_, three) = app.user("three").await;
    signed_up_with(&app, "twin_a", "twin@example.com").await;
    signed_up_with(&app, "twin_b", "twin@example.com").await;

    let bad = invite(&app, owner, team.id, json!({"role": "DOOR"})).await;
    assert_eq!(bad.status, 400);
    let both = invite(
        &app,
        owner,
        team.id,
        json!({"nickName": "one", "email": "a@example.com", "role": "DOOR"}),
    )
    .await;
    assert_eq!(both.status, 400);
    let twins = invite(
        &app,
        owner,
        team.id,
        json!({"email": "twin@example.com", "role": "DOOR"}),
    )
    .await;
    assert_eq!(twins.error_fields(), ["email"]);
    invite(
        &app,
        owner,
        team.id,
        json!({"nickName": "nobody", "role": "DOOR"}),
    )
    .await
    .assert_problem(404, "USER_NOT_FOUND");
    let role = invite(
        &app,
        owner,
        team.id,
        json!({"nickName": "one", "role": "KING"}),
    )
    .await;
    assert_eq!(role.error_fields(), ["role"]);

    let to = |nick: &str| json!({"nickName": nick, "role": "DOOR"});
    let first = invite(&app, owner, team.id, to("one"))
        .await
        .assert_status(201)["id"]
        .as_u64()
        .unwrap();
    let second = invite(&app, owner, team.id, to("two"))
        .await
        .assert_status(201)["id"]
        .as_u64()
        .unwrap();
    let third = invite(&app, owner, team.id, to("three"))
        .await
        .assert_status(201)["id"]
        .as_u64()
        .unwrap();

    app.post(
        &format!("/api/invitations/{first}/decline"),
        Some(&one),
        json!({}),
    )
    .await
    .assert_status(204);
    answer(&app, &one, first, "accept")
        .await
        .assert_problem(409, "INVITATION_CLOSED");

    let revoke = format!("/api/organizers/{}/invitations/{second}", team.id);
    app.delete(&revoke, Some(team.token("MANAGER")))
        .await
        .assert_problem(403, "PERMISSION_REQUIRED");
    app.delete(&revoke, Some(owner)).await.assert_status(204);
    app.delete(&revoke, Some(owner))
        .await
        .assert_problem(409, "INVITATION_CLOSED");
    answer(&app, &two, second, "accept")
        .await
        .assert_problem(409, "INVITATION_CLOSED");

    // A week passes for the third (on the database's clock).
    sqlx::query("UPDATE organizer_invitations SET expires_at = UTC_TIMESTAMP(6) - INTERVAL 1 SECOND WHERE id = ?")
        .bind(third)
        .execute(&app.pool)
        .await
        .unwrap();
    assert_eq!(
        app.get("/api/users/me/invitations", Some(&three))
            .await
            .assert_status(200),
        &json!([])
    );
    answer(&app, &three, third, "accept")
        .await
        .assert_problem(409, "INVITATION_CLOSED");

    let listed = app
        .get(
            &format!("/api/organizers/{}/invitations", team.id),
            Some(owner),
        )
        .await;
    let statuses: Vec<&str> = listed
        .assert_status(200)
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["EXPIRED", "REVOKED", "DECLINED"]);
    let members = app
        .get(&format!("/api/organizers/{}/members", team.id), Some(owner))
        .await;
    assert_eq!(
        members.assert_status(200).as_array().unwrap().len(),
        5,
        "nobody joined"
    );
}

/// Accepting and taking back the same invitation at once: exactly one of
/// them happens, five rounds.
#[tokio::test]
async fn accepting_while_it_is_taken_back_leaves_exactly_one_outcome() {
    let app = spawn_app().await;
    let team = Team::new(&app, "daegu").await;
    let owner = team.token("OWNER").to_owned();
    for round in 0..5 {
        let nick = format!("racer{round}");
        let (user, token) = app.user(&nick).await;
        let made = invite(
            &app,
            &owner,
            team.id,
            json!({"nickName": nick, "role": "BOX_OFFICE"}),
        )
        .await;
        let id = made.assert_status(201)["id"].as_u64().unwrap();
        let client = client();
        let accept = client
            .post(format!("{}/api/invitations/{id}/accept", app.base))
            .bearer_auth(&token)
            .json(&json!({}));
        let revoke = client
            .delete(format!(
                "{}/api/organizers/{}/invitations/{id}",
                app.base, team.id
            ))
            .bearer_auth(&owner);
        let replies = send_all_at_once(vec![accept, revoke]).await;
        let (accepted, revoked) = (replies[0].status.as_u16(), replies[1].status.as_u16());
        let member: i64 = app
            .count(&format!(
                "organizer_members WHERE organizer_id = {} AND user_id = {user}",
                team.id
            ))
            .await;
        match (accepted, revoked) {
            (200, 409) => assert_eq!(member, 1, "round {round}"),
            (409, 204) => assert_eq!(member, 0, "round {round}"),
            other => panic!("round {round}: {other:?}"),
        }
    }
    app.assert_invariants().await;
}
