//! The original system's algorithm, kept here as the baseline the worker is
//! measured against: every 250 ms, claim 50 rows under a lease and decide
//! them one transaction per request, in queue order. It shares the worker's
//! claim and decision statements, so that the figures compare the schedule
//! and the grouping, not two implementations of the rules.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use sqlx::{Connection, MySqlPool};
use ticket_core::db::{self, queue};
use ticket_worker::decide::{self, Decided};
use tokio_util::sync::CancellationToken;

/// The original's schedule.
pub const BATCH: u32 = 50;
const POLL: Duration = Duration::from_millis(250);
const LEASE: Duration = Duration::from_secs(30);
/// A request behind an open one for its seat is handed back for this long.
const DEFER_FOR: Duration = Duration::from_millis(20);

/// One baseline worker: claims and decides until `shutdown` (a batch in
/// hand is finished first).
pub struct Baseline {
    pool: MySqlPool,
    owner: String,
    /// Lease tokens: unique per claim within the process, and per worker
    /// through the owner's index in the high bits.
    tokens: AtomicU64,
}

impl Baseline {
    pub fn new(pool: MySqlPool, index: u32) -> Self {
        Self {
            pool,
            owner: format!("baseline-{index}"),
            tokens: AtomicU64::new(u64::from(index) << 32),
        }
    }

    pub async fn run(&self, shutdown: CancellationToken) -> anyhow::Result<Decided> {
        let mut total = Decided::default();
        while !shutdown.is_cancelled() {
            total += self.cycle().await?.1;
            // The original's fixed schedule, full batch or not.
            tokio::select! {
                () = shutdown.cancelled() => break,
                () = tokio::time::sleep(POLL) => {}
            }
        }
        Ok(total)
    }

    /// Claims one batch under a lease, then decides its rows one by one.
    pub async fn cycle(&self) -> anyhow::Result<(usize, Decided)> {
        let mut conn = self.pool.acquire().await?;
        let now = db::now(&mut conn).await?;
        let lease = queue::Lease {
            owner: self.owner.clone(),
            token: self.tokens.fetch_add(1, Ordering::Relaxed) + 1,
            until: now + chrono::Duration::from_std(LEASE)?,
        };
        let mut tx = conn.begin().await?;
        let claim = queue::claim(
            &mut tx,
            &lease,
            BATCH,
            queue::DEFAULT_MAX_ATTEMPTS,
            true,
            now,
        )
        .await?;
        tx.commit().await?;
        let mut decided = Decided::default();
        for &id in &claim.ids {
            let mut attempt = 1;
            let report = loop {
                match decide::batch(&mut conn, &[id], lease.token, DEFER_FOR).await {
                    // Rolled back; the same decision may simply run again.
                    Err(e) if e.is_transient() && attempt < 5 => attempt += 1,
                    other => break other?,
                }
            };
            decided += report.decided;
        }
        Ok((claim.ids.len(), decided))
    }
}

#[cfg(test)]
mod tests {
    use ticket_core::domain::{SeatId, UserId};
    use ticket_core::testing::{TestDatabase, seed};

    use super::*;

    /// The baseline is only worth comparing with if it decides what the
    /// worker decides: each seat once, to the first in line.
    #[tokio::test]
    async fn the_baseline_reaches_the_workers_decisions() {
        let (_db, pool) = TestDatabase::migrated().await;
        let mut conn = pool.acquire().await.unwrap();
        let seats = seed::concert(&mut conn, 1, 20).await.unwrap();
        let users = seed::users(&mut conn, "u", 60).await.unwrap();
        let pairs: Vec<(UserId, SeatId)> = users
            .iter()
            .enumerate()
            .map(|(i, u)| (*u, seats[i % seats.len()]))
            .collect();
        seed::requests(&mut conn, &pairs).await.unwrap();

        let baseline = Baseline::new(pool.clone(), 0);
        let mut total = Decided::default();
        let mut cycles = 0;
        loop {
            let (claimed, decided) = baseline.cycle().await.unwrap();
            if claimed == 0 {
                break;
            }
            cycles += 1;
            total += decided;
        }
        assert_eq!((total.succeeded, total.failed), (20, 40), "{total:?}");
        assert_eq!(cycles, 2, "the original's batches of 50");
        // Queue order decides: the first request for each seat won.
        let (wrong, confirmed): (i64, i64) = sqlx::query_as(
            "SELECT (SELECT COUNT(*) FROM reservation_queue q WHERE q.status = 'SUCCESS' \
               AND EXISTS (SELECT 1 FROM reservation_queue e WHERE e.seat_id = q.seat_id AND e.id < q.id)), \
             (SELECT COUNT(*) FROM reservations WHERE status = 'CONFIRMED')",
        )
        .fetch_one(&pool)
        .await
        .unwrap();
        assert_eq!((wrong, confirmed), (0, 20));
        let violations = db::invariants::check(
            &mut conn,
            chrono::Duration::zero(),
            queue::DEFAULT_MAX_ATTEMPTS,
            None,
        )
        .await
        .unwrap();
        assert!(violations.is_empty(), "{violations:?}");
    }
}
