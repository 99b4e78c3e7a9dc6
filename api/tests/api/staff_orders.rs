//! Staff act on fans' orders as their role lets them (issue 60): the desk
//! finds an order and its tickets, confirms money it took, and gives it
//! back up to the organizer's limit; finance above it; the door reads
//! nothing of it; another organizer's staff and other fans are told it
//! does not exist. Each write is recorded.

use serde_json::{Value, json};

use crate::helpers::*;

/// The actions and roles of the organizer's entries, oldest first.
async fn recorded(app: &TestApp, team: &Team) -> Vec<(String, String)> {
    let path = format!("/api/organizers/{}/audit", team.id);
    let entries = app.get(&path, Some(team.token("OWNER"))).await;
    let mut seen: Vec<(String, String)> = entries
        .assert_status(200)
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["action"].as_str().unwrap().starts_with("reservation."))
        .map(|e| {
            let role = e["role"].as_str().unwrap().to_owned();
            (e["action"].as_str().unwrap().to_owned(), role)
        })
        .collect();
    seen.reverse();
    seen
}

fn valid_tickets(tickets: &Value) -> usize {
    tickets.as_array().map_or(0, Vec::len)
}

#[tokio::test]
async fn the_desk_confirms_and_refunds_within_its_limit_and_the_door_cannot() {
    let app = spawn_app().await;
    let team = Team::new(&app, "desk").await;
    let rival = Team::new(&app, "rival").await;
    let (concert, seats) = team.priced_concert(&app, 2).await;
    let (_, fan) = app.user("fan").await;
    let (_, stranger) = app.user("stranger").await;
    let id = won(&app, &fan, &seats).await;
    let order = format!("/api/reservations/{id}");
    let confirm = format!("{order}/confirm");

    // Reading the order: the desk and finance; the door lacks it; another
    // organizer's owner and another fan see nothing.
    for role in ["OWNER", "BOX_OFFICE", "FINANCE"] {
        for path in [
            order.clone(),
            format!("{order}/tickets"),
            format!("{order}/payments"),
        ] {
            app.get(&path, Some(team.token(role)))
                .await
                .assert_status(200);
        }
    }
    let lacking = app.get(&order, Some(team.token("DOOR"))).await;
    assert_eq!(
        lacking.assert_problem(403, "PERMISSION_REQUIRED")["permission"],
        "FIND_ORDERS"
    );
    for token in [rival.token("OWNER"), stranger.as_str()] {
        app.get(&order, Some(token))
            .await
            .assert_problem(404, "RESERVATION_NOT_FOUND");
        app.post(&confirm, Some(token), json!({}))
            .await
            .assert_problem(404, "RESERVATION_NOT_FOUND");
    }

    // Confirming money taken at the desk: the fan's word is not payment,
    // the door and finance may not sell, the clerk may.
    app.post(&confirm, Some(&fan), json!({}))
        .await
        .assert_problem(402, "PAYMENT_REQUIRED");
    for role in ["DOOR", "FINANCE", "MANAGER"] {
        let refused = app.post(&confirm, Some(team.token(role)), json!({})).await;
        assert_eq!(
            refused.assert_problem(403, "PERMISSION_REQUIRED")["permission"],
            "SELL_AT_DESK",
            "{role}"
        );
    }
    let sold = app
        .post(&confirm, Some(team.token("BOX_OFFICE")), json!({}))
        .await;
    assert_eq!(sold.assert_status(200)["status"], "CONFIRMED");
    let paid = app.get(&format!("{order}/payments"), Some(&fan)).await;
    let payments = paid.assert_status(200)["payments"].clone();
    assert_eq!(payments.as_array().unwrap().len(), 1, "{payments}");
    assert_eq!(payments[0]["provider"], "manual");
    assert_eq!(payments[0]["amount"], 5000);

    // The owner sets the desk's limit; the clerk gives back one ticket
    // within it, not both at once; finance gives back the other.
    let limited = app
        .patch(
            &format!("/api/organizers/{}", team.id),
            Some(team.token("OWNER")),
            json!({"deskRefundLimit": 2500}),
        )
        .await;
    assert_eq!(limited.assert_status(200)["deskRefundLimit"], 2500);
    app.patch(
        &format!("/api/organizers/{}", team.id),
        Some(team.token("BOX_OFFICE")),
        json!({"deskRefundLimit": null}),
    )
    .await
    .assert_problem(403, "PERMISSION_REQUIRED");
    let refund = format!("{order}/refund");
    let over = app
        .post(&refund, Some(team.token("BOX_OFFICE")), json!({}))
        .await;
    assert_eq!(
        over.assert_problem(403, "DESK_REFUND_LIMIT")["refundLimit"],
        2500
    );
    let cancel = format!("{order}/cancel");
    app.post(&cancel, Some(team.token("BOX_OFFICE")), json!({}))
        .await
        .assert_problem(403, "DESK_REFUND_LIMIT");
    let tickets = app.get(&format!("{order}/tickets"), Some(&fan)).await;
    assert_eq!(
        valid_tickets(tickets.assert_status(200)),
        2,
        "nothing given back"
    );
    app.post(&refund, Some(team.token("DOOR")), json!({}))
        .await
        .assert_problem(403, "PERMISSION_REQUIRED");
    app.post(&refund, Some(rival.token("OWNER")), json!({}))
        .await
        .assert_problem(404, "RESERVATION_NOT_FOUND");

    let first = tickets.body[0]["ticketId"].as_u64().unwrap();
    let partial = app
        .post(
            &refund,
            Some(team.token("BOX_OFFICE")),
            json!({"ticketIds": [first]}),
        )
        .await;
    let partial = partial.assert_status(200);
    assert_eq!(
        (
            partial["amount"].clone(),
            partial["reservationStatus"].clone()
        ),
        (json!(2500), json!("CONFIRMED"))
    );
    let rest = app
        .post(&refund, Some(team.token("FINANCE")), json!({}))
        .await;
    let rest = rest.assert_status(200);
    assert_eq!(
        (rest["amount"].clone(), rest["reservationStatus"].clone()),
        (json!(2500), json!("CANCELLED"))
    );

    assert_eq!(
        recorded(&app, &team).await,
        [
            ("reservation.confirm".to_owned(), "BOX_OFFICE".to_owned()),
            ("reservation.refund".to_owned(), "BOX_OFFICE".to_owned()),
            ("reservation.refund".to_owned(), "FINANCE".to_owned()),
        ]
    );
    // Nothing of it reached the other organizer's record.
    let theirs = app
        .get(
            &format!("/api/organizers/{}/audit", rival.id),
            Some(rival.token("OWNER")),
        )
        .await;
    let theirs = theirs.assert_status(200).as_array().unwrap().clone();
    assert!(
        theirs.iter().all(|e| e["concertId"] != concert),
        "{theirs:?}"
    );
    app.assert_invariants().await;
}

