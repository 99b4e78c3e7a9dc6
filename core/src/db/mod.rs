//! Every SQL statement of the system, as small functions over a connection.
//! Callers own the transaction boundaries: pass the connection of a
//! [`whole`] transaction to compose several of these into one (never a bare
//! `BEGIN`: see [`whole`] for why).
//!
//! A locking read of rows by a list of ids says `FORCE INDEX (PRIMARY)`
//! (unless it skips locked rows). On a small table (a sale's first seconds)
//! the optimizer may rather scan it, and a locking read waits for every row
//! it scans, not only for those it returns: a decision would wait for a group still being enqueued, or for
//! a confirm on seats it does not want. Single-table updates need no hint:
//! they skip a locked row whose last committed version does not match.

pub mod access_codes;
pub mod audit;
pub mod check_ins;
pub mod concerts;
pub mod desk;
mod due_claim;
pub mod fans;
pub mod holds;
mod id_list;
pub mod invariants;
pub mod invitations;
pub mod kept;
pub mod line;
pub mod mails;
pub mod order_signals;
pub mod orders;
pub mod organizers;
pub mod outbox;
pub mod payments;
pub mod prices;
pub mod queue;
pub mod rates;
pub mod refunds;
pub mod request_pools;
pub mod request_seats;
pub mod reservations;
pub mod retention;
pub mod revocations;
pub mod seating_plans;
pub mod seats;
pub mod signals;
pub mod spent_challenges;
pub mod standing_areas;
pub mod takings;
pub mod tickets;
pub mod users;
pub mod waiting_list;
pub mod whole;

use chrono::{DateTime, Utc};
use sqlx::migrate::{MigrateError, Migrator};
use sqlx::mysql::{MySqlConnection, MySqlPool};
use sqlx::{Connection, Executor};

pub use sqlx::MySqlConnection as Conn;

pub(crate) use id_list::{BindIds, IdList, execute_for_ids};

/// Traces a statement: `sqlx::query(…).fetch_all(conn).traced("SELECT",
/// "seats").await`. The few functions whose statements make one operation
/// together (a concert with its seats in chunks) trace the whole of it.
pub(crate) trait Traced: std::future::Future + Sized {
    fn traced(
        self,
        operation: &'static str,
        table: &'static str,
    ) -> tracing::instrument::Instrumented<Self> {
        tracing::Instrument::instrument(self, span(operation, table))
    }
}

impl<F: std::future::Future> Traced for F {}

/// A client span for one statement (OpenTelemetry database conventions),
/// inside the caller's span when its trace is sampled. Outside any span there
/// is no trace to add it to, and none is made: the worker records its batch
/// work per row instead (see `telemetry::spans`).
fn span(operation: &'static str, table: &'static str) -> tracing::Span {
    if !crate::telemetry::spans::current_is_sampled() {
        return tracing::Span::none();
    }
    tracing::info_span!(
        "db",
        otel.name = format_args!("{operation} {table}").to_string(),
        otel.kind = "client",
        db.system.name = "mysql",
        db.operation.name = operation,
        db.collection.name = table,
    )
}

/// The migrations in `migrations/`, embedded in the binaries.
pub static MIGRATOR: Migrator = sqlx::migrate!("../migrations");

pub async fn migrate(pool: &MySqlPool) -> Result<(), MigrateError> {
    MIGRATOR.run(pool).await
}

/// Run on every new connection. READ COMMITTED: no gap locks, so short
/// transactions never block each other's inserts; every invariant that matters
/// is held by row locks and constraints, not by snapshot isolation.
pub(crate) async fn prepare_session(conn: &mut MySqlConnection) -> Result<(), sqlx::Error> {
    conn.execute("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED")
        .await?;
    // Fail a lock wait after 5 s (the default is 50 s) so that a request
    // answers 503 and a worker retries, rather than both hanging.
    conn.execute("SET SESSION innodb_lock_wait_timeout = 5")
        .await?;
    Ok(())
}

/// Pool options every process uses. Each new connection gets the session
/// settings. An idle connection is not pinged before it is handed out:
/// sqlx's default spends a round trip on every acquire, on top of the ping
/// it already sends when a connection is released. A connection that died
/// while idle fails its next statement (retried, or answered 503) and is
/// then discarded by that release ping.
pub fn pool_options() -> sqlx::mysql::MySqlPoolOptions {
    sqlx::mysql::MySqlPoolOptions::new()
        .test_before_acquire(false)
        .after_connect(|conn, _meta| Box::pin(prepare_session(conn)))
}

