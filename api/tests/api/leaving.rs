//! Accounts can always leave and concerts without history can be deleted:
//! every table that refers to `users` or `concerts` (read from the schema's
//! foreign keys, so a table added later is covered, or fails this test
//! until it is) has a row of the account or the concert, and the delete
//! takes them all, leaving nothing that names it.

use std::collections::BTreeSet;

use serde_json::json;
use sqlx::MySqlPool;

use crate::helpers::{TestApp, spawn_app, won};

/// `user` becomes a DOOR member of the first organizer for `concert` only.
async fn works_the_door(app: &TestApp, user: u64, concert: u64) {
    app.request(
        reqwest::Method::PUT,
        &format!("/api/organizers/1/members/{user}"),
        Some(&app.admin_token),
        Some(json!({"role": "DOOR", "concertIds": [concert]})),
    )
    .await
    .assert_status(204);
}

/// Tables whose foreign keys lead to `table`, directly or through others.
async fn referring_to(pool: &MySqlPool, table: &str, transitively: bool) -> BTreeSet<String> {
    let edges: Vec<(String, String)> = sqlx::query_as(
        "SELECT CAST(TABLE_NAME AS CHAR), CAST(REFERENCED_TABLE_NAME AS CHAR) \
           FROM information_schema.KEY_COLUMN_USAGE \
          WHERE TABLE_SCHEMA = DATABASE() AND REFERENCED_TABLE_NAME IS NOT NULL",
    )
    .fetch_all(pool)
    .await
    .unwrap();
    let mut found = BTreeSet::new();
    let mut next = vec![table.to_owned()];
    while let Some(target) = next.pop() {
        for (from, to) in &edges {
            if *to == target && from != table && found.insert(from.clone()) && transitively {
                next.push(from.clone());
            }
        }
    }
    found
}

/// Tables with a `column` (foreign key or not) and how many of their rows
/// have `value` there.
async fn rows_naming(pool: &MySqlPool, column: &str, value: u64) -> Vec<(String, i64)> {
    let tables: Vec<(String,)> = sqlx::query_as(
        "SELECT CAST(TABLE_NAME AS CHAR) FROM information_schema.COLUMNS \
          WHERE TABLE_SCHEMA = DATABASE() AND COLUMN_NAME = ? ORDER BY TABLE_NAME",
    )
    .bind(column)
    .fetch_all(pool)
    .await
    .unwrap();
    let mut counts = Vec::new();
    for (table,) in tables {
        let (n,): (i64,) = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT COUNT(*) FROM `{table}` WHERE `{column}` = ?"
        )))
        .bind(value)
        .fetch_one(pool)
        .await
        .unwrap();
        counts.push((table, n));
    }
    counts
}

async fn count(pool: &MySqlPool, sql: &str, id: u64) -> i64 {
    let (n,): (i64,) = sqlx::query_as(sqlx::AssertSqlSafe(sql.to_owned()))
        .bind(id)
        .fetch_one(pool)
        .await
        .unwrap();
    n
}

