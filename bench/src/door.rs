//! Tickets and the door, measured through the API (issue 31): what tickets
//! add to the confirm path (`confirm`, against any build's API and worker,
//! for a before/after pair), and the door (`door`): check-ins per second
//! with concurrent scanners sending the same codes, their p99, and a code
//! verified offline by the door page in headless Chromium.
//!
//! Long because it is two measurements (the confirm path, the door) with
//! the setup and the figures each prints.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, ensure};
use clap::Args as ClapArgs;
use serde_json::{Value, json};
use ticket_core::testing::browser::Chromedriver;

#[derive(ClapArgs)]
pub struct Common {
    /// Base URL of the API (with a worker deciding).
    #[arg(long)]
    pub(crate) url: String,
    #[arg(long, env = "TICKET_ADMIN_NICKNAME")]
    admin: String,
    #[arg(long, env = "TICKET_ADMIN_PASSWORD")]
    password: String,
}

#[derive(ClapArgs)]
pub struct ConfirmArgs {
    #[command(flatten)]
    api: Common,
    /// Holds confirmed, each of `seats` seats.
    #[arg(long, default_value_t = 500)]
    holds: usize,
    #[arg(long, default_value_t = 4)]
    seats: usize,
    /// Confirms in flight at once.
    #[arg(long, default_value_t = 8)]
    concurrency: usize,
}

#[derive(ClapArgs)]
pub struct DoorArgs {
    #[command(flatten)]
    api: Common,
    /// Tickets of the concert (each scanned by every scanner).
    #[arg(long, default_value_t = 1000)]
    tickets: usize,
    #[arg(long, default_value_t = 8)]
    scanners: usize,
    /// Offline verifications timed in Chromium.
    #[arg(long, default_value_t = 2000)]
    verifies: usize,
}

pub(crate) struct Api {
    http: reqwest::Client,
    url: String,
    pub(crate) admin: String,
}

impl Api {
    pub(crate) async fn new(common: &Common) -> anyhow::Result<Self> {
        let http = reqwest::Client::new();
        let url = common.url.clone();
        let admin = login(&http, &url, &common.admin, &common.password).await?;
        Ok(Self { http, url, admin })
    }

