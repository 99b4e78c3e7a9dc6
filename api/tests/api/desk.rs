//! The desk at the venue (issue 60): a clerk's shift from its float to its
//! count, selling through the same line as everyone (a fan ahead keeps the
//! seat), in cash and by card, a refund from the drawer, the difference
//! shown at the close; a shift closed once and sold on never after; a sale
//! and the close at once leave the sale counted or refused, never lost.

use serde_json::{Value, json};

use crate::helpers::*;

/// Asks the line for `order` at the desk and has it decided; the request's
/// status as the clerk follows it.
async fn desk_sale(app: &TestApp, clerk: &str, shift: u64, body: Value) -> Value {
    let asked = app
        .post(
            &format!("/api/desk/shifts/{shift}/requests"),
            Some(clerk),
            body,
        )
        .await;
    let queue = asked.assert_status(201)["queueId"].as_u64().unwrap();
    app.drain().await;
    app.queue_status(clerk, queue).await
}

async fn pay(app: &TestApp, clerk: &str, shift: u64, reservation: &Value, method: &str) -> Reply {
    app.post(
        &format!("/api/desk/shifts/{shift}/payments"),
        Some(clerk),
        json!({"reservationId": reservation, "method": method}),
    )
    .await
}

#[tokio::test]
async fn a_clerks_shift_from_float_to_count_shows_the_cash_difference() {
    let app = spawn_app().await;
    let team = Team::new(&app, "venue").await;
    let clerk = team.token("BOX_OFFICE");
    let (concert, seats) = team.priced_concert(&app, 6).await;
    let shifts = format!("/api/concerts/{concert}/desk/shifts");

    app.post(&shifts, Some(team.token("DOOR")), json!({"float": 0}))
        .await
        .assert_problem(403, "PERMISSION_REQUIRED");
    let opened = app
        .post(&shifts, Some(clerk), json!({"float": 10_000}))
        .await;
    let opened = opened.assert_status(201).clone();
    assert_eq!(
        (opened["currency"].clone(), opened["expectedCash"].clone()),
        (json!("EUR"), json!(10_000))
    );
    let shift = opened["id"].as_u64().unwrap();
    app.post(&shifts, Some(clerk), json!({"float": 0}))
        .await
        .assert_problem(409, "SHIFT_ALREADY_OPEN");

    // A fan asked for the last seat first: the desk does not jump the line.
    let (_, fan) = app.user("fan").await;
    let fans = order(&app, &fan, &seats[5..]).await.assert_status(201)["queueId"]
        .as_u64()
        .unwrap();
    let behind = desk_sale(
        &app,
        clerk,
        shift,
        json!({"order": {"seatIds": [seats[5]]}}),
    )
    .await;
    assert_eq!(behind["status"], "FAILED", "{behind}");
    assert_eq!(app.queue_status(&fan, fans).await["status"], "SUCCESS");

    // Two seats paid in cash, the buyer's tickets mailed; one place by
    // category paid by card.
    let cash = desk_sale(
        &app,
        clerk,
        shift,
        json!({"order": {"seatIds": [seats[0], seats[1]]}, "email": "walkin@example.com"}),
    )
    .await;
    assert_eq!(cash["status"], "SUCCESS", "{cash}");
    let card = desk_sale(
        &app,
        clerk,
        shift,
        json!({"order": {"concertId": concert, "category": "Standard", "count": 1}}),
    )
    .await;
    assert_eq!(card["status"], "SUCCESS", "{card}");
    pay(
        &app,
        team.token("OWNER"),
        shift,
        &cash["reservationId"],
        "CASH",
    )
    .await
    .assert_problem(403, "FORBIDDEN");
    pay(&app, clerk, shift, &cash["reservationId"], "CHEQUE")
        .await
        .assert_problem(400, "VALIDATION_ERROR");
    let sold = pay(&app, clerk, shift, &cash["reservationId"], "CASH").await;
    assert_eq!(sold.assert_status(200)["status"], "CONFIRMED");
    pay(&app, clerk, shift, &card["reservationId"], "CARD")
        .await
        .assert_status(200);
    let buyer = &sold.body["userId"];
    let (email, marked): (Option<String>, i64) = sqlx::query_as(
        "SELECT u.email, (SELECT COUNT(*) FROM desk_guests g WHERE g.user_id = u.id AND g.shift_id = ?) \
         FROM users u WHERE u.id = ?",
    )
    .bind(shift)
    .bind(buyer.as_u64().unwrap())
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!((email.as_deref(), marked), (Some("walkin@example.com"), 1));
    // The clerk prints the tickets from the page.
    let tickets = app
        .get(
            &format!("/api/reservations/{}/tickets", cash["reservationId"]),
            Some(clerk),
        )
        .await;
    let first = tickets.assert_status(200)[0]["ticketId"].clone();

    // One ticket of the cash order given back from the drawer.
    let refunded = app
        .post(
            &format!("/api/desk/shifts/{shift}/refunds"),
            Some(clerk),
            json!({"reservationId": cash["reservationId"], "ticketIds": [first]}),
        )
        .await;
    let refunded = refunded.assert_status(200);
    assert_eq!(
        (refunded["amount"].clone(), refunded["status"].clone()),
        (json!(2500), json!("SUCCEEDED"))
    );

    // 10,000 + 5,000 − 2,500 expected in the drawer; 12,000 counted.
    let close = format!("/api/desk/shifts/{shift}/close");
    let closed = app
        .post(&close, Some(clerk), json!({"countedCash": 12_000}))
        .await;
    let closed = closed.assert_status(200).clone();
    assert_eq!(
        closed["cash"],
        json!({"sales": 5000, "refunds": 2500, "net": 2500})
    );
    assert_eq!(
        closed["card"],
        json!({"sales": 2500, "refunds": 0, "net": 2500})
    );
    assert_eq!(
        (
            closed["expectedCash"].clone(),
            closed["countedCash"].clone(),
            closed["difference"].clone()
        ),
        (json!(12_500), json!(12_000), json!(-500))
    );
    let kinds: Vec<(&str, &str)> = closed["movements"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["kind"].as_str().unwrap(), m["method"].as_str().unwrap()))
        .collect();
    assert_eq!(
        kinds,
        [("SALE", "CASH"), ("SALE", "CARD"), ("REFUND", "CASH")]
    );
    app.post(&close, Some(clerk), json!({"countedCash": 12_500}))
        .await
        .assert_problem(409, "SHIFT_CLOSED");
    app.post(
        &format!("/api/desk/shifts/{shift}/requests"),
        Some(clerk),
        json!({"order": {"seatIds": [seats[3]]}}),
    )
    .await
    .assert_problem(409, "SHIFT_CLOSED");

    // Finance reads every clerk's shifts; the door does not.
    let listed = app.get(&shifts, Some(team.token("FINANCE"))).await;
    let listed = listed.assert_status(200).clone();
    assert_eq!(listed[0]["clerk"]["nickName"], "venue_box_office");
    assert_eq!(listed[0]["difference"], -500);
    app.get(&shifts, Some(team.token("DOOR")))
        .await
        .assert_problem(403, "PERMISSION_REQUIRED");
    let trail = app
        .get(
            &format!("/api/organizers/{}/audit?concertId={concert}", team.id),
            Some(team.token("OWNER")),
        )
        .await;
    let mut actions: Vec<&str> = trail
        .assert_status(200)
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["action"].as_str().unwrap())
        .filter(|a| a.starts_with("desk."))
        .collect();
    actions.reverse();
    assert_eq!(
        actions,
        [
            "desk.shift_open",
            "desk.request",
            "desk.request",
            "desk.request",
            "desk.sale",
            "desk.sale",
            "desk.shift_close"
        ]
    );
    app.assert_invariants().await;
}

