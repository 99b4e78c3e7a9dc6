use clap::Args as ClapArgs;
use sqlx::Connection;

#[derive(ClapArgs)]
pub struct Args {
    /// The database of the run to analyse.
    #[arg(long, env = "DATABASE_URL")]
    database_url: String,
    /// Leave out the run's first this many requests (by queue id, among
    /// those of the last day): a warm-up's.
    #[arg(long, default_value_t = 0)]
    skip_first: usize,
}

/// Percentiles of decided_at - created_at over every decided request, and
/// whether any request is still open; then the p99 of each second of the
/// run (by when the requests came), which shows a slow start or a stall.
pub async fn run(args: Args) -> anyhow::Result<()> {
    let mut conn = sqlx::MySqlConnection::connect(&args.database_url).await?;
    // (queue id, microseconds to decision, second it came in)
    let mut rows: Vec<(u64, i64, i64)> = sqlx::query_as(
        "SELECT id, TIMESTAMPDIFF(MICROSECOND, created_at, decided_at), \
                TIMESTAMPDIFF(SECOND, '2000-01-01', created_at) \
         FROM reservation_queue \
         WHERE decided_at IS NOT NULL AND created_at > UTC_TIMESTAMP(6) - INTERVAL 1 DAY",
    )
    .fetch_all(&mut conn)
    .await?;
    rows.sort_unstable_by_key(|(id, ..)| *id);
    let rows = rows.split_off(args.skip_first.min(rows.len()));
    let (open,): (i64,) = sqlx::query_as(
        "SELECT COUNT(*) FROM reservation_queue WHERE status IN ('PENDING', 'PROCESSING')",
    )
    .fetch_one(&mut conn)
    .await?;
    let mut waits: Vec<i64> = rows.iter().map(|(_, us, _)| *us).collect();
    waits.sort_unstable();
    println!(
        "decided={} open={} enqueue->decision ms: p50={:.1} p90={:.1} p99={:.1} max={:.1}",
        waits.len(),
        open,
        percentile_ms(&waits, 0.50),
        percentile_ms(&waits, 0.90),
        percentile_ms(&waits, 0.99),
        percentile_ms(&waits, 1.0)
    );
    let mut by_second: std::collections::BTreeMap<i64, Vec<i64>> = Default::default();
    for (_, us, second) in rows {
        by_second.entry(second).or_default().push(us);
    }
    let p99s: Vec<String> = by_second
        .into_values()
        .map(|mut w| {
            w.sort_unstable();
            format!("{:.0}", percentile_ms(&w, 0.99))
        })
        .collect();
    println!("p99 ms by second of the run: {}", p99s.join(" "));
    Ok(())
}

/// The `p` quantile of sorted microseconds, in milliseconds.
fn percentile_ms(sorted: &[i64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i] as f64 / 1000.0
}

#[derive(ClapArgs)]
pub struct DbArgs {
    #[arg(long, env = "DATABASE_URL")]
    database_url: String,
}

#[derive(clap::Args)]
pub struct AgeArgs {
    #[arg(long, env = "DATABASE_URL")]
    database_url: String,
    /// Decided requests to add, 40 days old (past the default retention).
    #[arg(long)]
    rows: u32,
}

/// Adds `rows` FAILED requests decided 40 days ago, spread over the
/// database's users and seats: history for the workers' sweeper to remove
/// while a benchmark runs.
pub async fn age_history(args: AgeArgs) -> anyhow::Result<()> {
    let mut conn = sqlx::MySqlConnection::connect(&args.database_url).await?;
    let ids = |table: &'static str| {
        sqlx::query_as::<_, (u64,)>(sqlx::AssertSqlSafe(format!(
            "SELECT id FROM {table} ORDER BY id LIMIT 1000"
        )))
    };
    let users: Vec<u64> = ids("users")
        .fetch_all(&mut conn)
        .await?
        .into_iter()
        .map(|(id,)| id)
        .collect();
    let seats: Vec<u64> = ids("seats")
        .fetch_all(&mut conn)
        .await?
        .into_iter()
        .map(|(id,)| id)
        .collect();
    anyhow::ensure!(
        !users.is_empty() && !seats.is_empty(),
        "prepare the database first"
    );
    let mut written = 0u32;
    while written < args.rows {
        let chunk = (args.rows - written).min(1000);
        let mut insert = sqlx::QueryBuilder::new(
            "INSERT INTO reservation_queue (user_id, concert_id, seat_id, status, reason, created_at, updated_at, decided_at) ",
        );
        insert.push_values(0..chunk, |mut row, i| {
            let n = (written + i) as usize;
            let seat = seats[(n / users.len()) % seats.len()];
            row.push_bind(users[n % users.len()])
                .push("(SELECT concert_id FROM seats WHERE id = ")
                .push_bind_unseparated(seat)
                .push_unseparated(")")
                .push_bind(seat)
                .push("'FAILED'")
                .push("'SEAT_TAKEN'")
                .push("UTC_TIMESTAMP(6) - INTERVAL 40 DAY")
                .push("UTC_TIMESTAMP(6) - INTERVAL 40 DAY")
                .push("UTC_TIMESTAMP(6) - INTERVAL 40 DAY");
        });
        insert.build().execute(&mut conn).await?;
        written += chunk;
    }
    println!("{written} decided requests, 40 days old");
    Ok(())
}