    pub(crate) async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        token: &str,
        body: Option<Value>,
    ) -> anyhow::Result<(u16, Value)> {
        let mut request = self
            .http
            .request(method, format!("{}{path}", self.url))
            .bearer_auth(token);
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await?;
        let status = response.status().as_u16();
        let body = response.json().await.unwrap_or(Value::Null);
        Ok((status, body))
    }

    /// A concert of `seats` seats in rows of 100 with these settings, and
    /// `users` fans signed in, each ordering `per_user` orders of `size`
    /// seats (in seat order), all decided: the reservations' ids and their
    /// owners' tokens.
    pub(crate) async fn sold(
        &self,
        seats: usize,
        size: usize,
        settings: Value,
    ) -> anyhow::Result<(u64, Vec<(u64, String)>)> {
        let mut body = json!({"title": "The door", "venue": "Arena", "concertDate": "2099-01-01T19:00:00Z",
                              "rows": seats.div_ceil(100), "seatsPerRow": seats.min(100),
                              "maxSeatsPerOrder": size, "maxSeatsPerUser": 100});
        if let (Some(body), Some(settings)) = (body.as_object_mut(), settings.as_object()) {
            body.extend(settings.clone());
        }
        let (status, concert) = self
            .call(
                reqwest::Method::POST,
                "/api/concerts",
                &self.admin,
                Some(body),
            )
            .await?;
        ensure!(status == 201, "concert: {status} {concert}");
        let concert = concert["id"].as_u64().context("concert id")?;
        let (_, listed) = self
            .call(
                reqwest::Method::GET,
                &format!("/api/concerts/{concert}/seats?size=1000"),
                &self.admin,
                None,
            )
            .await?;
        let mut seat_ids: Vec<u64> = listed
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|s| s["id"].as_u64())
            .collect();
        let mut page = 1;
        while seat_ids.len() < seats {
            let (_, more) = self
                .call(
                    reqwest::Method::GET,
                    &format!("/api/concerts/{concert}/seats?size=1000&page={page}"),
                    &self.admin,
                    None,
                )
                .await?;
            let more: Vec<u64> = more
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|s| s["id"].as_u64())
                .collect();
            ensure!(!more.is_empty(), "fewer seats than asked for");
            seat_ids.extend(more);
            page += 1;
        }
        let per_user = 100 / size;
        let mut queued = Vec::new();
        for (u, orders) in seat_ids.chunks(size * per_user).enumerate() {
            let nick = format!("door-{}-{concert}-{u}", std::process::id());
            let password = "door-fan-password-1";
            self.http
                .post(format!("{}/api/users", self.url))
                .json(&json!({"nickName": nick, "password": password}))
                .send()
                .await?
                .error_for_status()?;
            let token = login(&self.http, &self.url, &nick, password).await?;
            for order in orders.chunks(size) {
                let (status, answer) = self
                    .call(
                        reqwest::Method::POST,
                        "/api/reservations",
                        &token,
                        Some(json!({"seatIds": order})),
                    )
                    .await?;
                ensure!(status == 201, "order: {status} {answer}");
                queued.push((
                    answer["queueId"].as_u64().context("queue id")?,
                    token.clone(),
                ));
            }
        }
        let mut reservations = Vec::new();
        for (queue_id, token) in queued {
            let started = Instant::now();
            loop {
                let (_, status) = self
                    .call(
                        reqwest::Method::GET,
                        &format!("/api/reservations/status/{queue_id}"),
                        &token,
                        None,
                    )
                    .await?;
                if status["status"] == "SUCCESS" {
                    reservations.push((
                        status["reservationId"].as_u64().context("reservation")?,
                        token,
                    ));
                    break;
                }
                ensure!(status["status"] != "FAILED", "a request failed: {status}");
                ensure!(
                    started.elapsed() < Duration::from_secs(120),
                    "not decided: {status}"
                );
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
        Ok((concert, reservations))
    }
}

async fn login(
    http: &reqwest::Client,
    url: &str,
    nick: &str,
    password: &str,
) -> anyhow::Result<String> {
    let login: Value = http
        .post(format!("{url}/api/auth/login"))
        .json(&json!({"nickName": nick, "password": password}))
        .send()
        .await?
        .error_for_status()?
        .json()
        .await?;
    Ok(login["accessToken"].as_str().unwrap_or_default().to_owned())
}

/// p50, p99 and max of latencies, in ms.
pub(crate) fn spread(mut ms: Vec<f64>) -> (f64, f64, f64) {
    ms.sort_by(f64::total_cmp);
    let at = |q: f64| ms[((ms.len() - 1) as f64 * q).round() as usize];
    (at(0.50), at(0.99), at(1.0))
}

/// Confirms `holds` holds of `seats` seats, `concurrency` at a time; the
/// time of each confirm (on a build with tickets, each issues its seats').
pub async fn confirm(args: ConfirmArgs) -> anyhow::Result<()> {
    ticket_core::tls::install_crypto_provider();
    let api = Arc::new(Api::new(&args.api).await?);
    let (_, holds) = api
        .sold(
            args.holds * args.seats,
            args.seats,
            json!({"holdSeconds": 3600}),
        )
        .await?;
    let count = holds.len();
    let (times, elapsed) = timed_posts(api, holds, args.concurrency, "confirm", false).await?;
    let (p50, p99, max) = spread(times);
    println!(
        "confirm: {} holds of {} seats, {} at a time: {:.0} confirms/s, p50 {p50:.1} ms, p99 {p99:.1} ms, max {max:.1} ms",
        count,
        args.seats,
        args.concurrency,
        count as f64 / elapsed
    );
    Ok(())
}

