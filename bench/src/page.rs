//! The concert page in a real headless Chromium: its weight (JavaScript and
//! CSS, uncompressed and on the wire, from the browser's resource timing)
//! and the time from navigation to a usable seat map (the page's
//! `seatmap-ready` mark: layout read, every seat drawn, states read) for a
//! concert of `rows` × `seats-per-row` made through the API, or seated from
//! the example venue's plan (`--plan-rows`: stalls and balcony rows of
//! `seats-per-row`, drawn at their coordinates).

use clap::Args as ClapArgs;
use serde_json::{Value, json};
use ticket_core::domain::seating_plan::example;
use ticket_core::testing::browser::Chromedriver;

#[derive(ClapArgs)]
pub struct Args {
    /// Base URL of the API (which serves the page).
    #[arg(long)]
    url: String,
    #[arg(long, env = "TICKET_ADMIN_NICKNAME")]
    admin: String,
    #[arg(long, env = "TICKET_ADMIN_PASSWORD")]
    password: String,
    #[arg(long, default_value_t = 100)]
    rows: u32,
    #[arg(long, default_value_t = 100)]
    seats_per_row: u32,
    /// Seat the concert from the example venue's plan instead: this many
    /// rows of `seats-per-row`, four fifths stalls and a fifth balcony.
    #[arg(long)]
    plan_rows: Option<u32>,
    /// Page loads measured after the first (cold) one.
    #[arg(long, default_value_t = 10)]
    runs: usize,
}

/// What one load measured, in the page.
const MEASURE: &str = "
  const at = (name) => performance.getEntriesByName(name)[0]?.startTime ?? null;
  const ready = performance.getEntriesByName('seatmap-ready')[0];
  const data = performance.getEntriesByType('resource')
    .filter(e => new URL(e.name).pathname.startsWith('/api/concerts/'));
  const assets = performance.getEntriesByType('resource')
    .filter(e => /\\.(js|css)$/.test(new URL(e.name).pathname));
  const sum = (key) => assets.reduce((n, e) => n + e[key], 0);
  return {
    readyMs: ready ? ready.startTime : null,
    scriptsMs: performance.getEntriesByType('resource')
      .filter(e => e.name.endsWith('/assets/app.js'))[0]?.responseEnd ?? null,
    layoutReadMs: at('seatmap-layout-read'),
    drawnMs: at('seatmap-drawn'),
    dataRequests: data.length,
    dataBytes: data.reduce((n, e) => n + e.transferSize, 0),
    seats: document.querySelector('svg.plan')
      ? Number(document.querySelector('svg.plan').dataset.seats)
      : document.querySelectorAll('button.seat').length,
    assets: assets.length,
    decodedBytes: sum('decodedBodySize'),
    transferBytes: sum('transferSize'),
  };";

pub async fn run(args: Args) -> anyhow::Result<()> {
    ticket_core::tls::install_crypto_provider();
    let http = reqwest::Client::new();
    let login: Value = http
        .post(format!("{}/api/auth/login", args.url))
        .json(&json!({"nickName": args.admin, "password": args.password}))
        .send()
        .await?
        .error_for_status()?
        .json()
        .await?;
    let token = login["accessToken"].as_str().unwrap_or_default().to_owned();
    let (rows, categories) = match args.plan_rows {
        Some(_) => (
            1,
            json!(
                example::CATEGORIES
                    .map(|name| json!({"name": name, "price": 0, "currency": "EUR"}))
            ),
        ),
        None => (args.rows, Value::Null),
    };
    let mut body = json!({"title": "Page benchmark", "venue": "Arena",
                          "concertDate": "2099-01-01T19:00:00Z",
                          "rows": rows, "seatsPerRow": args.seats_per_row});
    if !categories.is_null() {
        body["categories"] = categories;
    }
    let concert: Value = http
        .post(format!("{}/api/concerts", args.url))
        .bearer_auth(&token)
        .json(&body)
        .send()
        .await?
        .error_for_status()?
        .json()
        .await?;
    let id = concert["id"].as_u64().unwrap_or_default();
    let seats = match args.plan_rows {
        Some(plan_rows) => {
            let balcony = plan_rows / 5;
            let plan = example::venue(plan_rows - balcony, balcony, args.seats_per_row);
            http.put(format!("{}/api/concerts/{id}/seating-plan", args.url))
                .bearer_auth(&token)
                .json(&plan)
                .send()
                .await?
                .error_for_status()?;
            u64::from(plan_rows) * u64::from(args.seats_per_row)
        }
        None => u64::from(args.rows) * u64::from(args.seats_per_row),
    };
    let page_url = format!("{}/#/concerts/{id}", args.url);

    let driver = Chromedriver::start().await;
    let browser = driver.browser(1280, 900).await;
    let mut warm = Vec::with_capacity(args.runs);
    for run in 0..=args.runs {
        browser.goto("about:blank").await;
        browser.goto(&page_url).await;
        browser
            .wait_for(
                "a usable seat map",
                "return document.querySelector('.seatmap[data-ready]') !== null;",
                vec![],
            )
            .await;
        let measured = browser.script(MEASURE, vec![]).await;
        anyhow::ensure!(
            measured["seats"].as_u64() == Some(seats),
            "the map shows {} seats of {seats}",
            measured["seats"]
        );
        let ready = measured["readyMs"].as_f64().unwrap_or(f64::NAN);
        let ms = |key: &str| measured[key].as_f64().unwrap_or(f64::NAN);
        let steps = format!(
            "app.js loaded {:.0} ms, layout read {:.0} ms, drawn {:.0} ms, states read and painted {:.0} ms; {} data requests, {:.1} KB transferred",
            ms("scriptsMs"),
            ms("layoutReadMs"),
            ms("drawnMs"),
            ready,
            measured["dataRequests"],
            ms("dataBytes") / 1024.0
        );
        if run == 0 {
            println!(
                "first load (nothing cached): JS+CSS {} files, {:.1} KB uncompressed, {:.1} KB transferred; usable seat map ({seats} seats) after {ready:.0} ms\n  ({steps})",
                measured["assets"],
                measured["decodedBytes"].as_f64().unwrap_or(0.0) / 1024.0,
                measured["transferBytes"].as_f64().unwrap_or(0.0) / 1024.0,
            );
        } else {
            if run == args.runs {
                println!("  last load: {steps}");
            }
            warm.push(ready);
        }
    }
    browser.close().await;
    warm.sort_by(f64::total_cmp);
    if !warm.is_empty() {
        let at = |q: f64| warm[((q * warm.len() as f64).ceil() as usize).clamp(1, warm.len()) - 1];
        println!(
            "next {} loads (assets revalidated, 304): usable seat map after p50 {:.0} ms, p90 {:.0} ms, max {:.0} ms",
            warm.len(),
            at(0.5),
            at(0.9),
            warm[warm.len() - 1]
        );
    }
    Ok(())
}
