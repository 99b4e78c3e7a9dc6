//! Enqueue while each user's open requests pile up (issue 30: the rate must
//! hold "whatever one user already has open"). A few users (20 by default)
//! click through several concerts (10 of 100 seats), one seat after the
//! other, through the API, with nothing deciding: by the last concert each
//! user has 900 requests open in the others. The rate of each concert's
//! part is printed; the first (nothing open yet) is the baseline of the run.

use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::Utc;
use clap::Args as ClapArgs;
use sqlx::MySqlPool;
use ticket_api::accounts::security::TokenKeys;
use ticket_core::domain::{Role, UserId};
use ticket_core::testing::{TestDatabase, seed};
use tokio::sync::Semaphore;

#[derive(ClapArgs)]
pub struct PrepareArgs {
    #[arg(long, default_value_t = 20)]
    users: usize,
    #[arg(long, default_value_t = 10)]
    concerts: u32,
    #[arg(long, default_value_t = 100)]
    seats: u32,
    /// An API binary whose `migrate` makes the schema (an older build's,
    /// for a before/after pair); this binary's migrations otherwise.
    #[arg(long)]
    migrate_with: Option<std::path::PathBuf>,
}

/// A database with the concerts (the widest cap per fan, no holds), their
/// seats and the users; prints its URL (kept after this process ends).
pub async fn prepare(args: PrepareArgs) -> anyhow::Result<()> {
    let db = TestDatabase::create().await;
    let pool = match &args.migrate_with {
        Some(api) => {
            let status = std::process::Command::new(api)
                .arg("migrate")
                .env("DATABASE_URL", db.url())
                .status()?;
            anyhow::ensure!(status.success(), "{} migrate failed", api.display());
            db.pool(4).await
        }
        None => {
            let pool = db.pool(4).await;
            ticket_core::db::migrate(&pool).await?;
            pool
        }
    };
    let mut conn = pool.acquire().await?;
    for _ in 0..args.concerts {
        seed::concert(&mut conn, 1, args.seats).await?;
    }
    sqlx::query("UPDATE concerts SET max_seats_per_user = 100, hold_seconds = 0")
        .execute(&mut *conn)
        .await?;
    seed::users(&mut conn, "fan", args.users).await?;
    println!("{}", db.url());
    std::mem::forget(db);
    Ok(())
}

#[derive(ClapArgs)]
pub struct Args {
    /// Base URL of the API (open-seat limit and rate limits off).
    #[arg(long)]
    url: String,
    /// Requests in flight at once.
    #[arg(long, default_value_t = 64)]
    concurrency: usize,
    #[arg(long, env = "DATABASE_URL")]
    database_url: String,
    #[arg(long, env = "TICKET_AUTH_SECRET")]
    secret: String,
}

pub async fn run(args: Args) -> anyhow::Result<()> {
    ticket_core::tls::install_crypto_provider();
    let pool = MySqlPool::connect(&args.database_url).await?;
    let users: Vec<(u64,)> =
        sqlx::query_as("SELECT id FROM users WHERE nickname LIKE 'fan%' ORDER BY id")
            .fetch_all(&pool)
            .await?;
    let concerts: Vec<(u64,)> = sqlx::query_as("SELECT id FROM concerts ORDER BY id")
        .fetch_all(&pool)
        .await?;
    let keys = TokenKeys::new(args.secret.as_bytes(), Duration::from_secs(24 * 3600))?;
    let tokens: Vec<String> = users
        .iter()
        .map(|(id,)| keys.issue(UserId(*id), Role::User, Utc::now()).token)
        .collect();
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(args.concurrency)
        .timeout(Duration::from_secs(30))
        .build()?;
    println!(
        "# {} users click through {} concerts, a seat after the other, {} in flight",
        users.len(),
        concerts.len(),
        args.concurrency
    );
    let mut rates = Vec::new();
    for (part, (concert,)) in concerts.iter().enumerate() {
        let seats: Vec<(u64,)> =
            sqlx::query_as("SELECT id FROM seats WHERE concert_id = ? ORDER BY id")
                .bind(concert)
                .fetch_all(&pool)
                .await?;
        let permits = Arc::new(Semaphore::new(args.concurrency));
        let started = Instant::now();
        let mut tasks = tokio::task::JoinSet::new();
        for (seat,) in &seats {
            for token in &tokens {
                let permit = permits.clone().acquire_owned().await?;
                let request = client
                    .post(format!("{}/api/reservations", args.url))
                    .bearer_auth(token)
                    .header("content-type", "application/json")
                    .body(format!("{{\"seatId\":{seat}}}"));
                tasks.spawn(async move {
                    let created = matches!(request.send().await, Ok(r) if r.status() == 201);
                    drop(permit);
                    created
                });
            }
        }
        let (mut created, mut other) = (0u64, 0u64);
        while let Some(done) = tasks.join_next().await {
            if done? {
                created += 1;
            } else {
                other += 1;
            }
        }
        let rate = created as f64 / started.elapsed().as_secs_f64();
        println!(
            "concert {}: each user had {} open before it: 201={created} other={other}, {rate:.0}/s",
            part + 1,
            part * seats.len()
        );
        rates.push(rate);
    }
    if let (Some(first), Some(last)) = (rates.first(), rates.last()) {
        println!("last / first: {:.2}", last / first);
    }
    Ok(())
}
