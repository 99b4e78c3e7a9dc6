//! Money through the API against localstripe (issue 46): payments made per
//! second, paid holds sold through signed webhooks per second and the
//! webhook's p99 (the hold is CONFIRMED when it answers), and a show of
//! thousands of sold orders cancelled: the time until every refund is done
//! at the provider, and how many were made twice. Against a stack whose
//! API and worker have `TICKET_STRIPE_*` pointing at localstripe on
//! `--stripe-port` (scripts/bench.sh payments starts them).

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context as _, ensure};
use clap::Args as ClapArgs;
use serde_json::{Value, json};
use ticket_core::payments::stripe;
use ticket_core::secret::Secret;
use ticket_core::testing::localstripe::LocalStripe;

use crate::door::{Api, Common, spread};

#[derive(ClapArgs)]
pub struct PayArgs {
    #[command(flatten)]
    api: Common,
    #[arg(long)]
    stripe_port: u16,
    /// The webhook endpoint's signing secret the API was given.
    #[arg(long, env = "TICKET_STRIPE_WEBHOOK_SECRET")]
    webhook_secret: String,
    /// Holds paid for, each of `seats` seats.
    #[arg(long, default_value_t = 500)]
    holds: usize,
    #[arg(long, default_value_t = 2)]
    seats: usize,
    /// Requests in flight at once.
    #[arg(long, default_value_t = 8)]
    concurrency: usize,
}

#[derive(ClapArgs)]
pub struct CancelArgs {
    #[command(flatten)]
    api: Common,
    #[arg(long)]
    stripe_port: u16,
    /// The webhook endpoint's signing secret the API was given.
    #[arg(long, env = "TICKET_STRIPE_WEBHOOK_SECRET")]
    webhook_secret: String,
    /// Sold orders of the show (one seat each, paid through Stripe).
    #[arg(long, default_value_t = 5000)]
    orders: usize,
}

