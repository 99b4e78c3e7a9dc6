//! The proof of work as a fan's browser does it: the page's own solver
//! (`/assets/proof.js`, ALTCHA's widget hashing in Web Workers) in a real
//! headless Chromium, against a running API, for each level. It reports
//! the time the work took (the page's `pow-solve` measure) and the time
//! from asking for a challenge to holding the header (what a fan waits
//! before the request goes in line), and sends each solution to the API
//! (a request for one seat of a concert of that level), which must accept
//! it.

use clap::Args as ClapArgs;
use serde_json::{Value, json};
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
    /// Solves timed per level.
    #[arg(long, default_value_t = 21)]
    solves: usize,
    #[arg(long, default_value_t = 1)]
    min_level: u8,
    #[arg(long, default_value_t = 10)]
    max_level: u8,
}

/// One solve in the page: the header's value and the two times.
const SOLVE: &str = "
  const [concert] = arguments;
  const { ProofOfWork } = await import('/assets/proof.js');
  const proof = new ProofOfWork(concert);
  document.body.append(proof.element);
  const started = performance.now();
  try {
    const header = await proof.solve();
    const total = performance.now() - started;
    const work = performance.getEntriesByName('pow-solve').pop().duration;
    return { header, total, work };
  } finally {
    proof.element.remove();
  }";

pub async fn run(args: Args) -> anyhow::Result<()> {
    ticket_core::tls::install_crypto_provider();
    let http = reqwest::Client::new();
    let token = |login: &Value| login["accessToken"].as_str().unwrap_or_default().to_owned();
    let admin = token(
        &http
            .post(format!("{}/api/auth/login", args.url))
            .json(&json!({"nickName": args.admin, "password": args.password}))
            .send()
            .await?
            .error_for_status()?
            .json()
            .await?,
    );
    let fan_name = format!("pow-fan-{}", std::process::id());
    let fan_password = "pow-fan-password-1";
    http.post(format!("{}/api/users", args.url))
        .json(&json!({"nickName": fan_name, "password": fan_password}))
        .send()
        .await?
        .error_for_status()?;
    let fan = token(
        &http
            .post(format!("{}/api/auth/login", args.url))
            .json(&json!({"nickName": fan_name, "password": fan_password}))
            .send()
            .await?
            .error_for_status()?
            .json()
            .await?,
    );

    let driver = Chromedriver::start().await;
    let browser = driver.browser(1024, 768).await;
    // Signed in through the page's own form, as a fan would.
    browser.goto(&format!("{}/#/login", args.url)).await;
    for (field, value) in [("nickName", fan_name.as_str()), ("password", fan_password)] {
        let input = browser
            .wait_element(&format!("input[name={field}]"), None)
            .await;
        browser.type_into(&input, value).await;
    }
    let submit = browser.wait_element("button[type=submit]", None).await;
    browser.click(&submit).await;
    browser.wait_element("#nav .who", Some(&fan_name)).await;
    let cores = browser
        .script("return navigator.hardwareConcurrency;", vec![])
        .await;
    println!("Chromium with {cores} hardware threads (the widget starts as many workers)");
    for level in args.min_level..=args.max_level {
        let concert: Value = http
            .post(format!("{}/api/concerts", args.url))
            .bearer_auth(&admin)
            .json(
                &json!({"title": format!("Proof of work {level}"), "venue": "Arena",
                          "concertDate": "2099-01-01T19:00:00Z", "rows": 1,
                          "seatsPerRow": args.solves + 1, "maxSeatsPerUser": 100,
                          "proofOfWork": level}),
            )
            .send()
            .await?
            .error_for_status()?
            .json()
            .await?;
        let id = concert["id"].as_u64().unwrap_or_default();
        browser.goto(&format!("{}/#/concerts/{id}", args.url)).await;
        browser
            .wait_for(
                "the concert's page, signed in",
                "return document.querySelector('.seatmap[data-ready]') !== null \
                   && document.querySelector('#nav .who') !== null;",
                vec![],
            )
            .await;
        let seats: Value = http
            .get(format!("{}/api/concerts/{id}/seats", args.url))
            .send()
            .await?
            .error_for_status()?
            .json()
            .await?;
        let seat_ids: Vec<u64> = seats
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|s| s["id"].as_u64())
            .collect();
        let (mut work, mut total) = (Vec::new(), Vec::new());
        // The first solve loads the widget and starts the workers: not timed.
        for run in 0..=args.solves {
            let solved = browser.script(SOLVE, vec![json!(id)]).await;
            let header = solved["header"].as_str().unwrap_or_default().to_owned();
            let seat = seat_ids.get(run).copied().unwrap_or_default();
            let sent = http
                .post(format!("{}/api/reservations", args.url))
                .bearer_auth(&fan)
                .header("Proof-Of-Work", header)
                .json(&json!({"seatId": seat}))
                .send()
                .await?;
            anyhow::ensure!(
                sent.status().is_success(),
                "the API refused the page's solution at level {level}: {} {}",
                sent.status(),
                sent.text().await.unwrap_or_default()
            );
            if run > 0 {
                work.push(solved["work"].as_f64().unwrap_or(f64::NAN));
                total.push(solved["total"].as_f64().unwrap_or(f64::NAN));
            }
        }
        let expected = ticket_core::domain::ProofOfWork::parse(u64::from(level))?.expected_hashes();
        println!(
            "level {level:>2}: expected {expected:>7} hashes; work median {:>6.0} ms, p90 {:>6.0} ms, max {:>6.0} ms; challenge to header median {:>6.0} ms ({} solves, every one accepted)",
            quantile(&mut work, 0.5),
            quantile(&mut work, 0.9),
            quantile(&mut work, 1.0),
            quantile(&mut total, 0.5),
            work.len()
        );
    }
    browser.close().await;
    Ok(())
}

fn quantile(values: &mut [f64], q: f64) -> f64 {
    values.sort_by(f64::total_cmp);
    if values.is_empty() {
        return f64::NAN;
    }
    let at = ((q * values.len() as f64).ceil() as usize).clamp(1, values.len()) - 1;
    values[at]
}
