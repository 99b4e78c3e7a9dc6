//! Opening sales. Nothing is admitted: once a concert's `opensAt` has
//! passed by the database's clock, the claim reads its lottery's WAITING
//! requests beside the PENDING ones, in line order, so the whole lottery is
//! in line at the opening whatever its size. What the workers do now and
//! then is bookkeeping: count each opened lottery into its buckets once (a
//! lottery request's place is its key's rank among them), and take a
//! concert out of the claims' sight once none of its requests is open. Each
//! step is one transaction with the concert's line locked: two workers
//! take turns, and a worker killed mid-step leaves nothing half done.

use std::time::Duration;

use sqlx::MySqlConnection;
use ticket_core::db::{line, whole};

/// How often a worker looks after the opened lotteries: a lottery's
/// positions are known at most about this long after its count.
pub const LOOK_EVERY: Duration = Duration::from_millis(200);

/// Counts the lotteries that opened and takes the lines that emptied out
/// of the claims' sight;
/// returns how many lottery requests were counted.
pub async fn look_after_opened(conn: &mut MySqlConnection) -> Result<u64, sqlx::Error> {
    let mut counted = 0;
    for concert in line::lotteries_to_count(conn).await? {
        let n = whole::run(&mut *conn, async |tx| {
            line::count_lottery(tx, concert).await
        })
        .await?;
        counted += n;
        tracing::info!(
            concert = concert.get(),
            requests = n,
            "sale opened: lottery counted"
        );
    }
    for in_line in line::concerts_in_line(conn).await? {
        whole::run(&mut *conn, async |tx| {
            line::leave_if_empty(tx, in_line.concert_id).await
        })
        .await?;
    }
    Ok(counted)
}
