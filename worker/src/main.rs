use anyhow::Context;
use clap::Parser;
use ticket_core::telemetry;
use ticket_worker::{Cli, Worker};
use tokio_util::sync::CancellationToken;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let telemetry = telemetry::init("ticket-worker");
    let result = run(cli).await;
    if let Err(e) = &result {
        tracing::error!(error = format!("{e:#}"), "ticket-worker failed");
    }
    telemetry.shutdown();
    result
}

async fn run(cli: Cli) -> anyhow::Result<()> {
    let pool = cli.database.lazy_pool().context("invalid DATABASE_URL")?;
    let shutdown = CancellationToken::new();
    tokio::spawn({
        let shutdown = shutdown.clone();
        async move {
            ticket_core::shutdown::signal().await;
            shutdown.cancel();
        }
    });
    let worker = Worker::with_config(pool, cli.owner(), cli.mode, cli.worker_config());
    let listener = tokio::net::TcpListener::bind(cli.health_addr)
        .await
        .with_context(|| format!("binding {}", cli.health_addr))?;
    tracing::info!(addr = %listener.local_addr()?, "health endpoint listening");
    let health = ticket_worker::health::router(worker.heartbeat());
    let health_shutdown = shutdown.clone();
    let server = tokio::spawn(async move {
        axum::serve(listener, health)
            .with_graceful_shutdown(async move { health_shutdown.cancelled().await })
            .await
    });
    worker.run(shutdown).await;
    server.await??;
    Ok(())
}
