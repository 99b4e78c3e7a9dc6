//! Every view on a 360 px phone, in English and in Korean (issue 58: My
//! reservations was 536 px wide in a 390 px screen, and a Korean column
//! one character wide). On each view: nothing reaches past the screen's
//! edge (the seat maps zoom and pan inside their own frame), and no word
//! is broken across two lines.

use serde_json::{Value, json};
use ticket_core::testing::browser::{Browser, Chromedriver, screenshot_dir};
use ticket_core::testing::localstripe::LocalStripe;

use super::helpers::{ADMIN_NICK, ADMIN_PASSWORD, TestApp, bought, paying_app, won};
use super::{log_in, open_view};

/// A narrow phone: the width the issue asks every view to fit.
pub const PHONE_WIDTH: u32 = 360;

/// A phone's screen in `browser`: its width, touch, and a dense display.
pub async fn as_a_phone(page: &Browser, width: u32) {
    page.cdp(
        "Emulation.setDeviceMetricsOverride",
        json!({"width": width, "height": 780, "deviceScaleFactor": 2, "mobile": true}),
    )
    .await;
    page.cdp(
        "Emulation.setTouchEmulationEnabled",
        json!({"enabled": true, "maxTouchPoints": 5}),
    )
    .await;
}

/// What sticks out of the screen on the view shown, and which words are
/// broken across lines; empty when the view fits.
const MISFITS: &str = r#"
const width = document.documentElement.clientWidth;
const found = [];
const page = document.documentElement.scrollWidth;
if (page > width) found.push(`the page is ${page} px wide`);
const name = (e) => e.tagName.toLowerCase() + (e.className && typeof e.className === 'string' ? '.' + e.className.trim().split(/\s+/).join('.') : '');
for (const e of document.querySelectorAll('body *')) {
  if (e.parentElement.closest('.map-wrap') || e.closest('.visually-hidden, [hidden], .skip')) continue;
  const r = e.getBoundingClientRect();
  if (r.width === 0 || r.height === 0) continue;
  if (r.right > width + 0.5 || r.left < -0.5) found.push(`${name(e)} spans ${Math.round(r.left)}–${Math.round(r.right)} px`);
}
const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
for (let text = walker.nextNode(); text; text = walker.nextNode()) {
  const parent = text.parentElement;
  if (!parent || parent.closest('[hidden], .visually-hidden, script, style, code, .code, svg')) continue;
  for (const match of text.data.matchAll(/\S+/g)) {
    // A word of one or two letters cannot be broken to one per line.
    if ([...match[0]].length < 3) continue;
    const range = document.createRange();
    range.setStart(text, match.index);
    range.setEnd(text, match.index + match[0].length);
    const tops = new Set([...range.getClientRects()].filter((r) => r.width > 0).map((r) => Math.round(r.top)));
    if (tops.size > 1) found.push(`“${match[0]}” in ${name(parent)} is broken over ${tops.size} lines`);
  }
}
return found;
"#;

/// Opens `view`, waits until `drawn` is there, and checks that it fits.
async fn fits(page: &Browser, base: &str, view: &str, drawn: &str, lang: &str) {
    open_view(page, base, view).await;
    page.wait_element(drawn, None).await;
    assert_fits(page, view, lang).await;
}

/// The view as it is now fits the phone (and is kept as a screenshot).
async fn assert_fits(page: &Browser, view: &str, lang: &str) {
    let misfits = page.script(MISFITS, vec![]).await;
    let name = view.trim_start_matches("#/").replace('/', "-");
    let name = if name.is_empty() { "concerts" } else { &name };
    page.screenshot(&screenshot_dir().join(format!("phone-{lang}-{name}.png")))
        .await;
    assert_eq!(
        misfits,
        json!([]),
        "{view} ({lang}) on a {PHONE_WIDTH} px phone"
    );
}

