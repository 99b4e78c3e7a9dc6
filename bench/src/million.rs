//! A million in one line (issue 30): a lottery line of N requests (a fan
//! each, as on a real on-sale day; 20 fans to a seat), enqueued through the API while
//! the lottery window is open (the first and the last `--through-api`; the
//! middle written straight into the tables, as the API writes them, to
//! spare minutes), then status polls and event streams before and after
//! the opening, the opening itself, and the sale to its end. Measured
//! against the API processes (CPU, memory) and the database (rows read).
//!
//! Long because it is one measured sale from intake to its last decision,
//! with the phases' figures printed beside the code that makes them.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use clap::Args as ClapArgs;
use sqlx::MySqlPool;
use ticket_api::accounts::security::TokenKeys;
use ticket_core::domain::{LineKey, Role};
use ticket_core::testing::{TestDatabase, seed};
use tokio::sync::Semaphore;

#[derive(ClapArgs)]
pub struct PrepareArgs {
    /// Requests the line will hold (a user each).
    #[arg(long)]
    requests: u64,
    #[arg(long, default_value_t = 50_000)]
    seats: u32,
    /// Put every seat in one price category ("Stalls"), for `million --best`.
    #[arg(long)]
    best: bool,
}

/// A database with a concert whose lottery is open for a day, its seats and
/// users; prints its URL (kept after this process ends).
pub async fn prepare(args: PrepareArgs) -> anyhow::Result<()> {
    let (db, pool) = TestDatabase::migrated().await;
    let mut conn = pool.acquire().await?;
    let rows = args.seats.div_ceil(1000);
    let seats = seed::concert(&mut conn, rows, args.seats.div_ceil(rows)).await?;
    if args.best
        && let Some(concert) = seed::concerts_of(&mut conn, seats.iter().copied().take(1))
            .await?
            .into_values()
            .next()
    {
        seed::one_category(&mut conn, concert).await?;
    }
    sqlx::query(
        "UPDATE concerts SET opens_at = UTC_TIMESTAMP(6) + INTERVAL 1 HOUR, \
         lottery_window_seconds = 86400, max_seats_per_user = 4, hold_seconds = 0",
    )
    .execute(&mut *conn)
    .await?;
    seed::users(&mut conn, "fan", args.requests as usize).await?;
    println!("{}", db.url());
    std::mem::forget(db);
    Ok(())
}

#[derive(ClapArgs)]
pub struct Args {
    /// Base URL of an API instance (twice for two).
    #[arg(long, required = true)]
    url: Vec<String>,
    /// Process id of each API instance, in the order of `--url`.
    #[arg(long)]
    api_pid: Vec<u32>,
    #[arg(long)]
    requests: u64,
    /// Requests enqueued through the API at the start, and again at the end.
    #[arg(long, default_value_t = 100_000)]
    through_api: u64,
    #[arg(long, default_value_t = 3_000)]
    enqueue_rate: u64,
    #[arg(long, default_value_t = 2_000)]
    poll_rate: u64,
    #[arg(long, default_value_t = 15)]
    poll_seconds: u64,
    #[arg(long, default_value_t = 1_000)]
    streams: usize,
    /// How long to follow the sale after the polls, at most (seconds; 0:
    /// to its end).
    #[arg(long, default_value_t = 0)]
    follow_sale: u64,
    /// After the sale: make every decided request older than the retention
    /// and watch the workers' sweeper remove them for this long (seconds;
    /// 0: not measured).
    #[arg(long, default_value_t = 0)]
    sweep_seconds: u64,
    #[arg(long, env = "DATABASE_URL")]
    database_url: String,
    #[arg(long, env = "TICKET_AUTH_SECRET")]
    secret: String,
    /// Best available: every request asks for the best two seats of the
    /// concert's one category (prepared with `million-prepare --best`)
    /// instead of naming seat i mod S.
    #[arg(long)]
    best: bool,
}

