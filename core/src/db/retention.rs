//! What is kept, and for how long: decided queue rows and delivered events
//! for the retention period, idempotency keys for a day (as pretix keeps
//! them). Removal walks the queue in primary-key order, a small batch at a
//! time, and locks only the rows it removes or changes, skipping any that
//! someone else holds: it never waits behind, or blocks, the hot path.
//! Open requests and undelivered events are never touched.

use chrono::{DateTime, Utc};
use sqlx::{AssertSqlSafe, MySqlConnection};

use super::{BindIds as _, IdList, Traced as _};
use crate::domain::QueueId;

pub const DEFAULT_RETENTION_DAYS: u32 = 30;
pub const DEFAULT_IDEMPOTENCY_KEY_HOURS: u32 = 24;

/// One queue row as the walk sees it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Walked {
    pub id: QueueId,
    pub created_at: DateTime<Utc>,
    pub decided_at: Option<DateTime<Utc>>,
    pub has_key: bool,
}

/// The next `limit` queue rows after `after`, oldest first, without locks.
pub async fn queue_rows_after(
    conn: &mut MySqlConnection,
    after: QueueId,
    limit: u32,
) -> Result<Vec<Walked>, sqlx::Error> {
    sqlx::query_as(
        "SELECT id, created_at, \
                IF(status IN ('SUCCESS', 'FAILED'), decided_at, NULL) AS decided_at, \
                idempotency_key IS NOT NULL AS has_key \
         FROM reservation_queue WHERE id > ? ORDER BY id LIMIT ?",
    )
    .bind(after)
    .bind(limit)
    .fetch_all(conn)
    .traced("SELECT", "reservation_queue")
    .await
}

/// Deletes those of `ids` that are decided (SUCCESS or FAILED) since before
/// `decided_before` and that nobody holds. Call inside a transaction.
pub async fn delete_decided(
    conn: &mut MySqlConnection,
    ids: &[QueueId],
    decided_before: DateTime<Utc>,
) -> Result<u64, sqlx::Error> {
    async move {
        let locked = lock_free(
            conn,
            ids,
            "status IN ('SUCCESS', 'FAILED') AND decided_at < ?",
            Some(decided_before),
        )
        .await?;
        // A request's seats and pool go with it (they refer to it).
        on_locked(
            conn,
            &[
                "DELETE FROM request_seats WHERE queue_id = ?",
                "DELETE FROM request_pools WHERE queue_id = ?",
                "DELETE FROM reservation_queue WHERE id = ?",
            ],
            locked,
        )
        .await
    }
    .traced("DELETE", "reservation_queue")
    .await
}

/// Forgets the idempotency keys of those of `ids` that nobody holds: a
/// retry after that long is a new request. Call inside a transaction.
pub async fn forget_idempotency_keys(
    conn: &mut MySqlConnection,
    ids: &[QueueId],
) -> Result<u64, sqlx::Error> {
    async move {
        let locked = lock_free(conn, ids, "idempotency_key IS NOT NULL", None).await?;
        on_locked(
            conn,
            &["UPDATE reservation_queue SET idempotency_key = NULL WHERE id = ?"],
            locked,
        )
        .await
    }
    .traced("UPDATE", "reservation_queue")
    .await
}

/// Which events the retention may remove.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventsKept {
    /// Events are delivered (a webhook is configured): those delivered or
    /// given up before the cutoff go; undelivered ones stay, however old.
    UntilDelivered,
    /// Nobody receives them: every event written before the cutoff goes.
    ForTheRetentionOnly,
}

/// Deletes up to `limit` events that `kept` lets go as of `before` and that
/// nobody holds. Call inside a transaction.
pub async fn delete_events(
    conn: &mut MySqlConnection,
    before: DateTime<Utc>,
    kept: EventsKept,
    limit: u32,
) -> Result<u64, sqlx::Error> {
    async move {
        let condition = match kept {
            EventsKept::UntilDelivered => {
                "SELECT id FROM outbox WHERE published_at < ? ORDER BY published_at, id LIMIT ? \
                 FOR UPDATE SKIP LOCKED"
            }
            // Ids follow time: the oldest come first in the primary key.
            EventsKept::ForTheRetentionOnly => {
                "SELECT id FROM outbox WHERE created_at < ? ORDER BY id LIMIT ? FOR UPDATE SKIP LOCKED"
            }
        };
        let mut locked: Vec<(u64,)> = sqlx::query_as(condition)
            .bind(before.naive_utc())
            .bind(limit)
            .fetch_all(&mut *conn)
            .await?;
        if kept == EventsKept::UntilDelivered {
            let room = limit.saturating_sub(u32::try_from(locked.len()).unwrap_or(limit));
            let given_up: Vec<(u64,)> = sqlx::query_as(
                "SELECT id FROM outbox WHERE failed_at < ? ORDER BY failed_at, id LIMIT ? \
                 FOR UPDATE SKIP LOCKED",
            )
            .bind(before.naive_utc())
            .bind(room)
            .fetch_all(&mut *conn)
            .await?;
            locked.extend(given_up);
        }
        on_locked(conn, &["DELETE FROM outbox WHERE id = ?"], locked).await
    }
    .traced("DELETE", "outbox")
    .await
}

/// Locks those of `ids` (a walked stretch of the queue) that meet
/// `condition` (its one `?`, if any, is `at`) and that nobody holds.
async fn lock_free(
    conn: &mut MySqlConnection,
    ids: &[QueueId],
    condition: &str,
    at: Option<DateTime<Utc>>,
) -> Result<Vec<(u64,)>, sqlx::Error> {
    let Some(list) = IdList::of(ids) else {
        return Ok(Vec::new());
    };
    let (first, last) = span_of(ids);
    let lock = sqlx::query_as(AssertSqlSafe(format!(
        "SELECT id FROM reservation_queue WHERE id IN ({list}) AND id BETWEEN ? AND ? \
         AND {condition} FOR UPDATE SKIP LOCKED"
    )));
    let mut lock = lock.bind_ids(&list).bind(first).bind(last);
    if let Some(at) = at {
        lock = lock.bind(at.naive_utc());
    }
    lock.fetch_all(conn).await
}

/// The smallest and largest of `ids`: the locking reads stay inside the
/// walked stretch of the primary key even when the optimizer scans.
fn span_of(ids: &[QueueId]) -> (u64, u64) {
    let raw = ids.iter().map(|id| id.0);
    (raw.clone().min().unwrap_or(0), raw.max().unwrap_or(0))
}

/// Runs `statements` (each with one `?`, the id) on each row just locked,
/// one row at a time by primary key; returns what the last one changed. One statement with the whole id list would be
/// fewer round trips, but on a table that is small next to the list the
/// optimizer scans instead, and a scanning DELETE waits for every row
/// someone else holds: exactly what SKIP LOCKED was for.
async fn on_locked(
    conn: &mut MySqlConnection,
    statements: &[&'static str],
    locked: Vec<(u64,)>,
) -> Result<u64, sqlx::Error> {
    let mut changed = 0;
    for (id,) in locked {
        for (i, statement) in statements.iter().enumerate() {
            let done = sqlx::query(*statement).bind(id).execute(&mut *conn).await?;
            if i + 1 == statements.len() {
                changed += done.rows_affected();
            }
        }
    }
    Ok(changed)
}