/// Refunds by the admin of `holds` orders of `seats` seats paid by hand
/// (each confirmed by the admin first, a manual payment), `concurrency` at
/// a time: the time of each refund (since issue 60, each checks the
/// admin's standing and leaves an audit entry in its transaction).
pub async fn refunds(args: ConfirmArgs) -> anyhow::Result<()> {
    ticket_core::tls::install_crypto_provider();
    let api = Arc::new(Api::new(&args.api).await?);
    let priced = json!({"holdSeconds": 3600,
        "categories": [{"name": "Standard", "price": 2500, "currency": "EUR"}]});
    let (_, holds) = api
        .sold(args.holds * args.seats, args.seats, priced)
        .await?;
    for (id, _) in &holds {
        let path = format!("/api/reservations/{id}/confirm");
        let (status, body) = api
            .call(reqwest::Method::POST, &path, &api.admin, Some(json!({})))
            .await?;
        ensure!(status == 200, "confirm: {status} {body}");
    }
    let count = holds.len();
    let (times, elapsed) = timed_posts(api, holds, args.concurrency, "refund", true).await?;
    let (p50, p99, max) = spread(times);
    println!(
        "refunds: {} orders of {} seats paid by hand, {} at a time: {:.0} refunds/s, p50 {p50:.1} ms, p99 {p99:.1} ms, max {max:.1} ms",
        count,
        args.seats,
        args.concurrency,
        count as f64 / elapsed
    );
    Ok(())
}

/// Check-ins with every scanner sending every code (each admitted once),
/// then offline verification in the door page.
pub async fn door(args: DoorArgs) -> anyhow::Result<()> {
    ticket_core::tls::install_crypto_provider();
    let api = Arc::new(Api::new(&args.api).await?);
    let (concert, reservations) = api.sold(args.tickets, 10, json!({})).await?;
    let mut codes = Vec::new();
    for (id, token) in &reservations {
        let (status, tickets) = api
            .call(
                reqwest::Method::GET,
                &format!("/api/reservations/{id}/tickets"),
                token,
                None,
            )
            .await?;
        ensure!(status == 200, "tickets: {status} {tickets}");
        for t in tickets.as_array().into_iter().flatten() {
            codes.push(t["code"].as_str().unwrap_or_default().to_owned());
        }
    }
    ensure!(
        codes.len() == args.tickets,
        "{} tickets, not {}",
        codes.len(),
        args.tickets
    );
    let size = codes[0].len();
    println!(
        "a code: {size} characters (base64url of {} bytes)",
        size * 3 / 4
    );
    let mut tokens = Vec::new();
    for n in 0..args.scanners {
        let (status, made) = api
            .call(
                reqwest::Method::POST,
                &format!("/api/concerts/{concert}/scanners"),
                &api.admin,
                Some(json!({"name": format!("Gate {n}")})),
            )
            .await?;
        ensure!(status == 201, "scanner: {status} {made}");
        tokens.push(made["token"].as_str().unwrap_or_default().to_owned());
    }
    let codes = Arc::new(codes);
    let barrier = Arc::new(tokio::sync::Barrier::new(args.scanners));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for (door, token) in tokens.iter().enumerate() {
        let (api, codes, barrier, token) =
            (api.clone(), codes.clone(), barrier.clone(), token.clone());
        tasks.push(tokio::spawn(async move {
            barrier.wait().await;
            let (mut times, mut admitted) = (Vec::new(), 0usize);
            let offset = door * codes.len() / 8;
            for i in 0..codes.len() {
                let code = &codes[(i + offset) % codes.len()];
                let sent = Instant::now();
                let (status, body) = api
                    .call(
                        reqwest::Method::POST,
                        "/api/check-ins",
                        &token,
                        Some(json!({"code": code, "gate": format!("G{door}")})),
                    )
                    .await?;
                times.push(sent.elapsed().as_secs_f64() * 1000.0);
                match status {
                    200 => admitted += 1,
                    409 => {}
                    _ => anyhow::bail!("check-in answered {status}: {body}"),
                }
            }
            anyhow::Ok((times, admitted))
        }));
    }
    let (mut times, mut admitted) = (Vec::new(), 0);
    for task in tasks {
        let (t, a) = task.await??;
        times.extend(t);
        admitted += a;
    }
    let elapsed = started.elapsed().as_secs_f64();
    let scans = times.len();
    let (p50, p99, max) = spread(times);
    ensure!(
        admitted == args.tickets,
        "{admitted} admitted of {} tickets",
        args.tickets
    );
    println!(
        "check-in: {} scanners x {} codes at once: {scans} scans in {elapsed:.1} s = {:.0} scans/s \
         ({admitted} admitted, each once; the rest ALREADY_CHECKED_IN), p50 {p50:.1} ms, p99 {p99:.1} ms, max {max:.1} ms",
        args.scanners,
        args.tickets,
        scans as f64 / elapsed
    );
    verify_in_chromium(&api, concert, &tokens[0], &codes, args.verifies).await
}

