use std::time::{Duration, Instant};

use anyhow::ensure;
use clap::Args as ClapArgs;
use ticket_core::domain::{AskedPool, SeatId, UserId};
use ticket_core::testing::{TestDatabase, better_blocks_later, inversions, seed, shuffle};
use ticket_worker::{Worker, WorkerConfig};

use crate::per_request::Baseline;
use tokio_util::sync::CancellationToken;

#[derive(ClapArgs)]
pub struct Args {
    #[arg(long, default_value_t = 100_000)]
    requests: usize,
    #[arg(long, default_value_t = 10_000)]
    seats: u32,
    #[arg(long, default_value_t = 1)]
    workers: usize,
    #[arg(long, value_enum, default_value_t = Mode::Batch)]
    mode: Mode,
    /// The worker's batch (not the original's baseline, whose batch is 50).
    #[arg(long, default_value_t = 1000)]
    batch_size: u32,
    /// Share of the requests whose trace is sampled (the API's default
    /// sampler keeps 10 % of new traces; 1.0 is the worker's worst case).
    #[arg(long, default_value_t = 0.1)]
    sampled: f64,
    /// How requests meet seats. `stride`: request i wants seat 7919·i mod
    /// seats, so a batch's seats are wanted by no other batch in flight
    /// (the throughput figure). `shuffled`: every seat is wanted by
    /// requests/seats requests scattered over the whole queue, so workers
    /// deciding side by side keep meeting the same seats (the fairness figure).
    #[arg(long, value_enum, default_value_t = Layout::Stride)]
    layout: Layout,
    /// Seats each request names (an order, all or nothing). With N > 1 the
    /// seats come in blocks of N neighbours, and request i wants block
    /// 7919·i mod (seats / N) (stride layout only).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=10))]
    seats_per_order: u32,
    /// Concerts on sale at once, the seats and requests shared out evenly
    /// and the requests arriving interleaved (request i is concert i mod
    /// N's); one-seat requests in the stride layout.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1000))]
    concerts: u32,
    /// Best available: each request asks for `seats_per_order` seats side
    /// by side of the concert's one category instead of naming them (one
    /// concert); the line chooses, so request i gets the i-th best block.
    #[arg(long)]
    best: bool,
    /// Standing: the concert's seats are one standing area, and each
    /// request asks for `seats_per_order` places of it (one concert).
    #[arg(long, conflicts_with = "best")]
    standing: bool,
}

/// `ticket-api check`'s invariants, once every request is decided; an
/// error names the broken ones.
pub(crate) async fn invariants_hold(conn: &mut sqlx::MySqlConnection) -> anyhow::Result<()> {
    let violations = ticket_core::db::invariants::check(
        conn,
        chrono::Duration::zero(),
        ticket_core::db::queue::DEFAULT_MAX_ATTEMPTS,
        None,
    )
    .await?;
    ensure!(violations.is_empty(), "invariants violated: {violations:?}");
    Ok(())
}

fn order_is_one(args: &Args) -> bool {
    args.seats_per_order == 1
}

/// The worker's two modes, and the original's algorithm as the baseline.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum Mode {
    Batch,
    LeasedBatch,
    PerRequest,
}

#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum Layout {
    Stride,
    Shuffled,
}

