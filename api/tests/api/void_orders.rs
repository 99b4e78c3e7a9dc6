//! Orders voided after a sale (issue 60): finance picks orders from the
//! signals the box office has (accounts from one address, a burst of
//! sign-ups before the opening), voids them with a reason; each sold one
//! is refunded once, its tickets revoked, its fan told; a hold is
//! released; asking again changes nothing; the team's other roles may not.

use serde_json::{Value, json};

use crate::helpers::*;

/// A fan's order of `seat`, sold at the desk by hand.
async fn sold(app: &TestApp, team: &Team, fan: &str, seat: u64) -> u64 {
    let id = won(app, fan, &[seat]).await;
    app.post(
        &format!("/api/reservations/{id}/confirm"),
        Some(team.token("BOX_OFFICE")),
        json!({}),
    )
    .await
    .assert_status(200);
    id
}

#[tokio::test]
async fn finance_voids_orders_picked_from_signals_each_refunded_once() {
    let app = spawn_app().await;
    let team = Team::new(&app, "void").await;
    let (concert, seats) = team.priced_concert(&app, 6).await;
    let (_, other_seats) = team.priced_concert(&app, 6).await;
    let (a_id, a) = app.user("bot_a").await;
    let (_, b) = app.user("bot_b").await;
    let (_, c) = app.user("bot_c").await;
    let (d_id, d) = app.user("fan_d").await;
    let a_order = sold(&app, &team, &a, seats[0]).await;
    let b_order = sold(&app, &team, &b, seats[1]).await;
    let c_hold = won(&app, &c, &[seats[2]]).await;
    let d_order = sold(&app, &team, &d, seats[3]).await;
    let elsewhere = sold(&app, &team, &d, other_seats[0]).await;
    // D signed up from elsewhere, long before; A, B and C from one address.
    sqlx::query("UPDATE users SET signup_address = '203.0.113.9', created_at = created_at - INTERVAL 30 DAY WHERE id = ?")
        .bind(d_id)
        .execute(&app.pool)
        .await
        .unwrap();

    let signals_path = format!("/api/concerts/{concert}/orders/signals");
    app.get(&signals_path, Some(team.token("BOX_OFFICE")))
        .await
        .assert_problem(403, "PERMISSION_REQUIRED");
    let signalled = app.get(&signals_path, Some(team.token("FINANCE"))).await;
    let signalled = signalled.assert_status(200).clone();
    let flagged: Vec<u64> = signalled
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["reservationId"].as_u64().unwrap())
        .collect();
    assert_eq!(flagged, [a_order, b_order, c_hold], "{signalled}");
    assert_eq!(
        signalled[0]["signals"][0],
        json!({"kind": "SAME_ADDRESS", "accounts": 3})
    );
    assert!(
        !signalled.to_string().contains("127.0.0.1"),
        "no address is shown"
    );

    // A burst of sign-ups in the hour before the opening.
    sqlx::query("UPDATE concerts SET opens_at = UTC_TIMESTAMP(6) WHERE id = ?")
        .bind(concert)
        .execute(&app.pool)
        .await
        .unwrap();
    sqlx::query("UPDATE users SET created_at = UTC_TIMESTAMP(6) - INTERVAL 10 MINUTE WHERE id = ?")
        .bind(a_id)
        .execute(&app.pool)
        .await
        .unwrap();
    for n in 0..4 {
        let (id, _) = app.user(&format!("burst{n}")).await;
        sqlx::query(
            "UPDATE users SET created_at = UTC_TIMESTAMP(6) - INTERVAL 10 MINUTE WHERE id = ?",
        )
        .bind(id)
        .execute(&app.pool)
        .await
        .unwrap();
    }
    let signalled = app.get(&signals_path, Some(team.token("FINANCE"))).await;
    let kinds: Vec<&str> = signalled.assert_status(200)[0]["signals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["SAME_ADDRESS", "SIGNUP_BURST"]);

    let void = format!("/api/concerts/{concert}/orders/void");
    let ids = json!([a_order, b_order, c_hold, elsewhere, 999_999]);
    app.post(
        &void,
        Some(team.token("MANAGER")),
        json!({"reservationIds": ids, "reason": "bots", "refund": true}),
    )
    .await
    .assert_problem(403, "PERMISSION_REQUIRED");
    let kept = app
        .post(
            &void,
            Some(team.token("FINANCE")),
            json!({"reservationIds": ids, "reason": "bots", "refund": false}),
        )
        .await;
    assert_eq!(kept.error_fields(), ["refund"]);
    let voided = app
        .post(
            &void,
            Some(team.token("FINANCE")),
            json!({"reservationIds": ids, "reason": "bots", "refund": true}),
        )
        .await;
    let voided = voided.assert_status(200).clone();
    let outcomes: Vec<(u64, &str, u64)> = voided["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["reservationId"].as_u64().unwrap(),
                r["outcome"].as_str().unwrap(),
                r["amount"].as_u64().unwrap(),
            )
        })
        .collect();
    let mut expected = vec![
        (a_order, "VOIDED", 2500),
        (b_order, "VOIDED", 2500),
        (c_hold, "RELEASED", 0),
        (elsewhere, "NOT_FOUND", 0),
        (999_999, "NOT_FOUND", 0),
    ];
    expected.sort();
    assert_eq!(outcomes, expected);
    assert_eq!(
        (
            voided["voided"].clone(),
            voided["released"].clone(),
            voided["skipped"].clone()
        ),
        (json!(2), json!(1), json!(2))
    );

    // Each refunded once, with its reason; the tickets revoked at the door;
    // only the fans concerned told.
    let again = app
        .post(
            &void,
            Some(team.token("OWNER")),
            json!({"reservationIds": [a_order, b_order], "reason": "bots", "refund": true}),
        )
        .await;
    assert_eq!(again.assert_status(200)["skipped"], 2);
    let reasons: Vec<(u64, String)> =
        sqlx::query_as("SELECT reservation_id, reason FROM refunds ORDER BY reservation_id")
            .fetch_all(&app.pool)
            .await
            .unwrap();
    assert_eq!(
        reasons,
        [
            (a_order, "VOIDED".to_owned()),
            (b_order, "VOIDED".to_owned())
        ]
    );
    let revoked = app
        .get(
            &format!("/api/concerts/{concert}/check-in/revoked"),
            Some(team.token("DOOR")),
        )
        .await;
    assert_eq!(
        revoked.assert_status(200)["revoked"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    let told: Vec<(u64,)> = sqlx::query_as(
        "SELECT DISTINCT aggregate_id FROM outbox WHERE event_type = 'ReservationRefunded' ORDER BY aggregate_id",
    )
    .fetch_all(&app.pool)
    .await
    .unwrap();
    assert_eq!(told, [(a_order,), (b_order,)]);
    let untouched = app
        .get(&format!("/api/reservations/{d_order}"), Some(&d))
        .await;
    assert_eq!(untouched.assert_status(200)["status"], "CONFIRMED");

    let trail = app
        .get(
            &format!("/api/organizers/{}/audit?action=order.void", team.id),
            Some(team.token("OWNER")),
        )
        .await;
    let trail: Vec<Value> = trail.assert_status(200).as_array().unwrap().clone();
    assert_eq!(trail.len(), 3, "one entry per order voided or released");
    assert!(
        trail
            .iter()
            .all(|e| e["changes"]["after"]["reason"] == "bots" && e["role"] == "FINANCE")
    );
    app.assert_invariants().await;
}
