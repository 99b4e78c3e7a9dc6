//! The worker's loop: a cycle after another until shutdown, paced by how
//! much work there is, backing off on errors.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::cycles::Ahead;
use crate::{Worker, random};

/// Pause between cycles while requests keep arriving (but no full batch).
const BUSY_PAUSE: Duration = Duration::from_millis(2);

impl Worker {
    /// Claims and decides until `shutdown` is cancelled. Cancellation is
    /// checked only between cycles, so a batch in progress always finishes.
    /// After a full batch the next claim follows at once, after a partial one
    /// within 2 ms; only an empty queue is polled every poll interval (with
    /// jitter). Errors back off, up to 5 s.
    pub async fn run(&self, shutdown: CancellationToken) {
        let mut failures: u32 = 0;
        let mut prefetched: Option<Ahead> = None;
        tracing::info!(owner = %self.owner, mode = ?self.mode, config = ?self.config(), "worker started");
        while !shutdown.is_cancelled() {
            self.heartbeat.beat();
            let config = self.config();
            let pause = match self.cycle(prefetched.take(), config).await {
                Ok((cycle, next)) => {
                    prefetched = next;
                    if failures > 0 {
                        tracing::info!("worker recovered");
                    }
                    failures = 0;
                    if cycle.claimed > 0 {
                        tracing::debug!(?cycle, "batch decided");
                    }
                    if cycle.claimed >= config.batch_size as usize {
                        continue;
                    } else if cycle.claimed > 0 {
                        // Work is arriving: claim again after a breath, so a
                        // request waits for one short cycle, not a poll interval.
                        BUSY_PAUSE
                    } else {
                        random::jitter(config.poll_interval, 0.2)
                    }
                }
                Err(e) => {
                    failures += 1;
                    if failures == 1 || failures.is_power_of_two() {
                        tracing::warn!(
                            error = format!("{e:#}"),
                            failures,
                            "cycle failed; backing off"
                        );
                    }
                    random::jitter(
                        Duration::from_millis(50 << failures.min(6)).min(Duration::from_secs(5)),
                        0.5,
                    )
                }
            };
            tokio::select! {
                () = shutdown.cancelled() => break,
                () = tokio::time::sleep(pause) => {}
            }
        }
        // Rows claimed ahead are ours: decide them rather than leave them to
        // wait out their lease, or another worker to claim them again.
        match prefetched {
            Some(Ahead::Leased(batch)) => {
                if let Err(e) = self.decide(&batch).await {
                    tracing::warn!(error = %e, "could not decide the rows claimed ahead; their lease will expire");
                }
            }
            Some(Ahead::InDecision(claimed)) => {
                if let Err(e) = self.decide_in_claim(claimed).await {
                    tracing::warn!(error = %e, "could not decide the rows claimed ahead; they are open again");
                }
            }
            None => {}
        }
        tracing::info!("worker stopped");
    }
}