/// A sale and the shift's close sent at once, five rounds: the sale is
/// either counted in the close or refused after it, never lost between.
#[tokio::test]
async fn a_sale_racing_the_close_is_counted_or_refused() {
    let app = spawn_app().await;
    let team = Team::new(&app, "race").await;
    let clerk = team.token("BOX_OFFICE").to_owned();
    let (concert, seats) = team.priced_concert(&app, 6).await;
    for (round, seat) in seats.iter().take(5).enumerate() {
        let shifts = format!("/api/concerts/{concert}/desk/shifts");
        let opened = app
            .post(&shifts, Some(&clerk), json!({"float": 1000}))
            .await;
        let shift = opened.assert_status(201)["id"].as_u64().unwrap();
        let held = desk_sale(&app, &clerk, shift, json!({"order": {"seatIds": [seat]}})).await;
        let reservation = held["reservationId"].clone();
        let client = client();
        let pay = client
            .post(format!("{}/api/desk/shifts/{shift}/payments", app.base))
            .bearer_auth(&clerk)
            .json(&json!({"reservationId": reservation, "method": "CASH"}));
        let close = client
            .post(format!("{}/api/desk/shifts/{shift}/close", app.base))
            .bearer_auth(&clerk)
            .json(&json!({"countedCash": 3500}));
        let replies = send_all_at_once(vec![pay, close]).await;
        let closed = replies[1].assert_status(200);
        match replies[0].status.as_u16() {
            200 => assert_eq!(closed["expectedCash"], 3500, "round {round}: counted"),
            409 => {
                assert_eq!(replies[0].body["code"], "SHIFT_CLOSED", "round {round}");
                assert_eq!(closed["expectedCash"], 1000, "round {round}: not counted");
            }
            other => panic!("round {round}: {other} {}", replies[0].body),
        }
    }
    app.assert_invariants().await;
}

