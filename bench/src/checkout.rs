//! Checkout's background work, measured alone: how fast the expiry sweep
//! writes ended holds down, and how fast the relay delivers events to a
//! local receiver.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::ensure;
use clap::Args as ClapArgs;
use ticket_core::domain::{SeatId, UserId};
use ticket_core::testing::{TestDatabase, seed};
use ticket_worker::holds::HoldSweeper;
use ticket_worker::relay::{Relay, WebhookConfig};
use ticket_worker::{Mode, Worker, WorkerConfig};
use tokio_util::sync::CancellationToken;

#[derive(ClapArgs)]
pub struct ExpiryArgs {
    /// Holds that have all ended when the sweep starts.
    #[arg(long, default_value_t = 20_000)]
    holds: usize,
    #[arg(long, default_value_t = 2)]
    seats_per_hold: usize,
    /// Sweepers side by side (one per worker).
    #[arg(long, default_value_t = 1)]
    sweepers: usize,
}

/// Seeds `holds` orders, decides them with a 1 s hold, waits for the holds
/// to end, then times the sweepers expiring them all.
pub async fn expiry(args: ExpiryArgs) -> anyhow::Result<()> {
    let (db, pool) = TestDatabase::migrated().await;
    let mut conn = pool.acquire().await?;
    let seat_count = u32::try_from(args.holds * args.seats_per_hold)?;
    let rows = seat_count.div_ceil(1000);
    let seats = seed::concert(&mut conn, rows, seat_count.div_ceil(rows)).await?;
    let users = seed::users(&mut conn, "hold", args.holds).await?;
    let orders: Vec<(UserId, Vec<SeatId>)> = users
        .iter()
        .enumerate()
        .map(|(i, u)| {
            let first = i * args.seats_per_hold;
            (*u, seats[first..first + args.seats_per_hold].to_vec())
        })
        .collect();
    seed::orders(&mut conn, &orders).await?;
    sqlx::query("UPDATE concerts SET hold_seconds = 1")
        .execute(&mut *conn)
        .await?;
    let worker = Worker::with_config(
        pool.clone(),
        "bench-decide",
        Mode::Batch,
        WorkerConfig {
            batch_size: 1000,
            poll_interval: Duration::from_millis(5),
            lease: Duration::from_secs(60),
            max_attempts: WorkerConfig::DEFAULT_MAX_ATTEMPTS,
        },
    );
    while worker.process_once().await?.claimed > 0 {}
    tokio::time::sleep(Duration::from_millis(1_100)).await;

    let started = Instant::now();
    let mut sweepers = Vec::new();
    for _ in 0..args.sweepers {
        let sweeper = HoldSweeper::new(db.pool(2).await);
        sweepers.push(tokio::spawn(async move {
            let mut expired = 0;
            loop {
                let swept = sweeper.sweep_once().await?;
                expired += swept.holds;
                if !swept.more && swept.holds == 0 {
                    return Ok::<u64, sqlx::Error>(expired);
                }
            }
        }));
    }
    let mut expired = 0;
    for s in sweepers {
        expired += s.await??;
    }
    let elapsed = started.elapsed();
    let (left,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM reservations WHERE status = 'HELD'")
        .fetch_one(&mut *conn)
        .await?;
    ensure!(left == 0, "{left} holds left");
    let mut check = pool.acquire().await?;
    let violations =
        ticket_core::db::invariants::check(&mut check, chrono::Duration::zero(), 5, None).await?;
    ensure!(violations.is_empty(), "invariants violated: {violations:?}");
    println!(
        "expiry holds={} seats_per_hold={} sweepers={}: {:.2} s, {:.0} holds/s ({:.0} seats/s), {} expired, invariants hold",
        args.holds,
        args.seats_per_hold,
        args.sweepers,
        elapsed.as_secs_f64(),
        expired as f64 / elapsed.as_secs_f64(),
        (expired as usize * args.seats_per_hold) as f64 / elapsed.as_secs_f64(),
        expired
    );
    Ok(())
}

#[derive(ClapArgs)]
pub struct WebhookArgs {
    /// Events to deliver, three per reservation.
    #[arg(long, default_value_t = 30_000)]
    events: u64,
    /// Relays side by side (one per worker).
    #[arg(long, default_value_t = 1)]
    relays: usize,
    /// Events each relay claims and posts at once.
    #[arg(long, default_value_t = 32)]
    batch: u32,
}

/// Writes `events` events, starts a local receiver that answers 200, and
/// times the relays delivering them all.
pub async fn webhooks(args: WebhookArgs) -> anyhow::Result<()> {
    let (db, pool) = TestDatabase::migrated().await;
    let reservations = args.events.div_ceil(3);
    let mut conn = pool.acquire().await?;
    let now = chrono::Utc::now().naive_utc();
    for kind in [
        "ReservationHeld",
        "ReservationConfirmed",
        "ReservationCancelled",
    ] {
        for chunk in (1..=reservations).collect::<Vec<_>>().chunks(5_000) {
            let mut insert = sqlx::QueryBuilder::new(
                "INSERT INTO outbox (event_type, aggregate_id, concert_id, payload, created_at) ",
            );
            insert.push_values(chunk, |mut row, r| {
                row.push_bind(kind)
                    .push_bind(*r)
                    .push_bind(1_u64)
                    .push_bind(format!(
                        r#"{{"reservationId":{r},"userId":1,"concertId":1,"status":"HELD","seats":[{{"seatId":1,"seatNumber":"A1"}}]}}"#
                    ))
                    .push_bind(now);
            });
            insert.build().execute(&mut *conn).await?;
        }
    }
    let received = Arc::new(AtomicU64::new(0));
    let counter = received.clone();
    let app = axum::Router::new().route(
        "/hooks",
        axum::routing::post(move || {
            let counter = counter.clone();
            async move {
                counter.fetch_add(1, Ordering::Relaxed);
                axum::http::StatusCode::OK
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url: reqwest::Url = format!("http://{}/hooks", listener.local_addr()?).parse()?;
    tokio::spawn(async move { axum::serve(listener, app).await });

    let shutdown = CancellationToken::new();
    let started = Instant::now();
    let mut relays = Vec::new();
    for _ in 0..args.relays {
        let mut config = WebhookConfig::new(
            url.clone(),
            ticket_core::secret::Secret::new("bench-secret"),
        );
        config.batch = args.batch;
        config.poll_interval = Duration::from_millis(10);
        let relay = Relay::new(db.pool(4).await, config)?;
        relays.push(tokio::spawn(relay.run(shutdown.clone())));
    }
    let total = i64::try_from(reservations * 3)?;
    loop {
        let (delivered,): (i64,) =
            sqlx::query_as("SELECT COUNT(*) FROM outbox WHERE published_at IS NOT NULL")
                .fetch_one(&mut *conn)
                .await?;
        if delivered == total {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let elapsed = started.elapsed();
    shutdown.cancel();
    for r in relays {
        r.await?;
    }
    println!(
        "webhooks events={} relays={} batch={}: {:.2} s, {:.0} events/s delivered, {} requests received",
        total,
        args.relays,
        args.batch,
        elapsed.as_secs_f64(),
        total as f64 / elapsed.as_secs_f64(),
        received.load(Ordering::Relaxed)
    );
    Ok(())
}
