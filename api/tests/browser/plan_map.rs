//! A venue's plan on the page (issue 47): drawn at its coordinates with its
//! zones and a colour per price category; a seat picked by a tap where it
//! is drawn, and with the keyboard; zoomed on a phone until a seat is big
//! enough to tap.

use serde_json::{Value, json};
use ticket_core::domain::seating_plan::example;
use ticket_core::testing::browser::{Browser, Chromedriver, screenshot_dir};

use super::helpers::{TestApp, spawn_app};
use super::phone::as_a_phone;
use super::{Deciding, open_concert, sign_up};

/// A concert seated from the example venue (premium rows, stalls, a
/// balcony) of `stalls` + `balcony` rows of `width`.
pub(super) async fn venue(app: &TestApp, stalls: u32, balcony: u32, width: u32) -> u64 {
    let concert = app
        .concert(
            json!({"rows": 1, "seatsPerRow": 1, "holdSeconds": 300, "categories": [
                {"name": "Premium", "price": 12900, "currency": "EUR"},
                {"name": "Stalls", "price": 6900, "currency": "EUR"},
                {"name": "Balcony", "price": 3900, "currency": "EUR"},
            ]}),
        )
        .await["id"]
        .as_u64()
        .unwrap();
    let plan = serde_json::to_value(example::venue(stalls, balcony, width)).unwrap();
    app.request(
        reqwest::Method::PUT,
        &format!("/api/concerts/{concert}/seating-plan"),
        Some(&app.admin_token),
        Some(plan),
    )
    .await
    .assert_status(200);
    concert
}

/// Where the page draws the seat numbered `number` (its centre, in CSS
/// pixels of the viewport), from the seat map's coordinates.
async fn drawn_at(app: &TestApp, page: &Browser, concert: u64, number: &str) -> (f64, f64) {
    let map = app
        .get(&format!("/api/concerts/{concert}/seat-map"), None)
        .await
        .assert_status(200)
        .clone();
    let i = map["seatNumbers"]
        .as_array()
        .unwrap()
        .iter()
        .position(|n| n == number)
        .unwrap();
    let at = page
        .script(
            "const [x, y] = arguments; const svg = document.querySelector('svg.plan'); \
             svg.scrollIntoView({block: 'center'}); \
             const p = new DOMPoint(x, y).matrixTransform(svg.getScreenCTM()); return [p.x, p.y];",
            vec![map["seatX"][i].clone(), map["seatY"][i].clone()],
        )
        .await;
    (at[0].as_f64().unwrap(), at[1].as_f64().unwrap())
}

