//! E-tickets (issue 31): a ticket per confirmed seat, codes a scanner
//! verifies with the public keys alone, QR images, voiding by cancel.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ed25519_dalek::{Signature, Verifier as _, VerifyingKey};
use serde_json::{Value, json};

use crate::helpers::{TestApp, concert_with, spawn_app, won};

async fn tickets(app: &TestApp, token: &str, reservation: u64) -> Vec<Value> {
    app.get(
        &format!("/api/reservations/{reservation}/tickets"),
        Some(token),
    )
    .await
    .assert_status(200)
    .as_array()
    .unwrap()
    .clone()
}

/// Verifies a code as a scanner without the server would: the key named by
/// bytes 1–4 among the published ones, the signature over bytes 0–32.
fn verify_offline(keys: &Value, code: &str) -> (u64, u64, u64, u32) {
    let bytes = URL_SAFE_NO_PAD.decode(code).unwrap();
    assert_eq!((bytes.len(), bytes[0]), (97, 1), "the documented layout");
    let kid: String = bytes[1..5].iter().map(|b| format!("{b:02x}")).collect();
    let key = keys["keys"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["kid"] == kid.as_str())
        .expect("the code names a published key");
    assert_eq!(key["alg"], "EdDSA");
    let raw: [u8; 32] = URL_SAFE_NO_PAD
        .decode(key["publicKey"].as_str().unwrap())
        .unwrap()
        .try_into()
        .unwrap();
    let signature = Signature::from_slice(&bytes[33..]).unwrap();
    VerifyingKey::from_bytes(&raw)
        .unwrap()
        .verify(&bytes[..33], &signature)
        .expect("the signature verifies with the public key alone");
    let u64_at = |at: usize| u64::from_be_bytes(bytes[at..at + 8].try_into().unwrap());
    (
        u64_at(5),
        u64_at(13),
        u64_at(21),
        u32::from_be_bytes(bytes[29..33].try_into().unwrap()),
    )
}

#[tokio::test]
async fn a_confirmed_seat_has_a_ticket_a_scanner_verifies_offline_until_a_cancel_voids_it() {
    let app = spawn_app().await;
    let (concert, seats) = concert_with(&app, 3, json!({})).await;
    let (_, alice) = app.user("alice").await;
    let reservation = won(&app, &alice, &seats[..2]).await;
    let issued = tickets(&app, &alice, reservation).await;
    assert_eq!(issued.len(), 2);
    let keys = app
        .get(&format!("/api/concerts/{concert}/check-in/keys"), None)
        .await;
    let keys = keys.assert_status(200).clone();
    for (ticket, seat) in issued.iter().zip(&seats) {
        assert_eq!(ticket["seatId"].as_u64(), Some(*seat));
        let (ticket_id, concert_id, seat_id, version) =
            verify_offline(&keys, ticket["code"].as_str().unwrap());
        assert_eq!(
            (Some(ticket_id), concert_id, seat_id, version),
            (ticket["ticketId"].as_u64(), concert, *seat, 1)
        );
        assert_eq!(ticket["code"].as_str().unwrap().len(), 130);
        let qr = app
            .fetch(
                ticket["qr"].as_str().unwrap(),
                &[("authorization", &format!("Bearer {alice}"))],
            )
            .await;
        assert_eq!(qr.status(), 200);
        assert_eq!(qr.headers()["content-type"], "image/svg+xml");
        assert!(qr.text().await.unwrap().contains("<svg"));
    }
    // Someone else's ticket is not found; an admin sees it.
    let (_, mallory) = app.user("mallory").await;
    let qr = issued[0]["qr"].as_str().unwrap();
    app.get(qr, Some(&mallory))
        .await
        .assert_problem(404, "TICKET_NOT_FOUND");
    app.get(
        &format!("/api/reservations/{reservation}/tickets"),
        Some(&mallory),
    )
    .await
    .assert_problem(404, "RESERVATION_NOT_FOUND");
    assert_eq!(tickets(&app, &app.admin_token, reservation).await.len(), 2);

    let revoked_path = format!("/api/concerts/{concert}/check-in/revoked");
    let before = app.get(&revoked_path, Some(&app.admin_token)).await;
    assert_eq!(before.assert_status(200)["revoked"], json!([]));
    app.post(
        &format!("/api/reservations/{reservation}/cancel"),
        Some(&alice),
        json!({}),
    )
    .await
    .assert_status(200);
    assert!(tickets(&app, &alice, reservation).await.is_empty());
    app.get(qr, Some(&alice))
        .await
        .assert_problem(410, "TICKET_VOID");
    // A scanner asking from its last `asOf` learns of both.
    let as_of = before.body["asOf"].as_str().unwrap();
    let after = app
        .get(
            &format!("{revoked_path}?since={}", urlencode(as_of)),
            Some(&app.admin_token),
        )
        .await;
    let mut revoked: Vec<u64> = after.assert_status(200)["revoked"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    revoked.sort_unstable();
    let mut ids: Vec<u64> = issued
        .iter()
        .map(|t| t["ticketId"].as_u64().unwrap())
        .collect();
    ids.sort_unstable();
    assert_eq!(revoked, ids);
    let later = app
        .get(
            &format!("{revoked_path}?since=2099-01-01T00:00:00Z"),
            Some(&app.admin_token),
        )
        .await;
    assert_eq!(later.assert_status(200)["revoked"], json!([]));
    app.assert_invariants().await;
}

fn urlencode(raw: &str) -> String {
    raw.replace('+', "%2B").replace(':', "%3A")
}

#[tokio::test]
async fn a_hold_has_no_ticket_until_it_is_confirmed() {
    let app = spawn_app().await;
    let (_, seats) = concert_with(&app, 2, json!({"holdSeconds": 600})).await;
    let (_, alice) = app.user("alice").await;
    let reservation = won(&app, &alice, &seats[..1]).await;
    assert!(tickets(&app, &alice, reservation).await.is_empty());
    app.post(
        &format!("/api/reservations/{reservation}/confirm"),
        Some(&alice),
        json!({}),
    )
    .await
    .assert_status(200);
    let issued = tickets(&app, &alice, reservation).await;
    assert_eq!(issued.len(), 1);
    assert_eq!(issued[0]["seatId"].as_u64(), Some(seats[0]));
    app.assert_invariants().await;
}

#[tokio::test]
async fn bad_ticket_questions_get_clear_refusals() {
    let app = spawn_app().await;
    let (concert, _) = concert_with(&app, 1, json!({})).await;
    let (_, alice) = app.user("alice").await;
    let revoked = format!("/api/concerts/{concert}/check-in/revoked");
    app.get(
        &format!("{revoked}?since=yesterday"),
        Some(&app.admin_token),
    )
    .await
    .assert_problem(400, "VALIDATION_ERROR");
    app.get(&revoked, Some(&alice))
        .await
        .assert_problem(403, "FORBIDDEN");
    app.get(&revoked, None)
        .await
        .assert_problem(401, "UNAUTHORIZED");
    app.get("/api/concerts/999/check-in/keys", None)
        .await
        .assert_problem(404, "CONCERT_NOT_FOUND");
    app.get("/api/tickets/999/qr.svg", Some(&alice))
        .await
        .assert_problem(404, "TICKET_NOT_FOUND");
    app.get("/api/tickets/x/qr.svg", Some(&alice))
        .await
        .assert_problem(400, "VALIDATION_ERROR");
}
