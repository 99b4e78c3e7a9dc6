use std::io::Write;
use std::time::Duration;

use clap::Args as ClapArgs;
use ticket_api::accounts::security::TokenKeys;
use ticket_core::domain::Role;
use ticket_core::testing::{TestDatabase, seed, shuffle};

#[derive(ClapArgs)]
pub struct Args {
    #[arg(long, default_value_t = 20_000)]
    users: usize,
    #[arg(long, default_value_t = 10_000)]
    seats: u32,
    /// Token signing secret the API under test uses.
    #[arg(long, env = "TICKET_AUTH_SECRET")]
    secret: String,
    /// Where to write one `token seatId` pair per line for the load tool.
    #[arg(long)]
    out: std::path::PathBuf,
    /// Give each line a seat in a shuffled order (each seat wanted by
    /// users/seats lines spread over the file) instead of round-robin.
    #[arg(long)]
    shuffle: bool,
    /// Queue each line's request too (PENDING, straight into the tables) and
    /// write `token queueId` lines instead: open requests for status polls
    /// and event streams.
    #[arg(long)]
    queued: bool,
    /// Make every Nth line a request by count for two places, taking
    /// turns: the best two seats (the seats all in one category,
    /// "Stalls"), `token best:<concertId>:2`, or two places of a standing
    /// area "Floor" of a fifth as many places as seats,
    /// `token area:<concertId>:2`.
    #[arg(long)]
    best_every: Option<usize>,
    /// With `best-every`: the best seats only, no standing area.
    #[arg(long, requires = "best_every", conflicts_with = "areas_only")]
    no_areas: bool,
    /// With `best-every`: the standing area's places only, no best seats.
    #[arg(long, requires = "best_every")]
    areas_only: bool,
}

/// Makes a migrated database with users and seats, writes request lines for
/// the load tool, and prints the database URL. The database is kept.
pub async fn run(args: Args) -> anyhow::Result<()> {
    let (db, pool) = TestDatabase::migrated().await;
    let mut conn = pool.acquire().await?;
    let rows = args.seats.div_ceil(1000);
    let seats = seed::concert(&mut conn, rows, args.seats.div_ceil(rows)).await?;
    // The load sends each user many one-seat requests: the widest cap per
    // fan keeps every one of them a write, as before there was a cap (a
    // before/after pair measures the same work on both sides).
    sqlx::query("UPDATE concerts SET max_seats_per_user = ?")
        .bind(ticket_core::domain::MaxSeatsPerUser::MOST)
        .execute(&mut *conn)
        .await?;
    let users = seed::users(&mut conn, "load", args.users).await?;
    let concert = seed::concerts_of(&mut conn, seats.iter().copied().take(1))
        .await?
        .into_values()
        .next();
    if let (Some(concert), Some(_)) = (concert, args.best_every) {
        seed::one_category(&mut conn, concert).await?;
        if !args.no_areas {
            seed::floor(&mut conn, concert, (args.seats / 5).max(1) as u64).await?;
        }
    }
    let keys = TokenKeys::new(args.secret.as_bytes(), Duration::from_secs(24 * 3600))?;
    let mut wanted: Vec<_> = (0..users.len()).map(|i| seats[i % seats.len()]).collect();
    if args.shuffle {
        shuffle(&mut wanted, 7);
    }
    let pairs: Vec<_> = users.iter().copied().zip(wanted).collect();
    let targets: Vec<u64> = if args.queued {
        seed::requests(&mut conn, &pairs).await?;
        let ids: Vec<(u64,)> = sqlx::query_as("SELECT id FROM reservation_queue ORDER BY id")
            .fetch_all(&mut *conn)
            .await?;
        ids.into_iter().map(|(id,)| id).collect()
    } else {
        pairs.iter().map(|(_, seat)| seat.get()).collect()
    };
    let mut out = std::io::BufWriter::new(std::fs::File::create(&args.out)?);
    for (i, ((user, _), target)) in pairs.iter().zip(targets).enumerate() {
        let token = keys.issue(*user, Role::User, chrono::Utc::now()).token;
        match (args.best_every, concert) {
            (Some(every), Some(concert)) if every > 0 && i % every == every - 1 && !args.queued => {
                let pool = if args.areas_only {
                    "area"
                } else if args.no_areas || (i / every) % 2 == 0 {
                    "best"
                } else {
                    "area"
                };
                writeln!(out, "{token} {pool}:{concert}:2")?;
            }
            _ => writeln!(out, "{token} {target}")?,
        }
    }
    out.flush()?;
    println!("{}", db.url());
    // The load test needs the database after this process ends.
    std::mem::forget(db);
    Ok(())
}
