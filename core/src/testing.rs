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

/// Bulk data for tests and benchmarks, written straight to the tables.
pub mod seed {
    use sqlx::{MySqlConnection, QueryBuilder};

    use crate::db;
    use crate::domain::{ConcertDate, ConcertTitle, SeatId, SeatLayout, UserId, Venue};

    /// `n` users named `{prefix}{i}` that cannot log in (their hash is not a
    /// hash): for exercising reservations without paying for Argon2.
    pub async fn users(
        conn: &mut MySqlConnection,
        prefix: &str,
        n: usize,
    ) -> Result<Vec<UserId>, sqlx::Error> {
        let now = db::now(&mut *conn).await?.naive_utc();
        for chunk in (0..n).collect::<Vec<_>>().chunks(5_000) {
            let mut insert = QueryBuilder::new(
                "INSERT INTO users (nickname, password_hash, role, created_at, updated_at) ",
            );
            insert.push_values(chunk, |mut row, i| {
                row.push_bind(format!("{prefix}{i}"))
                    .push_bind("!")
                    .push_bind("USER")
                    .push_bind(now)
                    .push_bind(now);
            });
            insert.build().execute(&mut *conn).await?;
        }
        let ids: Vec<(UserId,)> =
            sqlx::query_as("SELECT id FROM users WHERE nickname LIKE ? ORDER BY id")
                .bind(format!("{prefix}%"))
                .fetch_all(conn)
                .await?;
        Ok(ids.into_iter().map(|(id,)| id).collect())
    }

    /// A concert in 2099 with `rows` × `per_row` seats; returns the seat ids.
    pub async fn concert(
        conn: &mut MySqlConnection,
        rows: u32,
        per_row: u32,
    ) -> Result<Vec<SeatId>, sqlx::Error> {
        let layout = SeatLayout::parse(Some(rows), Some(per_row))
            .map_err(|e| sqlx::Error::Protocol(e.to_string()))?;
        let date = ConcertDate::parse("2099-01-01T00:00:00Z", chrono::Utc::now())
            .map_err(|e| sqlx::Error::Protocol(e.to_string()))?;
        let title =
            ConcertTitle::parse("seeded").map_err(|e| sqlx::Error::Protocol(e.to_string()))?;
        let venue = Venue::parse("seeded").map_err(|e| sqlx::Error::Protocol(e.to_string()))?;
        let now = db::now(&mut *conn).await?;
        let id = db::concerts::insert_with_seats(
            &mut *conn,
            &title,
            &venue,
            date,
            layout,
            db::concerts::Settings::default(),
            now,
        )
        .await?;
        let seats: Vec<(SeatId,)> =
            sqlx::query_as("SELECT id FROM seats WHERE concert_id = ? ORDER BY id")
                .bind(id)
                .fetch_all(conn)
                .await?;
        Ok(seats.into_iter().map(|(id,)| id).collect())
    }

    /// PENDING requests, queued in the order given.
    pub async fn requests(
        conn: &mut MySqlConnection,
        requests: &[(UserId, SeatId)],
    ) -> Result<(), sqlx::Error> {
        traced_requests(conn, requests, 1.0).await
    }

    /// Like [`requests`], with `sampled` (0 to 1) of the rows' trace contexts
    /// marked sampled, as the API's sampler would have left them.
    pub async fn traced_requests(
        conn: &mut MySqlConnection,
        requests: &[(UserId, SeatId)],
        sampled: f64,
    ) -> Result<(), sqlx::Error> {
        let now = db::now(&mut *conn).await?.naive_utc();
        // Each row carries a trace context of its own, as the API stores it,
        // so that the worker's tracing does its real work.
        let mut state = now.and_utc().timestamp_nanos_opt().unwrap_or(1) as u64;
        let mut random = move || super::splitmix64(&mut state) | 1;
        let concerts = concerts_of(conn, requests.iter().map(|(_, seat)| *seat)).await?;
        for chunk in requests.chunks(5_000) {
            let mut insert = QueryBuilder::new(
                "INSERT INTO reservation_queue (user_id, concert_id, seat_id, status, traceparent, created_at, updated_at) ",
            );
            insert.push_values(chunk, |mut row, (user, seat)| {
                let flags = u8::from(((random() >> 11) as f64 / (1u64 << 53) as f64) < sampled);
                let traceparent = format!(
                    "00-{:016x}{:016x}-{:016x}-{flags:02x}",
                    random(),
                    random(),
                    random()
                );
                row.push_bind(*user)
                    .push_bind(
                        concerts
                            .get(seat)
                            .copied()
                            .unwrap_or(crate::domain::ConcertId(0)),
                    )
                    .push_bind(*seat)
                    .push_bind("PENDING")
                    .push_bind(traceparent)
                    .push_bind(now)
                    .push_bind(now);
            });
            insert.build().execute(&mut *conn).await?;
        }
        seats_of_requests(conn).await
    }