struct Line {
    pool: MySqlPool,
    client: reqwest::Client,
    /// For event streams: no overall timeout.
    streaming: reqwest::Client,
    keys: TokenKeys,
    concert: u64,
    first_user: u64,
    users: u64,
    first_seat: u64,
    seats: u64,
    best: bool,
}

/// Seats a best-available request of the line asks for.
const BEST_COUNT: u8 = 2;

impl Line {
    /// The i-th request: the i-th user's, on seat i mod S.
    fn request(&self, i: u64) -> (u64, u64) {
        (self.first_user + i, self.first_seat + i % self.seats)
    }

    /// The body of request i for seat `seat`.
    fn body(&self, seat: u64) -> String {
        if self.best {
            format!(
                "{{\"concertId\":{},\"category\":\"Stalls\",\"count\":{BEST_COUNT}}}",
                self.concert
            )
        } else {
            format!("{{\"seatId\":{seat}}}")
        }
    }

    fn token(&self, user: u64) -> String {
        self.keys
            .issue(ticket_core::domain::UserId(user), Role::User, Utc::now())
            .token
    }
}

pub async fn run(args: Args) -> anyhow::Result<()> {
    ticket_core::tls::install_crypto_provider();
    let pool = MySqlPool::connect(&args.database_url).await?;
    let (concert,): (u64,) = sqlx::query_as("SELECT MIN(id) FROM concerts")
        .fetch_one(&pool)
        .await?;
    let (first_user, users): (u64, i64) =
        sqlx::query_as("SELECT MIN(id), COUNT(*) FROM users WHERE nickname LIKE 'fan%'")
            .fetch_one(&pool)
            .await?;
    let (first_seat, seats): (u64, i64) =
        sqlx::query_as("SELECT MIN(id), COUNT(*) FROM seats WHERE concert_id = ?")
            .bind(concert)
            .fetch_one(&pool)
            .await?;
    let line = Arc::new(Line {
        pool,
        client: reqwest::Client::builder()
            .pool_max_idle_per_host(1024)
            .timeout(Duration::from_secs(30))
            .build()?,
        streaming: reqwest::Client::builder().build()?,
        keys: TokenKeys::new(args.secret.as_bytes(), Duration::from_secs(24 * 3600))?,
        concert,
        first_user,
        users: users.unsigned_abs(),
        first_seat,
        seats: seats.unsigned_abs(),
        best: args.best,
    });
    anyhow::ensure!(args.requests <= line.users, "too few users");
    let n = args.requests;
    let api = args.through_api.min(n / 2);
    println!(
        "# a line of {n}: {n} fans, {} seats, {api} enqueued through the API first and {api} last",
        line.seats
    );

    let first = enqueue(&line, &args.url[0], 0..api, args.enqueue_rate).await?;
    println!("enqueue, first {api}: {first}");
    if n > 2 * api {
        let started = Instant::now();
        seed_lottery(&line, api..n - api).await?;
        println!(
            "written straight into the tables: {} in {:.1} s",
            n - 2 * api,
            started.elapsed().as_secs_f64()
        );
    }
    let last = enqueue(&line, &args.url[0], n - api..n, args.enqueue_rate).await?;
    println!("enqueue, last {api}: {last}");

    let targets = Arc::new(sample(&line, n, 20_000).await?);
    for url in &args.url {
        warm(&line, url).await;
    }
    let opened = Arc::new(AtomicU64::new(0));
    let streams = open_streams(&line, &args.url, &targets, args.streams, &opened);
    // The streams are open while the polls run ("meanwhile"), not opened
    // in a burst that the first polls would wait behind.
    let opening = Instant::now();
    let wanted = args.streams.min(targets.len()) as u64;
    while opened.load(Ordering::Relaxed) < wanted && opening.elapsed() < Duration::from_secs(60) {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    println!(
        "{} of {wanted} event streams open in {:.1} s",
        opened.load(Ordering::Relaxed),
        opening.elapsed().as_secs_f64()
    );
    measure_each_way(&line, &args, &targets, "before the opening").await?;

    let opens_at: (DateTime<Utc>,) = sqlx::query_as("SELECT UTC_TIMESTAMP(6) + INTERVAL 2 SECOND")
        .fetch_one(&line.pool)
        .await?;
    let opens_at = opens_at.0;
    sqlx::query("UPDATE concerts SET opens_at = ? WHERE id = ?")
        .bind(opens_at.naive_utc())
        .bind(line.concert)
        .execute(&line.pool)
        .await?;
    let mut sale = tokio::spawn(follow_sale(line.clone(), opens_at, n));
    measure_each_way(&line, &args, &targets, "after the opening").await?;
    if args.follow_sale > 0 {
        if tokio::time::timeout(Duration::from_secs(args.follow_sale), &mut sale)
            .await
            .is_err()
        {
            sale.abort();
            let (decided,): (i64,) = sqlx::query_as(
                "SELECT COUNT(*) FROM reservation_queue WHERE status IN ('SUCCESS', 'FAILED')",
            )
            .fetch_one(&line.pool)
            .await?;
            println!("stopped following the sale: {decided} of {n} decided so far");
            return Ok(());
        }
    } else {
        (&mut sale).await??;
    }
    let mut delays = Vec::new();
    for stream in streams {
        if let Ok(Some(ms)) = stream.await {
            delays.push(ms);
        }
    }
    delays.sort_by(f64::total_cmp);
    println!(
        "event streams: {} of {} told their decision; decidedAt to event ms p50={:.0} p99={:.0}",
        delays.len(),
        args.streams,
        pct(&delays, 0.5),
        pct(&delays, 0.99)
    );
    let mut conn = line.pool.acquire().await?;
    crate::drain::invariants_hold(&mut conn).await?;
    let (sold, seats_sold, claims, last): (i64, i64, i64, Option<DateTime<Utc>>) = sqlx::query_as(
        "SELECT COUNT(DISTINCT r.id), COUNT(DISTINCT rs.seat_id), COUNT(rs.seat_id), MAX(r.created_at) \
           FROM reservation_queue q JOIN reservations r ON r.id = q.reservation_id \
           JOIN reservation_seats rs ON rs.reservation_id = r.id WHERE q.status = 'SUCCESS'",
    )
    .fetch_one(&mut *conn)
    .await?;
    let last = last.map_or(0.0, |at| (at - opens_at).num_milliseconds() as f64 / 1000.0);
    println!(
        "after the sale: {sold} requests won {seats_sold} distinct seats ({claims} claims), the last \
         {last:.1} s after the opening; {} inversions (a later request won a seat an earlier one \
         wanted), {} better blocks later (a best-available request got a better block than an \
         earlier one of its size), invariants hold",
        ticket_core::testing::inversions(&mut conn).await?,
        ticket_core::testing::better_blocks_later(&mut conn).await?
    );
    drop(conn);
    if args.sweep_seconds > 0 {
        sweep(&line.pool, Duration::from_secs(args.sweep_seconds)).await?;
    }
    Ok(())
}

/// Every decided request made 40 days old (past the default retention of
/// 30), then the rows left counted every 10 s while the running worker's
/// sweeper removes them: its rate, and the time the backlog would take.
async fn sweep(pool: &MySqlPool, watch_for: Duration) -> anyhow::Result<()> {
    let started = Instant::now();
    let aged = sqlx::query(
        "UPDATE reservation_queue SET created_at = created_at - INTERVAL 40 DAY, \
         decided_at = decided_at - INTERVAL 40 DAY WHERE status IN ('SUCCESS', 'FAILED')",
    )
    .execute(pool)
    .await?
    .rows_affected();
    println!(
        "sweep: {aged} decided requests made 40 days old in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let count = || async {
        let (n,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM reservation_queue")
            .fetch_one(pool)
            .await?;
        anyhow::Ok(n)
    };
    let before = count().await?;
    let watching = Instant::now();
    let mut first_removal: Option<(Instant, i64)> = None;
    let mut left = before;
    while watching.elapsed() < watch_for && left > 0 {
        tokio::time::sleep(Duration::from_secs(10)).await;
        left = count().await?;
        if first_removal.is_none() && left < before {
            first_removal = Some((Instant::now(), left));
        }
    }
    let Some((at, then)) = first_removal else {
        println!("sweep: nothing removed in {} s", watch_for.as_secs());
        return Ok(());
    };
    let secs = at.elapsed().as_secs_f64().max(1.0);
    let rate = (then - left) as f64 / secs;
    println!(
        "sweep: first removals {:.0} s after the aging; then {:.0} rows/s for {secs:.0} s; \
         {left} of {before} left; the whole backlog at this rate: {:.0} min",
        (at - watching).as_secs_f64(),
        rate,
        before as f64 / rate.max(1.0) / 60.0
    );
    Ok(())
}

/// Enqueues requests `range` at `rate` a second (open loop); what it got.
async fn enqueue(
    line: &Arc<Line>,
    url: &str,
    range: std::ops::Range<u64>,
    rate: u64,
) -> anyhow::Result<String> {
    let permits = Arc::new(Semaphore::new(512));
    let (created, other) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let started = Instant::now();
    let mut tasks = Vec::new();
    let count = range.end - range.start;
    for (j, i) in range.enumerate() {
        let due = started + Duration::from_secs_f64(j as f64 / rate as f64);
        tokio::time::sleep_until(due.into()).await;
        let permit = permits.clone().acquire_owned().await?;
        let (user, seat) = line.request(i);
        let request = line
            .client
            .post(format!("{url}/api/reservations"))
            .bearer_auth(line.token(user))
            .header("content-type", "application/json")
            .body(line.body(seat));
        let (created, other) = (created.clone(), other.clone());
        tasks.push(tokio::spawn(async move {
            let ok = matches!(request.send().await, Ok(r) if r.status() == 201);
            drop(permit);
            if ok { &created } else { &other }.fetch_add(1, Ordering::Relaxed);
        }));
    }
    for task in tasks {
        task.await?;
    }
    let secs = started.elapsed().as_secs_f64();
    Ok(format!(
        "{count} at {rate}/s offered: 201={} other={} in {secs:.1} s = {:.0}/s",
        created.load(Ordering::Relaxed),
        other.load(Ordering::Relaxed),
        created.load(Ordering::Relaxed) as f64 / secs
    ))
}

/// Writes lottery requests `range` as the API would (WAITING, a drawn key,
/// their seats, counted in the line), 100,000 a statement.
async fn seed_lottery(line: &Line, range: std::ops::Range<u64>) -> anyhow::Result<()> {
    let (before,): (Option<u64>,) = sqlx::query_as("SELECT MAX(id) FROM reservation_queue")
        .fetch_one(&line.pool)
        .await?;
    let floor = LineKey::LOTTERY_FLOOR.get();
    // A best-available request names no seat: its category is its pool.
    let count = if line.best { BEST_COUNT } else { 1 };
    for from in range.clone().step_by(100_000) {
        let to = (from + 100_000).min(range.end);
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "INSERT INTO reservation_queue (user_id, concert_id, seat_id, seat_count, status, line_key, created_at, updated_at) \
             SELECT u.id, ?, IF(?, NULL, ? + MOD(u.id - ?, ?)), {count}, 'WAITING', ? + FLOOR(RAND() * ?), \
                    UTC_TIMESTAMP(6), UTC_TIMESTAMP(6) \
             FROM users u WHERE u.id >= ? AND u.id < ?"
        )))
        .bind(line.concert)
        .bind(line.best)
        .bind(line.first_seat)
        .bind(line.first_user)
        .bind(line.seats)
        .bind(floor)
        .bind(floor - 1)
        .bind(line.first_user + from)
        .bind(line.first_user + to)
        .execute(&line.pool)
        .await?;
    }
    let done = sqlx::query(if line.best {
        "INSERT INTO request_pools (queue_id, user_id, concert_id, category, seat_count, line_key, is_open) \
         SELECT id, user_id, concert_id, 0, seat_count, line_key, 1 FROM reservation_queue WHERE id > ?"
    } else {
        "INSERT INTO request_seats (queue_id, seat_id, user_id, concert_id, line_key, is_open) \
         SELECT id, seat_id, user_id, concert_id, line_key, 1 FROM reservation_queue WHERE id > ?"
    })
    .bind(before.unwrap_or(0))
    .execute(&line.pool)
    .await?;
    sqlx::query(
        "UPDATE sale_lines SET lottery_entered = lottery_entered + ?, in_line = 1 WHERE concert_id = ?",
    )
    .bind(done.rows_affected())
    .bind(line.concert)
    .execute(&line.pool)
    .await?;
    Ok(())
}