/// A fan with an order of every kind: paid by card, used at the door,
/// cancelled, and a hold waiting for its card.
async fn fan_with_every_order(
    app: &TestApp,
    stripe: &LocalStripe,
    nick: &str,
    language: &str,
    seats: &[u64],
    scanner: &str,
) {
    let (id, token) = app.user(nick).await;
    app.patch(
        &format!("/api/users/{id}"),
        Some(&token),
        json!({"language": language}),
    )
    .await
    .assert_status(200);
    bought(app, stripe, &token, &seats[..2]).await;
    let (used, _) = bought(app, stripe, &token, &seats[2..3]).await;
    let tickets = app
        .get(&format!("/api/reservations/{used}/tickets"), Some(&token))
        .await;
    let code = tickets.assert_status(200)[0]["code"].clone();
    app.post(
        "/api/check-ins",
        Some(scanner),
        json!({"code": code, "gate": "North"}),
    )
    .await
    .assert_status(200);
    let cancelled = won(app, &token, &seats[3..4]).await;
    app.post(
        &format!("/api/reservations/{cancelled}/cancel"),
        Some(&token),
        json!({}),
    )
    .await
    .assert_status(200);
    won(app, &token, &seats[4..6]).await;
}

#[tokio::test]
async fn every_view_fits_a_360_px_phone_in_english_and_korean() {
    let stripe = LocalStripe::start().await;
    let app = paying_app(&stripe).await;
    let (concert, seats) = app
        .concert_and_seats(json!({
            "title": "Night Market at the Olympic Hall", "venue": "Olympic Hall",
            "rows": 2, "seatsPerRow": 6, "holdSeconds": 600, "timeZone": "Asia/Seoul",
            "maxSeatsPerOrder": 4, "maxSeatsPerUser": 10,
            "categories": [{"name": "Standard", "price": 110000, "currency": "KRW"}],
            "areas": [{"name": "Floor", "capacity": 50}],
        }))
        .await;
    let scanner = app
        .post(
            &format!("/api/concerts/{concert}/scanners"),
            Some(&app.admin_token),
            json!({"name": "North"}),
        )
        .await;
    let scanner: Value = scanner.assert_status(201)["token"].clone();
    let scanner = scanner.as_str().unwrap();
    let driver = Chromedriver::start().await;
    for (lang, browser_lang, fan_seats) in
        [("en", "en-US", &seats[..6]), ("ko", "ko-KR", &seats[6..])]
    {
        let fan = format!("phone-{lang}");
        fan_with_every_order(&app, &stripe, &fan, lang, fan_seats, scanner).await;
        let page = driver
            .browser_speaking(PHONE_WIDTH, 780, browser_lang)
            .await;
        as_a_phone(&page, PHONE_WIDTH).await;
        let base = &app.base;
        fits(&page, base, "#/login", "form button[type=submit]", lang).await;
        fits(&page, base, "#/signup", "form button[type=submit]", lang).await;
        log_in(&page, base, &fan, "password123").await;
        fits(&page, base, "#/", "ul.cards .card", lang).await;
        let concert_view = format!("#/concerts/{concert}");
        fits(&page, base, &concert_view, ".seatmap[data-ready]", lang).await;
        // The hold's card form opened, as a fan about to pay sees it.
        let held = "td.actions button.primary";
        fits(&page, base, "#/me/reservations", held, lang).await;
        let pay = page.wait_element(held, None).await;
        page.click(&pay).await;
        page.wait_element(".card-field input", None).await;
        assert_fits(&page, "#/me/reservations/paying", lang).await;
        fits(&page, base, "#/me/tickets", "ul.tickets img.qr", lang).await;
        fits(
            &page,
            base,
            "#/me/account",
            "form button[type=submit]",
            lang,
        )
        .await;
        app.admin_speaks(lang).await;
        log_in(&page, base, ADMIN_NICK, ADMIN_PASSWORD).await;
        fits(
            &page,
            base,
            "#/admin/concerts/new",
            "form.concert-form",
            lang,
        )
        .await;
        for tab in ["edit", "sale", "codes", "scanners", "waiting-list"] {
            let view = format!("#/admin/concerts/{concert}/{tab}");
            fits(&page, base, &view, "nav.tabs a[aria-current=page]", lang).await;
        }
        fits(&page, base, "#/door", "main h1", lang).await;
        assert_eq!(page.console_errors().await, Vec::<String>::new());
        page.close().await;
    }
}