/// Connection options every pool uses: room in the per-connection statement
/// cache for every statement text (including each padded `IN` list size),
/// so that statements are prepared once and never closed and re-prepared.
pub fn tune(options: sqlx::mysql::MySqlConnectOptions) -> sqlx::mysql::MySqlConnectOptions {
    options.statement_cache_capacity(512)
}

/// Whether the database answers at all (readiness).
pub async fn ping(pool: &MySqlPool) -> Result<(), sqlx::Error> {
    pool.acquire().await?.ping().await
}

/// The database's clock, at the microsecond precision `DATETIME(6)` stores.
///
/// Every deadline (a hold's end, an opening, a lease, a retry, retention)
/// is compared against this one clock: hosts' clocks differ, and a deadline
/// compared on two clocks opens a window at every deadline in which two
/// processes disagree about whether it has passed (a worker ahead of an API
/// would give away a seat of a hold that the API still confirms). Read it
/// once per transaction, after the locks the decision rests on are taken,
/// and pass it to the statements; a statement that acts on a deadline alone
/// says `UTC_TIMESTAMP(6)` itself.
///
/// Bind times as `.naive_utc()` (a `DATETIME`): sqlx sends a `DateTime<Utc>`
/// as a `TIMESTAMP`, whose range ends in 2038.
pub async fn now(conn: &mut MySqlConnection) -> Result<DateTime<Utc>, sqlx::Error> {
    let (now,): (DateTime<Utc>,) = sqlx::query_as("SELECT UTC_TIMESTAMP(6)")
        .fetch_one(conn)
        .await?;
    Ok(now)
}

/// The name of the unique index a statement violated (MySQL/MariaDB error
/// 1062), without the `table.` prefix MySQL 8 adds. `None` for other errors.
pub fn violated_unique_key(err: &sqlx::Error) -> Option<&str> {
    let db = err.as_database_error()?;
    if db.code().as_deref() != Some("23000") || !db.message().starts_with("Duplicate entry") {
        return None;
    }
    // "Duplicate entry 'x' for key 'users.uq_users_nickname'": the key is the
    // last quoted part, and the duplicated value itself may contain quotes.
    let (_, key) = db.message().rsplit_once(" for key '")?;
    let key = key.strip_suffix('\'')?;
    Some(key.rsplit_once('.').map_or(key, |(_, k)| k))
}

/// The name of the foreign key a statement violated by referring to a row
/// that does not exist (error 1452), e.g. `fk_queue_seat`.
pub fn violated_foreign_key(err: &sqlx::Error) -> Option<&str> {
    if error_number(err) != Some(1452) {
        return None;
    }
    let message = err.as_database_error()?.message();
    let (_, rest) = message.split_once("CONSTRAINT `")?;
    rest.split_once('`').map(|(name, _)| name)
}

/// MySQL error number of a database error, e.g. 1213 for a deadlock.
pub fn error_number(err: &sqlx::Error) -> Option<u16> {
    err.as_database_error()?
        .try_downcast_ref::<sqlx::mysql::MySqlDatabaseError>()
        .map(|e| e.number())
}

/// Errors a caller may retry as they are: deadlock (1213), lock wait timeout
/// (1205), MariaDB's "record has changed since last read" (1020), and a
/// [`whole`] transaction the database had ended before its commit.
pub fn is_transient_conflict(err: &sqlx::Error) -> bool {
    matches!(error_number(err), Some(1213 | 1205 | 1020)) || whole::lost(err)
}

/// A transient conflict worth trying again at once: not a lock wait, which
/// has waited long already (50 s by default).
pub fn is_retryable_at_once(err: &sqlx::Error) -> bool {
    error_number(err) != Some(1205) && is_transient_conflict(err)
}

/// The database could not be reached or the pool had no connection to give:
/// the request may succeed later, nothing about it was wrong. 1047 is a
/// Galera node outside the primary component ("WSREP has not yet prepared
/// node for application use"): it will answer again once it rejoins.
pub fn is_unavailable(err: &sqlx::Error) -> bool {
    matches!(
        err,
        sqlx::Error::PoolTimedOut
            | sqlx::Error::Io(_)
            | sqlx::Error::Tls(_)
            | sqlx::Error::PoolClosed
    ) || matches!(
        error_number(err),
        Some(2002 | 2003 | 2006 | 2013 | 1040 | 1047 | 1053)
    )
}