    /// PENDING orders of one or more seats each (ids sorted, distinct),
    /// queued in the order given; returns their queue ids.
    pub async fn orders(
        conn: &mut MySqlConnection,
        orders: &[(UserId, Vec<SeatId>)],
    ) -> Result<Vec<crate::domain::QueueId>, sqlx::Error> {
        let concerts =
            concerts_of(conn, orders.iter().flat_map(|(_, s)| s.iter().copied())).await?;
        let now = db::now(&mut *conn).await?.naive_utc();
        let mut ids = Vec::with_capacity(orders.len());
        for chunk in orders.chunks(2_000) {
            let mut insert = QueryBuilder::new(
                "INSERT INTO reservation_queue (user_id, concert_id, seat_id, seat_count, status, created_at, updated_at) ",
            );
            insert.push_values(chunk, |mut row, (user, seats)| {
                row.push_bind(*user)
                    .push_bind(
                        concerts
                            .get(&seats[0])
                            .copied()
                            .unwrap_or(crate::domain::ConcertId(0)),
                    )
                    .push_bind(seats[0])
                    .push_bind(seats.len() as u8)
                    .push_bind("PENDING")
                    .push_bind(now)
                    .push_bind(now);
            });
            let first = insert.build().execute(&mut *conn).await?.last_insert_id();
            // One writer: the rows got consecutive ids, in the order given.
            let written: Vec<(crate::domain::QueueId, UserId)> = sqlx::query_as(
                "SELECT id, user_id FROM reservation_queue WHERE id >= ? ORDER BY id LIMIT ?",
            )
            .bind(first)
            .bind(chunk.len() as u64)
            .fetch_all(&mut *conn)
            .await?;
            let mut seats = QueryBuilder::new(
                "INSERT INTO request_seats (queue_id, seat_id, user_id, concert_id, is_open) ",
            );
            let rows: Vec<_> = written
                .iter()
                .zip(chunk)
                .flat_map(|((id, user), (_, wanted))| {
                    wanted.iter().map(move |seat| (*id, *seat, *user))
                })
                .collect();
            seats.push_values(&rows, |mut row, (id, seat, user)| {
                row.push_bind(*id)
                    .push_bind(*seat)
                    .push_bind(*user)
                    .push_bind(
                        concerts
                            .get(seat)
                            .copied()
                            .unwrap_or(crate::domain::ConcertId(0)),
                    )
                    .push_bind(1_i8);
            });
            seats.build().execute(&mut *conn).await?;
            ids.extend(written.into_iter().map(|(id, _)| id));
        }
        Ok(ids)
    }

    /// The concert of each seat.
    pub async fn concerts_of(
        conn: &mut MySqlConnection,
        seats: impl Iterator<Item = SeatId>,
    ) -> Result<std::collections::HashMap<SeatId, crate::domain::ConcertId>, sqlx::Error> {
        let mut seats: Vec<SeatId> = seats.collect();
        seats.sort_unstable();
        seats.dedup();
        let mut concerts = std::collections::HashMap::with_capacity(seats.len());
        for chunk in seats.chunks(1_000) {
            for (seat, concert, _) in db::seats::order_facts(&mut *conn, chunk).await? {
                concerts.insert(seat, concert);
            }
        }
        Ok(concerts)
    }

    /// Gives every queue row written straight to the table (with its
    /// `seat_id` and `concert_id`) and not yet given its seats the one seat
    /// it names, open while the row is, as the API's enqueue writes them.
    pub async fn seats_of_requests(conn: &mut MySqlConnection) -> Result<(), sqlx::Error> {
        sqlx::query(
            "INSERT INTO request_seats (queue_id, seat_id, user_id, concert_id, is_open) \
             SELECT q.id, q.seat_id, q.user_id, q.concert_id, IF(q.status IN ('PENDING', 'PROCESSING'), 1, 0) \
             FROM reservation_queue q WHERE NOT EXISTS (SELECT 1 FROM request_seats x WHERE x.queue_id = q.id)",
        )
        .execute(conn)
        .await?;
        Ok(())
    }
}

