//! Organizers and the roles of their members (issue 60): each role does
//! what its job needs and nothing else, another organizer's concerts do not
//! exist for a member, a fan is refused as before, and an organizer always
//! keeps an owner.

use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::*;

/// Who asks (a name for the message, a token), what, and the answer owed:
/// a status and a code (empty: any).
type Case<'a> = (
    &'a str,
    &'a str,
    Method,
    String,
    Option<Value>,
    (u16, &'a str),
);

/// The status and code of a refusal (or just the status).
fn outcome(reply: &Reply) -> (u16, String) {
    let code = reply.body["code"].as_str().unwrap_or("").to_owned();
    (reply.status.as_u16(), code)
}

#[tokio::test]
async fn each_role_does_what_its_job_needs_and_nothing_else() {
    let app = spawn_app().await;
    let (owner_id, owner) = app.user("owner").await;
    let (door_id, door) = app.user("door").await;
    let (finance_id, finance) = app.user("finance").await;
    let (manager_id, manager) = app.user("manager").await;
    let (rival_id, rival) = app.user("rival").await;
    let (_, fan) = app.user("fan").await;
    let seoul = organizer(&app, "seoul-live", owner_id).await;
    organizer(&app, "rival-live", rival_id).await;
    for (user, role) in [
        (door_id, "DOOR"),
        (finance_id, "FINANCE"),
        (manager_id, "MANAGER"),
    ] {
        set_role(&app, &owner, seoul, user, json!({"role": role}))
            .await
            .assert_status(204);
    }
    // The owner's one organizer is taken when the concert names none.
    let body = json!({"title": "Seoul Night", "venue": "Hall", "concertDate": "2099-05-01T19:00:00+09:00"});
    let concert = app.post("/api/concerts", Some(&owner), body).await;
    let concert = concert.assert_status(201).clone();
    assert_eq!(concert["organizerId"], seoul);
    let id = concert["id"].as_u64().unwrap();
    let house = app.concert(json!({})).await;
    assert_eq!(
        house["organizerId"], 1,
        "the admin's go to the first organizer"
    );

    let patch = json!({"title": "Seoul Night II"});
    let cancel = json!({"reason": "storm"});
    let scanner = json!({"name": "Gate 1"});
    let cases: Vec<Case> = vec![
        (
            "door",
            door.as_str(),
            Method::POST,
            format!("/api/concerts/{id}/scanners"),
            Some(scanner.clone()),
            (201, ""),
        ),
        (
            "door",
            door.as_str(),
            Method::PATCH,
            format!("/api/concerts/{id}"),
            Some(patch.clone()),
            (403, "PERMISSION_REQUIRED"),
        ),
        (
            "door",
            door.as_str(),
            Method::GET,
            format!("/api/concerts/{id}/sales"),
            None,
            (403, "PERMISSION_REQUIRED"),
        ),
        (
            "door",
            door.as_str(),
            Method::GET,
            format!("/api/concerts/{id}/orders?q=a"),
            None,
            (403, "PERMISSION_REQUIRED"),
        ),
        (
            "finance",
            finance.as_str(),
            Method::GET,
            format!("/api/concerts/{id}/sales"),
            None,
            (200, ""),
        ),
        (
            "finance",
            finance.as_str(),
            Method::POST,
            format!("/api/concerts/{id}/cancel"),
            Some(cancel.clone()),
            (403, "PERMISSION_REQUIRED"),
        ),
        (
            "finance",
            finance.as_str(),
            Method::POST,
            format!("/api/concerts/{id}/scanners"),
            Some(scanner.clone()),
            (403, "PERMISSION_REQUIRED"),
        ),
        (
            "manager",
            manager.as_str(),
            Method::PATCH,
            format!("/api/concerts/{id}"),
            Some(patch.clone()),
            (200, ""),
        ),
        (
            "manager",
            manager.as_str(),
            Method::GET,
            format!("/api/concerts/{id}/sales"),
            None,
            (403, "PERMISSION_REQUIRED"),
        ),
        (
            "manager",
            manager.as_str(),
            Method::GET,
            format!("/api/organizers/{seoul}/members"),
            None,
            (403, "PERMISSION_REQUIRED"),
        ),
        // Another organizer's concerts do not exist for its members.
        (
            "rival",
            rival.as_str(),
            Method::PATCH,
            format!("/api/concerts/{id}"),
            Some(patch.clone()),
            (404, "CONCERT_NOT_FOUND"),
        ),
        (
            "rival",
            rival.as_str(),
            Method::GET,
            format!("/api/concerts/{id}/sales"),
            None,
            (404, "CONCERT_NOT_FOUND"),
        ),
        (
            "rival",
            rival.as_str(),
            Method::GET,
            format!("/api/organizers/{seoul}"),
            None,
            (404, "ORGANIZER_NOT_FOUND"),
        ),
        (
            "owner",
            owner.as_str(),
            Method::GET,
            format!("/api/concerts/{}/sales", house["id"]),
            None,
            (404, "CONCERT_NOT_FOUND"),
        ),
        // A fan is refused as before organizers.
        (
            "fan",
            fan.as_str(),
            Method::PATCH,
            format!("/api/concerts/{id}"),
            Some(patch.clone()),
            (403, "FORBIDDEN"),
        ),
        (
            "fan",
            fan.as_str(),
            Method::GET,
            format!("/api/concerts/{id}/sales"),
            None,
            (403, "FORBIDDEN"),
        ),
        (
            "owner",
            owner.as_str(),
            Method::POST,
            format!("/api/concerts/{id}/cancel"),
            Some(cancel.clone()),
            (202, ""),
        ),
    ];
    let mut wrong = Vec::new();
    for (who, token, method, path, body, (status, code)) in cases {
        let reply = app.request(method.clone(), &path, Some(token), body).await;
        let got = outcome(&reply);
        let expected_code = if code.is_empty() {
            got.1.as_str()
        } else {
            code
        };
        if got.0 != status || got.1 != expected_code {
            wrong.push(format!(
                "{who} {method} {path}: {got:?}, expected ({status}, {code:?})"
            ));
        }
        if code == "PERMISSION_REQUIRED" && reply.body["permission"].as_str().is_none() {
            wrong.push(format!(
                "{who} {method} {path}: the permission is not named"
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    let refused = app
        .request(
            Method::PATCH,
            &format!("/api/concerts/{id}"),
            Some(&door),
            Some(patch),
        )
        .await;
    assert_eq!(refused.body["permission"], "EDIT_CONCERTS");
}

#[tokio::test]
async fn an_organizer_always_keeps_an_owner() {
    let app = spawn_app().await;
    let (owner_id, owner) = app.user("owner").await;
    let (second_id, _) = app.user("second").await;
    let org = organizer(&app, "keeps-one", owner_id).await;
    let members = format!("/api/organizers/{org}/members");
    let demote = set_role(&app, &owner, org, owner_id, json!({"role": "MANAGER"})).await;
    assert_eq!(outcome(&demote), (409, "LAST_OWNER".into()));
    let leave = app
        .delete(&format!("{members}/{owner_id}"), Some(&owner))
        .await;
    assert_eq!(outcome(&leave), (409, "LAST_OWNER".into()));
    // Nor does its account go while it is the only owner.
    let gone = app
        .delete(&format!("/api/users/{owner_id}"), Some(&owner))
        .await;
    assert_eq!(outcome(&gone), (409, "LAST_OWNER".into()));
    set_role(&app, &owner, org, second_id, json!({"role": "OWNER"}))
        .await
        .assert_status(204);
    set_role(&app, &owner, org, owner_id, json!({"role": "FINANCE"}))
        .await
        .assert_status(204);
    // No longer an owner: the team is not theirs to change.
    let listed = app.get(&members, Some(&owner)).await;
    assert_eq!(outcome(&listed), (403, "PERMISSION_REQUIRED".into()));
    let listed = app.get(&members, Some(&app.admin_token)).await;
    let roles: Vec<(u64, String)> = listed
        .assert_status(200)
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["userId"].as_u64().unwrap(),
                m["role"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        roles,
        [(owner_id, "FINANCE".into()), (second_id, "OWNER".into())]
    );
    let mine = app.get("/api/organizers", Some(&owner)).await;
    assert_eq!(mine.assert_status(200)[0]["role"], "FINANCE");
}

#[tokio::test]
async fn a_role_limited_to_some_concerts_reaches_only_those() {
    let app = spawn_app().await;
    let (owner_id, owner) = app.user("owner").await;
    let (door_id, door) = app.user("door").await;
    let org = organizer(&app, "limited", owner_id).await;
    let body = json!({"title": "One", "venue": "Hall", "concertDate": "2099-05-01T19:00:00+09:00", "organizerId": org});
    let one = app
        .post("/api/concerts", Some(&owner), body.clone())
        .await
        .assert_status(201)["id"]
        .clone();
    let two = app
        .post("/api/concerts", Some(&owner), body)
        .await
        .assert_status(201)["id"]
        .clone();
    let house = app.concert(json!({})).await["id"].clone();
    let outside = set_role(
        &app,
        &owner,
        org,
        door_id,
        json!({"role": "DOOR", "concertIds": [one, house]}),
    )
    .await;
    assert_eq!(outcome(&outside), (400, "VALIDATION_ERROR".into()));
    set_role(
        &app,
        &owner,
        org,
        door_id,
        json!({"role": "DOOR", "concertIds": [one]}),
    )
    .await
    .assert_status(204);
    let scanner = json!({"name": "Gate"});
    app.post(
        &format!("/api/concerts/{one}/scanners"),
        Some(&door),
        scanner.clone(),
    )
    .await
    .assert_status(201);
    let other = app
        .post(
            &format!("/api/concerts/{two}/scanners"),
            Some(&door),
            scanner,
        )
        .await;
    assert_eq!(outcome(&other), (404, "CONCERT_NOT_FOUND".into()));
    let listed = app
        .get(&format!("/api/organizers/{org}/members"), Some(&owner))
        .await;
    let door_row = listed
        .assert_status(200)
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["userId"] == door_id)
        .unwrap()
        .clone();
    assert_eq!(door_row["concertIds"], json!([one]));
}

#[tokio::test]
async fn organizers_are_made_by_the_admin_with_checked_names() {
    let app = spawn_app().await;
    let (owner_id, owner) = app.user("owner").await;
    let (_, fan) = app.user("fan").await;
    let made = organizer(&app, "checked", owner_id).await;
    let cases = [
        (
            Some(&fan),
            json!({"name": "Mine", "slug": "mine"}),
            (403, "FORBIDDEN"),
        ),
        (
            Some(&app.admin_token),
            json!({"name": "Dup", "slug": "checked"}),
            (409, "ORGANIZER_SLUG_DUPLICATED"),
        ),
        (
            Some(&app.admin_token),
            json!({"name": "Bad", "slug": "Not A Slug"}),
            (400, "VALIDATION_ERROR"),
        ),
        (
            Some(&app.admin_token),
            json!({"name": " ", "slug": "blank-name"}),
            (400, "VALIDATION_ERROR"),
        ),
        (
            Some(&app.admin_token),
            json!({"name": "x", "slug": "xx", "extra": 1}),
            (400, "VALIDATION_ERROR"),
        ),
    ];
    for (token, body, (status, code)) in cases {
        let reply = app
            .post("/api/organizers", token.map(String::as_str), body.clone())
            .await;
        assert_eq!(outcome(&reply), (status, code.to_owned()), "{body}");
    }
    let count: (i64,) = sqlx::query_as("SELECT COUNT(*) FROM organizers")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(
        count.0, 2,
        "the first organizer and the one made: nothing else written"
    );
    let renamed = app
        .patch(
            &format!("/api/organizers/{made}"),
            Some(&owner),
            json!({"name": "Renamed"}),
        )
        .await;
    assert_eq!(renamed.assert_status(200)["name"], "Renamed");
    assert_eq!(renamed.body["role"], "OWNER");
    let theirs = app.get("/api/organizers", Some(&fan)).await;
    assert_eq!(theirs.assert_status(200), &json!([]));
    let all = app.get("/api/organizers", Some(&app.admin_token)).await;
    let all = all.assert_status(200).as_array().unwrap().clone();
    assert_eq!(all.len(), 2);
    // The admin named at start-up owns the installation's first organizer.
    assert_eq!(
        (all[0]["id"].clone(), all[0]["role"].clone()),
        (json!(1), json!("OWNER"))
    );
    // A new organizer's first member is its owner.
    let empty = app
        .post(
            "/api/organizers",
            Some(&app.admin_token),
            json!({"name": "Empty", "slug": "empty"}),
        )
        .await;
    let empty = empty.assert_status(201)["id"].as_u64().unwrap();
    let (fan_id, _) = app.user("fan2").await;
    let door = set_role(
        &app,
        &app.admin_token,
        empty,
        fan_id,
        json!({"role": "DOOR"}),
    )
    .await;
    assert_eq!(outcome(&door), (409, "LAST_OWNER".into()));
}

/// The migration on a database holding data from before organizers: its
/// concerts become the first organizer's and its admins that organizer's
/// owners; a fan stays a fan.
#[tokio::test]
async fn an_installation_from_before_organizers_keeps_its_concerts_and_admins() {
    use ticket_core::db::MIGRATOR;
    use ticket_core::testing::TestDatabase;
    let db = TestDatabase::create().await;
    let pool = db.pool(4).await;
    MIGRATOR.run_to(20261222000001, &pool).await.unwrap();
    for (nick, role) in [("boss", "ADMIN"), ("second", "ADMIN"), ("fan", "USER")] {
        sqlx::query(
            "INSERT INTO users (nickname, password_hash, role, created_at, updated_at) \
             VALUES (?, 'x', ?, UTC_TIMESTAMP(6), UTC_TIMESTAMP(6))",
        )
        .bind(nick)
        .bind(role)
        .execute(&pool)
        .await
        .unwrap();
    }
    for title in ["Old show", "Older show"] {
        sqlx::query(
            "INSERT INTO concerts (title, venue, concert_date, created_at, updated_at) \
             VALUES (?, 'Hall', '2099-01-01', UTC_TIMESTAMP(6), UTC_TIMESTAMP(6))",
        )
        .bind(title)
        .execute(&pool)
        .await
        .unwrap();
    }
    MIGRATOR.run(&pool).await.unwrap();
    let owners: Vec<(String, String)> = sqlx::query_as(
        "SELECT u.nickname, m.role FROM organizer_members m JOIN users u ON u.id = m.user_id \
         WHERE m.organizer_id = 1 ORDER BY u.nickname",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    assert_eq!(
        owners,
        [
            ("boss".into(), "OWNER".into()),
            ("second".into(), "OWNER".into())
        ]
    );
    let concerts: Vec<(u64,)> = sqlx::query_as("SELECT organizer_id FROM concerts ORDER BY id")
        .fetch_all(&pool)
        .await
        .unwrap();
    assert_eq!(concerts, [(1,), (1,)]);
    let name: (String,) = sqlx::query_as("SELECT slug FROM organizers WHERE id = 1")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(name.0, "box-office");
    drop(pool);
    drop(db);
}

/// The organizer's trail, as `token` reads it with `query`.
async fn trail(app: &TestApp, token: &str, organizer: u64, query: &str) -> Reply {
    app.get(
        &format!("/api/organizers/{organizer}/audit{query}"),
        Some(token),
    )
    .await
}

#[tokio::test]
async fn every_write_is_recorded_with_who_what_when_and_the_change() {
    let app = spawn_app().await;
    let (owner_id, owner) = app.user("owner").await;
    let (finance_id, finance) = app.user("finance").await;
    let (manager_id, manager) = app.user("manager").await;
    let org = organizer(&app, "recorded", owner_id).await;
    for (user, role) in [(finance_id, "FINANCE"), (manager_id, "MANAGER")] {
        set_role(&app, &owner, org, user, json!({"role": role}))
            .await
            .assert_status(204);
    }
    let body =
        json!({"title": "First", "venue": "Hall", "concertDate": "2099-05-01T19:00:00+09:00"});
    let concert = app.post("/api/concerts", Some(&owner), body).await;
    let id = concert.assert_status(201)["id"].as_u64().unwrap();
    let patched = app
        .client
        .patch(format!("{}/api/concerts/{id}", app.base))
        .bearer_auth(&manager)
        .header("x-request-id", "desk-42")
        .json(&json!({"title": "Second"}))
        .send()
        .await
        .unwrap();
    assert_eq!(patched.status(), 200);
    app.post(
        &format!("/api/concerts/{id}/scanners"),
        Some(&manager),
        json!({"name": "Gate 1"}),
    )
    .await
    .assert_status(201);
    app.post(
        &format!("/api/concerts/{id}/cancel"),
        Some(&owner),
        json!({"reason": "storm"}),
    )
    .await
    .assert_status(202);

    let entries = trail(&app, &finance, org, "").await;
    let actions: Vec<&str> = entries
        .assert_status(200)
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["action"].as_str().unwrap())
        .collect();
    assert_eq!(
        actions,
        [
            "concert.cancel",
            "scanner.create",
            "concert.change",
            "concert.create",
            "member.set",
            "member.set",
            "member.set",
            "organizer.create"
        ],
        "newest first",
    );
    let change = trail(&app, &owner, org, "?action=concert.change").await;
    let change = &change.assert_status(200)[0];
    assert_eq!(
        change["changes"],
        json!({"before": {"title": "First"}, "after": {"title": "Second"}})
    );
    assert_eq!(change["userId"], manager_id);
    assert_eq!(change["role"], "MANAGER");
    assert_eq!(change["concertId"], id);
    assert_eq!(change["requestId"], "desk-42");
    assert_eq!(change["clientAddress"], "127.0.0.1");
    let scanner = trail(&app, &owner, org, "?action=scanner.create").await;
    let scanner = scanner.assert_status(200)[0]["changes"].to_string();
    assert!(
        !scanner.contains("scn_") && scanner.contains("Gate 1"),
        "never a secret: {scanner}"
    );
    let by_person = trail(
        &app,
        &owner,
        org,
        &format!("?userId={owner_id}&concertId={id}"),
    )
    .await;
    let by_person: Vec<&str> = by_person
        .assert_status(200)
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["action"].as_str().unwrap())
        .collect();
    assert_eq!(by_person, ["concert.cancel", "concert.create"]);
    let future = trail(&app, &owner, org, "?from=2099-01-01T00:00:00Z").await;
    assert_eq!(future.assert_status(200), &json!([]));
    let csv = app
        .client
        .get(format!("{}/api/organizers/{org}/audit", app.base))
        .bearer_auth(&finance)
        .header("accept", "text/csv")
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert!(lines[0].starts_with("id,at,concert,user"), "{csv}");
    assert_eq!(lines.len(), 1 + actions.len(), "{csv}");
    // The trail is for owners and finance.
    let refused = trail(&app, &manager, org, "").await;
    assert_eq!(outcome(&refused), (403, "PERMISSION_REQUIRED".into()));
    assert_eq!(refused.body["permission"], "READ_AUDIT");
    let bad = trail(&app, &owner, org, "?from=yesterday").await;
    assert_eq!(outcome(&bad), (400, "VALIDATION_ERROR".into()));
}

#[tokio::test]
async fn a_refused_write_leaves_no_entry_and_no_one_rewrites_the_trail() {
    let app = spawn_app().await;
    let (owner_id, owner) = app.user("owner").await;
    organizer(&app, "kept", owner_id).await;
    let body = json!({"title": "Priced", "venue": "Hall", "concertDate": "2099-05-01T19:00:00+09:00",
        "holdSeconds": 600, "categories": [{"name": "A", "price": 100, "currency": "EUR"}]});
    let id = app
        .post("/api/concerts", Some(&owner), body)
        .await
        .assert_status(201)["id"]
        .clone();
    let count = || async {
        let (n,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM audit_entries")
            .fetch_one(&app.pool)
            .await
            .unwrap();
        n
    };
    let before = count().await;
    // Refused inside its transaction (a priced concert must hold).
    let refused = app
        .patch(
            &format!("/api/concerts/{id}"),
            Some(&owner),
            json!({"holdSeconds": 0}),
        )
        .await;
    assert_eq!(refused.status, 400);
    assert_eq!(count().await, before, "a refused change records nothing");
    // Not even the application's own connection may change or remove one.
    for statement in [
        "UPDATE audit_entries SET action = 'nothing' WHERE id > 0",
        "DELETE FROM audit_entries WHERE id > 0",
    ] {
        let tried = sqlx::query(statement).execute(&app.pool).await;
        let error = tried.expect_err(statement).to_string();
        assert!(
            error.contains("audit entries are never"),
            "{statement}: {error}"
        );
    }
    assert_eq!(count().await, before);
    let actions: Vec<(String,)> = sqlx::query_as("SELECT action FROM audit_entries ORDER BY id")
        .fetch_all(&app.pool)
        .await
        .unwrap();
    assert_eq!(
        actions.iter().map(|(a,)| a.as_str()).collect::<Vec<_>>(),
        ["organizer.create", "member.set", "concert.create"]
    );
}

#[tokio::test]
async fn seats_and_codes_are_recorded_too_never_the_codes() {
    let app = spawn_app().await;
    let (owner_id, owner) = app.user("owner").await;
    let org = organizer(&app, "more", owner_id).await;
    let body = json!({"title": "More", "venue": "Hall", "concertDate": "2099-05-01T19:00:00+09:00",
        "rows": 1, "seatsPerRow": 2});
    let id = app
        .post("/api/concerts", Some(&owner), body)
        .await
        .assert_status(201)["id"]
        .as_u64()
        .unwrap();
    let seat = app
        .post(
            "/api/seats",
            Some(&owner),
            json!({"concertId": id, "seatNumber": "Z9"}),
        )
        .await;
    let seat = seat.assert_status(201)["id"].as_u64().unwrap();
    app.patch(
        &format!("/api/seats/{seat}"),
        Some(&owner),
        json!({"seatNumber": "Z10"}),
    )
    .await
    .assert_status(200);
    let codes = app
        .post(
            &format!("/api/concerts/{id}/access-codes"),
            Some(&owner),
            json!({"count": 1, "usesPerCode": 1, "seatsPerCode": 2}),
        )
        .await;
    let code = codes.assert_status(201)["codes"][0].clone();
    app.delete(
        &format!("/api/concerts/{id}/access-codes/{}", code["id"]),
        Some(&owner),
    )
    .await
    .assert_status(204);
    let entries = trail(&app, &owner, org, &format!("?concertId={id}")).await;
    let entries = entries.assert_status(200).as_array().unwrap().clone();
    let actions: Vec<&str> = entries
        .iter()
        .map(|e| e["action"].as_str().unwrap())
        .collect();
    assert_eq!(
        actions,
        [
            "access_code.revoke",
            "access_codes.create",
            "seat.change",
            "seat.create",
            "concert.create"
        ]
    );
    assert_eq!(
        entries[2]["changes"],
        json!({"before": {"seatNumber": "Z9"}, "after": {"seatNumber": "Z10"}})
    );
    let all = serde_json::to_string(&entries).unwrap();
    let shown = code["code"].as_str().unwrap();
    assert!(
        !all.contains(shown),
        "an access code never reaches the trail"
    );
}

/// Two owners demoting themselves at the same moment, on two connections:
/// the owners' rows are locked while they are counted, so exactly one
/// goes and the organizer keeps the other (five rounds).
#[tokio::test]
async fn two_owners_stepping_down_at_once_leave_one_owner() {
    let app = spawn_app().await;
    for round in 0..5 {
        let (first_id, first) = app.user(&format!("first{round}")).await;
        let (second_id, second) = app.user(&format!("second{round}")).await;
        let org = organizer(&app, &format!("race-{round}"), first_id).await;
        set_role(&app, &first, org, second_id, json!({"role": "OWNER"}))
            .await
            .assert_status(204);
        let step_down = |token: String, user: u64| {
            let app = &app;
            async move {
                set_role(app, &token, org, user, json!({"role": "MANAGER"}))
                    .await
                    .status
                    .as_u16()
            }
        };
        let (a, b) = tokio::join!(step_down(first, first_id), step_down(second, second_id));
        let mut answers = [a, b];
        answers.sort_unstable();
        assert_eq!(
            answers,
            [204, 409],
            "round {round}: one goes, the last owner stays"
        );
        let (owners,): (i64,) = sqlx::query_as(
            "SELECT COUNT(*) FROM organizer_members WHERE organizer_id = ? AND role = 'OWNER'",
        )
        .bind(org)
        .fetch_one(&app.pool)
        .await
        .unwrap();
        assert_eq!(owners, 1, "round {round}");
    }
}

/// `check` names an organizer left without an owner and a role limited to
/// another organizer's concert (as a write past the routes would leave).
#[tokio::test]
async fn check_names_an_ownerless_organizer_and_a_role_over_anothers_concert() {
    let app = spawn_app().await;
    let (owner_id, owner) = app.user("owner").await;
    let (door_id, _) = app.user("door").await;
    let org = organizer(&app, "checked", owner_id).await;
    let body =
        json!({"title": "Ours", "venue": "Hall", "concertDate": "2099-05-01T19:00:00+09:00"});
    let ours = app
        .post("/api/concerts", Some(&owner), body)
        .await
        .assert_status(201)["id"]
        .clone();
    set_role(
        &app,
        &owner,
        org,
        door_id,
        json!({"role": "DOOR", "concertIds": [ours]}),
    )
    .await
    .assert_status(204);
    let house = app.concert(json!({})).await["id"].as_u64().unwrap();
    let violations = || async {
        let mut conn = app.pool.acquire().await.unwrap();
        ticket_core::db::invariants::check(&mut conn, chrono::Duration::minutes(5), 5, None)
            .await
            .unwrap()
    };
    assert_eq!(violations().await, []);
    for statement in [
        "UPDATE organizer_members SET role = 'MANAGER' WHERE role = 'OWNER' AND organizer_id = ?",
        "UPDATE member_concerts SET concert_id = ? WHERE organizer_id = ?",
    ] {
        let query = sqlx::query(statement);
        let query = if statement.starts_with("UPDATE member_concerts") {
            query.bind(house).bind(org)
        } else {
            query.bind(org)
        };
        query.execute(&app.pool).await.unwrap();
    }
    let found: Vec<&str> = violations().await.iter().map(|v| v.invariant).collect();
    assert_eq!(
        found,
        [
            "an organizer with members has no owner",
            "a member's role is limited to a concert of another organizer"
        ]
    );
}
