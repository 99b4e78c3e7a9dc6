//! A decision's transaction commits whole or not at all, even when the
//! server ends it without telling (what Galera did to decisions with writes
//! on several nodes: docs/scaling.md). The server's silent end is played
//! here by a ROLLBACK sent inside the transaction.

use sqlx::{Executor as _, MySqlConnection, MySqlPool};
use ticket_core::db::{self, whole};
use ticket_core::domain::SeatId;
use ticket_core::testing::{TestDatabase, seed};

async fn hall() -> (TestDatabase, MySqlPool, Vec<SeatId>) {
    let (db, pool) = TestDatabase::migrated().await;
    let mut conn = pool.acquire().await.unwrap();
    let seats = seed::concert(&mut conn, 1, 3).await.unwrap();
    (db, pool, seats)
}

async fn reserve(conn: &mut MySqlConnection, seat: SeatId) -> Result<(), sqlx::Error> {
    sqlx::query("UPDATE seats SET status = 'RESERVED' WHERE id = ?")
        .bind(seat)
        .execute(conn)
        .await
        .map(|_| ())
}

/// Each seat's status, read on a connection of its own.
async fn statuses(pool: &MySqlPool, seats: &[SeatId]) -> Vec<String> {
    let mut out = Vec::new();
    for seat in seats {
        let (status,): (String,) = sqlx::query_as("SELECT status FROM seats WHERE id = ?")
            .bind(seat)
            .fetch_one(pool)
            .await
            .unwrap();
        out.push(status);
    }
    out
}

async fn autocommit(conn: &mut MySqlConnection) -> i64 {
    let (on,): (i64,) = sqlx::query_as("SELECT CAST(@@autocommit AS SIGNED)")
        .fetch_one(conn)
        .await
        .unwrap();
    on
}

#[tokio::test]
async fn what_runs_after_a_silent_end_is_never_committed() {
    let (_db, pool, seats) = hall().await;
    let mut conn = pool.acquire().await.unwrap();
    let mut tx = whole::Whole::begin(&mut conn).await.unwrap();
    reserve(&mut tx, seats[0]).await.unwrap();
    tx.execute("ROLLBACK").await.unwrap();
    // Without the guard this statement would run in autocommit and commit
    // on its own: the second seat RESERVED with nothing else of its decision.
    reserve(&mut tx, seats[1]).await.unwrap();
    let err = tx.commit().await.unwrap_err();
    assert!(whole::lost(&err), "{err}");
    assert!(
        db::is_transient_conflict(&err),
        "a lost transaction is retried"
    );
    assert_eq!(
        statuses(&pool, &seats[..2]).await,
        ["AVAILABLE", "AVAILABLE"]
    );
    // The connection is back in autocommit: the pool's next user is not
    // left inside a transaction nobody commits.
    assert_eq!(autocommit(&mut conn).await, 1);
    reserve(&mut conn, seats[2]).await.unwrap();
    assert_eq!(statuses(&pool, &seats[2..]).await, ["RESERVED"]);
}

#[tokio::test]
async fn a_whole_transaction_commits_all_its_statements() {
    let (_db, pool, seats) = hall().await;
    let mut conn = pool.acquire().await.unwrap();
    let mut tx = whole::Whole::begin(&mut conn).await.unwrap();
    reserve(&mut tx, seats[0]).await.unwrap();
    reserve(&mut tx, seats[1]).await.unwrap();
    assert_eq!(
        statuses(&pool, &seats[..2]).await,
        ["AVAILABLE", "AVAILABLE"],
        "nothing is visible before the commit"
    );
    tx.commit().await.unwrap();
    assert_eq!(statuses(&pool, &seats[..2]).await, ["RESERVED", "RESERVED"]);
    assert_eq!(autocommit(&mut conn).await, 1);
}

#[tokio::test]
async fn run_rolls_back_when_its_work_fails() {
    let (_db, pool, seats) = hall().await;
    let mut conn = pool.acquire().await.unwrap();
    let seat = seats[0];
    let failed: Result<(), sqlx::Error> = whole::run(&mut conn, async |tx| {
        reserve(tx, seat).await?;
        Err(sqlx::Error::RowNotFound)
    })
    .await;
    assert!(matches!(failed, Err(sqlx::Error::RowNotFound)));
    assert_eq!(statuses(&pool, &seats[..1]).await, ["AVAILABLE"]);
    assert_eq!(autocommit(&mut conn).await, 1);

    whole::run(&mut conn, async |tx| reserve(tx, seat).await)
        .await
        .unwrap();
    assert_eq!(statuses(&pool, &seats[..1]).await, ["RESERVED"]);
}

/// A transaction whose future is dropped (a cancelled request) neither
/// commits nor hands its connection back to the pool with autocommit off.
#[tokio::test]
async fn a_whole_dropped_open_closes_its_connection() {
    let (db, _pool, seats) = hall().await;
    let pool = db.pool(1).await;
    let mut conn = pool.acquire().await.unwrap();
    let (first,): (u64,) = sqlx::query_as("SELECT CAST(CONNECTION_ID() AS UNSIGNED)")
        .fetch_one(&mut *conn)
        .await
        .unwrap();
    let mut tx = whole::Whole::begin(conn).await.unwrap();
    reserve(&mut tx, seats[0]).await.unwrap();
    drop(tx);
    let mut again = pool.acquire().await.unwrap();
    let (second,): (u64,) = sqlx::query_as("SELECT CAST(CONNECTION_ID() AS UNSIGNED)")
        .fetch_one(&mut *again)
        .await
        .unwrap();
    assert_ne!(first, second, "the abandoned connection was closed");
    assert_eq!(autocommit(&mut again).await, 1);
    drop(again);
    assert_eq!(statuses(&pool, &seats[..1]).await, ["AVAILABLE"]);
}

/// Every transaction of the product goes through `db::whole`: a plain
/// `begin()` would commit whatever ran after a silent end. The benchmark
/// baselines (bench/) reproduce the original system and keep theirs; tests
/// may hold plain transactions to play another client.
#[test]
fn no_product_code_begins_a_transaction_outside_whole() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut found = Vec::new();
    let mut folders: Vec<std::path::PathBuf> = ["api/src", "core/src", "worker/src"]
        .iter()
        .map(|folder| root.join(folder))
        .collect();
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                folders.push(path);
                continue;
            }
            if path.extension().is_none_or(|ext| ext != "rs") || path.ends_with("db/whole.rs") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            for (number, line) in text.lines().enumerate() {
                let code = line.split("//").next().unwrap_or_default();
                let plain = code.contains("begin()")
                    || code.contains("Connection::begin(")
                    || code.contains("Acquire::begin(")
                    || code.contains("START TRANSACTION")
                    || code.contains("\"BEGIN");
                if plain {
                    found.push(format!(
                        "{}:{}: {}",
                        path.display(),
                        number + 1,
                        line.trim()
                    ));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "transactions begun outside db::whole:\n{}",
        found.join("\n")
    );
}
