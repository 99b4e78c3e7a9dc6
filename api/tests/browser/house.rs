//! The page as a whole (issue 48): what a fan's visit loads (at most
//! 150 KB of script, style and words, the operator's code not among
//! them), the language switch remembered in the browser and on the
//! account, and a whole purchase (find the concert, pick a seat, pay by
//! card, see the tickets) with the keyboard alone, in Korean.
//!
//! Long because each whole-page check (the budget, the language, the
//! keyboard purchase, every view fit for people) drives the page from its
//! start.

use serde_json::{Value, json};
use ticket_core::testing::browser::{Browser, Chromedriver, screenshot_dir};
use ticket_core::testing::localstripe::LocalStripe;

use super::fit::{Fit, assert_fit_for_people};
use super::helpers::{TestApp, paying_app, spawn_app};
use super::{Deciding, open_concert, open_view, reload, sign_up};

/// What a visit may load of the page's own script, style and words.
const BUDGET_BYTES: u64 = 150_000;

/// The page's own resources loaded so far: (name, bytes), the vendored
/// proof-of-work widget aside (loaded on demand).
async fn loaded(page: &Browser) -> Vec<(String, u64)> {
    let entries: Value = page
        .script(
            "return performance.getEntriesByType('resource') \
               .filter((e) => /\\/assets\\/[^/]+\\.(js|css|json)$/.test(new URL(e.name).pathname)) \
               .filter((e) => !/altcha/.test(e.name)) \
               .map((e) => [new URL(e.name).pathname, e.decodedBodySize]);",
            vec![],
        )
        .await;
    entries
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e[0].as_str().unwrap().to_owned(), e[1].as_u64().unwrap()))
        .collect()
}

#[tokio::test]
async fn a_fans_visit_loads_at_most_150_kb_of_script_style_and_words() {
    let app = spawn_app().await;
    // The heaviest visit: a concert seated from a plan, with prices, in
    // the longer of the two languages.
    let concert = super::plan_map::venue(&app, 8, 3, 12).await;
    let driver = Chromedriver::start().await;
    let page = driver.browser_speaking(1024, 900, "ko-KR").await;
    sign_up(&page, &app.base, "budget-fan").await;
    open_concert(&page, &app.base, concert).await;
    page.wait_element("svg.plan", None).await;
    let files = loaded(&page).await;
    let total: u64 = files.iter().map(|(_, bytes)| bytes).sum();
    println!("a fan's visit loads {total} bytes: {files:?}");
    assert!(total <= BUDGET_BYTES, "{total} bytes: {files:?}");
    for operator in [
        "sale-view.js",
        "concert-form.js",
        "door.js",
        "messages-ko-operator.json",
    ] {
        assert!(
            files.iter().all(|(name, _)| !name.ends_with(operator)),
            "{operator} is loaded on a fan's visit"
        );
    }
    assert!(
        files
            .iter()
            .any(|(name, _)| name.ends_with("messages-ko.json"))
    );
    page.close().await;
}

async fn lang(page: &Browser) -> Value {
    page.script("return document.documentElement.lang;", vec![])
        .await
}

async fn account_language(app: &TestApp, nick: &str) -> Value {
    let token = app.login(nick, "a-long-password-1").await;
    app.get("/api/users/me", Some(&token))
        .await
        .assert_status(200)["language"]
        .clone()
}

