//! Test support (feature `testing`): a fresh database per test on the server
//! that DATABASE_URL points at, dropped when the test ends.

use std::str::FromStr;
use std::sync::atomic::{AtomicU32, Ordering};

use sqlx::mysql::{MySqlConnectOptions, MySqlPool};
use sqlx::{ConnectOptions, Connection, Executor};

/// This host's clock at the database's microsecond precision: tests run on
/// the database's host, so for them it is the database's clock (the code
/// under test reads the database's own, `db::now`).
pub fn now() -> chrono::DateTime<chrono::Utc> {
    use chrono::SubsecRound as _;
    chrono::Utc::now().trunc_subsecs(6)
}

pub struct TestDatabase {
    server: MySqlConnectOptions,
    pub name: String,
    pub options: MySqlConnectOptions,
}

impl TestDatabase {
    /// Creates an empty database with a unique name.
    pub async fn create() -> Self {
        static COUNTER: AtomicU32 = AtomicU32::new(0);
        let name = format!(
            "ticket_test_{}_{}_{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed),
            chrono::Utc::now().timestamp_micros() % 1_000_000
        );
        let server = server_options();
        let mut conn = server
            .connect()
            .await
            .expect("cannot connect to the test database server");
        conn.execute(sqlx::AssertSqlSafe(format!(
            "CREATE DATABASE `{name}` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci"
        )))
        .await
        .expect("cannot create a test database");
        conn.close().await.ok();
        let options = server.clone().database(&name);
        Self {
            server,
            name,
            options,
        }
    }

    /// Creates a database and applies every migration; returns it with a pool.
    pub async fn migrated() -> (Self, MySqlPool) {
        let db = Self::create().await;
        let pool = db.pool(20).await;
        crate::db::migrate(&pool).await.expect("migrations failed");
        (db, pool)
    }

    /// A pool on this database with the same session settings as production.
    pub async fn pool(&self, max_connections: u32) -> MySqlPool {
        crate::db::pool_options()
            .max_connections(max_connections)
            .connect_with(self.options.clone())
            .await
            .expect("cannot connect to the test database")
    }

    /// How to connect to this database.
    pub fn options(&self) -> MySqlConnectOptions {
        self.options.clone()
    }

    /// This database's URL, for handing to a child process.
    pub fn url(&self) -> String {
        database_url_for(&self.name)
    }
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        let server = self.server.clone();
        let name = self.name.clone();
        // Drop runs inside the test's runtime, which cannot be blocked on:
        // clean up on a thread with a runtime of its own.
        let cleanup = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            rt.block_on(async {
                let mut conn = server.connect().await?;
                // A test that panicked with a transaction open leaves its
                // rollback to a runtime this drop is blocking: the server
                // would keep that transaction, and DROP DATABASE would wait
                // for its metadata lock for ever. End the database's
                // connections first (idle ones, after a test that passed).
                let others: Vec<(u64,)> = sqlx::query_as(
                    "SELECT CAST(ID AS UNSIGNED) FROM information_schema.PROCESSLIST WHERE DB = ? AND ID <> CONNECTION_ID()",
                )
                .bind(&name)
                .fetch_all(&mut conn)
                .await?;
                for (id,) in others {
                    // Gone meanwhile is as good as killed.
                    let _ = conn
                        .execute(sqlx::AssertSqlSafe(format!("KILL CONNECTION {id}")))
                        .await;
                }
                conn.execute(sqlx::AssertSqlSafe(format!(
                    "DROP DATABASE IF EXISTS `{name}`"
                )))
                .await?;
                Ok::<_, sqlx::Error>(())
            })?;
            Ok::<_, Box<dyn std::error::Error + Send + Sync>>(())
        });
        if let Ok(Err(e)) = cleanup.join() {
            eprintln!("could not drop test database {}: {e}", self.name);
        }
    }
}

/// The server named by DATABASE_URL.
pub fn server_options() -> MySqlConnectOptions {
    let url = std::env::var("DATABASE_URL").expect(
        "DATABASE_URL must point at a MySQL/MariaDB server; run the tests with `make test`",
    );
    crate::db::tune(
        MySqlConnectOptions::from_str(&url).expect("DATABASE_URL is not a valid MySQL URL"),
    )
}