/// Runs `each` over `items`, `concurrency` at a time; each one's time (ms)
/// and the whole run's (s).
async fn timed_each<T, F, Fut>(
    items: Vec<T>,
    concurrency: usize,
    each: F,
) -> anyhow::Result<(Vec<f64>, f64)>
where
    T: Send + Sync + 'static,
    F: Fn(Arc<Vec<T>>, usize) -> Fut + Send + Sync + Clone + 'static,
    Fut: Future<Output = anyhow::Result<()>> + Send,
{
    let items = Arc::new(items);
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..concurrency {
        let (items, next, each) = (items.clone(), next.clone(), each.clone());
        tasks.push(tokio::spawn(async move {
            let mut times = Vec::new();
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= items.len() {
                    break;
                }
                let sent = Instant::now();
                each(items.clone(), i).await?;
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

/// Pays for hold `id` through the API: its PaymentIntent's id.
async fn payment_of(api: &Api, id: u64, token: &str) -> anyhow::Result<String> {
    let (status, body) = api
        .call(
            reqwest::Method::POST,
            &format!("/api/reservations/{id}/payment"),
            token,
            Some(json!({})),
        )
        .await?;
    ensure!(status == 201, "payment: {status} {body}");
    let secret = body["clientSecret"].as_str().context("clientSecret")?;
    Ok(secret.split("_secret_").next().unwrap_or(secret).to_owned())
}

/// Delivers `payment_intent.succeeded` for `intent` (as Stripe has it) to
/// the API's webhook, signed with `signing` as Stripe would.
async fn deliver_succeeded(
    http: &reqwest::Client,
    webhook: &str,
    signing: &Secret,
    event_id: String,
    intent: &Value,
) -> anyhow::Result<()> {
    let event = json!({"id": event_id, "type": "payment_intent.succeeded",
                       "object": "event", "data": {"object": intent}});
    let payload = serde_json::to_vec(&event)?;
    let signature = stripe::sign(&payload, signing, chrono::Utc::now().timestamp());
    let response = http
        .post(webhook)
        .header("content-type", "application/json")
        .header("stripe-signature", signature)
        .body(payload)
        .send()
        .await?;
    ensure!(response.status() == 200, "webhook: {}", response.status());
    Ok(())
}

fn report(what: &str, times: Vec<f64>, elapsed: f64) {
    let n = times.len();
    let (p50, p99, max) = spread(times);
    println!(
        "{what}: {n} in {elapsed:.1} s: {:.0}/s, p50 {p50:.1} ms, p99 {p99:.1} ms, max {max:.1} ms",
        n as f64 / elapsed
    );
}

/// Payments made, then the holds paid at localstripe (not timed), then
/// their `payment_intent.succeeded` delivered, signed, as Stripe would.
pub async fn pay(args: PayArgs) -> anyhow::Result<()> {
    ticket_core::tls::install_crypto_provider();
    let api = Arc::new(Api::new(&args.api).await?);
    let (_, holds) = api
        .sold(
            args.holds * args.seats,
            args.seats,
            json!({"holdSeconds": 3600,
                   "categories": [{"name": "Standard", "price": 2500, "currency": "EUR"}]}),
        )
        .await?;
    let pis = Arc::new(std::sync::Mutex::new(vec![String::new(); holds.len()]));
    let (times, elapsed) = timed_each(holds.clone(), args.concurrency, {
        let (api, pis) = (api.clone(), pis.clone());
        move |holds: Arc<Vec<(u64, String)>>, i| {
            let (api, pis) = (api.clone(), pis.clone());
            async move {
                let (id, token) = &holds[i];
                let pi = payment_of(&api, *id, token).await?;
                if let Ok(mut pis) = pis.lock() {
                    pis[i] = pi;
                }
                Ok(())
            }
        }
    })
    .await?;
    report("payments created", times, elapsed);

    let stripe = Arc::new(LocalStripe::on_port(args.stripe_port));
    let pis: Vec<String> = pis.lock().map(|p| p.clone()).unwrap_or_default();
    let mut paid = Vec::with_capacity(pis.len());
    for pi in &pis {
        let (status, body) = stripe.pay(pi, "pm_card_visa").await;
        ensure!(status == 200, "paying {pi}: {body}");
        paid.push(stripe.payment_intent(pi).await);
    }
    let secret = Secret::new(args.webhook_secret.clone());
    let http = reqwest::Client::new();
    let url = format!("{}/api/payments/stripe/webhook", args.api.url);
    let (times, elapsed) =
        timed_each(paid, args.concurrency, move |paid: Arc<Vec<Value>>, i| {
            let (http, url, secret) = (http.clone(), url.clone(), secret.clone());
            async move {
                deliver_succeeded(&http, &url, &secret, format!("evt_bench_{i}"), &paid[i]).await
            }
        })
        .await?;
    report(
        "holds sold by webhook (webhook to CONFIRMED)",
        times,
        elapsed,
    );
    for (id, token) in &holds {
        let (_, r) = api
            .call(
                reqwest::Method::GET,
                &format!("/api/reservations/{id}"),
                token,
                None,
            )
            .await?;
        ensure!(r["status"] == "CONFIRMED", "reservation {id}: {r}");
    }
    println!("all {} holds CONFIRMED", holds.len());
    Ok(())
}

/// A show of `orders` sold orders, each paid at localstripe (through the
/// API: payment, card, webhook), cancelled; timed until its cancellation
/// is DONE, then every PaymentIntent's refunds counted.
pub async fn cancel(args: CancelArgs) -> anyhow::Result<()> {
    ticket_core::tls::install_crypto_provider();
    let api = Arc::new(Api::new(&args.api).await?);
    let stripe = Arc::new(LocalStripe::on_port(args.stripe_port));
    let (concert, holds) = api
        .sold(
            args.orders,
            1,
            json!({"holdSeconds": 3600,
                   "categories": [{"name": "Standard", "price": 2500, "currency": "EUR"}]}),
        )
        .await?;
    // Sold as a fan would buy: a payment, the card, the webhook (signed
    // here: localstripe's own, one aiohttp session each, trail by minutes
    // at this count); not timed.
    let pis = Arc::new(std::sync::Mutex::new(Vec::new()));
    let signing = Secret::new(args.webhook_secret.clone());
    let webhook = format!("{}/api/payments/stripe/webhook", args.api.url);
    timed_each(holds.clone(), 8, {
        let (api, stripe, pis) = (api.clone(), stripe.clone(), pis.clone());
        move |holds: Arc<Vec<(u64, String)>>, i| {
            let (api, stripe, pis) = (api.clone(), stripe.clone(), pis.clone());
            let (signing, webhook) = (signing.clone(), webhook.clone());
            async move {
                let (id, token) = &holds[i];
                let pi = payment_of(&api, *id, token).await?;
                let (status, body) = stripe.pay(&pi, "pm_card_visa").await;
                ensure!(status == 200, "paying {pi}: {body}");
                let http = reqwest::Client::new();
                deliver_succeeded(&http, &webhook, &signing, format!("evt_sold_{i}"), &body)
                    .await?;
                if let Ok(mut pis) = pis.lock() {
                    pis.push(pi);
                }
                Ok(())
            }
        }
    })
    .await?;
    let sold_by = Instant::now() + Duration::from_secs(600);
    loop {
        let (_, sales) = api
            .call(
                reqwest::Method::GET,
                &format!("/api/concerts/{concert}/sales"),
                &api.admin,
                None,
            )
            .await?;
        if sales["total"]["sold"].as_u64() == Some(args.orders as u64) {
            break;
        }
        ensure!(
            Instant::now() < sold_by,
            "not every order was sold: {sales}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    println!("{} orders sold through Stripe", args.orders);

    let started = Instant::now();
    let (status, body) = api
        .call(
            reqwest::Method::POST,
            &format!("/api/concerts/{concert}/cancel"),
            &api.admin,
            Some(json!({"reason": "benchmark"})),
        )
        .await?;
    ensure!(status == 202, "cancel: {status} {body}");
    let progress = loop {
        let (_, progress) = api
            .call(
                reqwest::Method::GET,
                &format!("/api/concerts/{concert}/cancellation"),
                &api.admin,
                None,
            )
            .await?;
        if progress["status"] == "DONE" {
            break progress;
        }
        ensure!(
            started.elapsed() < Duration::from_secs(1800),
            "not done: {progress}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let elapsed = started.elapsed().as_secs_f64();
    println!(
        "show of {} orders cancelled: every refund done in {elapsed:.1} s ({:.0} refunds/s); {progress}",
        args.orders,
        args.orders as f64 / elapsed
    );
    let pis: Vec<String> = pis.lock().map(|p| p.clone()).unwrap_or_default();
    let (mut once, mut twice, mut none) = (0, 0, 0);
    for pi in &pis {
        match stripe.refunds_of(pi).await.len() {
            0 => none += 1,
            1 => once += 1,
            _ => twice += 1,
        }
    }
    println!("refunds at the provider: {once} once, {twice} more than once, {none} never");
    ensure!(
        twice == 0 && none == 0,
        "a payment was refunded twice or not at all"
    );
    Ok(())
}