/// Prints how many requests the queue holds.
pub async fn count(args: DbArgs) -> anyhow::Result<()> {
    let mut conn = sqlx::MySqlConnection::connect(&args.database_url).await?;
    let (n,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM reservation_queue")
        .fetch_one(&mut conn)
        .await?;
    println!("{n}");
    Ok(())
}

/// Waits (at most two minutes) until no request is PENDING or PROCESSING.
pub async fn wait_drained(args: DbArgs) -> anyhow::Result<()> {
    let mut conn = sqlx::MySqlConnection::connect(&args.database_url).await?;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    loop {
        let (open,): (bool,) = sqlx::query_as(
            "SELECT EXISTS (SELECT 1 FROM reservation_queue WHERE status IN ('PENDING', 'PROCESSING'))",
        )
        .fetch_one(&mut conn)
        .await?;
        if !open {
            return Ok(());
        }
        anyhow::ensure!(
            std::time::Instant::now() < deadline,
            "the queue did not drain"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

#[derive(ClapArgs)]
pub struct KillWhenClaimedArgs {
    #[arg(long, env = "DATABASE_URL")]
    database_url: String,
    /// The worker (TICKET_WORKER_ID) whose claim counts; a dead worker's rows
    /// stay PROCESSING until their lease ends.
    #[arg(long)]
    owner: String,
    /// The worker's process, SIGKILLed the moment its claim is seen.
    #[arg(long)]
    kill: i32,
}

/// SIGKILLs the worker as soon as it holds claimed (PROCESSING) rows, so that
/// the kill lands in the middle of a batch: a batch is decided within
/// milliseconds, too soon for a shell to act on what it saw. Fails after ten
/// seconds without a claim.
pub async fn kill_when_claimed(args: KillWhenClaimedArgs) -> anyhow::Result<()> {
    let mut conn = sqlx::MySqlConnection::connect(&args.database_url).await?;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let (claimed,): (bool,) = sqlx::query_as(
            "SELECT EXISTS (SELECT 1 FROM reservation_queue \
             WHERE status = 'PROCESSING' AND lease_owner = ?)",
        )
        .bind(&args.owner)
        .fetch_one(&mut conn)
        .await?;
        if claimed {
            // SAFETY: kill(2) with a pid and a signal number touches no memory.
            let killed = unsafe { libc::kill(args.kill, libc::SIGKILL) };
            anyhow::ensure!(
                killed == 0,
                "kill {}: {}",
                args.kill,
                std::io::Error::last_os_error()
            );
            return Ok(());
        }
        anyhow::ensure!(
            std::time::Instant::now() < deadline,
            "no worker claimed a row"
        );
        // A batch is claimed for milliseconds only: look again at once.
        tokio::task::yield_now().await;
    }
}

/// Prints how many deadlocks InnoDB has detected since the server started:
/// MariaDB's `Innodb_deadlocks` status, else MySQL's `lock_deadlocks` metric.
pub async fn deadlocks(args: DbArgs) -> anyhow::Result<()> {
    let mut conn = sqlx::MySqlConnection::connect(&args.database_url).await?;
    let status: Option<(String, String)> =
        sqlx::query_as("SHOW GLOBAL STATUS LIKE 'Innodb_deadlocks'")
            .fetch_optional(&mut conn)
            .await?;
    let count: u64 = match status {
        Some((_, value)) => value.parse()?,
        None => {
            let (n,): (i64,) = sqlx::query_as(
                "SELECT `COUNT` FROM information_schema.INNODB_METRICS WHERE NAME = 'lock_deadlocks'",
            )
            .fetch_one(&mut conn)
            .await?;
            n.unsigned_abs()
        }
    };
    println!("{count}");
    Ok(())
}

/// Drops the database of a finished run.
pub async fn drop_database(args: DbArgs) -> anyhow::Result<()> {
    let mut conn = sqlx::MySqlConnection::connect(&args.database_url).await?;
    let (name,): (String,) = sqlx::query_as("SELECT DATABASE()")
        .fetch_one(&mut conn)
        .await?;
    anyhow::ensure!(
        name.starts_with("ticket_test_"),
        "refusing to drop {name}: not a benchmark database"
    );
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!("DROP DATABASE `{name}`")))
        .execute(&mut conn)
        .await?;
    Ok(())
}

#[derive(clap::Args)]
pub struct VerifyArgs {
    #[arg(long, env = "DATABASE_URL")]
    database_url: String,
    /// File of queue ids, one per line (from `load --record`).
    #[arg(long)]
    ids: std::path::PathBuf,
}

/// Checks that every acknowledged request exists and is decided; prints the
/// tally and fails on any request lost or still open.
pub async fn verify_decided(args: VerifyArgs) -> anyhow::Result<()> {
    let text = std::fs::read_to_string(&args.ids)?;
    let ids: Vec<u64> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.trim().parse())
        .collect::<Result<_, _>>()?;
    let mut conn = sqlx::MySqlConnection::connect(&args.database_url).await?;
    let (mut succeeded, mut failed, mut open, mut lost) = (0u64, 0u64, 0u64, 0u64);
    for chunk in ids.chunks(1000) {
        let list: Vec<String> = chunk.iter().map(u64::to_string).collect();
        // Integers parsed above: safe to inline.
        let rows: Vec<(u64, String)> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT id, status FROM reservation_queue WHERE id IN ({})",
            list.join(",")
        )))
        .fetch_all(&mut conn)
        .await?;
        lost += (chunk.len() - rows.len()) as u64;
        for (_, status) in rows {
            match status.as_str() {
                "SUCCESS" => succeeded += 1,
                "FAILED" => failed += 1,
                _ => open += 1,
            }
        }
    }
    // Rows some worker claimed more than once: its lease ran out (a crash).
    let (reclaimed,): (i64,) =
        sqlx::query_as("SELECT COUNT(*) FROM reservation_queue WHERE attempts > 1")
            .fetch_one(&mut conn)
            .await?;
    println!(
        "acknowledged={} decided={} (SUCCESS={succeeded} FAILED={failed}) still open={open} lost={lost} claimed-again={reclaimed}",
        ids.len(),
        succeeded + failed
    );
    anyhow::ensure!(
        open == 0 && lost == 0,
        "acknowledged requests were lost or not decided"
    );
    Ok(())
}

#[derive(clap::Args)]
pub struct HoldArgs {
    #[arg(long, env = "DATABASE_URL")]
    database_url: String,
    /// How long to hold the locks.
    #[arg(long, default_value_t = 8)]
    seconds: u64,
}

/// A slow transaction: locks every seat row (FOR UPDATE), holds the locks,
/// then rolls back, as a stuck administrative job would. In id order, as
/// every writer of seats locks them: a scan of another index (the
/// best-available one is in rank order) would lock in a cycle with a
/// deciding worker.
pub async fn hold_locks(args: HoldArgs) -> anyhow::Result<()> {
    use sqlx::Connection as _;
    let mut conn = sqlx::MySqlConnection::connect(&args.database_url).await?;
    let mut tx = conn.begin().await?;
    let locked: Vec<(u64,)> =
        sqlx::query_as("SELECT id FROM seats FORCE INDEX (PRIMARY) ORDER BY id FOR UPDATE")
            .fetch_all(&mut *tx)
            .await?;
    println!("holding {} seat locks for {} s", locked.len(), args.seconds);
    tokio::time::sleep(std::time::Duration::from_secs(args.seconds)).await;
    tx.rollback().await?;
    Ok(())
}
