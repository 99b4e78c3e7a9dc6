//! Decisions pushed over Server-Sent Events: many streams open on one API
//! instance while a worker decides their requests. Reports how long each
//! decision took from its commit (the row's `decidedAt`) to its event, the
//! instance's memory, and its queries.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use clap::Args as ClapArgs;
use ticket_core::testing::prometheus_text;
use ticket_worker::{Mode, Worker, WorkerConfig};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

#[derive(ClapArgs)]
pub struct Args {
    /// Base URL of the API.
    #[arg(long)]
    url: String,
    /// File of `token queueId` lines of open requests (prepare-enqueue --queued).
    #[arg(long)]
    lines: std::path::PathBuf,
    #[arg(long, default_value_t = 10_000)]
    streams: usize,
    /// The API's process id, for its memory (VmRSS).
    #[arg(long)]
    api_pid: Option<u32>,
    /// The database the requests are in (a worker in this process decides them).
    #[arg(long, env = "DATABASE_URL")]
    database_url: String,
    /// The worker's batch size. A decision's `decidedAt` is taken when its
    /// transaction starts, so the time measured includes the rest of that
    /// transaction: smaller batches bring it closer to the commit.
    #[arg(long, default_value_t = 1000)]
    batch_size: u32,
}

pub async fn run(args: Args) -> anyhow::Result<()> {
    let text = std::fs::read_to_string(&args.lines)?;
    let lines: Vec<(String, u64)> = text
        .lines()
        .filter_map(|l| {
            let (token, id) = l.split_once(' ')?;
            Some((token.to_owned(), id.parse().ok()?))
        })
        .take(args.streams)
        .collect();
    anyhow::ensure!(lines.len() == args.streams, "need {} lines", args.streams);
    ticket_core::tls::install_crypto_provider();
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()?;
    let idle_rss = rss_mb(args.api_pid);
    let connected = Arc::new(AtomicUsize::new(0));
    let connecting = Arc::new(Semaphore::new(256));
    let opened = Instant::now();
    let mut tasks = Vec::with_capacity(lines.len());
    for (token, id) in lines {
        let (client, url) = (
            client.clone(),
            format!("{}/api/reservations/status/{id}/events", args.url),
        );
        let (connected, connecting) = (connected.clone(), connecting.clone());
        tasks.push(tokio::spawn(async move {
            follow(client, url, token, connected, connecting).await
        }));
    }
    while connected.load(Ordering::Relaxed) < tasks.len() {
        anyhow::ensure!(
            opened.elapsed() < Duration::from_secs(180),
            "only {} of {} streams opened",
            connected.load(Ordering::Relaxed),
            tasks.len()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let open_rss = rss_mb(args.api_pid);
    let mb = |m: Option<f64>| m.map_or("?".into(), |m| format!("{m:.0}"));
    println!(
        "{} streams open in {:.1} s; API RSS {} MB before them, {} MB with them",
        tasks.len(),
        opened.elapsed().as_secs_f64(),
        mb(idle_rss),
        mb(open_rss)
    );

    let pool = ticket_core::db::pool_options()
        .max_connections(1)
        .connect(&args.database_url)
        .await?;
    let queries_before = line_queries(&client, &args.url).await;
    let questions_before = questions(&pool).await?;
    let started = Instant::now();
    let shutdown = CancellationToken::new();
    // The worker gets a thread and a runtime of its own, as a process of its
    // own would: its CPU work must not delay the streams' readers here.
    let deciding = std::thread::spawn({
        let (shutdown, url, batch_size) =
            (shutdown.clone(), args.database_url.clone(), args.batch_size);
        move || -> anyhow::Result<()> {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            runtime.block_on(async move {
                let pool = ticket_core::db::pool_options()
                    .max_connections(4)
                    .connect(&url)
                    .await?;
                let worker = Worker::with_config(
                    pool,
                    "bench-streams",
                    Mode::Batch,
                    WorkerConfig {
                        batch_size,
                        poll_interval: Duration::from_millis(50),
                        lease: Duration::from_secs(30),
                        max_attempts: WorkerConfig::DEFAULT_MAX_ATTEMPTS,
                    },
                );
                worker.run(shutdown).await;
                Ok(())
            })
        }
    });
    let peak = Arc::new(std::sync::Mutex::new(open_rss.unwrap_or(0.0)));
    let sampler = tokio::spawn({
        let (peak, pid) = (peak.clone(), args.api_pid);
        async move {
            loop {
                if let (Some(now), Ok(mut peak)) = (rss_mb(pid), peak.lock()) {
                    *peak = peak.max(now);
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    });
    let mut latencies = Vec::with_capacity(tasks.len());
    let mut missing = 0;
    for task in tasks {
        match task.await? {
            Some(ms) => latencies.push(ms),
            None => missing += 1,
        }
    }
    let window = started.elapsed().as_secs_f64();
    sampler.abort();
    shutdown.cancel();
    deciding
        .join()
        .map_err(|_| anyhow::anyhow!("the worker thread panicked"))??;
    let queries = line_queries(&client, &args.url).await - queries_before;
    let questions = questions(&pool).await? - questions_before;
    latencies.sort_by(f64::total_cmp);
    let pct = |p: f64| {
        latencies
            .get(((latencies.len().max(1) - 1) as f64 * p).round() as usize)
            .copied()
            .unwrap_or(f64::NAN)
    };
    println!(
        "decisions received: {} of {} ({missing} streams ended without one) in {window:.2} s; \
         commit → event ms p50={:.0} p90={:.0} p99={:.0} max={:.0}",
        latencies.len(),
        latencies.len() + missing,
        pct(0.5),
        pct(0.9),
        pct(0.99),
        pct(1.0)
    );
    println!(
        "API: peak RSS {:.0} MB; line-watch queries {queries:.0} ({:.1}/s); \
         all database statements (worker included) {questions} ({:.0}/s)",
        peak.lock().map_or(0.0, |p| *p),
        queries / window,
        questions as f64 / window
    );
    Ok(())
}

/// Opens one stream and reads it to its decision; the time from the
/// decision's `decidedAt` to its arrival, in ms.
async fn follow(
    client: reqwest::Client,
    url: String,
    token: String,
    connected: Arc<AtomicUsize>,
    connecting: Arc<Semaphore>,
) -> Option<f64> {
    let mut permit = Some(connecting.acquire().await.ok()?);
    let mut response = client.get(url).bearer_auth(token).send().await.ok()?;
    if response.status() != 200 {
        return None;
    }
    decision_delay(&mut response, || {
        // Connected once the first event is in: let the next one connect.
        if permit.take().is_some() {
            connected.fetch_add(1, Ordering::Relaxed);
        }
    })
    .await
}

/// Reads a stream to its decision; the time from the decision's
/// `decidedAt` to its arrival, in ms. `on_chunk` runs at every chunk read.
pub(crate) async fn decision_delay(
    response: &mut reqwest::Response,
    mut on_chunk: impl FnMut(),
) -> Option<f64> {
    let mut buffer = String::new();
    loop {
        let chunk = response.chunk().await.ok()??;
        on_chunk();
        buffer.push_str(&String::from_utf8_lossy(&chunk));
        while let Some(end) = buffer.find("\n\n") {
            let block: String = buffer.drain(..end + 2).collect();
            if !block.contains("event: decision") {
                continue;
            }
            let arrived = Utc::now();
            let data = block.lines().find_map(|l| l.strip_prefix("data:"))?;
            let body: serde_json::Value = serde_json::from_str(data.trim()).ok()?;
            let decided: DateTime<Utc> = body["decidedAt"].as_str()?.parse().ok()?;
            return Some((arrived - decided).num_microseconds()? as f64 / 1000.0);
        }
    }
}

fn rss_mb(pid: Option<u32>) -> Option<f64> {
    let status = std::fs::read_to_string(format!("/proc/{}/status", pid?)).ok()?;
    let kb: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kb / 1024.0)
}

async fn line_queries(client: &reqwest::Client, url: &str) -> f64 {
    let Ok(response) = client.get(format!("{url}/metrics")).send().await else {
        return 0.0;
    };
    let text = response.text().await.unwrap_or_default();
    let samples = prometheus_text::parse(&text).unwrap_or_default();
    prometheus_text::value(&samples, "ticket_api_line_queries_total", &[])
}

async fn questions(pool: &sqlx::MySqlPool) -> Result<i64, sqlx::Error> {
    let (_, n): (String, String) = sqlx::query_as("SHOW GLOBAL STATUS LIKE 'Questions'")
        .fetch_one(pool)
        .await?;
    Ok(n.parse().unwrap_or(0))
}
