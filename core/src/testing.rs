//! Test support (feature `testing`): a fresh database per test on the server
//! that DATABASE_URL points at, dropped when the test ends.

use std::str::FromStr;
use std::sync::atomic::{AtomicU32, Ordering};

use sqlx::mysql::{MySqlConnectOptions, MySqlPool, MySqlPoolOptions};
use sqlx::{ConnectOptions, Connection, Executor};

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
        MySqlPoolOptions::new()
            .max_connections(max_connections)
            .after_connect(|conn, _| Box::pin(crate::db::prepare_session(conn)))
            .connect_with(self.options.clone())
            .await
            .expect("cannot connect to the test database")
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
        let now = db::now().naive_utc();
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
        let id =
            db::concerts::insert_with_seats(&mut *conn, &title, &venue, date, layout, db::now())
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
        let now = db::now().naive_utc();
        for chunk in requests.chunks(5_000) {
            let mut insert = QueryBuilder::new(
                "INSERT INTO reservation_queue (user_id, seat_id, status, created_at, updated_at) ",
            );
            insert.push_values(chunk, |mut row, (user, seat)| {
                row.push_bind(*user)
                    .push_bind(*seat)
                    .push_bind("PENDING")
                    .push_bind(now)
                    .push_bind(now);
            });
            insert.build().execute(&mut *conn).await?;
        }
        Ok(())
    }
}