/// The door page's own offline check (`window.ticketDoor.verifyLocally`),
/// timed in the page over the concert's codes.
const VERIFY: &str = "
  const [codes, n] = arguments;
  const door = window.ticketDoor;
  const first = performance.now();
  if (!(await door.verifyLocally(codes[0]))) return { error: 'the first code did not verify' };
  const firstMs = performance.now() - first;
  const started = performance.now();
  let ok = 0;
  for (let i = 0; i < n; i += 1) if (await door.verifyLocally(codes[i % codes.length])) ok += 1;
  return { firstMs, totalMs: performance.now() - started, ok };";

async fn verify_in_chromium(
    api: &Api,
    concert: u64,
    token: &str,
    codes: &[String],
    n: usize,
) -> anyhow::Result<()> {
    let driver = Chromedriver::start().await;
    let browser = driver.browser(412, 915).await;
    browser.goto(&format!("{}/#/", api.url)).await;
    browser
        .script(
            "localStorage.setItem('ticket_door', JSON.stringify({concertId: String(arguments[0]), token: arguments[1], gate: 'Bench'}));",
            vec![json!(concert), json!(token)],
        )
        .await;
    browser.goto(&format!("{}/#/door", api.url)).await;
    browser.wait_element(".door-scan input", None).await;
    browser
        .wait_for(
            "the keys",
            "return ((JSON.parse(localStorage.getItem('ticket_door')) || {}).keys || []).length > 0;",
            vec![],
        )
        .await;
    let sample: Vec<&String> = codes.iter().take(100).collect();
    let timed = browser.script(VERIFY, vec![json!(sample), json!(n)]).await;
    ensure!(timed["error"].is_null(), "{timed}");
    let ok = timed["ok"].as_u64().unwrap_or_default() as usize;
    ensure!(ok == n, "{ok} of {n} verified");
    let total = timed["totalMs"].as_f64().unwrap_or_default();
    println!(
        "offline verification in Chromium (WebCrypto Ed25519): {:.0} µs a code over {n} ({} the first, importing the key)",
        total * 1000.0 / n as f64,
        format_args!("{:.1} ms", timed["firstMs"].as_f64().unwrap_or_default())
    );
    browser.close().await;
    Ok(())
}

/// POSTs `/api/reservations/{id}/{action}` for each hold, `concurrency` at
/// a time, as its fan (or the admin): each call's time in ms, and the
/// run's seconds.
async fn timed_posts(
    api: Arc<Api>,
    holds: Vec<(u64, String)>,
    concurrency: usize,
    action: &'static str,
    as_admin: bool,
) -> anyhow::Result<(Vec<f64>, f64)> {
    let holds = Arc::new(holds);
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..concurrency {
        let (api, holds, next) = (api.clone(), holds.clone(), next.clone());
        tasks.push(tokio::spawn(async move {
            let mut times = Vec::new();
            loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some((id, token)) = holds.get(i) else {
                    break;
                };
                let token = if as_admin { &api.admin } else { token };
                let sent = Instant::now();
                let path = format!("/api/reservations/{id}/{action}");
                let (status, body) = api
                    .call(reqwest::Method::POST, &path, token, Some(json!({})))
                    .await?;
                ensure!(status == 200, "{action}: {status} {body}");
                times.push(sent.elapsed().as_secs_f64() * 1000.0);
            }
            anyhow::Ok(times)
        }));
    }
    let mut times = Vec::new();
    for task in tasks {
        times.extend(task.await??);
    }
    Ok((times, started.elapsed().as_secs_f64()))
}