async fn scanner_token(app: &TestApp, concert: u64) -> String {
    app.post(
        &format!("/api/concerts/{concert}/scanners"),
        Some(&app.admin_token),
        json!({"name": "north gate"}),
    )
    .await
    .assert_status(201)["token"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[tokio::test]
async fn an_account_with_every_kind_of_history_can_leave() {
    let app = spawn_app().await;
    let fan = app
        .post(
            "/api/users",
            None,
            json!({"nickName": "leaver", "password": "password123", "email": "leaver@fans.example"}),
        )
        .await
        .assert_status(201)["id"]
        .as_u64()
        .unwrap();
    let token = app.login("leaver", "password123").await;
    // A hold confirmed (ticket, mail), then cancelled; its void ticket
    // scanned at the door; a presale code bound to the account.
    let (concert, seats) = app
        .concert_and_seats(json!({"rows": 1, "seatsPerRow": 3, "holdSeconds": 600}))
        .await;
    let reservation = won(&app, &token, &seats[..1]).await;
    app.post(
        &format!("/api/reservations/{reservation}/confirm"),
        Some(&token),
        json!({}),
    )
    .await
    .assert_status(200);
    let code = app
        .get(
            &format!("/api/reservations/{reservation}/tickets"),
            Some(&token),
        )
        .await
        .assert_status(200)[0]["code"]
        .as_str()
        .unwrap()
        .to_owned();
    app.post(
        &format!("/api/reservations/{reservation}/cancel"),
        Some(&token),
        json!({}),
    )
    .await
    .assert_status(200);
    let door = scanner_token(&app, concert).await;
    // A scanner offline let its holder in before it heard of the cancel.
    let uploaded = app
        .post(
            "/api/check-ins/batch",
            Some(&door),
            json!({"scans": [{"scanId": "n-1", "code": code, "gate": "north",
                              "scannedAt": chrono::Utc::now().to_rfc3339()}]}),
        )
        .await;
    assert_eq!(
        uploaded.assert_status(200)["results"][0]["status"],
        "TICKET_VOID"
    );
    // Bought at the desk once (the desk's buyer account is its own).
    let opened = app
        .post(
            &format!("/api/concerts/{concert}/desk/shifts"),
            Some(&app.admin_token),
            json!({"float": 0}),
        )
        .await;
    let shift = opened.assert_status(201)["id"].as_u64().unwrap();
    app.post(
        &format!("/api/desk/shifts/{shift}/requests"),
        Some(&app.admin_token),
        json!({"order": {"seatIds": [seats_left_for_desk(&app, concert).await]}}),
    )
    .await
    .assert_status(201);
    // Worked the door of that concert for the first organizer, and was
    // invited to it again.
    works_the_door(&app, fan, concert).await;
    sqlx::query(
        "INSERT INTO organizer_invitations (organizer_id, user_id, role, invited_by, created_at, expires_at) \
         VALUES (1, ?, 'FINANCE', ?, NOW(6), NOW(6) + INTERVAL 7 DAY)",
    )
    .bind(fan)
    .bind(fan)
    .execute(&app.pool)
    .await
    .unwrap();
    app.access_codes(concert, 1, 1, 2).await;
    sqlx::query("UPDATE access_codes SET user_id = ? WHERE concert_id = ?")
        .bind(fan)
        .bind(concert)
        .execute(&app.pool)
        .await
        .unwrap();
    // Bought a priced ticket the box office confirmed, then cancelled it
    // (a payment and its refund, by hand).
    let (priced_concert, priced) = app
        .concert_and_seats(json!({"rows": 1, "seatsPerRow": 1, "holdSeconds": 600,
            "categories": [{"name": "Standard", "price": 5000, "currency": "EUR"}]}))
        .await;
    let bought = won(&app, &token, &priced).await;
    app.post(
        &format!("/api/reservations/{bought}/confirm"),
        Some(&app.admin_token),
        json!({"paymentReference": "cash-1"}),
    )
    .await
    .assert_status(200);
    // Money taken by hand goes back by hand: an operator cancels the
    // order and records the cash given back.
    app.post(
        &format!("/api/reservations/{bought}/cancel"),
        Some(&app.admin_token),
        json!({}),
    )
    .await
    .assert_status(200);
    let money = app
        .get(
            &format!("/api/reservations/{bought}/payments"),
            Some(&app.admin_token),
        )
        .await;
    let refund = money.assert_status(200)["refunds"][0]["refundId"].clone();
    app.post(
        &format!("/api/refunds/{refund}/paid-back"),
        Some(&app.admin_token),
        json!({"paymentReference": "cash-back-1"}),
    )
    .await
    .assert_status(200);
    // Asked for the best two seats of a category of one (SOLD_OUT).
    app.post(
        "/api/reservations",
        Some(&token),
        json!({"concertId": priced_concert, "category": "Standard", "count": 2}),
    )
    .await
    .assert_status(201);
    app.drain().await;
    // Waited for a sold-out concert, then left its list.
    let (sold_out, only) = app
        .concert_and_seats(json!({"rows": 1, "seatsPerRow": 1}))
        .await;
    let (_, buyer) = app.user("buyer").await;
    won(&app, &buyer, &only).await;
    let list = format!("/api/concerts/{sold_out}/waiting-list");
    app.post(&list, Some(&token), json!({"seats": 1}))
        .await
        .assert_status(201);
    app.delete(&list, Some(&token)).await.assert_status(204);

    for table in referring_to(&app.pool, "users", true).await {
        let (n,): (i64,) = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT COUNT(*) FROM `{table}`"
        )))
        .fetch_one(&app.pool)
        .await
        .unwrap();
        assert!(n > 0, "the scenario wrote no row in {table}: add one");
    }
    assert!(
        count(
            &app.pool,
            "SELECT COUNT(*) FROM reservation_queue WHERE user_id = ?",
            fan
        )
        .await
            > 0
    );

    app.delete(&format!("/api/users/{fan}"), Some(&token))
        .await
        .assert_status(204);
    // It paid for something: the books keep its orders and payments (the
    // refunds hang from those), naming an anonymised person; everything
    // else that named it went.
    let left: Vec<String> = rows_naming(&app.pool, "user_id", fan)
        .await
        .into_iter()
        .filter(|(table, n)| *n > 0 && table != "token_revocations")
        .map(|(table, _)| table)
        .collect();
    assert_eq!(
        left,
        ["payments", "reservations"],
        "rows still naming the account"
    );
    assert_eq!(
        count(
            &app.pool,
            "SELECT COUNT(*) FROM users WHERE id = ? AND deleted_at IS NOT NULL \
               AND email IS NULL AND password_hash = ''",
            fan
        )
        .await,
        1
    );
    // The door's history stays with the tickets: the scenario's offline
    // admission on a cancelled ticket is still there for an operator.
    let mut conn = app.pool.acquire().await.unwrap();
    let violations =
        ticket_core::db::invariants::check(&mut conn, chrono::Duration::minutes(5), 5, None)
            .await
            .unwrap();
    let named: Vec<&str> = violations.iter().map(|v| v.invariant).collect();
    assert_eq!(
        named,
        ["an offline scanner let someone in on a cancelled ticket"]
    );
}