/// Opens connections to the instance before the clock starts, as clients
/// that loaded the page have theirs: the runs measure requests, not a storm
/// of TCP handshakes in their first second.
async fn warm(line: &Line, url: &str) {
    let mut opening = tokio::task::JoinSet::new();
    for _ in 0..256 {
        let request = line.client.get(format!("{url}/healthz")).send();
        opening.spawn(async move {
            if let Ok(r) = request.await {
                let _ = r.bytes().await;
            }
        });
    }
    while opening.join_next().await.is_some() {}
}

/// Up to `n` requests of the line, at random, with their owners' tokens.
async fn sample(line: &Line, requests: u64, n: u64) -> anyhow::Result<Vec<(String, u64)>> {
    let rows: Vec<(u64, u64)> = sqlx::query_as(
        "SELECT id, user_id FROM reservation_queue WHERE concert_id = ? AND MOD(id * 7919, ?) = 0",
    )
    .bind(line.concert)
    .bind((requests / n).max(1))
    .fetch_all(&line.pool)
    .await?;
    Ok(rows
        .into_iter()
        .map(|(id, user)| (line.token(user), id))
        .collect())
}

/// Opens `streams` event streams on requests of `targets`, spread over the
/// instances; each ends with its decision's delay (decidedAt to arrival).
fn open_streams(
    line: &Arc<Line>,
    urls: &[String],
    targets: &Arc<Vec<(String, u64)>>,
    streams: usize,
    opened: &Arc<AtomicU64>,
) -> Vec<tokio::task::JoinHandle<Option<f64>>> {
    (0..streams.min(targets.len()))
        .map(|i| {
            let (token, id) = targets[i * targets.len() / streams.max(1)].clone();
            let url = format!(
                "{}/api/reservations/status/{id}/events",
                urls[i % urls.len()]
            );
            let client = line.streaming.clone();
            let opened = opened.clone();
            tokio::spawn(async move {
                let mut response = client.get(url).bearer_auth(token).send().await.ok()?;
                let mut first = true;
                crate::streams::decision_delay(&mut response, || {
                    if std::mem::take(&mut first) {
                        opened.fetch_add(1, Ordering::Relaxed);
                    }
                })
                .await
            })
        })
        .collect()
}

