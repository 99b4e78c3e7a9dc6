//! A box office a team runs, in the page (issue 60): a DOOR member who can
//! only pair a scanner and scan; a clerk's shift from its float to its
//! count with the cash difference shown; an owner inviting a finance
//! member, who accepts, exports the takings and finds no way to cancel
//! the show. Each view speaks the caller's role and nothing more.

use serde_json::json;
use ticket_core::testing::browser::{Browser, Chromedriver};

use super::fit::{Fit, assert_fit_for_people};
use super::helpers::{Team, spawn_app, won};
use super::{log_in, open_view, type_fields};

const PASSWORD: &str = "password123";

async fn click_text(page: &Browser, css: &str, text: &str) {
    let element = page.wait_element(css, Some(text)).await;
    page.click(&element).await;
}

/// The links of the page's menu.
async fn menu(page: &Browser) -> Vec<String> {
    let links = page
        .script(
            "return [...document.querySelectorAll('#nav a')].map((a) => a.getAttribute('href'));",
            vec![],
        )
        .await;
    serde_json::from_value(links).unwrap()
}

#[tokio::test]
async fn a_door_member_pairs_a_scanner_and_scans_and_sees_nothing_else() {
    let app = spawn_app().await;
    let fit = Fit::new(&app);
    let team = Team::new(&app, "gate").await;
    let (concert, seats) = team.priced_concert(&app, 6).await;
    let (_, fan) = app.user("fan").await;
    let sold = won(&app, &fan, &seats[..1]).await;
    app.post(
        &format!("/api/reservations/{sold}/confirm"),
        Some(team.token("BOX_OFFICE")),
        json!({}),
    )
    .await
    .assert_status(200);
    let tickets = app
        .get(&format!("/api/reservations/{sold}/tickets"), Some(&fan))
        .await;
    let code = tickets.assert_status(200)[0]["code"]
        .as_str()
        .unwrap()
        .to_owned();

    let driver = Chromedriver::start().await;
    let page = driver.browser(1024, 900).await;
    log_in(&page, &app.base, "gate_door", PASSWORD).await;
    let links = menu(&page).await;
    assert!(
        links.contains(&"#/door".to_owned()) && links.contains(&"#/team".to_owned()),
        "{links:?}"
    );
    assert!(
        !links.contains(&"#/admin/concerts/new".to_owned()),
        "{links:?}"
    );

    // What the role opens: the concert's scanners, nothing of its sale.
    open_view(&page, &app.base, "#/team").await;
    click_text(&page, ".team-concerts a", "Team Night").await;
    page.wait_element("h1", Some("Door scanners")).await;
    let tabs = page
        .script(
            "return [...document.querySelectorAll('nav.tabs a')].map((a) => a.textContent);",
            vec![],
        )
        .await;
    assert_eq!(tabs, json!(["Door scanners", "Buyer's page"]));
    for view in ["sale", "edit", "desk", "codes"] {
        open_view(
            &page,
            &app.base,
            &format!("#/admin/concerts/{concert}/{view}"),
        )
        .await;
        page.wait_element("main p", Some("Your role does not include this page"))
            .await;
    }

    // A scanner made, the door paired with it, a ticket admitted.
    open_view(
        &page,
        &app.base,
        &format!("#/admin/concerts/{concert}/scanners"),
    )
    .await;
    let name = page.wait_element("input[name=name]", None).await;
    page.type_into(&name, "North").await;
    click_text(&page, "form button[type=submit]", "").await;
    page.wait_element("input.pairing-code", None).await;
    let pairing = page
        .script(
            "return document.querySelector('input.pairing-code').value;",
            vec![],
        )
        .await;
    open_view(&page, &app.base, "#/door").await;
    type_fields(
        &page,
        |name| format!("input[name={name}]"),
        &[
            ("pairingCode", pairing.as_str().unwrap()),
            ("gate", "North"),
        ],
    )
    .await;
    click_text(&page, "button[type=submit]", "").await;
    let input = page
        .wait_element("form.door-scan input[name=code]", None)
        .await;
    page.type_into(&input, &code).await;
    click_text(&page, "form.door-scan button[type=submit]", "").await;
    page.wait_element(".verdict.ok", None).await;
    assert_fit_for_people(&page, &fit).await;
    assert_eq!(page.console_errors().await, Vec::<String>::new());
    page.close().await;
}

#[tokio::test]
async fn a_clerks_shift_opens_sells_and_closes_with_the_cash_difference_shown() {
    clerks_shift("en-US").await;
}

#[tokio::test]
async fn a_clerks_shift_in_korean() {
    clerks_shift("ko-KR").await;
}

