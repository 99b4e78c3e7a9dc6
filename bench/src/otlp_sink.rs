//! A stand-in OpenTelemetry collector for the tracing-overhead benchmark:
//! accepts OTLP/HTTP trace exports, counts them, keeps nothing.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use axum::body::Bytes;
use axum::routing::post;

#[derive(clap::Args)]
pub struct Args {
    #[arg(long, default_value = "127.0.0.1:4318")]
    addr: SocketAddr,
}

pub async fn run(args: Args) -> anyhow::Result<()> {
    let requests = Arc::new(AtomicU64::new(0));
    let bytes = Arc::new(AtomicU64::new(0));
    let app = axum::Router::new().route(
        "/v1/traces",
        post({
            let (requests, bytes) = (requests.clone(), bytes.clone());
            move |body: Bytes| async move {
                requests.fetch_add(1, Ordering::Relaxed);
                bytes.fetch_add(body.len() as u64, Ordering::Relaxed);
                // An empty ExportTraceServiceResponse.
                (
                    [("content-type", "application/x-protobuf")],
                    Vec::<u8>::new(),
                )
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind(args.addr).await?;
    axum::serve(listener, app)
        .with_graceful_shutdown(ticket_core::shutdown::signal())
        .await?;
    println!(
        "otlp sink: {} exports, {} bytes",
        requests.load(Ordering::Relaxed),
        bytes.load(Ordering::Relaxed)
    );
    Ok(())
}
