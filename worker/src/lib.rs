//! The reservation queue worker. Any number of them run side by side with no
//! coordinator: each claims rows with `FOR UPDATE SKIP LOCKED` under a lease,
//! decides them, and fences every write with the lease token.

pub mod cancellation;
pub mod config;
mod cycles;
pub mod decide;
mod errands;
mod every;
pub mod health;
pub mod holds;
pub mod live_config;
pub mod mail;
pub mod observability;
pub mod opening;
mod passes;
pub mod payments;
mod random;
pub mod rates;
pub mod relay;
pub mod retention;
mod run_loop;
mod set_aside;
pub mod waiting_list;

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use sqlx::MySqlPool;
use ticket_core::db::kept::KeptConnections;
use tokio::sync::watch;

pub use config::{Cli, Mode, WorkerConfig};
pub use cycles::{ClaimedBatch, Cycle};
pub use decide::{DecideError, Decided};
pub use observability::WorkerMetrics;

/// How often a claim looks for rows whose lease ran out: a crashed worker's
/// rows wait at most this much longer than their lease.
const EXPIRED_LOOK_EVERY: Duration = Duration::from_secs(1);

pub struct Worker {
    pool: MySqlPool,
    /// One for claiming, one for deciding (they overlap).
    connections: KeptConnections,
    heartbeat: health::Heartbeat,
    owner: String,
    mode: Mode,
    config: watch::Receiver<WorkerConfig>,
    metrics: Arc<WorkerMetrics>,
    /// Claims look for expired leases now and then.
    expired_look: every::Every,
    /// Sales that have opened are looked for now and then.
    opening_look: every::Every,
    rates: rates::DecisionRates,
    publishing: every::Every,
    /// Rows failed for a reason in them: the next cycle claims under a
    /// lease, so that their batch can be split and their attempts counted.
    careful: AtomicBool,
}

impl Worker {
    /// `config` is read before every cycle, so a new value applies from the
    /// next batch on without a restart.
    pub fn new(
        pool: MySqlPool,
        owner: impl Into<String>,
        mode: Mode,
        config: watch::Receiver<WorkerConfig>,
    ) -> Self {
        // A worker that was just made is not stuck: its heartbeat starts now.
        let heartbeat = health::Heartbeat::default();
        heartbeat.beat();
        Self {
            connections: KeptConnections::new(pool.clone(), 2),
            pool,
            heartbeat,
            owner: owner.into(),
            mode,
            config,
            metrics: WorkerMetrics::new(),
            expired_look: every::Every::new(EXPIRED_LOOK_EVERY),
            opening_look: every::Every::new(opening::LOOK_EVERY),
            rates: rates::DecisionRates::default(),
            publishing: every::Every::new(rates::PUBLISH_EVERY),
            careful: AtomicBool::new(false),
        }
    }

    /// A worker with a fixed configuration.
    pub fn with_config(
        pool: MySqlPool,
        owner: impl Into<String>,
        mode: Mode,
        config: WorkerConfig,
    ) -> Self {
        let (sender, receiver) = watch::channel(config);
        // Nobody will change it; the receiver keeps the last value anyway.
        drop(sender);
        Self::new(pool, owner, mode, receiver)
    }

    /// Beaten on every turn of the claim loop (for the liveness endpoint).
    pub fn heartbeat(&self) -> health::Heartbeat {
        self.heartbeat.clone()
    }

    /// What `/metrics` serves.
    pub fn metrics(&self) -> Arc<WorkerMetrics> {
        self.metrics.clone()
    }

    pub fn config(&self) -> WorkerConfig {
        *self.config.borrow()
    }
}
