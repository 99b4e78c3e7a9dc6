//! Object-level authorization, route by route: another user's ids get them
//! nothing (403, or 404 where even existence is private), admin-only routes
//! refuse users, and no refused request changes a row.
//!
//! Long because it lists every route with the answer it owes another user,
//! in one table the test checks against the OpenAPI document.

use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::{TestApp, spawn_app};

/// Every table's checksum: equal before and after means nothing changed.
pub(crate) async fn fingerprint(app: &TestApp) -> Vec<(String, Option<i64>)> {
    let mut sums = Vec::new();
    for table in [
        "users",
        "concerts",
        "seats",
        "reservations",
        "reservation_queue",
        "outbox",
        "tickets",
        "scanners",
        "check_ins",
        "organizers",
        "organizer_members",
        "organizer_invitations",
        "desk_shifts",
        "desk_guests",
        "access_codes",
        "payments",
        "refunds",
        "audit_entries",
    ] {
        let row: (String, Option<i64>) =
            sqlx::query_as(sqlx::AssertSqlSafe(format!("CHECKSUM TABLE {table}")))
                .fetch_one(&app.pool)
                .await
                .unwrap();
        sums.push(row);
    }
    sums
}

/// `/api/seats/17` → `/api/seats/{id}`.
fn template(path: &str) -> String {
    let path = path.split_once('?').map_or(path, |(path, _)| path);
    let segments: Vec<&str> = path.split('/').collect();
    segments
        .iter()
        .enumerate()
        .map(|(i, segment)| {
            if segment.is_empty() || !segment.bytes().all(|b| b.is_ascii_digit()) {
                *segment
            } else if i > 0 && segments[i - 1] == "access-codes" {
                "{codeId}"
            } else if i > 0 && segments[i - 1] == "scanners" {
                "{scannerId}"
            } else if i > 0 && segments[i - 1] == "members" {
                "{userId}"
            } else if i > 0 && segments[i - 1] == "invitations" && segments.contains(&"organizers")
            {
                "{invitationId}"
            } else {
                "{id}"
            }
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// "METHOD /path/{template}" of every operation in an OpenAPI document.
pub(crate) fn operations(doc: &Value) -> Vec<String> {
    let paths = doc["paths"].as_object().expect("paths");
    paths
        .iter()
        .flat_map(|(path, item)| {
            item.as_object()
                .expect("path item")
                .keys()
                .filter(|method| {
                    ["get", "post", "put", "patch", "delete"].contains(&method.as_str())
                })
                .map(move |method| format!("{} {path}", method.to_uppercase()))
        })
        .collect()
}

#[tokio::test]
async fn no_route_lets_a_user_reach_anothers_data_or_an_admins_powers() {
    let app = spawn_app().await;
    let (alice_id, alice) = app.user("alice").await;
    let (_, mallory) = app.user("mallory").await;
    let concert = app.concert(json!({"rows": 1, "seatsPerRow": 3})).await;
    let concert_id = concert["id"].as_u64().unwrap();
    let seats: Vec<u64> = app
        .seats(concert_id)
        .await
        .iter()
        .map(|s| s["id"].as_u64().unwrap())
        .collect();
    // Alice holds a reservation (seat 0) and an open request (seat 1).
    let booked = app.reserve(&alice, seats[0]).await.assert_status(201)["queueId"]
        .as_u64()
        .unwrap();
    app.drain().await;
    let reservation = app.queue_status(&alice, booked).await["reservationId"]
        .as_u64()
        .unwrap();
    let pending = app.reserve(&alice, seats[1]).await.assert_status(201)["queueId"]
        .as_u64()
        .unwrap();
    let ticket = app
        .get(
            &format!("/api/reservations/{reservation}/tickets"),
            Some(&alice),
        )
        .await
        .assert_status(200)[0]["ticketId"]
        .as_u64()
        .unwrap();

    // Alice is invited to the first organizer's team.
    let invited = app
        .post(
            "/api/organizers/1/invitations",
            Some(&app.admin_token),
            json!({"nickName": "alice", "role": "DOOR"}),
        )
        .await;
    let invitation = invited.assert_status(201)["id"].as_u64().unwrap();
    // The admin works the concert's desk.
    let opened = app
        .post(
            &format!("/api/concerts/{concert_id}/desk/shifts"),
            Some(&app.admin_token),
            json!({"float": 0}),
        )
        .await;
    let shift = opened.assert_status(201)["id"].as_u64().unwrap();

    let before = fingerprint(&app).await;
    let attempts: Vec<(Method, String, Option<Value>, u16, &str)> = vec![
        (
            Method::GET,
            format!("/api/users/{alice_id}"),
            None,
            403,
            "FORBIDDEN",
        ),
        (
            Method::PATCH,
            format!("/api/users/{alice_id}"),
            Some(json!({"nickName": "taken-over"})),
            403,
            "FORBIDDEN",
        ),
        (
            Method::DELETE,
            format!("/api/users/{alice_id}"),
            None,
            403,
            "FORBIDDEN",
        ),
        (
            Method::GET,
            format!("/api/reservations/status/{booked}"),
            None,
            404,
            "QUEUE_NOT_FOUND",
        ),
        (
            Method::GET,
            format!("/api/reservations/status/{pending}"),
            None,
            404,
            "QUEUE_NOT_FOUND",
        ),
        (
            Method::GET,
            format!("/api/reservations/status/{pending}/events"),
            None,
            404,
            "QUEUE_NOT_FOUND",
        ),
        (
            Method::GET,
            format!("/api/reservations/status/{booked}/events"),
            None,
            404,
            "QUEUE_NOT_FOUND",
        ),
        (
            Method::GET,
            format!("/api/reservations/{reservation}"),
            None,
            404,
            "RESERVATION_NOT_FOUND",
        ),
        (
            Method::GET,
            format!("/api/reservations/{reservation}/tickets"),
            None,
            404,
            "RESERVATION_NOT_FOUND",
        ),
        (
            Method::GET,
            format!("/api/tickets/{ticket}/qr.svg"),
            None,
            404,
            "TICKET_NOT_FOUND",
        ),
        (
            Method::GET,
            format!("/api/concerts/{concert_id}/check-in/revoked"),
            None,
            403,
            "FORBIDDEN",
        ),
        (
            Method::POST,
            format!("/api/concerts/{concert_id}/scanners"),
            Some(json!({"name": "mine"})),
            403,
            "FORBIDDEN",
        ),
        (
            Method::GET,
            format!("/api/concerts/{concert_id}/scanners"),
            None,
            403,
            "FORBIDDEN",
        ),
        (
            Method::DELETE,
            format!("/api/concerts/{concert_id}/scanners/1"),
            None,
            403,
            "FORBIDDEN",
        ),
        (
            Method::POST,
            "/api/check-ins".into(),
            Some(json!({"code": "x", "gate": "g"})),
            403,
            "FORBIDDEN",
        ),
        (
            Method::POST,
            "/api/check-ins/batch".into(),
            Some(json!({"scans": []})),
            403,
            "FORBIDDEN",
        ),
        (
            Method::POST,
            "/api/reservations".into(),
            Some(json!({"seatId": seats[2], "userId": alice_id})),
            403,
            "FORBIDDEN",
        ),
        (
            Method::POST,
            "/api/reservations/cancel".into(),
            Some(json!({"reservationId": reservation})),
            404,
            "RESERVATION_NOT_FOUND",
        ),
        (
            Method::GET,
            format!("/api/reservations/{reservation}/payments"),
            None,
            404,
            "RESERVATION_NOT_FOUND",
        ),
        (
            Method::POST,
            format!("/api/reservations/{reservation}/refund"),
            Some(json!({})),
            404,
            "RESERVATION_NOT_FOUND",
        ),
        (
            Method::POST,
            "/api/refunds/1/paid-back".into(),
            Some(json!({})),
            403,
            "FORBIDDEN",
        ),
        (
            Method::POST,
            format!("/api/concerts/{concert_id}/cancel"),
            Some(json!({"reason": "taken over"})),
            403,
            "FORBIDDEN",
        ),
        (
            Method::GET,
            format!("/api/concerts/{concert_id}/cancellation"),
            None,
            403,
            "FORBIDDEN",
        ),
        (
            Method::GET,
            format!("/api/concerts/{concert_id}/sales"),
            None,
            403,
            "FORBIDDEN",
        ),
        (
            Method::GET,
            format!("/api/concerts/{concert_id}/orders?q=a"),
            None,
            403,
            "FORBIDDEN",
        ),
        (
            Method::PUT,
            format!("/api/concerts/{concert_id}/seating-plan"),
            Some(json!({"name": "Taken", "categories": [], "zones": []})),
            403,
            "FORBIDDEN",
        ),
        // This server takes no payments: nothing to reach.
        (
            Method::POST,
            format!("/api/reservations/{reservation}/payment"),
            Some(json!({})),
            503,
            "PAYMENTS_UNAVAILABLE",
        ),
        (
            Method::POST,
            "/api/reservations/cancel".into(),
            Some(json!({"reservationId": reservation, "userId": alice_id})),
            403,
            "FORBIDDEN",
        ),
        (
            Method::POST,
            format!("/api/reservations/{reservation}/confirm"),
            None,
            404,
            "RESERVATION_NOT_FOUND",
        ),
        (
            Method::POST,
            format!("/api/reservations/{reservation}/cancel"),
            None,
            404,
            "RESERVATION_NOT_FOUND",
        ),
        (
            Method::POST,
            "/api/concerts".into(),
            Some(json!({"title": "Mine", "venue": "Here", "concertDate": "2099-01-01T00:00:00Z"})),
            403,
            "FORBIDDEN",
        ),
        (
            Method::PATCH,
            format!("/api/concerts/{concert_id}"),
            Some(json!({"title": "Renamed"})),
            403,
            "FORBIDDEN",
        ),
        (
            Method::DELETE,
            format!("/api/concerts/{concert_id}"),
            None,
            403,
            "FORBIDDEN",
        ),
        (
            Method::POST,
            format!("/api/concerts/{concert_id}/access-codes"),
            Some(json!({"count": 1, "usesPerCode": 1, "seatsPerCode": 1})),
            403,
            "FORBIDDEN",
        ),
        (
            Method::GET,
            format!("/api/concerts/{concert_id}/access-codes"),
            None,
            403,
            "FORBIDDEN",
        ),
        (
            Method::DELETE,
            format!("/api/concerts/{concert_id}/access-codes/1"),
            None,
            403,
            "FORBIDDEN",
        ),
        (
            Method::GET,
            format!("/api/concerts/{concert_id}/waiting-list"),
            None,
            403,
            "FORBIDDEN",
        ),
        (
            Method::GET,
            format!("/api/concerts/{concert_id}/sale"),
            None,
            403,
            "FORBIDDEN",
        ),
        (
            Method::POST,
            "/api/seats".into(),
            Some(json!({"concertId": concert_id, "seatNumber": "Z9"})),
            403,
            "FORBIDDEN",
        ),
        (
            Method::PATCH,
            format!("/api/seats/{}", seats[0]),
            Some(json!({"status": "AVAILABLE"})),
            403,
            "FORBIDDEN",
        ),
        (
            Method::DELETE,
            format!("/api/seats/{}", seats[2]),
            None,
            403,
            "FORBIDDEN",
        ),
        // Organizers are made by the platform's admin; a fan is no member.
        (
            Method::POST,
            "/api/organizers".into(),
            Some(json!({"name": "Mine", "slug": "mine"})),
            403,
            "FORBIDDEN",
        ),
        (
            Method::GET,
            "/api/organizers/1".into(),
            None,
            404,
            "ORGANIZER_NOT_FOUND",
        ),
        (
            Method::PATCH,
            "/api/organizers/1".into(),
            Some(json!({"name": "Taken over"})),
            403,
            "FORBIDDEN",
        ),
        (
            Method::GET,
            "/api/organizers/1/audit".into(),
            None,
            403,
            "FORBIDDEN",
        ),
        (
            Method::GET,
            "/api/organizers/1/members".into(),
            None,
            403,
            "FORBIDDEN",
        ),
        (
            Method::PUT,
            format!("/api/organizers/1/members/{alice_id}"),
            Some(json!({"role": "OWNER"})),
            403,
            "FORBIDDEN",
        ),
        (
            Method::DELETE,
            format!("/api/organizers/1/members/{alice_id}"),
            None,
            403,
            "FORBIDDEN",
        ),
        (
            Method::POST,
            "/api/organizers/1/invitations".into(),
            Some(json!({"nickName": "mallory", "role": "OWNER"})),
            403,
            "FORBIDDEN",
        ),
        (
            Method::GET,
            "/api/organizers/1/invitations".into(),
            None,
            403,
            "FORBIDDEN",
        ),
        (
            Method::DELETE,
            format!("/api/organizers/1/invitations/{invitation}"),
            None,
            403,
            "FORBIDDEN",
        ),
        (
            Method::POST,
            format!("/api/concerts/{concert_id}/orders/void"),
            Some(json!({"reservationIds": [reservation], "reason": "mine", "refund": true})),
            403,
            "FORBIDDEN",
        ),
        (
            Method::GET,
            format!("/api/concerts/{concert_id}/orders/signals"),
            None,
            403,
            "FORBIDDEN",
        ),
        (
            Method::POST,
            format!("/api/concerts/{concert_id}/desk/shifts"),
            Some(json!({"float": 0})),
            403,
            "FORBIDDEN",
        ),
        (
            Method::GET,
            format!("/api/concerts/{concert_id}/desk/shifts"),
            None,
            403,
            "FORBIDDEN",
        ),
        (
            Method::GET,
            format!("/api/concerts/{concert_id}/desk/my-shift"),
            None,
            403,
            "FORBIDDEN",
        ),
        (
            Method::GET,
            format!("/api/desk/shifts/{shift}"),
            None,
            403,
            "FORBIDDEN",
        ),
        (
            Method::POST,
            format!("/api/desk/shifts/{shift}/requests"),
            Some(json!({"order": {"seatIds": [seats[2]]}})),
            403,
            "FORBIDDEN",
        ),
        (
            Method::POST,
            format!("/api/desk/shifts/{shift}/payments"),
            Some(json!({"reservationId": reservation, "method": "CASH"})),
            403,
            "FORBIDDEN",
        ),
        (
            Method::POST,
            format!("/api/desk/shifts/{shift}/refunds"),
            Some(json!({"reservationId": reservation})),
            403,
            "FORBIDDEN",
        ),
        (
            Method::POST,
            format!("/api/desk/shifts/{shift}/close"),
            Some(json!({"countedCash": 0})),
            403,
            "FORBIDDEN",
        ),
        (
            Method::POST,
            format!("/api/invitations/{invitation}/accept"),
            None,
            404,
            "INVITATION_NOT_FOUND",
        ),
        (
            Method::POST,
            format!("/api/invitations/{invitation}/decline"),
            None,
            404,
            "INVITATION_NOT_FOUND",
        ),
    ];
    // Every operation of the OpenAPI document is either tried above or has
    // nothing of another user's to reach; a new route fails this test until
    // it is put in one list or the other.
    let nothing_of_anothers = [
        "GET /healthz",
        "GET /readyz",
        "POST /api/auth/login",
        "POST /api/auth/logout-all",
        "POST /api/users",
        "GET /api/users/me",
        "GET /api/users/me/reservations",
        // The caller's own invitations.
        "GET /api/users/me/invitations",
        // The caller's own organizers.
        "GET /api/organizers",
        "GET /api/concerts",
        "GET /api/concerts/{id}",
        "GET /api/concerts/{id}/seats",
        "GET /api/concerts/{id}/availability",
        "GET /api/concerts/{id}/seat-map",
        "GET /api/concerts/{id}/challenge",
        // Public keys: a scanner verifies codes with them, no secret.
        "GET /api/concerts/{id}/check-in/keys",
        "GET /api/seats/{id}",
        // The caller's own place on a waiting list: no id of anyone's.
        "POST /api/concerts/{id}/waiting-list",
        "DELETE /api/concerts/{id}/waiting-list",
        "GET /api/concerts/{id}/waiting-list/me",
        // The provider's word, signed by it: no caller and no id.
        "POST /api/payments/stripe/webhook",
        // What the page gives Stripe.js: public by design.
        "GET /api/payments/config",
        // A venue's plan: what every buyer's map draws.
        "GET /api/concerts/{id}/seating-plan",
    ];
    let mut classified: Vec<String> = attempts
        .iter()
        .map(|(method, path, ..)| format!("{method} {}", template(path)))
        .chain(nothing_of_anothers.iter().map(|op| (*op).to_owned()))
        .collect();
    classified.sort();
    classified.dedup();
    let mut documented = operations(&app.get("/api/openapi.json", None).await.body);
    documented.sort();
    assert_eq!(classified, documented);

    // Each route is judged on its own: its answer, and that it changed no row.
    let mut failures = Vec::new();
    for (method, path, body, status, code) in attempts {
        let reply = app
            .request(method.clone(), &path, Some(&mallory), body)
            .await;
        let answered = (reply.status.as_u16(), reply.body["code"].as_str());
        if answered != (status, Some(code)) {
            failures.push(format!(
                "{method} {path}: expected {status} {code}, got {}",
                reply.body
            ));
        }
        if fingerprint(&app).await != before {
            failures.push(format!("{method} {path}: a refused request changed data"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));

    // Her own lists hold nothing of Alice's.
    let mine = app.get("/api/users/me/reservations", Some(&mallory)).await;
    assert_eq!(mine.assert_status(200), &json!([]));
    let me = app.get("/api/users/me", Some(&mallory)).await;
    assert_eq!(me.assert_status(200)["nickName"], "mallory");
}
