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
    /// File of `token seatId` (or `token best:<concertId>:<count>`) lines
    /// (from prepare-enqueue).
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
    /// Write the queue id of every 201 to this file, one per line (for
    /// checking afterwards that each acknowledged request was decided).
    #[arg(long)]
    record: Option<std::path::PathBuf>,
    /// A request without an answer after this long counts as hung.
    #[arg(long, default_value_t = 10_000)]
    timeout_ms: u64,
    /// Connections opened (with GET /healthz) before the clock starts, as
    /// clients that loaded the page have theirs: the run measures requests,
    /// not a storm of TCP handshakes in its first second.
    #[arg(long, default_value_t = 0)]
    connections: usize,
    /// Write every request's `sent answered status` to this file, in
    /// milliseconds since the Unix epoch (status 0: no answer), so that a
    /// fault test can count the requests in flight at the moment it struck.
    #[arg(long)]
    timeline: Option<std::path::PathBuf>,
    /// Poll statuses instead: lines are `token queueId` (prepare-enqueue
    /// --queued) and each request is GET /api/reservations/status/{id}.
    #[arg(long)]
    status: bool,
}

/// What the requests got back, by kind.
#[derive(Default)]
struct Outcomes {
    by_status: std::collections::BTreeMap<u16, u64>,
    /// 503s that carried Retry-After.
    unavailable_with_retry_after: u64,
    /// No answer in time, or the connection failed.
    failed: u64,
    queue_ids: Vec<u64>,
    /// Status answers that carried a position.
    placed: u64,
    /// (sent, answered, status) per request, in ms since the epoch; status
    /// 0: no answer.
    timeline: Vec<(u128, u128, u16)>,
}

impl Outcomes {
    /// Answers (of any status) that took longer than a second: the requests
    /// a fault kept waiting.
    fn slow(&self) -> usize {
        self.timeline
            .iter()
            .filter(|(sent, answered, status)| *status != 0 && answered - sent > 1000)
            .count()
    }
}

/// A line's request: `seatId`; `best:<concertId>:<count>` for the best
/// `count` seats of the concert's category "Stalls"; `area:<concertId>:<count>`
/// for `count` places of its standing area "Floor".
fn request_body(target: &str) -> String {
    let by_count = |prefix: &str| {
        target
            .strip_prefix(prefix)
            .and_then(|rest| rest.split_once(':'))
    };
    if let Some((concert, count)) = by_count("best:") {
        format!("{{\"concertId\":{concert},\"category\":\"Stalls\",\"count\":{count}}}")
    } else if let Some((concert, count)) = by_count("area:") {
        format!("{{\"concertId\":{concert},\"area\":\"Floor\",\"count\":{count}}}")
    } else {
        format!("{{\"seatId\":{target}}}")
    }
}

fn unix_ms(at: std::time::SystemTime) -> u128 {
    at.duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis())
}

/// POSTs reservation requests at a fixed rate, each (user, seat) pair once;
/// or polls statuses, going round the lines as often as needed.
pub async fn run(args: Args) -> anyhow::Result<()> {
    let text = std::fs::read_to_string(&args.lines)?;
    let mut lines: Vec<(String, String)> = text
        .lines()
        .filter_map(|l| l.split_once(' ').map(|(t, s)| (t.to_owned(), s.to_owned())))
        .collect();
    let total = args.rate * args.seconds;
    if args.status && !lines.is_empty() {
        lines = lines.iter().cycle().take(total as usize).cloned().collect();
    }
    anyhow::ensure!(
        lines.len() as u64 >= total,
        "need {total} lines, have {}",
        lines.len()
    );
    ticket_core::tls::install_crypto_provider();
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(args.max_in_flight)
        .timeout(Duration::from_millis(args.timeout_ms))
        .build()?;
    let mut opening = tokio::task::JoinSet::new();
    for _ in 0..args.connections {
        let request = client.get(format!("{}/healthz", args.url)).send();
        // Read to the end, so that the connection goes back to the pool.
        opening.spawn(async move { request.await?.error_for_status()?.bytes().await });
    }
    while let Some(opened) = opening.join_next().await {
        opened??;
    }
    let outcomes = Arc::new(std::sync::Mutex::new(Outcomes::default()));
    let base = args.url.clone();
    let polling = args.status;
    let expected = if polling { 200 } else { 201 };
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
        let (client, base) = (client.clone(), base.clone());
        let (created, other, latencies) = (created.clone(), other.clone(), latencies.clone());
        let outcomes = outcomes.clone();
        tasks.push(tokio::spawn(async move {
            let sent = Instant::now();
            let sent_at = std::time::SystemTime::now();
            let request = if polling {
                client.get(format!("{base}/api/reservations/status/{seat}"))
            } else {
                client
                    .post(format!("{base}/api/reservations"))
                    .header("content-type", "application/json")
                    .body(request_body(&seat))
            };
            let response = request.bearer_auth(token).send().await;
            let ok = matches!(&response, Ok(r) if r.status() == expected);
            let mut queue_id = None;
            let mut status = None;
            let mut retry_after = false;
            let mut placed = false;
            if let Ok(r) = response {
                status = Some(r.status().as_u16());
                retry_after = r.headers().contains_key("retry-after");
                if let Ok(body) = r.bytes().await
                    && ok
                {
                    let answer = serde_json::from_slice::<serde_json::Value>(&body).ok();
                    queue_id = answer.as_ref().and_then(|v| v["queueId"].as_u64());
                    placed = answer.is_some_and(|v| v["position"].is_u64());
                }
            }
            let elapsed = sent.elapsed();
            if let Ok(mut o) = outcomes.lock() {
                o.timeline.push((
                    unix_ms(sent_at),
                    unix_ms(sent_at + elapsed),
                    status.unwrap_or(0),
                ));
                match status {
                    Some(code) => {
                        *o.by_status.entry(code).or_default() += 1;
                        if code == 503 && retry_after {
                            o.unavailable_with_retry_after += 1;
                        }
                    }
                    None => o.failed += 1,
                }
                o.queue_ids.extend(queue_id);
                o.placed += u64::from(placed);
            }
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
        "{} rate={}/s for {} s (sent in {:.2} s): {expected}={} other={} dropped={} http ms p50={:.1} p99={:.1} max={:.1}",
        if polling { "status polls" } else { "load" },
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
    let outcomes = outcomes.lock().map_err(|_| anyhow::anyhow!("poisoned"))?;
    let statuses: Vec<String> = outcomes
        .by_status
        .iter()
        .map(|(code, n)| format!("{code}={n}"))
        .collect();
    println!(
        "answers: {} (503 with Retry-After: {}); no answer in {} ms or connection failed: {}; answered after more than 1 s: {}",
        statuses.join(" "),
        outcomes.unavailable_with_retry_after,
        args.timeout_ms,
        outcomes.failed,
        outcomes.slow()
    );
    if polling {
        println!("answers with a position: {}", outcomes.placed);
    }
    if let Some(path) = &args.timeline {
        let lines: Vec<String> = outcomes
            .timeline
            .iter()
            .map(|(sent, answered, status)| format!("{sent} {answered} {status}"))
            .collect();
        std::fs::write(path, lines.join("\n") + "\n")?;
    }
    if let Some(path) = &args.record {
        let ids: Vec<String> = outcomes.queue_ids.iter().map(u64::to_string).collect();
        std::fs::write(path, ids.join("\n") + "\n")?;
    }
    Ok(())
}
