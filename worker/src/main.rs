use anyhow::Context;
use clap::Parser;
use ticket_core::telemetry;
use ticket_worker::{Cli, Worker, live_config};
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
    let pool = cli.database.lazy_pool()?;
    let shutdown = CancellationToken::new();
    tokio::spawn({
        let shutdown = shutdown.clone();
        async move {
            ticket_core::shutdown::signal().await;
            shutdown.cancel();
        }
    });
    let (config, updates) = tokio::sync::watch::channel(cli.worker_config());
    if let Some(name) = cli.configmap.clone() {
        watch_configmap_in_background(
            name,
            cli.namespace.clone(),
            cli.owner(),
            config,
            shutdown.clone(),
        )
        .await;
    }
    let worker = Worker::new(pool.clone(), cli.owner(), cli.mode, updates);
    let listener = tokio::net::TcpListener::bind(cli.health_addr)
        .await
        .with_context(|| format!("binding {}", cli.health_addr))?;
    tracing::info!(addr = %listener.local_addr()?, "health endpoint listening (and /metrics)");
    let health =
        ticket_worker::observability::router(worker.heartbeat(), worker.metrics(), pool.clone());
    let health_shutdown = shutdown.clone();
    let server = tokio::spawn(async move {
        axum::serve(listener, health)
            .with_graceful_shutdown(async move { health_shutdown.cancelled().await })
            .await
    });
    let mail = cli.mail()?;
    let sweeper = tokio::spawn(
        ticket_worker::retention::Sweeper::new(pool.clone(), cli.retention(mail.is_some()))
            .counted_in(worker.metrics())
            .run(shutdown.clone()),
    );
    let relay = match cli.webhook()? {
        Some(config) => {
            let relay = ticket_worker::relay::Relay::new(pool.clone(), config)?
                .counted_in(worker.metrics());
            Some(tokio::spawn(relay.run(shutdown.clone())))
        }
        None => {
            tracing::info!("no TICKET_WEBHOOK_URL: events are kept for the retention period only");
            None
        }
    };
    let mail = match mail {
        Some(config) => {
            let relay = ticket_worker::mail::MailRelay::new(pool.clone(), config)?
                .counted_in(worker.metrics());
            Some(tokio::spawn(relay.run(shutdown.clone())))
        }
        None => {
            tracing::info!("no TICKET_SMTP_URL: no mail is sent");
            None
        }
    };
    let expiry = tokio::spawn(
        ticket_worker::holds::HoldSweeper::new(pool.clone())
            .counted_in(worker.metrics())
            .run(shutdown.clone()),
    );
    let cancellations = tokio::spawn(
        ticket_worker::cancellation::Cancellations::new(pool.clone()).run(shutdown.clone()),
    );
    let offers = tokio::spawn(
        ticket_worker::waiting_list::Offers::new(pool.clone())
            .counted_in(worker.metrics())
            .run(shutdown.clone()),
    );
    let money = match cli.stripe.client()? {
        Some(client) => Some(tokio::spawn(
            ticket_worker::payments::Money::new(pool.clone(), client).run(shutdown.clone()),
        )),
        None => {
            tracing::info!("no TICKET_STRIPE_SECRET_KEY: no payments to look after");
            None
        }
    };
    worker.run(shutdown).await;
    sweeper.await?;
    expiry.await?;
    offers.await?;
    cancellations.await?;
    for relay in [relay, mail, money].into_iter().flatten() {
        relay.await?;
    }
    server.await??;
    Ok(())
}

/// Starts watching the worker's ConfigMap. Without a reachable Kubernetes API
/// the worker still runs, on the settings it started with.
async fn watch_configmap_in_background(
    name: String,
    namespace: Option<String>,
    pod: String,
    config: tokio::sync::watch::Sender<ticket_worker::WorkerConfig>,
    shutdown: CancellationToken,
) {
    let client = match kube::Client::try_default().await {
        Ok(client) => client,
        Err(e) => {
            tracing::error!(error = %e, configmap = %name, "no Kubernetes API; the worker settings stay fixed");
            return;
        }
    };
    let namespace = namespace.unwrap_or_else(|| client.default_namespace().to_owned());
    let events = live_config::EventTarget::for_pod(client.clone(), &namespace, &pod);
    tracing::info!(configmap = %name, %namespace, "watching the worker ConfigMap");
    tokio::spawn(async move {
        live_config::watch_configmap(client, &namespace, &name, config, Some(events), shutdown)
            .await;
    });
}