/// Tables whose rows make a concert part of someone's history: such a
/// concert is not deleted (409), so this test cannot write them.
const HISTORY: [&str; 7] = [
    "check_ins",
    // A shift is its drawer's money: the concert is history once opened.
    "desk_guests",
    "desk_shifts",
    "payments",
    "refunds",
    "reservations",
    "tickets",
];

#[tokio::test]
async fn a_concert_without_history_is_deleted_with_everything_of_its_own() {
    let app = spawn_app().await;
    let concert = app
        .concert(json!({"rows": 2, "seatsPerRow": 2, "categories": [
            {"name": "Standard", "price": 90000, "currency": "KRW"},
            {"name": "VIP", "price": 150000, "currency": "KRW", "rows": ["A"]},
        ], "areas": [{"name": "Floor", "capacity": 3}]}))
        .await["id"]
        .as_u64()
        .unwrap();
    app.access_codes(concert, 1, 1, 2).await;
    scanner_token(&app, concert).await;
    let (fan, _) = app.user("fan").await;
    works_the_door(&app, fan, concert).await;
    // What no request has made yet but may exist without one: a list, a
    // fan on it, a lottery's count, a challenge spent on a refused request,
    // a seating plan.
    for statement in [
        "INSERT INTO waiting_lists (concert_id, created_at) VALUES (?, UTC_TIMESTAMP(6))",
        "INSERT INTO lottery_buckets (concert_id, bucket, before_count, requests, ids) VALUES (?, 0, 0, 0, '')",
        "INSERT INTO spent_challenges (concert_id, challenge, expires_at) \
         VALUES (?, REPEAT('x', 32), UTC_TIMESTAMP(6) + INTERVAL 1 MINUTE)",
        "INSERT IGNORE INTO sale_lines (concert_id) VALUES (?)",
        "INSERT INTO seating_plans (concert_id, name, plan, seat_count, created_at) \
         VALUES (?, 'Hall', '{}', 0, UTC_TIMESTAMP(6))",
    ] {
        sqlx::query(sqlx::AssertSqlSafe(statement.to_owned()))
            .bind(concert)
            .execute(&app.pool)
            .await
            .unwrap_or_else(|e| panic!("{statement}: {e}"));
    }
    app.waiting_directly(concert, fan).await;

    for table in referring_to(&app.pool, "concerts", false).await {
        if HISTORY.contains(&table.as_str()) {
            continue;
        }
        let sql = format!("SELECT COUNT(*) FROM `{table}` WHERE concert_id = ?");
        assert!(
            count(&app.pool, &sql, concert).await > 0,
            "the test wrote no row of the concert in {table}: add one, or list it in HISTORY"
        );
    }

    app.delete(&format!("/api/concerts/{concert}"), Some(&app.admin_token))
        .await
        .assert_status(204);
    // The record of who did what keeps naming it: the trail stays.
    let left: Vec<(String, i64)> = rows_naming(&app.pool, "concert_id", concert)
        .await
        .into_iter()
        .filter(|(table, n)| *n > 0 && table != "audit_entries")
        .collect();
    assert!(left.is_empty(), "rows still naming the concert: {left:?}");
    app.assert_invariants().await;
}

/// A seat of `concert` nobody holds or asks for.
async fn seats_left_for_desk(app: &TestApp, concert: u64) -> u64 {
    let seats = app.seats(concert).await;
    let free = seats.iter().rev().find(|s| s["status"] == "AVAILABLE");
    free.expect("a free seat")["id"].as_u64().unwrap()
}