pub async fn run(args: Args) -> anyhow::Result<()> {
    let (db, pool) = TestDatabase::migrated().await;
    let mut conn = pool.acquire().await?;
    let concerts = args.concerts as usize;
    ensure!(
        concerts == 1 || (order_is_one(&args) && matches!(args.layout, Layout::Stride)),
        "several concerts take one-seat requests in the stride layout"
    );
    let per_concert = args.seats / args.concerts;
    let rows = per_concert.div_ceil(1000);
    let mut concert_seats = Vec::with_capacity(concerts);
    for _ in 0..concerts {
        concert_seats.push(seed::concert(&mut conn, rows, per_concert.div_ceil(rows)).await?);
    }
    let seats = concert_seats[0].clone();
    let users = seed::users(&mut conn, "bench", args.requests).await?;
    let wanted: Vec<SeatId> = match args.layout {
        Layout::Stride if concerts > 1 => (0..args.requests)
            .map(|i| {
                let seats = &concert_seats[i % concerts];
                seats[((i / concerts).wrapping_mul(7919)) % seats.len()]
            })
            .collect(),
        Layout::Stride => (0..args.requests)
            .map(|i| seats[(i.wrapping_mul(7919)) % seats.len()])
            .collect(),
        Layout::Shuffled => {
            let mut wanted: Vec<SeatId> =
                (0..args.requests).map(|i| seats[i % seats.len()]).collect();
            shuffle(&mut wanted, 12);
            wanted
        }
    };
    let order = args.seats_per_order as usize;
    if args.best || args.standing {
        ensure!(concerts == 1, "requests by count are for one concert");
        let concert = seed::concerts_of(&mut conn, seats.iter().copied().take(1))
            .await?
            .into_values()
            .next()
            .ok_or_else(|| anyhow::anyhow!("the concert has no seats"))?;
        let pool = if args.standing {
            seed::one_area(&mut conn, concert).await?;
            AskedPool::Area(0)
        } else {
            seed::one_category(&mut conn, concert).await?;
            AskedPool::Category(0)
        };
        seed::best_requests(&mut conn, concert, &users, u8::try_from(order)?, pool).await?;
    } else if order > 1 {
        ensure!(
            matches!(args.layout, Layout::Stride),
            "orders of several seats use the stride layout"
        );
        let blocks = seats.len() / order;
        let orders: Vec<(UserId, Vec<SeatId>)> = users
            .iter()
            .enumerate()
            .map(|(i, user)| {
                let b = i.wrapping_mul(7919) % blocks;
                (*user, seats[b * order..b * order + order].to_vec())
            })
            .collect();
        seed::orders(&mut conn, &orders).await?;
    } else {
        let pairs: Vec<(UserId, SeatId)> = users.iter().copied().zip(wanted).collect();
        seed::traced_requests(&mut conn, &pairs, args.sampled).await?;
    }
    drop(conn);

    let config = WorkerConfig {
        batch_size: args.batch_size,
        poll_interval: Duration::from_millis(50),
        lease: Duration::from_secs(30),
        max_attempts: WorkerConfig::DEFAULT_MAX_ATTEMPTS,
    };
    let worker_mode = match args.mode {
        Mode::Batch => Some(ticket_worker::Mode::Batch),
        Mode::LeasedBatch => Some(ticket_worker::Mode::LeasedBatch),
        Mode::PerRequest => None,
    };
    let shutdown = CancellationToken::new();
    let started = Instant::now();
    let mut handles = Vec::new();
    for i in 0..args.workers {
        let worker_pool = db.pool(4).await;
        let shutdown = shutdown.clone();
        handles.push(match worker_mode {
            Some(mode) => {
                let worker = Worker::with_config(worker_pool, format!("bench-{i}"), mode, config);
                tokio::spawn(async move {
                    worker.run(shutdown).await;
                    Ok(())
                })
            }
            None => {
                let baseline = Baseline::new(worker_pool, u32::try_from(i)?);
                tokio::spawn(async move { baseline.run(shutdown).await.map(drop) })
            }
        });
    }
    loop {
        // Two index probes: cheap enough not to disturb what is measured.
        let (open,): (bool,) = sqlx::query_as(
            "SELECT EXISTS (SELECT 1 FROM reservation_queue WHERE status = 'PENDING') \
                 OR EXISTS (SELECT 1 FROM reservation_queue WHERE status = 'PROCESSING')",
        )
        .fetch_one(&pool)
        .await?;
        if !open {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let elapsed = started.elapsed();
    shutdown.cancel();
    for h in handles {
        h.await??;
    }
    let mut conn = pool.acquire().await?;
    invariants_hold(&mut conn).await?;
    let (succeeded,): (i64,) =
        sqlx::query_as("SELECT COUNT(*) FROM reservation_queue WHERE status = 'SUCCESS'")
            .fetch_one(&mut *conn)
            .await?;
    let inverted = inversions(&mut conn).await? + better_blocks_later(&mut conn).await?;
    let rate = args.requests as f64 / elapsed.as_secs_f64();
    println!(
        "drain mode={:?} layout={:?} best={} standing={} workers={} batch={} requests={} seats={} seats_per_order={} concerts={}: {:.2} s, {:.0} decisions/s, {:.0} seats/s, {} SUCCESS, {} inversions, invariants hold",
        args.mode,
        args.layout,
        args.best,
        args.standing,
        args.workers,
        worker_mode.map_or(crate::per_request::BATCH, |_| config.batch_size),
        args.requests,
        args.seats,
        order,
        concerts,
        elapsed.as_secs_f64(),
        rate,
        rate * order as f64,
        succeeded,
        inverted
    );
    Ok(())
}