/// The polls on the first instance, then split over all of them.
async fn measure_each_way(
    line: &Arc<Line>,
    args: &Args,
    targets: &Arc<Vec<(String, u64)>>,
    when: &str,
) -> anyhow::Result<()> {
    let one = format!("polls {when}, one API instance");
    measure(line, args, &args.url[..1], targets, &one).await?;
    if args.url.len() > 1 {
        let all = format!("polls {when}, split over two API instances");
        measure(line, args, &args.url, targets, &all).await?;
    }
    Ok(())
}

/// Status polls at the poll rate over `urls` for the poll time; prints
/// their latency, the instances' CPU and memory, and the database's reads.
async fn measure(
    line: &Arc<Line>,
    args: &Args,
    urls: &[String],
    targets: &Arc<Vec<(String, u64)>>,
    what: &str,
) -> anyhow::Result<()> {
    let cpu_before: Vec<f64> = args.api_pid.iter().map(|&p| cpu_seconds(p)).collect();
    let reads_before = rows_read(&line.pool).await?;
    let started = Instant::now();
    let total = args.poll_rate * args.poll_seconds;
    let permits = Arc::new(Semaphore::new(1024));
    let latencies = Arc::new(std::sync::Mutex::new(Vec::with_capacity(total as usize)));
    let (failed, placed) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let mut tasks = Vec::with_capacity(total as usize);
    for i in 0..total {
        let due = started + Duration::from_secs_f64(i as f64 / args.poll_rate as f64);
        tokio::time::sleep_until(due.into()).await;
        let Ok(permit) = permits.clone().try_acquire_owned() else {
            failed.fetch_add(1, Ordering::Relaxed);
            continue;
        };
        let (token, id) = &targets[(i as usize * 7919) % targets.len()];
        let request = line
            .client
            .get(format!(
                "{}/api/reservations/status/{id}",
                urls[i as usize % urls.len()]
            ))
            .bearer_auth(token);
        let (latencies, failed, placed) = (latencies.clone(), failed.clone(), placed.clone());
        tasks.push(tokio::spawn(async move {
            let sent = Instant::now();
            let answer = match request.send().await {
                Ok(r) if r.status() == 200 => r.json::<serde_json::Value>().await.ok(),
                _ => None,
            };
            let elapsed = sent.elapsed().as_secs_f64() * 1000.0;
            drop(permit);
            match answer {
                Some(body) => {
                    placed.fetch_add(u64::from(body["position"].is_u64()), Ordering::Relaxed);
                    if let Ok(mut l) = latencies.lock() {
                        l.push((sent - started, elapsed));
                    }
                }
                None => {
                    failed.fetch_add(1, Ordering::Relaxed);
                }
            }
        }));
    }
    for task in tasks {
        task.await?;
    }
    let secs = started.elapsed().as_secs_f64();
    let reads = rows_read(&line.pool).await? - reads_before;
    let timed = latencies
        .lock()
        .map_err(|_| anyhow::anyhow!("poisoned"))?
        .clone();
    let mut l: Vec<f64> = timed.iter().map(|(_, ms)| *ms).collect();
    l.sort_by(f64::total_cmp);
    let cpu: Vec<String> = args
        .api_pid
        .iter()
        .zip(cpu_before)
        .map(|(&p, before)| {
            format!(
                "CPU {:.0} % RSS {:.0} MB",
                (cpu_seconds(p) - before) / secs * 100.0,
                rss_mb(p)
            )
        })
        .collect();
    println!(
        "{what}: {total} at {}/s: ms p50={:.1} p99={:.1} max={:.1}, failed={}, with a position={}; \
         API {}; database rows read {:.0}/s",
        args.poll_rate,
        pct(&l, 0.5),
        pct(&l, 0.99),
        pct(&l, 1.0),
        failed.load(Ordering::Relaxed),
        placed.load(Ordering::Relaxed),
        cpu.join(", "),
        reads as f64 / secs
    );
    println!("  p99 by {SLICE_SECS} s slice: {}", p99_by_slice(&timed));
    Ok(())
}