#[tokio::test]
async fn a_clerk_releases_a_hold_and_a_fan_still_only_reaches_their_own() {
    let app = spawn_app().await;
    let team = Team::new(&app, "desk").await;
    let (_, seats) = team.priced_concert(&app, 2).await;
    let (_, fan) = app.user("fan").await;
    let id = won(&app, &fan, &seats[..1]).await;
    let cancel = format!("/api/reservations/{id}/cancel");
    app.post(&cancel, Some(team.token("DOOR")), json!({}))
        .await
        .assert_problem(403, "PERMISSION_REQUIRED");
    let released = app
        .post(&cancel, Some(team.token("BOX_OFFICE")), json!({}))
        .await;
    assert_eq!(released.assert_status(200)["status"], "CANCELLED");
    app.seat_counts_become(released_concert(&app, id).await, (2, 0, 0))
        .await;
    assert_eq!(
        recorded(&app, &team).await,
        [("reservation.cancel".to_owned(), "BOX_OFFICE".to_owned())]
    );
    // A member is a fan for their own orders: a clerk's own priced hold
    // is paid like anyone's.
    let clerk_order = won(&app, team.token("BOX_OFFICE"), &seats[1..]).await;
    app.post(
        &format!("/api/reservations/{clerk_order}/confirm"),
        Some(team.token("BOX_OFFICE")),
        json!({}),
    )
    .await
    .assert_problem(402, "PAYMENT_REQUIRED");
}

async fn released_concert(app: &TestApp, reservation: u64) -> u64 {
    let (concert,): (u64,) = sqlx::query_as("SELECT concert_id FROM reservations WHERE id = ?")
        .bind(reservation)
        .fetch_one(&app.pool)
        .await
        .unwrap();
    concert
}
