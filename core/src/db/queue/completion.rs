//! Deciding requests: SUCCESS or FAILED, only while the claim's lease (or
//! lock) still holds, their seats' open rows closing with them.

use chrono::{DateTime, Utc};
use sqlx::{AssertSqlSafe, MySqlConnection};

use crate::db::request_seats::{self};
use crate::db::{Traced as _, bind_ids_exec, in_placeholders};
use crate::domain::{FailureReason, QueueId};

use super::*;

/// Marks requests SUCCESS with the reservation each of them made; their
/// seats close with them.
///
/// One table updated (see the module's note on scans): a multi-table
/// update waits for every row it scans, as a locking read does, and a join
/// here was planned as a scan of the queue, which waited for a group still
/// being enqueued while holding the decision's seats.
pub async fn mark_succeeded(
    conn: &mut MySqlConnection,
    ids: &[QueueId],
    fence: Fence,
    now: DateTime<Utc>,
) -> Result<u64, sqlx::Error> {
    async move {
        if ids.is_empty() {
            return Ok(0);
        }
        let update = sqlx::query(AssertSqlSafe(format!(
            "UPDATE reservation_queue q \
             SET q.status = 'SUCCESS', q.reservation_id = ({own}), q.reason = NULL, q.lease_until = NULL, \
                 q.decided_at = ?, q.updated_at = ? \
             WHERE q.id IN ({}) AND {} AND EXISTS ({own})",
            in_placeholders(ids.len()),
            fence.condition("q."),
            own = "SELECT r.id FROM reservations r WHERE r.queue_id = q.id AND r.user_id = q.user_id"
        )))
        .bind(now.naive_utc())
        .bind(now.naive_utc());
        let mut update = bind_ids_exec(update, ids);
        if let Some(token) = fence.token() {
            update = update.bind(token);
        }
        let done = update.execute(&mut *conn).await?;
        close_if_all(conn, ids, done.rows_affected()).await?;
        Ok(done.rows_affected())
    }
    .traced("UPDATE", "reservation_queue")
    .await
}

pub async fn mark_failed(
    conn: &mut MySqlConnection,
    ids: &[QueueId],
    fence: Fence,
    reason: FailureReason,
    now: DateTime<Utc>,
) -> Result<u64, sqlx::Error> {
    fail(conn, ids, fence, reason, now)
        .traced("UPDATE", "reservation_queue")
        .await
}

/// Marks requests FAILED, those still ours (`fence`).
pub(super) async fn fail(
    conn: &mut MySqlConnection,
    ids: &[QueueId],
    fence: Fence,
    reason: FailureReason,
    now: DateTime<Utc>,
) -> Result<u64, sqlx::Error> {
    if ids.is_empty() {
        return Ok(0);
    }
    let mut update = sqlx::query(AssertSqlSafe(format!(
        "UPDATE reservation_queue SET status = 'FAILED', reason = ?, lease_until = NULL, \
             decided_at = ?, updated_at = ? \
         WHERE {} AND id IN ({})",
        fence.condition(""),
        in_placeholders(ids.len())
    )))
    .bind(reason.as_str())
    .bind(now.naive_utc())
    .bind(now.naive_utc());
    if let Some(token) = fence.token() {
        update = update.bind(token);
    }
    let done = bind_ids_exec(update, ids).execute(&mut *conn).await?;
    close_if_all(conn, ids, done.rows_affected()).await?;
    Ok(done.rows_affected())
}

/// Closes the seats of `ids` once a statement decided every one of them
/// (`changed`). Fewer means some were not ours to decide: the caller's
/// bookkeeping refuses that (the decision rolls back), or it was the one
/// row of a set-aside that another worker has since taken over.
async fn close_if_all(
    conn: &mut MySqlConnection,
    ids: &[QueueId],
    changed: u64,
) -> Result<(), sqlx::Error> {
    if changed == ids.len() as u64 {
        request_seats::close(conn, ids).await?;
    }
    Ok(())
}
