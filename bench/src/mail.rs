//! Mail delivered to a local SMTP server (issue 31): `mails` orders of
//! `seats` seats each, decided by a worker (a concert without holds: each a
//! confirmation with its tickets' QR codes), then sent by `relays` mail
//! relays over `connections` SMTP connections each to aiosmtpd on this host
//! (reading headers only, the cheapest a server can be). What one mail costs
//! to compose, alone, beside it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::ensure;
use clap::Args as ClapArgs;
use ticket_core::db::mails;
use ticket_core::domain::mail::MailKind;
use ticket_core::domain::ticket_code::TicketKeys;
use ticket_core::domain::{SeatId, UserId};
use ticket_core::secret::Secret;
use ticket_core::testing::smtp::{Behaviour, SmtpSink};
use ticket_core::testing::{TestDatabase, seed};
use ticket_worker::mail::{MailConfig, MailRelay, SmtpServer, letter};
use ticket_worker::{Worker, WorkerConfig};
use tokio_util::sync::CancellationToken;

#[derive(ClapArgs)]
pub struct Args {
    #[arg(long, default_value_t = 2000)]
    mails: usize,
    /// Seats (tickets) of each order.
    #[arg(long, default_value_t = 2)]
    seats: usize,
    #[arg(long, default_value_t = 1)]
    relays: usize,
    /// SMTP connections of each relay.
    #[arg(long, default_value_t = 8)]
    connections: u32,
    /// Mails each relay claims at a time.
    #[arg(long, default_value_t = 32)]
    batch: u32,
}

const FROM: &str = "Box Office <tickets@box.example>";

pub async fn run(args: Args) -> anyhow::Result<()> {
    let (db, pool) = TestDatabase::migrated().await;
    let mut conn = pool.acquire().await?;
    let total = args.mails * args.seats;
    let rows = u32::try_from(total.div_ceil(1000))?;
    let seats = seed::concert(
        &mut conn,
        rows,
        u32::try_from(total.div_ceil(rows as usize))?,
    )
    .await?;
    let users = seed::users(&mut conn, "mail", args.mails).await?;
    sqlx::query(
        "UPDATE users SET email = CONCAT(nickname, '@fans.example'), email_changed_at = NOW(6)",
    )
    .execute(&mut *conn)
    .await?;
    let orders: Vec<(UserId, Vec<SeatId>)> = users
        .iter()
        .enumerate()
        .map(|(i, user)| (*user, seats[i * args.seats..(i + 1) * args.seats].to_vec()))
        .collect();
    seed::orders(&mut conn, &orders).await?;
    let config = WorkerConfig {
        batch_size: 1000,
        poll_interval: Duration::from_millis(50),
        lease: Duration::from_secs(30),
        max_attempts: WorkerConfig::DEFAULT_MAX_ATTEMPTS,
    };
    let worker = Worker::with_config(pool.clone(), "bench", ticket_worker::Mode::Batch, config);
    while worker.process_once().await?.claimed > 0 {}
    let (queued,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM mails WHERE due_at IS NOT NULL")
        .fetch_one(&mut *conn)
        .await?;
    ensure!(queued == args.mails as i64, "{queued} mails queued");

    let keys = Arc::new(TicketKeys::parse(&TicketKeys::generate_line()?)?);
    let compose = compose_cost(&mut conn, &keys, 200).await?;
    drop(conn);

    let sink = SmtpSink::start(Behaviour {
        quiet: true,
        ..Behaviour::default()
    })
    .await;
    let shutdown = CancellationToken::new();
    let started = Instant::now();
    let mut relays = Vec::new();
    for _ in 0..args.relays {
        let mut config = MailConfig::new(
            SmtpServer::new(Secret::new(sink.url()), None)?,
            FROM.parse()?,
            keys.clone(),
        );
        config.connections = args.connections;
        config.batch = args.batch;
        config.poll_interval = Duration::from_millis(10);
        let relay = MailRelay::new(db.pool(2).await, config)?;
        relays.push(tokio::spawn(relay.run(shutdown.clone())));
    }
    let sent = || async {
        let (n,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM mails WHERE outcome = 'SENT'")
            .fetch_one(&pool)
            .await?;
        Ok::<_, sqlx::Error>(n)
    };
    while sink.taken() < args.mails || sent().await? < args.mails as i64 {
        ensure!(
            started.elapsed() < Duration::from_secs(600),
            "{} of {} mails arrived",
            sink.taken(),
            args.mails
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let elapsed = started.elapsed();
    shutdown.cancel();
    for relay in relays {
        relay.await?;
    }
    let sent = sent().await?;
    let mut conn = pool.acquire().await?;
    crate::drain::invariants_hold(&mut conn).await?;
    println!(
        "mail mails={} seats_per_mail={} relays={} connections={} batch={}: {:.2} s, {:.0} mails/s \
         ({:.0} tickets/s), {} arrived, {} SENT, invariants hold; one mail composed (QR PNGs, MIME) in {:.0} µs, {} bytes",
        args.mails,
        args.seats,
        args.relays,
        args.connections,
        args.batch,
        elapsed.as_secs_f64(),
        args.mails as f64 / elapsed.as_secs_f64(),
        total as f64 / elapsed.as_secs_f64(),
        sink.taken(),
        sent,
        compose.0,
        compose.1,
    );
    Ok(())
}

/// The median time to compose one confirmation of the first reservation
/// (its QR codes, the MIME message formatted), and its size.
async fn compose_cost(
    conn: &mut sqlx::MySqlConnection,
    keys: &TicketKeys,
    times: usize,
) -> anyhow::Result<(f64, usize)> {
    let (id,): (ticket_core::domain::ReservationId,) =
        sqlx::query_as("SELECT MIN(id) FROM reservations")
            .fetch_one(&mut *conn)
            .await?;
    let Some((subject, seats)) = mails::subject(conn, id).await? else {
        anyhow::bail!("no reservation");
    };
    let stationery = letter::Stationery {
        keys,
        public_url: Some("https://box.example"),
        domain: "box.example",
    };
    let mut took = Vec::with_capacity(times);
    let mut size = 0;
    for _ in 0..times {
        let started = Instant::now();
        let composed = letter::compose(MailKind::OrderConfirmation, &subject, &seats, &stationery)?;
        let message = letter::message(
            composed,
            &FROM.parse()?,
            "fan <fan@fans.example>".parse()?,
            "bench@box.example",
        )?;
        size = message.formatted().len();
        took.push(started.elapsed().as_secs_f64() * 1e6);
    }
    took.sort_by(f64::total_cmp);
    Ok((took[took.len() / 2], size))
}
