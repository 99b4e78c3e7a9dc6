//! Logging and tracing set-up, done once per process by both binaries.

use std::io::IsTerminal;

use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt;
use tracing_subscriber::prelude::*;

/// Keeps what must be flushed when the process ends; call [`Telemetry::shutdown`].
#[must_use = "call shutdown() before exiting so nothing buffered is lost"]
pub struct Telemetry {
    service: &'static str,
}

/// Installs the global subscriber: `RUST_LOG`-style filtering (default
/// `info`), human-readable lines on stderr.
pub fn init(service: &'static str) -> Telemetry {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    // A second init (tests start many apps in one process) keeps the first.
    let _ = tracing_subscriber::registry()
        .with(filter)
        .with(
            fmt::layer()
                .with_writer(std::io::stderr)
                // Colour codes only for people, not for files and collectors.
                .with_ansi(std::io::stderr().is_terminal()),
        )
        .try_init();
    Telemetry { service }
}

impl Telemetry {
    pub fn shutdown(self) {
        tracing::debug!(service = self.service, "telemetry shut down");
    }
}
