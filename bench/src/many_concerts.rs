//! Many concerts viewed at once (issue 30): status polls spread over the
//! open requests of 1,000 concerts on sale, against the same polls on one
//! concert's. An API instance keeps a line front per concert it is asked
//! about, and reads them all every tick: what that costs it (memory, CPU)
//! and the database (rows read), and the polls' latency.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use chrono::Utc;
use clap::Args as ClapArgs;
use sqlx::MySqlPool;
use ticket_api::accounts::security::TokenKeys;
use ticket_core::domain::{Role, SeatId, UserId};
use ticket_core::testing::{TestDatabase, seed};
use tokio::sync::Semaphore;

use crate::million::{cpu_seconds, pct, rows_read, rss_mb};

#[derive(ClapArgs)]
pub struct PrepareArgs {
    #[arg(long, default_value_t = 1_000)]
    concerts: u32,
    /// Open requests per concert (a user each, a seat each).
    #[arg(long, default_value_t = 20)]
    requests: u32,
}

/// A database with the concerts on sale and their open requests (nothing
/// decides them); prints its URL (kept after this process ends).
pub async fn prepare(args: PrepareArgs) -> anyhow::Result<()> {
    let (db, pool) = TestDatabase::migrated().await;
    let mut conn = pool.acquire().await?;
    let users = seed::users(&mut conn, "fan", args.requests as usize).await?;
    let mut pairs: Vec<(UserId, SeatId)> = Vec::new();
    for _ in 0..args.concerts {
        let seats = seed::concert(&mut conn, 1, args.requests).await?;
        pairs.extend(users.iter().copied().zip(seats));
    }
    seed::requests(&mut conn, &pairs).await?;
    println!("{}", db.url());
    std::mem::forget(db);
    Ok(())
}

#[derive(ClapArgs)]
pub struct Args {
    /// Base URL of the API instance.
    #[arg(long)]
    url: String,
    #[arg(long)]
    api_pid: u32,
    #[arg(long, default_value_t = 2_000)]
    poll_rate: u64,
    #[arg(long, default_value_t = 15)]
    poll_seconds: u64,
    #[arg(long, env = "DATABASE_URL")]
    database_url: String,
    #[arg(long, env = "TICKET_AUTH_SECRET")]
    secret: String,
}

pub async fn run(args: Args) -> anyhow::Result<()> {
    ticket_core::tls::install_crypto_provider();
    let pool = MySqlPool::connect(&args.database_url).await?;
    let keys = TokenKeys::new(args.secret.as_bytes(), Duration::from_secs(24 * 3600))?;
    let rows: Vec<(u64, u64, u64)> =
        sqlx::query_as("SELECT id, user_id, concert_id FROM reservation_queue ORDER BY id")
            .fetch_all(&pool)
            .await?;
    let token = |user: u64| keys.issue(UserId(user), Role::User, Utc::now()).token;
    let first_concert = rows.first().map_or(0, |r| r.2);
    let one: Vec<(String, u64)> = rows
        .iter()
        .filter(|r| r.2 == first_concert)
        .map(|r| (token(r.1), r.0))
        .collect();
    let all: Vec<(String, u64)> = rows.iter().map(|r| (token(r.1), r.0)).collect();
    let concerts = {
        let mut c: Vec<u64> = rows.iter().map(|r| r.2).collect();
        c.dedup();
        c.len()
    };
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(1024)
        .timeout(Duration::from_secs(30))
        .build()?;
    println!(
        "# status polls at {}/s for {} s on one API instance; {} open requests in {concerts} concerts",
        args.poll_rate,
        args.poll_seconds,
        rows.len()
    );
    println!("idle: API RSS {:.0} MB", rss_mb(args.api_pid));
    for (what, targets) in [("one concert viewed", &one), ("every concert viewed", &all)] {
        measure(&pool, &client, &args, what, targets).await?;
    }
    Ok(())
}

async fn measure(
    pool: &MySqlPool,
    client: &reqwest::Client,
    args: &Args,
    what: &str,
    targets: &[(String, u64)],
) -> anyhow::Result<()> {
    let cpu_before = cpu_seconds(args.api_pid);
    let reads_before = rows_read(pool).await?;
    let queries_before = line_queries(client, &args.url).await;
    let total = args.poll_rate * args.poll_seconds;
    let permits = Arc::new(Semaphore::new(1024));
    let latencies = Arc::new(std::sync::Mutex::new(Vec::with_capacity(total as usize)));
    let (failed, placed) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..total {
        let due = started + Duration::from_secs_f64(i as f64 / args.poll_rate as f64);
        tokio::time::sleep_until(due.into()).await;
        let Ok(permit) = permits.clone().try_acquire_owned() else {
            failed.fetch_add(1, Ordering::Relaxed);
            continue;
        };
        let (token, id) = &targets[(i as usize * 7919) % targets.len()];
        let request = client
            .get(format!("{}/api/reservations/status/{id}", args.url))
            .bearer_auth(token);
        let (latencies, failed, placed) = (latencies.clone(), failed.clone(), placed.clone());
        tasks.spawn(async move {
            let sent = Instant::now();
            let answer = match request.send().await {
                Ok(r) if r.status() == 200 => r.json::<serde_json::Value>().await.ok(),
                _ => None,
            };
            let ms = sent.elapsed().as_secs_f64() * 1000.0;
            drop(permit);
            match answer {
                Some(body) => {
                    placed.fetch_add(u64::from(body["position"].is_u64()), Ordering::Relaxed);
                    if let Ok(mut l) = latencies.lock() {
                        l.push(ms);
                    }
                }
                None => {
                    failed.fetch_add(1, Ordering::Relaxed);
                }
            }
        });
    }
    while tasks.join_next().await.is_some() {}
    let secs = started.elapsed().as_secs_f64();
    let reads = rows_read(pool).await? - reads_before;
    let queries = line_queries(client, &args.url).await - queries_before;
    let mut l = latencies
        .lock()
        .map_err(|_| anyhow::anyhow!("poisoned"))?
        .clone();
    l.sort_by(f64::total_cmp);
    println!(
        "{what}: {total} polls: ms p50={:.1} p99={:.1}, failed={}, with a position={}; \
         API CPU {:.0} % RSS {:.0} MB; line watch reads {:.1}/s; database rows read {:.0}/s",
        pct(&l, 0.5),
        pct(&l, 0.99),
        failed.load(Ordering::Relaxed),
        placed.load(Ordering::Relaxed),
        (cpu_seconds(args.api_pid) - cpu_before) / secs * 100.0,
        rss_mb(args.api_pid),
        queries / secs,
        reads as f64 / secs
    );
    Ok(())
}

/// The line watch's statements so far (`ticket_api_line_queries_total`).
async fn line_queries(client: &reqwest::Client, url: &str) -> f64 {
    let Ok(response) = client.get(format!("{url}/metrics")).send().await else {
        return 0.0;
    };
    let text = response.text().await.unwrap_or_default();
    text.lines()
        .find_map(|l| l.strip_prefix("ticket_api_line_queries_total "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0.0)
}