/// DATABASE_URL with its database name replaced by `name`.
pub fn database_url_for(name: &str) -> String {
    let url = std::env::var("DATABASE_URL").expect("DATABASE_URL must be set");
    let (url, query) = url
        .split_once('?')
        .map_or((url.as_str(), None), |(u, q)| (u, Some(q)));
    let authority_at = url.find("://").map_or(0, |i| i + 3);
    let base = url[authority_at..]
        .find('/')
        .map_or(url, |i| &url[..authority_at + i]);
    match query {
        Some(q) => format!("{base}/{name}?{q}"),
        None => format!("{base}/{name}"),
    }
}

/// Fails the test on any violated invariant of seats, reservations and
/// queue (a request counts as stuck five minutes after its lease ended).
pub async fn assert_invariants(pool: &MySqlPool) {
    let mut conn = pool.acquire().await.expect("a connection");
    let violations = crate::db::invariants::check(
        &mut conn,
        chrono::Duration::minutes(5),
        crate::db::queue::DEFAULT_MAX_ATTEMPTS,
        None,
    )
    .await
    .expect("the invariant checks ran");
    assert!(violations.is_empty(), "invariants violated: {violations:?}");
}

/// Seats whose SUCCESS is not the first of their requests in line
/// ((line key, id) order: a lottery's draw, then arrival): first in line
/// wins broken (0 unless a seat was cancelled and sold again).
pub async fn inversions(conn: &mut sqlx::MySqlConnection) -> Result<i64, sqlx::Error> {
    let (n,): (i64,) = sqlx::query_as(
        "SELECT COUNT(*) FROM reservation_queue w WHERE w.status = 'SUCCESS' AND EXISTS \
         (SELECT 1 FROM reservation_queue e WHERE e.seat_id = w.seat_id \
          AND (e.line_key < w.line_key OR (e.line_key = w.line_key AND e.id < w.id)))",
    )
    .fetch_one(conn)
    .await?;
    Ok(n)
}

/// Best-available requests served out of line order: those that got a
/// better block (a smaller sum of seat ranks) than an earlier successful
/// request of the same size and pool (category or area). 0 when the line decides right.
pub async fn better_blocks_later(conn: &mut sqlx::MySqlConnection) -> Result<i64, sqlx::Error> {
    let rows: Vec<(u64, u64, u8, u64)> = sqlx::query_as(
        "SELECT p.concert_id, CAST(COALESCE(256 + p.area, p.category) AS UNSIGNED), p.seat_count, \
                CAST(SUM(s.seat_rank) AS UNSIGNED) \
           FROM reservation_queue q JOIN request_pools p ON p.queue_id = q.id \
           JOIN reservation_seats rs ON rs.reservation_id = q.reservation_id \
           JOIN seats s ON s.id = rs.seat_id \
          WHERE q.status = 'SUCCESS' \
          GROUP BY q.id, q.line_key, p.concert_id, p.category, p.area, p.seat_count \
          ORDER BY q.line_key, q.id",
    )
    .fetch_all(conn)
    .await?;
    let mut worst: std::collections::HashMap<(u64, u64, u8), u64> =
        std::collections::HashMap::new();
    let mut better = 0;
    for (concert, category, count, sum) in rows {
        let earlier = worst.entry((concert, category, count)).or_insert(0);
        if sum < *earlier {
            better += 1;
        }
        *earlier = (*earlier).max(sum);
    }
    Ok(better)
}

/// SplitMix64: a reproducible stream of well-mixed numbers from `state`.
fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A fixed shuffle (Fisher-Yates over SplitMix64): the same `seed`, the
/// same order, so a run can be repeated.
pub fn shuffle<T>(items: &mut [T], seed: u64) {
    let mut state = seed;
    for i in (1..items.len()).rev() {
        let j = (splitmix64(&mut state) % (i as u64 + 1)) as usize;
        items.swap(i, j);
    }
}

pub mod seed;

pub mod browser;

pub mod prometheus_text;

pub mod smtp;

#[cfg(feature = "testing")]
pub mod localstripe;