pub mod browser;

/// Reading the Prometheus text format in tests.
pub mod prometheus_text {
    use std::collections::BTreeMap;

    /// Samples by `name{label="value",…}` (labels sorted by name).
    pub type Samples = BTreeMap<String, f64>;

    /// Parses the Prometheus text exposition format (0.0.4) strictly enough
    /// to catch a malformed endpoint: every sample belongs to a family
    /// declared by `# TYPE` (histograms through their `_bucket`, `_sum` and
    /// `_count` series), labels are quoted, values are numbers, no series
    /// appears twice.
    pub fn parse(text: &str) -> Result<Samples, String> {
        let mut families: BTreeMap<String, String> = BTreeMap::new();
        let mut samples = Samples::new();
        for (n, line) in text.lines().enumerate() {
            let fail = |why: &str| format!("line {}: {why}: {line:?}", n + 1);
            if line.is_empty() || line.starts_with("# HELP ") {
                continue;
            }
            if let Some(rest) = line.strip_prefix("# TYPE ") {
                let (name, kind) = rest.split_once(' ').ok_or_else(|| fail("bad TYPE"))?;
                if !["counter", "gauge", "histogram", "summary", "untyped"].contains(&kind) {
                    return Err(fail("unknown type"));
                }
                families.insert(name.to_owned(), kind.to_owned());
                continue;
            }
            if line.starts_with('#') {
                return Err(fail("unknown comment"));
            }
            let (series, value) = line.rsplit_once(' ').ok_or_else(|| fail("no value"))?;
            let value: f64 = match value {
                "+Inf" => f64::INFINITY,
                "-Inf" => f64::NEG_INFINITY,
                v => v.parse().map_err(|_| fail("value is not a number"))?,
            };
            let (name, labels) = match series.split_once('{') {
                Some((name, rest)) => (
                    name,
                    labels(
                        rest.strip_suffix('}')
                            .ok_or_else(|| fail("unclosed labels"))?,
                    )
                    .map_err(|e| fail(&e))?,
                ),
                None => (series, Vec::new()),
            };
            if name.is_empty()
                || !name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
            {
                return Err(fail("bad metric name"));
            }
            let declared = families.contains_key(name)
                || ["_bucket", "_sum", "_count"].iter().any(|suffix| {
                    name.strip_suffix(suffix)
                        .and_then(|base| families.get(base))
                        .is_some_and(|kind| kind == "histogram" || kind == "summary")
                });
            if !declared {
                return Err(fail("sample without a # TYPE"));
            }
            if samples.insert(key(name, &labels), value).is_some() {
                return Err(fail("series repeated"));
            }
        }
        Ok(samples)
    }

    fn labels(text: &str) -> Result<Vec<(String, String)>, String> {
        let mut out = Vec::new();
        let mut rest = text;
        while !rest.is_empty() {
            let (name, after) = rest.split_once("=\"").ok_or("label without =\"")?;
            let mut value = String::new();
            let mut chars = after.char_indices();
            let end = loop {
                match chars.next() {
                    Some((_, '\\')) => match chars.next() {
                        Some((_, 'n')) => value.push('\n'),
                        Some((_, c)) => value.push(c),
                        None => return Err("dangling escape".into()),
                    },
                    Some((i, '"')) => break i,
                    Some((_, c)) => value.push(c),
                    None => return Err("unterminated label value".into()),
                }
            };
            out.push((name.to_owned(), value));
            rest = after[end + 1..]
                .strip_prefix(',')
                .unwrap_or(&after[end + 1..]);
        }
        Ok(out)
    }

    fn key(name: &str, labels: &[(String, String)]) -> String {
        let mut labels = labels.to_vec();
        labels.sort();
        if labels.is_empty() {
            return name.to_owned();
        }
        let inner: Vec<String> = labels.iter().map(|(k, v)| format!("{k}={v:?}")).collect();
        format!("{name}{{{}}}", inner.join(","))
    }

    /// The value of one series; 0 when absent (a counter not yet moved).
    pub fn value(samples: &Samples, name: &str, labels: &[(&str, &str)]) -> f64 {
        let labels: Vec<(String, String)> = labels
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        samples.get(&key(name, &labels)).copied().unwrap_or(0.0)
    }
}
