//! Rows that cannot be decided. One bad row (data a hand-made fix left
//! contradictory, a constraint the decision does not expect) must not stall
//! the queue: it is retried a few times with backoff, then ends FAILED with
//! reason PROCESSING_FAILED, logged with its cause, and changes nothing else.

use std::time::Duration;

use sqlx::MySqlConnection;
use ticket_core::db::{self, queue};
use ticket_core::domain::{FailureReason, QueueId};

use crate::decide::{DecideError, Decided};

/// Wait before the first retry of a failed row; doubled for each further one.
const FIRST_RETRY: Duration = Duration::from_millis(200);
const LONGEST_RETRY: Duration = Duration::from_secs(30);

/// The wait after the `attempts`-th failed attempt.
fn backoff(attempts: u32) -> Duration {
    FIRST_RETRY
        .saturating_mul(1 << attempts.saturating_sub(1).min(16))
        .min(LONGEST_RETRY)
}

/// A row whose decision failed on its own, while other rows of its batch
/// were decided: hands it back for another attempt after a backoff, or sets
/// it aside after its last allowed attempt.
pub(crate) async fn failed_attempt(
    conn: &mut MySqlConnection,
    id: QueueId,
    token: u64,
    cause: &DecideError,
    max_attempts: u32,
) -> Result<Decided, sqlx::Error> {
    let now = db::now(conn).await?;
    let Some(attempts) = queue::attempts(conn, id, token).await? else {
        return Ok(Decided {
            lease_lost: 1,
            ..Decided::default()
        });
    };
    if attempts >= max_attempts {
        let failed = queue::mark_failed(
            conn,
            &[id],
            queue::Fence::Lease(token),
            FailureReason::ProcessingFailed,
            now,
        )
        .await?;
        tracing::error!(
            queue_id = id.get(),
            attempts,
            cause = format!("{cause:#}"),
            "request set aside as FAILED (PROCESSING_FAILED) after its last attempt"
        );
        return Ok(Decided {
            dead_lettered: failed as usize,
            lease_lost: 1 - failed as usize,
            ..Decided::default()
        });
    }
    let wait = backoff(attempts);
    let retry_at = now + chrono::Duration::from_std(wait).unwrap_or_default();
    let handed = queue::hand_back(
        conn,
        &[id],
        queue::Fence::Lease(token),
        retry_at,
        queue::Attempt::Counted,
        now,
    )
    .await?;
    tracing::warn!(
        queue_id = id.get(),
        attempts,
        max_attempts,
        retry_in_ms = wait.as_millis() as u64,
        cause = format!("{cause:#}"),
        "deciding a request failed; it will be tried again"
    );
    Ok(Decided {
        deferred: handed as usize,
        lease_lost: 1 - handed as usize,
        ..Decided::default()
    })
}

/// Rows whose batch failed as a whole, each part alone included: the cause
/// is not in them (a missing grant, a broken schema). They go back without
/// counting the attempt, due again after the first backoff, so that an
/// outage of that kind sets no request aside.
pub(crate) async fn hand_back_uncounted(
    conn: &mut MySqlConnection,
    ids: &[QueueId],
    token: u64,
) -> Result<u64, sqlx::Error> {
    let now = db::now(conn).await?;
    let retry_at = now + chrono::Duration::from_std(FIRST_RETRY).unwrap_or_default();
    queue::hand_back(
        conn,
        ids,
        queue::Fence::Lease(token),
        retry_at,
        queue::Attempt::Refunded,
        now,
    )
    .await
}

/// Logs rows a claim set aside because their lease ran out after their last
/// attempt (their worker died or stalled every time it held them).
pub(crate) fn report_expired(ids: &[QueueId], max_attempts: u32) {
    for id in ids {
        tracing::error!(
            queue_id = id.get(),
            attempts = max_attempts,
            cause = "the lease ran out on every attempt (the worker holding it died or stalled)",
            "request set aside as FAILED (PROCESSING_FAILED) after its last attempt"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retries_back_off_doubling_up_to_a_ceiling() {
        assert_eq!(backoff(1), Duration::from_millis(200));
        assert_eq!(backoff(2), Duration::from_millis(400));
        assert_eq!(backoff(4), Duration::from_millis(1600));
        assert_eq!(backoff(40), LONGEST_RETRY);
    }
}