#[tokio::test]
async fn the_language_switch_is_remembered_in_the_browser_and_on_the_account() {
    let app = spawn_app().await;
    let driver = Chromedriver::start().await;
    let page = driver.browser(1024, 800).await;
    sign_up(&page, &app.base, "switcher").await;
    assert_eq!(lang(&page).await, "en");
    assert_eq!(account_language(&app, "switcher").await, "en");
    // The header's switch: the page in Korean at once, the account too.
    let switch = page
        .wait_element("#nav button[data-language=ko]", Some("한국어"))
        .await;
    page.click(&switch).await;
    page.wait_element("#nav button", Some("로그아웃")).await;
    assert_eq!(lang(&page).await, "ko");
    page.wait_element("main h1", Some("공연")).await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while account_language(&app, "switcher").await != "ko" {
        assert!(std::time::Instant::now() < deadline, "the account kept en");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    // Remembered across a reload, in this browser.
    reload(&page).await;
    page.wait_element("#nav button", Some("로그아웃")).await;
    assert_eq!(lang(&page).await, "ko");
    // The account page's choice goes back to English, for both.
    open_view(&page, &app.base, "#/me/account").await;
    let words = Fit::new(&app);
    assert_fit_for_people(&page, &words).await;
    page.script(
        "const s = document.querySelector('select[name=language]'); s.value = 'en'; \
         s.dispatchEvent(new Event('change'));",
        vec![],
    )
    .await;
    page.wait_element("#nav button", Some("Log out")).await;
    assert_eq!(lang(&page).await, "en");
    assert_eq!(account_language(&app, "switcher").await, "en");
    // On a phone the header is one line with a menu.
    let phone = driver.browser(390, 844).await;
    open_view(&phone, &app.base, "#/").await;
    let toggle = phone.wait_element("#menu-toggle", Some("Menu")).await;
    let hidden = phone
        .script(
            "return getComputedStyle(document.getElementById('nav')).display;",
            vec![],
        )
        .await;
    assert_eq!(hidden, "none");
    let height = phone
        .script(
            "return document.querySelector('header.bar').offsetHeight;",
            vec![],
        )
        .await;
    assert!(
        height.as_f64().unwrap() < 60.0,
        "the header is {height} px high"
    );
    phone.click(&toggle).await;
    phone.wait_element("#nav a", Some("Log in")).await;
    phone
        .screenshot(&screenshot_dir().join("phone-menu.png"))
        .await;
    assert_eq!(phone.console_errors().await, Vec::<String>::new());
    phone.close().await;
    assert_eq!(page.console_errors().await, Vec::<String>::new());
    page.close().await;
}

/// A key pressed as a keyboard does (trusted input, to whatever has the
/// focus): "Tab", "Enter", " ", "ArrowRight".
async fn press(page: &Browser, key: &str) {
    let (code, number, text) = match key {
        "Tab" => ("Tab", 9, ""),
        "Enter" => ("Enter", 13, "\r"),
        " " => ("Space", 32, " "),
        "ArrowRight" => ("ArrowRight", 39, ""),
        other => panic!("no key {other}"),
    };
    for kind in ["keyDown", "keyUp"] {
        let mut event = json!({"type": kind, "key": key, "code": code,
            "windowsVirtualKeyCode": number, "nativeVirtualKeyCode": number});
        if kind == "keyDown" && !text.is_empty() {
            event["text"] = json!(text);
        }
        page.cdp("Input.dispatchKeyEvent", event).await;
    }
}

/// Presses Tab until the focused element matches `css` (and contains
/// `text`), as someone without a mouse moves through the page.
async fn tab_to(page: &Browser, css: &str, text: &str) {
    for _ in 0..120 {
        let there = page
            .script(
                "const [css, text] = arguments; const e = document.activeElement; \
                 return e !== null && e.matches(css) && e.textContent.includes(text);",
                vec![json!(css), json!(text)],
            )
            .await;
        if there == true {
            return;
        }
        press(page, "Tab").await;
    }
    panic!("Tab never reached {css} with {text:?}");
}

/// Types into the focused field, key by key.
async fn type_keys(page: &Browser, text: &str) {
    page.cdp("Input.insertText", json!({"text": text})).await;
}

#[tokio::test]
async fn a_fan_buys_with_the_keyboard_alone_in_korean() {
    let stripe = LocalStripe::start().await;
    let app = paying_app(&stripe).await;
    let (concert, _) = app
        .concert_and_seats(json!({
            "title": "Keyboard Night", "rows": 2, "seatsPerRow": 4, "holdSeconds": 300,
            "categories": [{"name": "R석", "price": 99000, "currency": "KRW"}],
        }))
        .await;
    let deciding = Deciding::start(&app);
    let driver = Chromedriver::start().await;
    let page = driver.browser_speaking(1024, 900, "ko-KR").await;
    sign_up(&page, &app.base, "keyboard-fan").await;
    let words = Fit::new(&app);

    // Find the concert: from the list, by Tab and Enter.
    open_view(&page, &app.base, "#/").await;
    tab_to(
        &page,
        &format!("a[href='#/concerts/{concert}']"),
        "Keyboard Night",
    )
    .await;
    press(&page, "Enter").await;
    page.wait_element(".seatmap[data-ready]", None).await;
    assert_fit_for_people(&page, &words).await;
    // Seats in their category's colour, and the key's swatch drawn as a
    // free seat of it is (issue 58: the key's "Free" looked like no seat).
    let colours = page
        .script(
            "const look = (e) => { const s = getComputedStyle(e); return [s.borderTopColor, s.backgroundColor]; }; \
             return [look(document.querySelector('button.seat[data-seat=A1]')), \
                     look(document.querySelector('.legend.prices .swatch'))];",
            vec![],
        )
        .await;
    assert_eq!(colours[0][0], json!("rgb(31, 111, 178)"));
    assert_eq!(colours[0], colours[1]);
    // Pick a seat: the map is one tab stop, walked with the arrows.
    tab_to(&page, "button.seat", "").await;
    press(&page, "ArrowRight").await;
    press(&page, " ").await;
    page.wait_element("#choice", Some("선택: A2")).await;
    tab_to(&page, ".checkout button.primary", "예매하기").await;
    press(&page, "Enter").await;
    page.wait_element(".line.held h2", Some("좌석이 선점되어 있습니다"))
        .await;
    // The fan's own hold, told apart from anyone's, and named so.
    let mine = page
        .wait_element("button.seat[data-seat=A2][data-state=M]", None)
        .await;
    assert!(
        page.attribute(&mine, "aria-label")
            .await
            .unwrap()
            .ends_with("내 좌석")
    );
    // Pay: the card form's fields in order, then its button.
    page.wait_for(
        "the card form",
        "return document.querySelector('.card-field input') !== null \
           && !document.querySelector('.pay button[type=submit]').disabled;",
        vec![],
    )
    .await;
    for (field, value) in [
        ("number", "4242424242424242"),
        ("exp_month", "12"),
        ("exp_year", "34"),
        ("cvc", "123"),
        ("postal_code", "04524"),
    ] {
        tab_to(
            &page,
            &format!(".card-field input[placeholder={field}]"),
            "",
        )
        .await;
        type_keys(&page, value).await;
    }
    tab_to(&page, ".pay button[type=submit]", "₩99,000").await;
    press(&page, "Enter").await;
    page.wait_element(".line.confirmed h2", Some("결제 및 예매 확정"))
        .await;
    assert_fit_for_people(&page, &words).await;
    // See the tickets.
    tab_to(&page, ".line.confirmed a[href='#/me/tickets']", "내 티켓").await;
    press(&page, "Enter").await;
    page.wait_element(".ticket .ticket-seat", Some("좌석 A2"))
        .await;
    assert_fit_for_people(&page, &words).await;
    // Used at the door: greyed, with the gate and the venue's time.
    let token = app.login("keyboard-fan", "a-long-password-1").await;
    let reservations = app
        .get("/api/users/me/reservations?page=0&size=10", Some(&token))
        .await;
    let reservation = reservations.assert_status(200)[0]["reservationId"].clone();
    let tickets = app
        .get(
            &format!("/api/reservations/{reservation}/tickets"),
            Some(&token),
        )
        .await;
    let code = tickets.assert_status(200)[0]["code"].clone();
    app.post(
        "/api/check-ins",
        Some(&app.admin_token),
        json!({"code": code, "gate": "North"}),
    )
    .await
    .assert_status(200);
    reload(&page).await;
    page.wait_element(".ticket.used .status.used", Some("입장: North"))
        .await;
    assert_fit_for_people(&page, &words).await;
    page.screenshot(&screenshot_dir().join("tickets-ko.png"))
        .await;
    assert_eq!(page.console_errors().await, Vec::<String>::new());
    page.close().await;
    deciding.stop().await;
    app.assert_invariants().await;
}

#[tokio::test]
async fn every_other_view_is_fit_for_people_in_english() {
    every_other_view("en-US").await;
}

#[tokio::test]
async fn every_other_view_is_fit_for_people_in_korean() {
    every_other_view("ko-KR").await;
}

/// The views the flows above do not pass through: signing up and in; a
/// plan with a floor and best available; sold out with its waiting list;
/// before the opening; cancelled; one's reservations; the door's setup;
/// a page that is not there.
async fn every_other_view(language: &str) {
    let app = spawn_app().await;
    let words = Fit::new(&app);
    let plan = super::plan_map::venue(&app, 4, 2, 10).await;
    app.patch(
        &format!("/api/concerts/{plan}"),
        Some(&app.admin_token),
        json!({"areas": [{"name": "Floor", "capacity": 50, "category": "Stalls"}]}),
    )
    .await
    .assert_status(200);
    let (sold_out, seats) = app
        .concert_and_seats(json!({"title": "Full House", "rows": 1, "seatsPerRow": 1}))
        .await;
    let (holder, _) = app.user("holder").await;
    app.book_directly(holder, seats[0]).await;
    let soon = app
        .concert(
            json!({"title": "Not Yet", "opensAt": "2099-01-01T10:00:00Z",
            "presaleStartsAt": "2098-12-31T10:00:00Z", "lotteryWindowSeconds": 600}),
        )
        .await["id"]
        .as_u64()
        .unwrap();
    let (cancelled, _) = app.concert_and_seats(json!({"title": "Called Off"})).await;
    app.post(
        &format!("/api/concerts/{cancelled}/cancel"),
        Some(&app.admin_token),
        json!({"reason": "The singer lost her voice"}),
    )
    .await
    .assert_status(202);

    let driver = Chromedriver::start().await;
    let page = driver.browser_speaking(1024, 900, language).await;
    for view in ["#/login", "#/signup", "#/door", "#/nowhere"] {
        page.goto(&format!("{}/{view}", app.base)).await;
        page.wait_element("main h1", None).await;
        assert_fit_for_people(&page, &words).await;
    }
    sign_up(&page, &app.base, "looker").await;
    let token = app.login("looker", "a-long-password-1").await;
    app.post(
        &format!("/api/concerts/{sold_out}/waiting-list"),
        Some(&token),
        json!({"seats": 1}),
    )
    .await
    .assert_status(201);
    for (concert, ready) in [
        (plan, "svg.plan"),
        (sold_out, ".waiting-list .waiting-position"),
        (soon, ".badge.soon"),
    ] {
        open_concert(&page, &app.base, concert).await;
        page.wait_element(ready, None).await;
        assert_fit_for_people(&page, &words).await;
    }
    // A cancelled show is cancelled everywhere: its badge and its reason,
    // no map to pick from, no price, no count of free seats (issue 58).
    open_view(&page, &app.base, &format!("#/concerts/{cancelled}")).await;
    page.wait_element(".badge.cancelled", None).await;
    page.wait_element(".cancelled-show", Some("The singer lost her voice"))
        .await;
    assert_eq!(
        page.script(
            "return document.querySelectorAll('.seatmap, .checkout, .legend, .counts').length;",
            vec![]
        )
        .await,
        json!(0),
        "nothing of the sale is left to use"
    );
    assert_fit_for_people(&page, &words).await;
    open_view(&page, &app.base, "#/").await;
    assert_fit_for_people(&page, &words).await;
    open_view(&page, &app.base, "#/me/reservations").await;
    assert_fit_for_people(&page, &words).await;
    assert_eq!(page.console_errors().await, Vec::<String>::new());
    page.close().await;
}
