//! Best available on the page (issue 47): a fan asks for two VIP seats,
//! the line chooses them and the page says which; on a concert of over a
//! thousand seats the page offers best available before its map, and on
//! one with a standing floor "Standing" first.

use serde_json::json;
use ticket_core::testing::browser::{Browser, Chromedriver, screenshot_dir};

use super::helpers::{TestApp, spawn_app};
use super::{Deciding, open_concert, open_view, sign_up};

fn categories() -> serde_json::Value {
    json!([
        {"name": "Standard", "price": 5000, "currency": "EUR"},
        {"name": "VIP", "price": 9000, "currency": "EUR", "rows": ["A"]},
    ])
}

/// Chooses `count` tickets of `category` in the best-available form and
/// sends it.
async fn ask_best(page: &Browser, count: u32, category: &str) {
    page.wait_element(".best-available", Some("Best available"))
        .await;
    page.script(
        "const [count, category] = arguments; \
         document.querySelector('#best-count').value = String(count); \
         document.querySelector('#best-category').value = category;",
        vec![json!(count), json!(category)],
    )
    .await;
    let button = page
        .wait_element(".best-available button.primary", None)
        .await;
    page.click(&button).await;
}

/// Waits until the request is decided (the worker runs in the background).
async fn decided(app: &TestApp, token: &str, queued: u64) {
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let status = app.queue_status(token, queued).await;
        if ["SUCCESS", "FAILED"].contains(&status["status"].as_str().unwrap_or("")) {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "undecided: {status}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_fan_asks_for_the_best_two_vip_seats_and_is_told_which_the_line_gave() {
    let app = spawn_app().await;
    let concert = app
        .concert(
            json!({"rows": 2, "seatsPerRow": 6, "holdSeconds": 300, "categories": categories()}),
        )
        .await["id"]
        .as_u64()
        .unwrap();
    let driver = Chromedriver::start().await;
    let page = driver.browser(1024, 900).await;
    sign_up(&page, &app.base, "best-fan").await;
    open_concert(&page, &app.base, concert).await;
    // A small concert: the map is where most fans pick; best available
    // sits in the checkout.
    page.wait_element(".checkout .best-available", None).await;
    ask_best(&page, 2, "VIP").await;
    let deciding = Deciding::start(&app);
    page.wait_element(".line.held .hold-summary", Some("2 seats, €180.00"))
        .await;
    page.wait_element(".line.held", Some("Seats A3, A4 are yours until then."))
        .await;
    // The form counts what is left of each category.
    page.wait_element("#best-category option", Some("VIP · €90.00 · 4 left"))
        .await;
    page.screenshot(&screenshot_dir().join("best-available-held.png"))
        .await;

    // Another fan's request for four VIP seats side by side finds none.
    let (_, other) = app.user("other-fan").await;
    let queued = app
        .post(
            "/api/reservations",
            Some(&other),
            json!({"concertId": concert, "category": "VIP", "count": 4}),
        )
        .await
        .assert_status(201)["queueId"]
        .as_u64()
        .unwrap();
    decided(&app, &other, queued).await;
    assert_eq!(
        app.queue_status(&other, queued).await["reason"],
        "NO_ADJACENT_SEATS"
    );
    assert_eq!(page.console_errors().await, Vec::<String>::new());
    page.close().await;
    deciding.stop().await;
    app.assert_invariants().await;
}

#[tokio::test]
async fn a_big_concert_offers_best_available_before_its_map_and_says_when_none_is_left() {
    let app = spawn_app().await;
    let concert = app
        .concert(json!({"rows": 40, "seatsPerRow": 30, "maxSeatsPerOrder": 4, "categories": categories()}))
        .await["id"]
        .as_u64()
        .unwrap();
    // Row A (VIP) is sold but for A1 and A30: no two side by side.
    let (owner, _) = app.user("owner").await;
    sqlx::query("UPDATE concerts SET max_seats_per_user = 100 WHERE id = ?")
        .bind(concert)
        .execute(&app.pool)
        .await
        .unwrap();
    for s in app.seats(concert).await {
        let number = s["seatNumber"].as_str().unwrap();
        if number.starts_with('A')
            && number[1..]
                .parse::<u32>()
                .is_ok_and(|n| (2..=29).contains(&n))
        {
            app.book_directly(owner, s["id"].as_u64().unwrap()).await;
        }
    }
    let driver = Chromedriver::start().await;
    let page = driver.browser(1024, 900).await;
    sign_up(&page, &app.base, "big-fan").await;
    open_concert(&page, &app.base, concert).await;
    let first = page
        .script(
            "const best = document.querySelector('.best-available'); \
             const map = document.querySelector('.concert-body'); \
             return !best.closest('.checkout') \
               && !!(best.compareDocumentPosition(map) & Node.DOCUMENT_POSITION_FOLLOWING);",
            vec![],
        )
        .await;
    assert_eq!(first, json!(true), "best available comes before the map");
    ask_best(&page, 2, "VIP").await;
    let deciding = Deciding::start(&app);
    page.wait_element(".line.failed", Some("No seats side by side left"))
        .await;
    assert_eq!(page.console_errors().await, Vec::<String>::new());
    page.close().await;
    deciding.stop().await;
    app.assert_invariants().await;
}

/// A concert with a standing floor offers "Standing" first, before the
/// map: a fan asks for two places and is told their entry numbers; the
/// form counts what is left of the floor.
#[tokio::test]
async fn a_fan_asks_for_two_standing_places_and_is_told_the_entry_numbers() {
    let app = spawn_app().await;
    let concert = app
        .concert(json!({
            "rows": 2, "seatsPerRow": 6, "holdSeconds": 300,
            "categories": [
                {"name": "Seated", "price": 9000, "currency": "EUR"},
                {"name": "Standing", "price": 5000, "currency": "EUR"},
            ],
            "areas": [{"name": "Floor", "capacity": 10, "category": "Standing"}],
        }))
        .await["id"]
        .as_u64()
        .unwrap();
    let driver = Chromedriver::start().await;
    let page = driver.browser(1024, 900).await;
    sign_up(&page, &app.base, "floor-fan").await;
    open_concert(&page, &app.base, concert).await;
    let first = page
        .script(
            "const standing = document.querySelector('form.standing'); \
             const map = document.querySelector('.concert-body'); \
             return !standing.closest('.checkout') \
               && !!(standing.compareDocumentPosition(map) & Node.DOCUMENT_POSITION_FOLLOWING);",
            vec![],
        )
        .await;
    assert_eq!(first, json!(true), "standing comes before the map");
    page.wait_element("#standing-area option", Some("Floor · €50.00 · 10 left"))
        .await;
    page.script(
        "document.querySelector('#standing-count').value = '2';",
        vec![],
    )
    .await;
    let button = page
        .wait_element("form.standing button.primary", None)
        .await;
    page.click(&button).await;
    let deciding = Deciding::start(&app);
    page.wait_element(
        ".line.held",
        Some("Standing places Floor, entry nos. 1, 2 are yours until then."),
    )
    .await;
    page.wait_element("#standing-area option", Some("Floor · €50.00 · 8 left"))
        .await;
    page.screenshot(&screenshot_dir().join("standing-held.png"))
        .await;
    assert_eq!(page.console_errors().await, Vec::<String>::new());
    page.close().await;
    deciding.stop().await;
    app.assert_invariants().await;
}

/// The VIP seats sold out, the floor's place too, the standard seats not:
/// the page offers the list for what is gone; the fan waits for VIP and is
/// offered the VIP seat that comes back.
#[tokio::test]
async fn a_fan_waits_for_the_sold_out_vip_seats_and_is_offered_the_one_that_comes_back() {
    let app = spawn_app().await;
    let concert = app
        .concert(json!({
            "rows": 2, "seatsPerRow": 2, "holdSeconds": 300, "waitingListOfferSeconds": 600,
            "categories": categories(),
            "areas": [{"name": "Floor", "capacity": 1}],
        }))
        .await["id"]
        .as_u64()
        .unwrap();
    let (_, bob) = app.user("bob").await;
    let mut queued = Vec::new();
    for body in [
        json!({"concertId": concert, "category": "VIP", "count": 2}),
        json!({"concertId": concert, "area": "Floor", "count": 1}),
    ] {
        let reply = app.post("/api/reservations", Some(&bob), body).await;
        queued.push(reply.assert_status(201)["queueId"].as_u64().unwrap());
    }
    app.drain().await;
    let vip = app.queue_status(&bob, queued[0]).await["reservationId"]
        .as_u64()
        .unwrap();
    let deciding = Deciding::start(&app);
    let offering = tokio::spawn(
        ticket_worker::waiting_list::Offers::new(app.pool.clone()).run(deciding.shutdown.clone()),
    );
    let driver = Chromedriver::start().await;
    let page = driver.browser(1024, 900).await;
    sign_up(&page, &app.base, "vip-waiter").await;
    // The list says what a ticket costs from, and that seats are left.
    open_view(&page, &app.base, "#/").await;
    page.wait_element(
        ".card p.muted",
        Some("4 seats · 1 standing place · from €50.00 · On sale"),
    )
    .await;
    open_concert(&page, &app.base, concert).await;
    page.wait_element(".badge.open", Some("On sale now")).await;

    page.wait_element(".waiting-list h2", Some("Sold out: VIP, Standing: Floor"))
        .await;
    page.script(
        "const what = document.querySelector('.waiting-list select[name=waitingFor]'); \
         what.value = [...what.options].find((o) => o.textContent === 'VIP').value;",
        vec![],
    )
    .await;
    let join = page
        .wait_element(
            ".waiting-list button.primary",
            Some("Join the waiting list"),
        )
        .await;
    page.click(&join).await;
    page.wait_element(
        ".waiting-position",
        Some("You are number 1 for 1 seat in VIP"),
    )
    .await;
    page.screenshot(&screenshot_dir().join("waiting-list-vip.png"))
        .await;

    // Bob gives his VIP seats back: one is held for the fan.
    app.post(
        &format!("/api/reservations/{vip}/cancel"),
        Some(&bob),
        json!({}),
    )
    .await
    .assert_status(200);
    page.wait_element(
        ".line.held h2",
        Some("Seats from the waiting list held for you"),
    )
    .await;
    page.wait_element(".line.held .hold-summary", Some("1 seat, €90.00"))
        .await;
    assert_eq!(page.console_errors().await, Vec::<String>::new());
    page.close().await;
    deciding.stop().await;
    offering.await.unwrap();
    app.assert_invariants().await;
}

/// A concert sold out has nothing to ask the line for: "Find me the best
/// seats" is off (issue 58: it stayed enabled).
#[tokio::test]
async fn a_sold_out_concert_offers_no_best_seats_to_ask_for() {
    let app = spawn_app().await;
    let (concert, seats) = app
        .concert_and_seats(json!({"rows": 1, "seatsPerRow": 2, "categories": categories()}))
        .await;
    let (owner, _) = app.user("owner").await;
    for seat in &seats {
        app.book_directly(owner, *seat).await;
    }
    let driver = Chromedriver::start().await;
    let page = driver.browser(1024, 900).await;
    sign_up(&page, &app.base, "too-late").await;
    open_concert(&page, &app.base, concert).await;
    page.wait_for(
        "the best seats' button off",
        "return document.querySelector('.best-available button[type=submit]')?.disabled === true;",
        vec![],
    )
    .await;
    assert_eq!(page.console_errors().await, Vec::<String>::new());
    page.close().await;
}
