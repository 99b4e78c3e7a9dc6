//! Seats named as the venue names them (issue 58: a Premium seat read
//! "Stalls-3-9", a standing ticket "Seat Floor #1", a gate "gate Gate 1" or
//! "Gate 1 게이트", and a partial refund did not say which seat), in
//! English and in Korean: a plan's zone, row and seat; a standing area and
//! the place's entry number; the gate as it is named; the seat a refund
//! gave back.

use serde_json::{Value, json};
use ticket_core::testing::browser::Chromedriver;

use super::helpers::TestApp;
use super::plan_map::venue;
use super::{log_in, open_view, paid_at_the_desk};

struct Words {
    browser: &'static str,
    lang: &'static str,
    plan_seat: &'static str,
    standing: &'static str,
    used_at: &'static str,
    refund_names: &'static str,
    size: &'static str,
}

const ENGLISH: Words = Words {
    browser: "en-US",
    lang: "en",
    plan_seat: "Stalls, row 1, seat 5 · Premium",
    standing: "Floor, entry no. 1",
    used_at: "Used at Gate 1, ",
    refund_names: "(Stalls, row 1, seat 6)",
    size: "40 seats · 10 standing places",
};

const KOREAN: Words = Words {
    browser: "ko-KR",
    lang: "ko",
    plan_seat: "Stalls 1열 5번 · Premium",
    standing: "Floor 입장 순번 1",
    used_at: "입장: Gate 1, ",
    refund_names: "(Stalls 1열 6번)",
    size: "40석 · 스탠딩 10명",
};

#[tokio::test]
async fn seats_places_gates_and_refunds_are_named_as_the_venue_names_them_in_english() {
    named_as_the_venue_does(&ENGLISH).await;
}

#[tokio::test]
async fn seats_places_gates_and_refunds_are_named_as_the_venue_names_them_in_korean() {
    named_as_the_venue_does(&KOREAN).await;
}

/// The id of the seat numbered `number` of `concert`.
async fn seat_id(app: &TestApp, concert: u64, number: &str) -> u64 {
    let (id,): (u64,) =
        sqlx::query_as("SELECT id FROM seats WHERE concert_id = ? AND seat_number = ?")
            .bind(concert)
            .bind(number)
            .fetch_one(&app.pool)
            .await
            .unwrap();
    id
}

async fn named_as_the_venue_does(words: &Words) {
    let app = super::helpers::spawn_app().await;
    let concert = venue(&app, 4, 1, 8).await;
    app.patch(
        &format!("/api/concerts/{concert}"),
        Some(&app.admin_token),
        json!({"areas": [{"name": "Floor", "capacity": 10, "category": "Stalls"}]}),
    )
    .await
    .assert_status(200);
    let (fan, token) = app.user("named-fan").await;
    app.patch(
        &format!("/api/users/{fan}"),
        Some(&token),
        json!({"language": words.lang}),
    )
    .await
    .assert_status(200);
    let seats = [
        seat_id(&app, concert, "Stalls-1-5").await,
        seat_id(&app, concert, "Stalls-1-6").await,
    ];
    let seated = paid_at_the_desk(&app, &token, json!({"seatIds": seats})).await;
    let standing = paid_at_the_desk(
        &app,
        &token,
        json!({"concertId": concert, "area": "Floor", "count": 1}),
    )
    .await;
    let tickets = app
        .get(&format!("/api/reservations/{seated}/tickets"), Some(&token))
        .await;
    let tickets = tickets.assert_status(200).clone();
    // Seat 6 given back; seat 5 used at the gate called "Gate 1".
    app.post(
        &format!("/api/reservations/{seated}/refund"),
        Some(&app.admin_token),
        json!({"ticketIds": [tickets[1]["ticketId"]]}),
    )
    .await
    .assert_status(200);
    app.post(
        "/api/check-ins",
        Some(&app.admin_token),
        json!({"code": tickets[0]["code"], "gate": "Gate 1"}),
    )
    .await
    .assert_status(200);
    assert!(standing > seated);

    let driver = Chromedriver::start().await;
    let page = driver.browser_speaking(1024, 900, words.browser).await;
    log_in(&page, &app.base, "named-fan", "password123").await;
    // Standing places are not counted as seats.
    open_view(&page, &app.base, "#/").await;
    page.wait_element(".card p.muted", Some(words.size)).await;
    open_view(&page, &app.base, "#/me/tickets").await;
    page.wait_element(".ticket .ticket-seat", Some(words.plan_seat))
        .await;
    page.wait_element(".ticket .ticket-seat", Some(words.standing))
        .await;
    page.wait_element(".ticket .status.used", Some(words.used_at))
        .await;
    open_view(&page, &app.base, "#/me/reservations").await;
    page.wait_element(".refund", Some(words.refund_names)).await;
    let named: Value = page
        .script(
            "return [...document.querySelectorAll('tbody tr td:nth-child(2)')].map((td) => td.textContent);",
            vec![],
        )
        .await;
    let named = named.to_string();
    assert!(
        !named.contains("Stalls-1-") && !named.contains('#'),
        "no seat by its code: {named}"
    );
    assert_eq!(page.console_errors().await, Vec::<String>::new());
    page.close().await;
}
