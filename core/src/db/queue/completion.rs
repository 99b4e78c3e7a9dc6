//! Deciding requests: SUCCESS or FAILED, only while the claim's lease (or
//! lock) still holds, their seats' open rows closing with them.

use chrono::{DateTime, Utc};
use sqlx::{AssertSqlSafe, MySqlConnection};

use crate::db::request_seats::{self};
use crate::db::{IdList, Traced as _, execute_for_ids};
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
        let Some(list) = IdList::of(ids) else {
            return Ok(0);
        };
        let update = sqlx::query(AssertSqlSafe(format!(
            "UPDATE reservation_queue q \
             SET q.status = 'SUCCESS', q.reservation_id = ({own}), q.reason = NULL, q.lease_until = NULL, \
                 q.decided_at = ?, q.updated_at = ? \
             WHERE q.id IN ({list}) AND {} AND EXISTS ({own})",
            fence.condition("q."),
            own = "SELECT r.id FROM reservations r WHERE r.queue_id = q.id AND r.user_id = q.user_id"
        )))
        .bind(now.naive_utc())
        .bind(now.naive_utc());
        let done = fence
            .bind_token(update.bind_ids(&list))
            .execute(&mut *conn)
            .await?;
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
    let changed = execute_for_ids(conn, ids, |list| {
        let update = sqlx::query(AssertSqlSafe(format!(
            "UPDATE reservation_queue SET status = 'FAILED', reason = ?, lease_until = NULL, \
                 decided_at = ?, updated_at = ? \
             WHERE {} AND id IN ({list})",
            fence.condition(""),
        )))
        .bind(reason.as_str())
        .bind(now.naive_utc())
        .bind(now.naive_utc());
        fence.bind_token(update)
    })
    .await?;
    close_if_all(conn, ids, changed).await?;
    Ok(changed)
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
        crate::db::request_pools::close(conn, ids).await?;
    }
    Ok(())
}