/// A real tap (mouse down and up) at a point of the viewport.
async fn tap(page: &Browser, (x, y): (f64, f64)) {
    for kind in ["mousePressed", "mouseReleased"] {
        page.cdp(
            "Input.dispatchMouseEvent",
            json!({"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1}),
        )
        .await;
    }
}

async fn seat_px(page: &Browser) -> f64 {
    page.script(
        "return Number(document.querySelector('svg.plan').dataset.seatPx);",
        vec![],
    )
    .await
    .as_f64()
    .unwrap()
}

async fn layers(page: &Browser) -> Value {
    page.script(
        "return [...document.querySelectorAll('svg.plan path.seats')].map((p) => p.dataset.layer).sort();",
        vec![],
    )
    .await
}

#[tokio::test]
async fn a_plan_is_drawn_where_its_seats_are_and_a_seat_is_picked_where_it_is_drawn() {
    let app = spawn_app().await;
    let concert = venue(&app, 8, 3, 12).await;
    let driver = Chromedriver::start().await;
    let page = driver.browser(1024, 900).await;
    sign_up(&page, &app.base, "plan-fan").await;
    open_concert(&page, &app.base, concert).await;
    page.wait_element("svg.plan text.zone-label", Some("Stalls"))
        .await;
    page.wait_element("svg.plan text.zone-label", Some("Balcony"))
        .await;
    // One colour a category, every seat free, and the key to them.
    assert_eq!(layers(&page).await, json!(["A0", "A1", "A2"]));
    let key = page
        .script(
            "const fills = Object.fromEntries([...document.querySelectorAll('svg.plan path.seats')] \
               .map((p) => [p.dataset.layer, p.getAttribute('fill')])); \
             const css = (c) => { const s = document.createElement('span'); s.style.background = c; \
               document.body.append(s); const v = getComputedStyle(s).backgroundColor; s.remove(); return v; }; \
             return [...document.querySelectorAll('.legend.prices li[data-category]')].map((li, i) => \
               [li.textContent, getComputedStyle(li.querySelector('.swatch')).backgroundColor === css(fills['A' + i])]);",
            vec![],
        )
        .await;
    assert_eq!(
        key,
        json!([
            ["Premium €129.00", true],
            ["Stalls €69.00", true],
            ["Balcony €39.00", true]
        ])
    );
    let at = drawn_at(&app, &page, concert, "Stalls-4-6").await;
    tap(&page, at).await;
    page.wait_element("#choice", Some("Selected: Stalls, row 4, seat 6 · €69.00"))
        .await;
    assert_eq!(layers(&page).await, json!(["A0", "A1", "A2", "P"]));
    // The keyboard: the next seat of the row is named, Enter picks it.
    let svg = page.wait_element("svg.plan", None).await;
    page.keys(&svg, "\u{E014}").await;
    page.wait_element(
        ".plan-map [aria-live]",
        Some("Stalls, row 4, seat 7, Stalls €69.00, available"),
    )
    .await;
    page.keys(&svg, "\u{E007}").await;
    page.wait_element(
        "#choice",
        Some("Selected: Stalls, row 4, seat 6; Stalls, row 4, seat 7"),
    )
    .await;
    let reserve = page
        .wait_element(".checkout button.primary", Some("Reserve"))
        .await;
    page.click(&reserve).await;
    let deciding = Deciding::start(&app);
    page.wait_element(
        ".line.held",
        Some("Seats Stalls, row 4, seat 6; Stalls, row 4, seat 7 are yours until then."),
    )
    .await;
    page.wait_for(
        "the fan's own held seats drawn as theirs",
        "return [...document.querySelectorAll('svg.plan path.seats')].some((p) => p.dataset.layer === 'M');",
        vec![],
    )
    .await;
    page.screenshot(&screenshot_dir().join("plan-map.png"))
        .await;
    assert_eq!(page.console_errors().await, Vec::<String>::new());
    page.close().await;
    deciding.stop().await;
    app.assert_invariants().await;
}

/// On a 390 px phone a 5,000-seat plan fits the screen with seats far too
/// small to tap; zoomed in all the way, each is at least 32 px.
#[tokio::test]
async fn on_a_phone_a_big_plan_zooms_until_a_seat_is_big_enough_to_tap() {
    let app = spawn_app().await;
    let concert = venue(&app, 30, 10, 125).await;
    let driver = Chromedriver::start().await;
    let page = driver.browser(390, 844).await;
    sign_up(&page, &app.base, "phone-fan").await;
    open_concert(&page, &app.base, concert).await;
    page.wait_element("svg.plan", None).await;
    let fitted = seat_px(&page).await;
    assert!(
        fitted < 10.0,
        "the whole plan on a phone: {fitted} px a seat"
    );
    let width = page
        .script(
            "return document.querySelector('svg.plan').getBoundingClientRect().width;",
            vec![],
        )
        .await;
    let viewport = page
        .script(
            "return [document.documentElement.clientWidth, document.documentElement.scrollWidth];",
            vec![],
        )
        .await;
    assert!(
        width.as_f64().unwrap() <= viewport[0].as_f64().unwrap(),
        "the map fits the screen: {width} {viewport}"
    );
    let zoom_in = page
        .wait_element(".zoom-controls button[aria-label='Zoom in']", None)
        .await;
    for _ in 0..12 {
        page.click(&zoom_in).await;
    }
    let zoomed = seat_px(&page).await;
    assert!(zoomed >= 32.0, "zoomed all the way in: {zoomed} px a seat");
    // The seat nearest the middle of the screen is one tap.
    let map = app
        .get(&format!("/api/concerts/{concert}/seat-map"), None)
        .await
        .assert_status(200)
        .clone();
    let nearest = page
        .script(
            "const [xs, ys] = arguments; const svg = document.querySelector('svg.plan'); \
             svg.scrollIntoView({block: 'center'}); \
             const b = svg.getBoundingClientRect(); const m = svg.getScreenCTM(); \
             const [cx, cy] = [b.left + b.width / 2, b.top + b.height / 2]; let best = null; \
             xs.forEach((x, i) => { const p = new DOMPoint(x, ys[i]).matrixTransform(m); \
               const d = (p.x - cx) ** 2 + (p.y - cy) ** 2; \
               if (!best || d < best[2]) best = [p.x, p.y, d]; }); \
             return best;",
            vec![map["seatX"].clone(), map["seatY"].clone()],
        )
        .await;
    tap(
        &page,
        (nearest[0].as_f64().unwrap(), nearest[1].as_f64().unwrap()),
    )
    .await;
    page.wait_element("#choice", Some("Selected: ")).await;
    page.screenshot(&screenshot_dir().join("plan-map-phone.png"))
        .await;
    assert_eq!(page.console_errors().await, Vec::<String>::new());
    page.close().await;
}

/// Where the plan and what is around it are on the screen: the drawing's
/// box, the zoom controls' box, the seats' extent, and the keys' boxes.
const PLAN_LAYOUT: &str = "const [xs, ys] = arguments; const svg = document.querySelector('svg.plan'); \
    const box = (e) => { const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; }; \
    const m = svg.getScreenCTM(); let [l, t, r, b] = [Infinity, Infinity, -Infinity, -Infinity]; \
    xs.forEach((x, i) => { const p = new DOMPoint(x, ys[i]).matrixTransform(m); \
      l = Math.min(l, p.x); t = Math.min(t, p.y); r = Math.max(r, p.x); b = Math.max(b, p.y); }); \
    return {svg: box(svg), seatPx: Number(svg.dataset.seatPx), controls: box(document.querySelector('.zoom-controls')), seats: [l, t, r, b], \
      keys: [...document.querySelectorAll('.map-wrap .legend')].map(box)};";

fn overlap(a: &Value, b: &Value) -> bool {
    let [al, at, ar, ab] = [0, 1, 2, 3].map(|i| a[i].as_f64().unwrap());
    let [bl, bt, br, bb] = [0, 1, 2, 3].map(|i| b[i].as_f64().unwrap());
    al < br && bl < ar && at < bb && bt < ab
}

/// On a phone the plan's first view is the venue's whole width; the zoom
/// controls sit above the drawing, never over a seat; one key to the
/// colours, no key over another (issue 58: the buttons covered the front
/// rows, two keys overlapped).
#[tokio::test]
async fn on_a_phone_the_plan_fits_its_width_and_nothing_covers_a_seat() {
    let app = spawn_app().await;
    let concert = venue(&app, 8, 3, 12).await;
    let map = app
        .get(&format!("/api/concerts/{concert}/seat-map"), None)
        .await
        .assert_status(200)
        .clone();
    let seats = vec![map["seatX"].clone(), map["seatY"].clone()];
    let driver = Chromedriver::start().await;
    let page = driver.browser(390, 844).await;
    as_a_phone(&page, 390).await;
    sign_up(&page, &app.base, "phone-plan-fan").await;
    open_concert(&page, &app.base, concert).await;
    page.wait_element("svg.plan", None).await;
    let first = page.script(PLAN_LAYOUT, seats.clone()).await;
    let [left, top, right, bottom] = [0, 1, 2, 3].map(|i| first["svg"][i].as_f64().unwrap());
    let [seats_left, seats_top, seats_right, seats_bottom] =
        [0, 1, 2, 3].map(|i| first["seats"][i].as_f64().unwrap());
    assert!(
        seats_left >= left && seats_right <= right && seats_top >= top && seats_bottom <= bottom,
        "every seat in the first view: {first}"
    );
    assert!(
        seats_right - seats_left >= 0.8 * (right - left),
        "the first view is the venue's width: {first}"
    );
    assert!(
        !overlap(&first["controls"], &first["svg"]),
        "the zoom controls are off the drawing: {first}"
    );
    let keys = first["keys"].as_array().unwrap();
    assert_eq!(keys.len(), 2, "the states and the prices: {first}");
    assert!(!overlap(&keys[0], &keys[1]), "the keys apart: {first}");
    // Zoomed in, the controls are still off the drawing.
    let zoom_in = page
        .wait_element(".zoom-controls button[aria-label='Zoom in']", None)
        .await;
    page.click(&zoom_in).await;
    page.click(&zoom_in).await;
    let zoomed = page.script(PLAN_LAYOUT, seats).await;
    assert!(!overlap(&zoomed["controls"], &zoomed["svg"]), "{zoomed}");
    // The front row whole under the stage, not cut in half.
    let half_seat = zoomed["seatPx"].as_f64().unwrap() * 0.4;
    assert!(
        zoomed["seats"][1].as_f64().unwrap() - half_seat >= zoomed["svg"][1].as_f64().unwrap(),
        "the front row in view once zoomed: {zoomed}"
    );
    page.screenshot(&screenshot_dir().join("plan-map-phone-first-view.png"))
        .await;
    assert_eq!(page.console_errors().await, Vec::<String>::new());
    page.close().await;
}
