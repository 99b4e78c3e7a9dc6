//! Prometheus metrics. Each process keeps one registry (no global one, so
//! that tests running many apps in one process count separately) and serves
//! it at `/metrics` in the Prometheus text format. Labels are low-cardinality
//! by construction: route templates, status codes, fixed outcome names.

use prometheus::{
    Encoder as _, Histogram, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge,
    IntGaugeVec, Opts, Registry, TextEncoder,
};
use sqlx::MySqlPool;

/// Content type of [`render`]'s output.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Latency buckets from 1 ms to 30 s.
pub const LATENCY_BUCKETS: &[f64] = &[
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
];

/// The registry's metrics in the Prometheus text format.
pub fn render(registry: &Registry) -> String {
    let mut out = Vec::new();
    // Encoding into memory fails only for malformed metric families, which
    // registration already rejects.
    let _ = TextEncoder::new().encode(&registry.gather(), &mut out);
    String::from_utf8(out).unwrap_or_default()
}

/// Metric definitions are constants: one that fails to build is a bug that
/// every test of the binary hits at once, not a runtime condition.
fn defined<C: prometheus::core::Collector + Clone + 'static>(
    registry: &Registry,
    built: prometheus::Result<C>,
) -> C {
    match built {
        Ok(collector) => {
            if let Err(e) = registry.register(Box::new(collector.clone())) {
                tracing::error!(error = %e, "metric registered twice");
            }
            collector
        }
        Err(e) => panic!("invalid metric definition: {e}"),
    }
}

pub fn counter(registry: &Registry, name: &str, help: &str) -> IntCounter {
    defined(registry, IntCounter::new(name, help))
}

pub fn counter_vec(registry: &Registry, name: &str, help: &str, labels: &[&str]) -> IntCounterVec {
    defined(registry, IntCounterVec::new(Opts::new(name, help), labels))
}

pub fn gauge(registry: &Registry, name: &str, help: &str) -> IntGauge {
    defined(registry, IntGauge::new(name, help))
}

pub fn gauge_vec(registry: &Registry, name: &str, help: &str, labels: &[&str]) -> IntGaugeVec {
    defined(registry, IntGaugeVec::new(Opts::new(name, help), labels))
}

pub fn histogram(registry: &Registry, name: &str, help: &str, buckets: &[f64]) -> Histogram {
    defined(
        registry,
        Histogram::with_opts(HistogramOpts::new(name, help).buckets(buckets.to_vec())),
    )
}

pub fn histogram_vec(
    registry: &Registry,
    name: &str,
    help: &str,
    buckets: &[f64],
    labels: &[&str],
) -> HistogramVec {
    defined(
        registry,
        HistogramVec::new(
            HistogramOpts::new(name, help).buckets(buckets.to_vec()),
            labels,
        ),
    )
}

/// Database connection pool usage, read when scraped.
#[derive(Clone)]
pub struct PoolGauges {
    connections: IntGaugeVec,
    max: IntGauge,
}

impl PoolGauges {
    pub fn new(registry: &Registry) -> Self {
        Self {
            connections: gauge_vec(
                registry,
                "ticket_db_pool_connections",
                "Open database connections by state (idle, used)",
                &["state"],
            ),
            max: gauge(
                registry,
                "ticket_db_pool_max_connections",
                "Largest size of the database connection pool",
            ),
        }
    }

    pub fn update(&self, pool: &MySqlPool) {
        let size = i64::from(pool.size());
        let idle = i64::try_from(pool.num_idle()).unwrap_or(i64::MAX);
        self.connections.with_label_values(&["idle"]).set(idle);
        self.connections
            .with_label_values(&["used"])
            .set((size - idle).max(0));
        self.max
            .set(i64::from(pool.options().get_max_connections()));
    }
}
