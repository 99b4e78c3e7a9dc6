//! Logs and traces, set up once per process by both binaries.
//!
//! Traces follow the standard OpenTelemetry variables: spans are exported
//! with OTLP when `OTEL_EXPORTER_OTLP_ENDPOINT` (or `..._TRACES_ENDPOINT`) is
//! set, over `OTEL_EXPORTER_OTLP_PROTOCOL` (`http/protobuf` by default,
//! `http/json` or `grpc`), as `OTEL_SERVICE_NAME`, sampled by
//! `OTEL_TRACES_SAMPLER(_ARG)` (default: the caller's decision, else 10 % of
//! new traces; see [`sampler`]). Without an endpoint spans still carry trace
//! ids (into logs and onto queue rows) but nothing is exported.
//! `OTEL_SDK_DISABLED=true` turns tracing off altogether.

mod logs;
pub mod propagation;
pub mod sampler;
pub mod spans;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::{SdkTracerProvider, TracerProviderBuilder};
use tracing_subscriber::filter::{EnvFilter, LevelFilter, Targets};
use tracing_subscriber::prelude::*;

pub use logs::LogFormat;

/// The instrumentation scope of every span the system makes itself.
pub const SCOPE: &str = "ticket";

/// Most links one span keeps: the largest worker batch.
pub const MAX_LINKS: u32 = 10_000;

/// Keeps the tracer provider; call [`Telemetry::shutdown`] before exiting so
/// that buffered spans are flushed.
#[must_use = "call shutdown() before exiting so that buffered spans are exported"]
pub struct Telemetry {
    provider: Option<SdkTracerProvider>,
}

/// Installs logging and tracing for the process: `RUST_LOG`-style log
/// filtering (default `info`), logs on stderr in [`LogFormat::from_env`],
/// and spans exported as the `OTEL_*` variables say.
pub fn init(service: &'static str) -> Telemetry {
    crate::tls::install_crypto_provider();
    if env_flag("OTEL_SDK_DISABLED") {
        // No spans at all (the baseline of the tracing-overhead benchmark).
        return install(service, None);
    }
    let (exporter, problem) = match otlp_exporter() {
        Ok(exporter) => (exporter, None),
        Err(e) => (None, Some(e)),
    };
    let builder = SdkTracerProvider::builder();
    let telemetry = install(
        service,
        Some(match exporter {
            Some(exporter) => builder.with_batch_exporter(exporter),
            None => builder,
        }),
    );
    if let Some(e) = problem {
        tracing::error!(error = %e, "OTLP exporter not configured; spans are not exported");
    }
    telemetry
}

/// Like [`init`], exporting every span at once to `exporter` (tests).
#[cfg(feature = "testing")]
pub fn init_with_exporter(
    service: &'static str,
    exporter: impl opentelemetry_sdk::trace::SpanExporter + 'static,
) -> Telemetry {
    crate::tls::install_crypto_provider();
    install(
        service,
        Some(SdkTracerProvider::builder().with_simple_exporter(exporter)),
    )
}

fn env_flag(name: &str) -> bool {
    std::env::var(name).is_ok_and(|v| v.trim().eq_ignore_ascii_case("true"))
}

fn install(service: &'static str, builder: Option<TracerProviderBuilder>) -> Telemetry {
    let provider = builder.map(|builder| provider(service, builder));
    // Spans are traced whatever the log level: our own at INFO and above,
    // other crates' only at WARN.
    let otel = provider.as_ref().map(|provider| {
        let span_filter = Targets::new()
            .with_target("ticket_core", LevelFilter::INFO)
            .with_target("ticket_api", LevelFilter::INFO)
            .with_target("ticket_worker", LevelFilter::INFO)
            .with_default(LevelFilter::WARN);
        tracing_opentelemetry::layer()
            .with_tracer(provider.tracer(SCOPE))
            .with_tracked_inactivity(false)
            // Nothing reads OpenTelemetry's thread-local current context (spans
            // take their parent explicitly), and activating it on every poll of
            // every instrumented future cost the hot paths measurably.
            .with_context_activation(false)
            .with_threads(false)
            .with_location(false)
            .with_filter(span_filter)
    });
    let log_filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let logs = logs::layer(LogFormat::from_env()).with_filter(log_filter);
    // A second init (tests start many apps in one process) keeps the first.
    let _ = tracing_subscriber::registry()
        .with(otel)
        .with(logs)
        .try_init();
    Telemetry { provider }
}

/// The tracer provider, installed globally with the W3C propagator.
fn provider(service: &'static str, builder: TracerProviderBuilder) -> SdkTracerProvider {
    // OTEL_SERVICE_NAME, when set, wins over the binary's own name.
    let resource = match std::env::var("OTEL_SERVICE_NAME") {
        Ok(name) if !name.is_empty() => Resource::builder(),
        _ => Resource::builder().with_service_name(service),
    }
    .with_attribute(opentelemetry::KeyValue::new(
        "service.version",
        env!("CARGO_PKG_VERSION"),
    ))
    .build();
    let (sampler, problem) = sampler::LinkAware::from_env();
    if let Some(problem) = problem {
        // Logging is not set up yet.
        eprintln!("ticket telemetry: {problem}");
    }
    let provider = builder
        .with_sampler(sampler)
        .with_resource(resource)
        // A worker's receive span links to every row of its batch (up to
        // 10,000), past the default limit of 128 links.
        .with_max_links_per_span(MAX_LINKS)
        .build();
    opentelemetry::global::set_text_map_propagator(
        opentelemetry_sdk::propagation::TraceContextPropagator::new(),
    );
    opentelemetry::global::set_tracer_provider(provider.clone());
    provider
}

/// The OTLP span exporter the environment asks for, if any.
fn otlp_exporter() -> anyhow::Result<Option<opentelemetry_otlp::SpanExporter>> {
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
    let disabled = var("OTEL_TRACES_EXPORTER").is_some_and(|v| v.eq_ignore_ascii_case("none"));
    let endpoint = var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").or(var("OTEL_EXPORTER_OTLP_ENDPOINT"));
    if disabled || endpoint.is_none() {
        return Ok(None);
    }
    let protocol = var("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
        .or(var("OTEL_EXPORTER_OTLP_PROTOCOL"))
        .unwrap_or_else(|| "http/protobuf".to_owned());
    use opentelemetry_otlp::SpanExporter;
    let exporter = match protocol.as_str() {
        // The exporter reads the endpoint, headers, timeout and compression
        // from the same variables.
        "grpc" => SpanExporter::builder().with_tonic().build()?,
        "http/protobuf" | "http/json" => SpanExporter::builder().with_http().build()?,
        other => anyhow::bail!(
            "OTEL_EXPORTER_OTLP_PROTOCOL={other:?}: expected grpc, http/protobuf or http/json"
        ),
    };
    Ok(Some(exporter))
}

impl Telemetry {
    /// Exports what is still buffered (waiting at most a few seconds for the
    /// collector) and stops the exporter.
    pub fn shutdown(self) {
        if let Some(provider) = self.provider
            && let Err(e) = provider.shutdown_with_timeout(std::time::Duration::from_secs(5))
        {
            tracing::warn!(error = %e, "flushing spans at shutdown failed");
        }
    }
}
