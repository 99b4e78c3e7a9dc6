use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use clap::Args as ClapArgs;
use tokio::sync::Semaphore;

#[derive(ClapArgs)]
pub struct Args {
    /// Base URL of the API.
    #[arg(long, default_value = "http://127.0.0.1:8080")]
    url: String,
    /// File of `token seatId` lines (from prepare-enqueue).
    #[arg(long)]
    lines: std::path::PathBuf,
    /// Requests per second, held constant whatever the latency (open loop).
    #[arg(long, default_value_t = 5000)]
    rate: u64,
    #[arg(long, default_value_t = 20)]
    seconds: u64,
    /// Most requests in flight; beyond it a request is counted as dropped.
    #[arg(long, default_value_t = 512)]
    max_in_flight: usize,
}

/// POSTs reservation requests at a fixed rate, each (user, seat) pair once.
pub async fn run(args: Args) -> anyhow::Result<()> {
    let text = std::fs::read_to_string(&args.lines)?;
    let lines: Vec<(String, String)> = text
        .lines()
        .filter_map(|l| l.split_once(' ').map(|(t, s)| (t.to_owned(), s.to_owned())))
        .collect();
    let total = args.rate * args.seconds;
    anyhow::ensure!(
        lines.len() as u64 >= total,
        "need {total} lines, have {}",
        lines.len()
    );
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(args.max_in_flight)
        .build()?;
    let url = format!("{}/api/reservations", args.url);
    let permits = Arc::new(Semaphore::new(args.max_in_flight));
    let (created, other, dropped) = (
        Arc::new(AtomicU64::new(0)),
        Arc::new(AtomicU64::new(0)),
        Arc::new(AtomicU64::new(0)),
    );
    let latencies = Arc::new(std::sync::Mutex::new(Vec::with_capacity(total as usize)));
    let started = Instant::now();
    let mut tasks = Vec::with_capacity(total as usize);
    for (i, (token, seat)) in lines.into_iter().take(total as usize).enumerate() {
        // Request i is due at i / rate seconds after the start.
        let due = started + Duration::from_secs_f64(i as f64 / args.rate as f64);
        tokio::time::sleep_until(due.into()).await;
        let Ok(permit) = permits.clone().try_acquire_owned() else {
            dropped.fetch_add(1, Ordering::Relaxed);
            continue;
        };
        let (client, url) = (client.clone(), url.clone());
        let (created, other, latencies) = (created.clone(), other.clone(), latencies.clone());
        tasks.push(tokio::spawn(async move {
            let sent = Instant::now();
            let body = format!("{{\"seatId\":{seat}}}");
            let response = client
                .post(url)
                .bearer_auth(token)
                .header("content-type", "application/json")
                .body(body)
                .send()
                .await;
            let ok = matches!(&response, Ok(r) if r.status() == 201);
            if let Ok(r) = response {
                let _ = r.bytes().await;
            }
            let elapsed = sent.elapsed();
            drop(permit);
            if ok {
                created.fetch_add(1, Ordering::Relaxed);
                if let Ok(mut l) = latencies.lock() {
                    l.push(elapsed);
                }
            } else {
                other.fetch_add(1, Ordering::Relaxed);
            }
        }));
    }
    let sending = started.elapsed();
    for t in tasks {
        t.await?;
    }
    let mut l = latencies
        .lock()
        .map_err(|_| anyhow::anyhow!("poisoned"))?
        .clone();
    l.sort_unstable();
    let pct = |p: f64| {
        l.get(((l.len().max(1) - 1) as f64 * p).round() as usize)
            .map_or(f64::NAN, |d| d.as_secs_f64() * 1000.0)
    };
    println!(
        "load rate={}/s for {} s (sent in {:.2} s): 201={} other={} dropped={} http ms p50={:.1} p99={:.1} max={:.1}",
        args.rate,
        args.seconds,
        sending.as_secs_f64(),
        created.load(Ordering::Relaxed),
        other.load(Ordering::Relaxed),
        dropped.load(Ordering::Relaxed),
        pct(0.5),
        pct(0.99),
        pct(1.0)
    );
    Ok(())
}