#[tokio::test]
async fn check_names_a_drawer_that_does_not_add_up() {
    let app = spawn_app().await;
    let team = Team::new(&app, "audit").await;
    let clerk = team.token("BOX_OFFICE");
    let (concert, _) = team.priced_concert(&app, 6).await;
    let opened = app
        .post(
            &format!("/api/concerts/{concert}/desk/shifts"),
            Some(clerk),
            json!({"float": 500}),
        )
        .await;
    let shift = opened.assert_status(201)["id"].as_u64().unwrap();
    app.post(
        &format!("/api/desk/shifts/{shift}/close"),
        Some(clerk),
        json!({"countedCash": 500}),
    )
    .await
    .assert_status(200);
    app.assert_invariants().await;
    sqlx::query("UPDATE desk_shifts SET expected_cash = 400 WHERE id = ?")
        .bind(shift)
        .execute(&app.pool)
        .await
        .unwrap();
    // And a cash payment written on it after its close.
    sqlx::query("UPDATE payments SET shift_id = ?, desk_method = 'CASH' WHERE id = ?")
        .bind(shift)
        .bind(late_payment(&app, &team, concert).await)
        .execute(&app.pool)
        .await
        .unwrap();
    let mut conn = app.pool.acquire().await.unwrap();
    let report =
        ticket_core::db::invariants::check(&mut conn, chrono::Duration::minutes(5), 5, None)
            .await
            .unwrap();
    let found: Vec<&str> = report.iter().map(|v| v.invariant).collect();
    assert_eq!(
        found,
        [
            "a closed desk shift expected other cash than its float and the cash taken less given back",
            "money was taken or given back on a desk shift after it closed, or of another concert",
        ]
    );
}

/// A payment taken by hand at `concert` now: the clerk sells a fan's hold
/// on a new shift.
async fn late_payment(app: &TestApp, team: &Team, concert: u64) -> u64 {
    let clerk = team.token("BOX_OFFICE");
    let (_, fan) = app.user("late").await;
    let seats = app.seats(concert).await;
    let reservation = won(app, &fan, &[seats[0]["id"].as_u64().unwrap()]).await;
    let opened = app
        .post(
            &format!("/api/concerts/{concert}/desk/shifts"),
            Some(clerk),
            json!({"float": 0}),
        )
        .await;
    let shift = opened.assert_status(201)["id"].as_u64().unwrap();
    pay(app, clerk, shift, &json!(reservation), "CARD")
        .await
        .assert_status(200);
    let (id,): (u64,) = sqlx::query_as("SELECT id FROM payments WHERE reservation_id = ?")
        .bind(reservation)
        .fetch_one(&app.pool)
        .await
        .unwrap();
    id
}