/// The polls' p99 per slice of the run, in ms: a spike and a steady cost
/// look alike in one p99.
const SLICE_SECS: u64 = 3;

fn p99_by_slice(timed: &[(Duration, f64)]) -> String {
    let mut slices: Vec<Vec<f64>> = Vec::new();
    for (at, ms) in timed {
        let slice = (at.as_secs() / SLICE_SECS) as usize;
        if slices.len() <= slice {
            slices.resize(slice + 1, Vec::new());
        }
        slices[slice].push(*ms);
    }
    slices
        .iter_mut()
        .map(|slice| {
            slice.sort_by(f64::total_cmp);
            format!("{:.1}", pct(slice, 0.99))
        })
        .collect::<Vec<_>>()
        .join(" · ")
}

/// From the opening to the end of the sale: when the lottery was counted
/// (positions known), the first seat sold, every seat sold, every request
/// decided.
async fn follow_sale(
    line: Arc<Line>,
    opens_at: DateTime<Utc>,
    requests: u64,
) -> anyhow::Result<()> {
    let since = |at: DateTime<Utc>| (at - opens_at).num_milliseconds() as f64 / 1000.0;
    let (mut counted, mut first, mut sold) = (None, None, None);
    loop {
        tokio::time::sleep(Duration::from_millis(200)).await;
        let (now,): (DateTime<Utc>,) = sqlx::query_as("SELECT UTC_TIMESTAMP(6)")
            .fetch_one(&line.pool)
            .await?;
        if now < opens_at {
            continue;
        }
        if counted.is_none() {
            let (n,): (Option<u64>,) =
                sqlx::query_as("SELECT lottery_counted FROM sale_lines WHERE concert_id = ?")
                    .bind(line.concert)
                    .fetch_one(&line.pool)
                    .await?;
            if n.is_some() {
                counted = Some(now);
                println!(
                    "lottery counted (every position known) {:.1} s after the opening",
                    since(now)
                );
            }
        }
        let (reservations,): (Option<u64>,) = sqlx::query_as("SELECT MAX(id) FROM reservations")
            .fetch_one(&line.pool)
            .await?;
        let reservations = reservations.unwrap_or(0);
        if first.is_none() && reservations > 0 {
            first = Some(now);
            println!("first seat sold {:.1} s after the opening", since(now));
        }
        if sold.is_none() && reservations >= line.seats.min(requests) {
            sold = Some(now);
            println!(
                "all {} seats sold {:.1} s after the opening",
                line.seats,
                since(now)
            );
        }
        let open: Option<(u64,)> = sqlx::query_as(
            "SELECT id FROM reservation_queue FORCE INDEX (idx_queue_concert_line) \
             WHERE concert_id = ? AND status IN ('WAITING', 'PENDING', 'PROCESSING') LIMIT 1",
        )
        .bind(line.concert)
        .fetch_optional(&line.pool)
        .await?;
        if open.is_none() {
            println!(
                "every one of {requests} requests decided {:.1} s after the opening ({:.0} decisions/s)",
                since(now),
                requests as f64 / since(now).max(0.001)
            );
            return Ok(());
        }
    }
}

pub(crate) fn pct(sorted: &[f64], p: f64) -> f64 {
    sorted
        .get(((sorted.len().max(1) - 1) as f64 * p).round() as usize)
        .copied()
        .unwrap_or(f64::NAN)
}

/// Rows the server's storage engines have handed out since it started
/// (`Handler_read_*`: index entries and rows, by key, in ranges and in
/// scans), as both MySQL and MariaDB count them.
pub(crate) async fn rows_read(pool: &MySqlPool) -> anyhow::Result<i64> {
    let rows: Vec<(String, String)> = sqlx::query_as("SHOW GLOBAL STATUS LIKE 'Handler_read%'")
        .fetch_all(pool)
        .await?;
    Ok(rows.iter().filter_map(|(_, n)| n.parse::<i64>().ok()).sum())
}

/// CPU time the process has used (user and system), in seconds.
pub(crate) fn cpu_seconds(pid: u32) -> f64 {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return 0.0;
    };
    // Fields after the command name, which is in parentheses.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map_or("", |(_, rest)| rest)
        .split_whitespace()
        .collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (ticks(11) + ticks(12)) / 100.0
}

pub(crate) fn rss_mb(pid: u32) -> f64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1024.0)
}
