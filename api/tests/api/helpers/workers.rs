//! Deciding what a test queued: real workers over the test's database.

use std::time::Duration;

use ticket_worker::{Mode, Worker, WorkerConfig};
use tokio_util::sync::CancellationToken;

use super::*;

impl TestApp {
    /// Runs `n` worker loops until the queue has nothing open, then stops them.
    pub async fn run_workers_until_drained(&self, n: usize) {
        let shutdown = CancellationToken::new();
        let workers: Vec<_> = (0..n)
            .map(|i| {
                let worker =
                    self.worker(&format!("w{i}"), Mode::Batch, 100, Duration::from_secs(30));
                let shutdown = shutdown.clone();
                tokio::spawn(async move { worker.run(shutdown).await })
            })
            .collect();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        loop {
            let counts = self.queue_counts().await;
            if ["WAITING", "PENDING", "PROCESSING"]
                .iter()
                .map(|s| counts.get(*s).copied().unwrap_or(0))
                .sum::<i64>()
                == 0
            {
                break;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "queue not drained: {counts:?}"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        shutdown.cancel();
        for w in workers {
            w.await.unwrap();
        }
    }

    /// A worker on this app's database with a fixed configuration.
    pub fn worker(&self, name: &str, mode: Mode, batch_size: u32, lease: Duration) -> Worker {
        let config = WorkerConfig {
            batch_size,
            poll_interval: Duration::from_millis(5),
            lease,
            max_attempts: WorkerConfig::DEFAULT_MAX_ATTEMPTS,
        };
        Worker::with_config(self.pool.clone(), name, mode, config)
    }

    /// Decides everything queued, one batch at a time.
    pub async fn drain(&self) {
        let worker = self.worker("drain", Mode::Batch, 1000, Duration::from_secs(30));
        while worker
            .process_once()
            .await
            .expect("worker cycle failed")
            .claimed
            > 0
        {}
    }
}

/// Two offering workers that start at `barrier` and make ten passes each,
/// yielding between them: the waiting lists' side of a race.
pub fn racing_offers(
    pool: &sqlx::MySqlPool,
    barrier: &std::sync::Arc<tokio::sync::Barrier>,
) -> Vec<tokio::task::JoinHandle<()>> {
    (0..2)
        .map(|_| {
            let (pool, barrier) = (pool.clone(), barrier.clone());
            tokio::spawn(async move {
                let offers = ticket_worker::waiting_list::Offers::new(pool);
                barrier.wait().await;
                for _ in 0..10 {
                    offers.offer_once().await.unwrap();
                    tokio::task::yield_now().await;
                }
            })
        })
        .collect()
}

impl TestApp {
    /// A cancel among a score of writers at once on the suite's two shared
    /// cores, where a lock wait can outlast the 5 s budget: the API then
    /// answers 503 DATABASE_UNAVAILABLE, having changed nothing, and a
    /// client tries again as its Retry-After says. What is tested is where
    /// the seats go, not the budget.
    pub async fn cancel_under_load(&self, token: &str, reservation: u64) {
        for _ in 0..3 {
            let reply = self
                .post(
                    &format!("/api/reservations/{reservation}/cancel"),
                    Some(token),
                    serde_json::json!({}),
                )
                .await;
            if reply.status.as_u16() == 503 {
                reply.assert_problem(503, "DATABASE_UNAVAILABLE");
                continue;
            }
            reply.assert_status(200);
            return;
        }
        panic!("the cancel of {reservation} was refused three times as unavailable");
    }
}
