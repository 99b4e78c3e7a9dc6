//! The desk's search for a concert's orders (issue 58): by order number,
//! or by part of the buyer's nickname or e-mail address, one concert's
//! orders only, admins only; what is typed is searched for as typed.

use serde_json::{Value, json};

use crate::helpers::*;

/// A fan named `nick` with the address `email`; (id, token).
async fn fan(app: &TestApp, nick: &str, email: &str) -> (u64, String) {
    let reply = app
        .post(
            "/api/users",
            None,
            json!({"nickName": nick, "password": "password123", "email": email}),
        )
        .await;
    let id = reply.assert_status(201)["id"].as_u64().unwrap();
    (id, app.login(nick, "password123").await)
}

/// What the desk's search for `q` answers in `concert`.
async fn search(app: &TestApp, concert: u64, q: &str) -> Value {
    let url = reqwest::Url::parse_with_params(
        &format!("{}/api/concerts/{concert}/orders", app.base),
        &[("q", q)],
    )
    .unwrap();
    reqwest::Client::new()
        .get(url)
        .bearer_auth(&app.admin_token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// The order numbers the search for `q` finds in `concert`.
async fn found(app: &TestApp, concert: u64, q: &str) -> Vec<u64> {
    let body = search(app, concert, q).await;
    body.as_array()
        .unwrap_or_else(|| panic!("a list, not {body}"))
        .iter()
        .map(|o| o["reservationId"].as_u64().unwrap())
        .collect()
}

#[tokio::test]
async fn the_desk_finds_a_concerts_orders_by_number_nickname_or_email() {
    let app = spawn_app().await;
    let (concert, seats) = app
        .concert_and_seats(json!({"rows": 1, "seatsPerRow": 4}))
        .await;
    let (other, other_seats) = app
        .concert_and_seats(json!({"rows": 1, "seatsPerRow": 1}))
        .await;
    let (_, kim) = fan(&app, "kim_minji", "minji@example.com").await;
    let (_, lee) = fan(&app, "lee50%", "lee@example.org").await;
    let kims = won(&app, &kim, &seats[..1]).await;
    let lees = won(&app, &lee, &seats[1..2]).await;
    let elsewhere = won(&app, &kim, &other_seats).await;

    assert_eq!(found(&app, concert, &kims.to_string()).await, [kims]);
    assert_eq!(found(&app, concert, "MINJI").await, [kims]);
    assert_eq!(found(&app, concert, "example.org").await, [lees]);
    assert_eq!(found(&app, concert, "@example").await, [lees, kims]);
    // Wildcards are letters here: "50%" is lee's; "k_m" would be "kim" as a wildcard, and is nobody's.
    assert_eq!(found(&app, concert, "50%").await, [lees]);
    assert_eq!(found(&app, concert, "k_m").await, Vec::<u64>::new());
    assert_eq!(found(&app, concert, "kim_").await, [kims]);
    // Another concert's order is not this one's.
    assert_eq!(found(&app, other, "kim").await, [elsewhere]);
    assert_eq!(
        found(&app, concert, &elsewhere.to_string()).await,
        Vec::<u64>::new()
    );

    // What the desk is shown: whose order, its seats, its state.
    let orders = search(&app, concert, "kim").await;
    assert_eq!(
        orders[0]["buyer"],
        json!({"nickName": "kim_minji", "email": "minji@example.com"})
    );
    assert_eq!(
        orders[0]["seats"][0]["place"],
        json!({"row": "A", "seat": "1"})
    );
    assert_eq!(orders[0]["status"], "CONFIRMED");
}

#[tokio::test]
async fn only_an_admin_searches_and_nothing_or_too_much_is_refused_in_words() {
    let app = spawn_app().await;
    let (concert, _) = app
        .concert_and_seats(json!({"rows": 1, "seatsPerRow": 1}))
        .await;
    let (_, fan) = app.user("curious").await;
    let path = format!("/api/concerts/{concert}/orders?q=kim");
    app.get(&path, Some(&fan)).await.assert_status(403);
    app.get(&path, None).await.assert_status(401);
    let long = "x".repeat(255);
    for q in ["", "%20%20", long.as_str()] {
        let reply = app
            .get(
                &format!("/api/concerts/{concert}/orders?q={q}"),
                Some(&app.admin_token),
            )
            .await;
        assert_eq!(reply.assert_status(400)["errors"][0]["field"], "q", "{q:?}");
    }
    app.get("/api/concerts/999999/orders?q=kim", Some(&app.admin_token))
        .await
        .assert_status(404);
}
