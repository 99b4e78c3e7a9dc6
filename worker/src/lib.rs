//! The reservation queue worker. Until the reservation pipeline lands this is
//! its skeleton: configuration, database connection and a shutdown-aware loop
//! that the claim/decide cycle will run inside.

use std::time::Duration;

use clap::Parser;
use sqlx::MySqlPool;
use ticket_core::config::DatabaseArgs;
use ticket_core::db;
use tokio_util::sync::CancellationToken;

#[derive(Debug, Parser)]
#[command(
    name = "ticket-worker",
    version,
    about = "Reservation queue worker of the ticket reservation system"
)]
pub struct Cli {
    #[command(flatten)]
    pub database: DatabaseArgs,

    /// How long to wait between polls of an idle queue (ms).
    #[arg(long, env = "TICKET_WORKER_POLL_INTERVAL_MS", default_value_t = 50)]
    pub poll_interval_ms: u64,
}

/// Runs until `shutdown` is cancelled. The loop checks the token only between
/// iterations, so a batch in progress always finishes.
pub async fn run(
    pool: MySqlPool,
    poll_interval: Duration,
    shutdown: CancellationToken,
) -> anyhow::Result<()> {
    let mut database_was_up = None;
    loop {
        let up = db::ping(&pool).await.is_ok();
        if database_was_up != Some(up) {
            if up {
                tracing::info!("database reachable; waiting for work");
            } else {
                tracing::warn!("database unreachable; will keep trying");
            }
            database_was_up = Some(up);
        }
        tokio::select! {
            () = shutdown.cancelled() => break,
            () = tokio::time::sleep(poll_interval) => {}
        }
    }
    tracing::info!("worker stopped");
    Ok(())
}
