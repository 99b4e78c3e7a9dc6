//! Opening sales: once a concert's `opensAt` has passed, its lottery's
//! WAITING requests become PENDING, ranked in the lottery's drawn order,
//! and are claimed in line order, the lottery first. Every worker does it
//! now and then; the concert's line is locked per chunk, so two workers
//! take turns and a worker killed mid-chunk leaves nothing half done.

use std::time::Duration;

use chrono::{DateTime, Utc};
use sqlx::{Connection as _, MySqlConnection};
use ticket_core::db::line;

/// How often a worker looks for sales that have opened: a lottery's
/// requests become due at most about this long after the opening.
pub const LOOK_EVERY: Duration = Duration::from_millis(200);

/// Requests let in per statement (each its own short transaction).
const CHUNK: u32 = 5_000;

/// Lets in the WAITING requests of every sale open at `now`; returns how many.
pub async fn admit_opened(
    conn: &mut MySqlConnection,
    now: DateTime<Utc>,
) -> Result<u64, sqlx::Error> {
    let mut admitted = 0;
    for concert in line::opened_with_waiting(conn, now).await? {
        loop {
            let mut tx = conn.begin().await?;
            let n = line::admit_waiting(&mut tx, concert, CHUNK, now).await?;
            tx.commit().await?;
            admitted += n;
            if n < u64::from(CHUNK) {
                break;
            }
        }
        tracing::info!(
            concert = concert.get(),
            "sale opened: lottery requests let in"
        );
    }
    Ok(admitted)
}