/// The clerk's evening at the desk in the browser's language `language`.
async fn clerks_shift(language: &str) {
    let app = spawn_app().await;
    let fit = Fit::new(&app);
    let team = Team::new(&app, "hall").await;
    let (concert, _) = team.priced_concert(&app, 6).await;
    let deciding = super::Deciding::start(&app);
    let driver = Chromedriver::start().await;
    let page = driver.browser_speaking(1024, 1000, language).await;
    log_in(&page, &app.base, "hall_box_office", PASSWORD).await;
    open_view(
        &page,
        &app.base,
        &format!("#/admin/concerts/{concert}/desk"),
    )
    .await;
    let float = page.wait_element("input[name=float]", None).await;
    page.type_into(&float, "100").await;
    click_text(&page, "form[aria-labelledby=open-heading] button", "").await;
    page.wait_element(".shift-state", Some("€100.00")).await;

    // Two places asked of the line, paid in cash.
    let count = page.wait_element("input[name=count]", None).await;
    page.type_into(&count, "2").await;
    let email = page.wait_element("input[name=email]", None).await;
    page.type_into(&email, "walkin@example.com").await;
    click_text(
        &page,
        "form[aria-labelledby=sell-heading] button[type=submit]",
        "",
    )
    .await;
    page.wait_element(".desk-payment", Some("€50.00")).await;
    assert_fit_for_people(&page, &fit).await;
    click_text(&page, ".desk-payment button.primary", "").await;
    page.wait_element(".shift-state", Some("€150.00")).await;

    // The buyer's two tickets printed from the page.
    click_text(&page, ".print-tickets", "").await;
    page.wait_for(
        "the order's two tickets with their codes",
        "return document.querySelectorAll(\"li.ticket img.qr[src^='data:image/svg+xml']\").length === 2;",
        vec![],
    )
    .await;
    assert_fit_for_people(&page, &fit).await;
    open_view(
        &page,
        &app.base,
        &format!("#/admin/concerts/{concert}/desk"),
    )
    .await;

    // Counted €145.00: five short.
    let counted = page.wait_element("input[name=countedCash]", None).await;
    page.type_into(&counted, "145").await;
    click_text(&page, "form[aria-labelledby=close-heading] button", "").await;
    page.wait_element("[data-metric=expectedCash]", Some("€150.00"))
        .await;
    page.wait_element("[data-metric=countedCash]", Some("€145.00"))
        .await;
    page.wait_element("[data-metric=difference]", Some("-€5.00"))
        .await;
    page.wait_element("tr[data-method=cash]", Some("€50.00"))
        .await;
    assert_fit_for_people(&page, &fit).await;
    assert_eq!(
        page.accessibility_violations().await,
        Vec::<serde_json::Value>::new()
    );
    assert_eq!(page.console_errors().await, Vec::<String>::new());
    let shifts = app
        .get(
            &format!("/api/concerts/{concert}/desk/shifts"),
            Some(team.token("FINANCE")),
        )
        .await;
    assert_eq!(shifts.assert_status(200)[0]["difference"], -500);
    deciding.stop().await;
    page.close().await;
}

#[tokio::test]
async fn an_owner_invites_finance_who_exports_the_takings_and_cannot_cancel() {
    invites_finance("en-US").await;
}

#[tokio::test]
async fn an_owner_invites_finance_in_korean() {
    invites_finance("ko-KR").await;
}

/// The owner's invitation and the finance member's evening, in `language`.
async fn invites_finance(language: &str) {
    let app = spawn_app().await;
    let fit = Fit::new(&app);
    let team = Team::new(&app, "promo").await;
    let (concert, _) = team.priced_concert(&app, 6).await;
    app.user("accountant").await;
    let driver = Chromedriver::start().await;
    let owner = driver.browser_speaking(1024, 1000, language).await;
    log_in(&owner, &app.base, "promo_owner", PASSWORD).await;
    open_view(&owner, &app.base, "#/team").await;
    type_fields(
        &owner,
        |name| format!("input[name={name}]"),
        &[("invitee", "accountant")],
    )
    .await;
    owner
        .script(
            "const s = document.querySelector('select[name=inviteRole]'); s.value = 'FINANCE'; s.dispatchEvent(new Event('change'));",
            vec![],
        )
        .await;
    click_text(&owner, "form[aria-labelledby=invite-heading] button", "").await;
    owner
        .wait_element("tr[data-invitation]", Some("accountant"))
        .await;
    assert_fit_for_people(&owner, &fit).await;
    assert_eq!(
        owner.accessibility_violations().await,
        Vec::<serde_json::Value>::new()
    );
    assert_eq!(owner.console_errors().await, Vec::<String>::new());
    owner.close().await;

    let finance = driver.browser_speaking(1024, 1000, language).await;
    log_in(&finance, &app.base, "accountant", PASSWORD).await;
    open_view(&finance, &app.base, "#/team").await;
    click_text(&finance, ".invitation button.primary", "").await;
    finance.wait_element("h1", Some("Promoter promo")).await;
    finance.wait_element("#audit-heading", None).await;
    click_text(&finance, ".team-concerts a", "Team Night").await;
    finance.wait_element(".export-takings", None).await;
    // No way to cancel the show: no button, and the page's own view of it.
    assert!(
        finance
            .find_all(".cancel-concert, button.cancel-show")
            .await
            .is_empty()
    );
    assert_eq!(
        finance
            .script(
                "return document.querySelector('.cancellation-progress, .cancel-concert') !== null;",
                vec![],
            )
            .await,
        json!(false)
    );
    // The export: what the takings route gives, with the member's token.
    let csv = finance
        .script(
            "return fetch(`/api/concerts/${arguments[0]}/sales`, {headers: {Accept: 'text/csv', Authorization: 'Bearer ' + document.cookie.split('ticket_session=')[1].split(';')[0]}}).then((r) => r.status);",
            vec![json!(concert)],
        )
        .await;
    assert_eq!(csv, json!(200));
    click_text(&finance, ".export-takings", "").await;
    assert_fit_for_people(&finance, &fit).await;
    assert_eq!(finance.console_errors().await, Vec::<String>::new());
    finance.close().await;
}
