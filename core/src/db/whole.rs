//! Transactions that commit whole or not at all, even when the server ends
//! one without telling its client.
//!
//! Seen on MariaDB Galera with writes on several nodes: a replicated write
//! set aborted a decision's transaction (a brute-force abort), yet the
//! statements after it were answered as if nothing had happened. They ran
//! outside any transaction, each committing on its own: a seat's UPDATE
//! committed alone left a seat RESERVED with no claim, lost to the sale. So
//! a [`Whole`] turns autocommit off for its duration (a statement that finds
//! its transaction gone starts a new one, which nobody commits) and sets a
//! savepoint as it begins; it commits only by releasing that savepoint,
//! which lives exactly as long as the transaction it was set in. A
//! transaction that ended early fails its commit as [`lost`], and what ran
//! after its end is rolled back. It costs no round trip more than a plain
//! transaction: the statements travel together.
//!
//! Autocommit is restored by the commit and by the rollback. A `Whole`
//! dropped with neither done (its future cancelled) leaves its connection
//! inside a transaction with autocommit off: a pool's connection is then
//! closed rather than handed back (closing rolls back). Code that can
//! return early runs its transaction through [`run`], which always ends it.

use std::ops::{Deref, DerefMut};

use sqlx::pool::PoolConnection;
use sqlx::{Executor, MySql, MySqlConnection};

const BEGIN: &str = "SET autocommit = 0; BEGIN; SAVEPOINT whole";
const COMMIT: &str = "RELEASE SAVEPOINT whole; COMMIT; SET autocommit = 1";
const ROLLBACK: &str = "ROLLBACK; SET autocommit = 1";

/// MySQL's "SAVEPOINT … does not exist" (ER_SP_DOES_NOT_EXIST).
const NO_SUCH_SAVEPOINT: u16 = 1305;

/// Runs `work` in a [`Whole`] transaction on `conn`: committed when it
/// succeeds, rolled back when it fails.
pub async fn run<C, T, E>(
    conn: C,
    work: impl AsyncFnOnce(&mut MySqlConnection) -> Result<T, E>,
) -> Result<T, E>
where
    C: Held,
    E: From<sqlx::Error>,
{
    let mut tx = Whole::begin(conn).await?;
    let done = work(&mut tx).await;
    tx.end(done).await
}

/// A connection a `Whole` runs on.
pub trait Held {
    fn connection(&mut self) -> &mut MySqlConnection;
    fn connection_ref(&self) -> &MySqlConnection;
    /// The `Whole` was dropped with its transaction open.
    fn abandon(&mut self);
}

impl Held for PoolConnection<MySql> {
    fn connection(&mut self) -> &mut MySqlConnection {
        self
    }
    fn connection_ref(&self) -> &MySqlConnection {
        self
    }
    fn abandon(&mut self) {
        self.close_on_drop();
    }
}

/// A connection that is not a pool's, which a `Whole` cannot close: its
/// owner must not use it again after a `Whole` on it was dropped open
/// (tests and tools own theirs).
impl Held for MySqlConnection {
    fn connection(&mut self) -> &mut MySqlConnection {
        self
    }
    fn connection_ref(&self) -> &MySqlConnection {
        self
    }
    fn abandon(&mut self) {
        tracing::warn!("a transaction was left open on a connection outside the pool");
    }
}

/// A borrowed connection is held as its owner holds it.
impl<H: Held + ?Sized> Held for &mut H {
    fn connection(&mut self) -> &mut MySqlConnection {
        (**self).connection()
    }
    fn connection_ref(&self) -> &MySqlConnection {
        (**self).connection_ref()
    }
    fn abandon(&mut self) {
        (**self).abandon();
    }
}

pub struct Whole<C: Held> {
    conn: C,
    open: bool,
}

impl<C: Held> Whole<C> {
    pub async fn begin(mut conn: C) -> Result<Self, sqlx::Error> {
        conn.connection().execute(BEGIN).await?;
        Ok(Self { conn, open: true })
    }

    /// Commits, unless the transaction had ended before (then [`lost`], and
    /// what ran after its end is rolled back).
    pub async fn commit(mut self) -> Result<(), sqlx::Error> {
        let committed = self.conn.connection().execute(COMMIT).await;
        if let Err(e) = &committed {
            if lost(e) {
                tracing::warn!(
                    "the database had ended a transaction without telling; \
                     what ran after its end is rolled back"
                );
            }
            self.conn.connection().execute(ROLLBACK).await?;
        }
        self.open = false;
        committed.map(|_| ())
    }

    pub async fn rollback(mut self) -> Result<(), sqlx::Error> {
        self.conn.connection().execute(ROLLBACK).await?;
        self.open = false;
        Ok(())
    }

    /// Commits if `done` succeeded, else rolls back; then `done`.
    pub async fn end<T, E: From<sqlx::Error>>(self, done: Result<T, E>) -> Result<T, E> {
        match done {
            Ok(value) => {
                self.commit().await?;
                Ok(value)
            }
            Err(e) => {
                self.rollback().await?;
                Err(e)
            }
        }
    }
}

impl<C: Held> Drop for Whole<C> {
    fn drop(&mut self) {
        if self.open {
            self.conn.abandon();
        }
    }
}

impl<C: Held> Deref for Whole<C> {
    type Target = MySqlConnection;
    fn deref(&self) -> &MySqlConnection {
        self.conn.connection_ref()
    }
}

impl<C: Held> DerefMut for Whole<C> {
    fn deref_mut(&mut self) -> &mut MySqlConnection {
        self.conn.connection()
    }
}

/// The transaction had ended before its commit: none of it was committed,
/// and the work may be tried again.
pub fn lost(err: &sqlx::Error) -> bool {
    super::error_number(err) == Some(NO_SUCH_SAVEPOINT)
}
