//! What the API measures, registered once per process.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::http::StatusCode;
use prometheus::{HistogramVec, IntCounter, IntCounterVec, IntGauge, IntGaugeVec, Registry};
use ticket_core::metrics::{self, PoolGauges};

pub struct ApiMetrics {
    registry: Registry,
    requests: IntCounterVec,
    duration: HistogramVec,
    pool: PoolGauges,
    /// Queries of the line watch (positions and streams).
    pub line_queries: IntCounter,
    pub event_streams: IntGauge,
    /// Reads of the seat availability (at most one per second and concert).
    pub availability_queries: IntCounter,
    /// Scans at the door, by outcome.
    pub check_ins: IntCounterVec,
    signals: SignalGauges,
}

/// What the alerts read from the database (`db::signals`), at scrape time.
struct SignalGauges {
    oldest_open_request: IntGauge,
    holds_overdue: IntGauge,
    server_connections: IntGauge,
    server_max_connections: IntGauge,
    /// By concert and state (free, held, sold), for the concerts on sale.
    seats: IntGaugeVec,
    /// Reads of these from the database (one per SIGNALS_MAX_AGE at most).
    reads: IntCounter,
    /// When they were last read; held while a read runs, so that
    /// concurrent scrapes wait for it instead of reading again.
    last_read: tokio::sync::Mutex<Option<Instant>>,
}

/// Concerts whose seats the scrape counts: those whose sale opened last.
const SEATS_CONCERTS: u32 = 20;

/// How long the database's signals serve every scrape of this instance
/// before they are read again: anyone who can reach `/metrics` on the
/// public port could otherwise make it run five statements per request.
const SIGNALS_MAX_AGE: Duration = Duration::from_secs(1);

/// Longest a scrape waits for the database's signals; on failure or
/// timeout the last values stay (the 503 alert tells of a database away).
const SIGNALS_TIMEOUT: Duration = Duration::from_secs(2);

/// Every outcome a scan is counted under (each is listed from the start).
pub const CHECK_IN_OUTCOMES: [&str; 6] = [
    "ADMITTED",
    "ALREADY_CHECKED_IN",
    "TICKET_VOID",
    "TICKET_INVALID",
    "CONFLICT",
    "VOID",
];

impl ApiMetrics {
    pub fn new() -> Arc<Self> {
        let registry = Registry::new();
        let labels = &["method", "route", "status"];
        Arc::new(Self {
            requests: metrics::counter_vec(
                &registry,
                "http_server_requests_total",
                "HTTP requests answered, by method, route template and status",
                labels,
            ),
            duration: metrics::histogram_vec(
                &registry,
                "http_server_request_duration_seconds",
                "Time to answer an HTTP request, by method, route template and status",
                metrics::LATENCY_BUCKETS,
                labels,
            ),
            pool: PoolGauges::new(&registry),
            line_queries: metrics::counter(
                &registry,
                "ticket_api_line_queries_total",
                "Database queries made to follow the lines (positions, decisions of open streams)",
            ),
            event_streams: metrics::gauge(
                &registry,
                "ticket_api_status_streams",
                "Open requests followed by event streams on this instance",
            ),
            availability_queries: metrics::counter(
                &registry,
                "ticket_api_availability_queries_total",
                "Database reads of seat availability begun (at most one per second and concert)",
            ),
            check_ins: {
                let scans = metrics::counter_vec(
                    &registry,
                    "ticket_api_check_ins_total",
                    "Tickets scanned at the door, by outcome (CONFLICT: an offline scanner let someone in on a ticket admitted before; VOID: on a cancelled one)",
                    &["outcome"],
                );
                for outcome in CHECK_IN_OUTCOMES {
                    scans.with_label_values(&[outcome]);
                }
                scans
            },
            signals: SignalGauges {
                oldest_open_request: metrics::gauge(
                    &registry,
                    "ticket_oldest_open_request_seconds",
                    "How long the oldest open request has waited for its decision, from its arrival or its sale's opening, on the database's clock (0: nobody waits)",
                ),
                holds_overdue: metrics::gauge(
                    &registry,
                    "ticket_holds_overdue_seconds",
                    "How long ago the most overdue hold still written HELD ended (0: none; the expiry sweep looks every second)",
                ),
                server_connections: metrics::gauge(
                    &registry,
                    "ticket_db_server_connections",
                    "Connections open on the database server (Threads_connected), all clients",
                ),
                server_max_connections: metrics::gauge(
                    &registry,
                    "ticket_db_server_max_connections",
                    "The database server's max_connections",
                ),
                seats: metrics::gauge_vec(
                    &registry,
                    "ticket_seats",
                    "Seats by state (free, held, sold) of the 20 concerts on sale whose sale opened last",
                    &["concert", "state"],
                ),
                reads: metrics::counter(
                    &registry,
                    "ticket_api_signal_reads_total",
                    "Reads of the database signals above (at most one a second per instance, whatever the scrapes)",
                ),
                last_read: tokio::sync::Mutex::new(None),
            },
            registry,
        })
    }
}

impl ApiMetrics {
    pub(crate) fn count(
        &self,
        method: &str,
        route: Option<&str>,
        status: StatusCode,
        started: Instant,
    ) {
        let labels = [method, route.unwrap_or("unmatched"), status.as_str()];
        self.requests.with_label_values(&labels).inc();
        self.duration
            .with_label_values(&labels)
            .observe(started.elapsed().as_secs_f64());
    }
}

impl SignalGauges {
    /// Only the concerts counted now: one whose sale ended drops out.
    fn show_seats(&self, seats: &[ticket_core::db::signals::SeatCounts]) {
        self.seats.reset();
        for concert in seats {
            let id = concert.concert_id.to_string();
            for (state, count) in [
                ("free", concert.free),
                ("held", concert.held),
                ("sold", concert.sold),
            ] {
                self.seats
                    .with_label_values(&[id.as_str(), state])
                    .set(count);
            }
        }
    }
}

impl ApiMetrics {
    /// Everything measured, in Prometheus text format, the pool's gauges
    /// brought up to date first.
    pub async fn render(&self, pool: &sqlx::MySqlPool) -> String {
        self.read_signals(pool).await;
        self.pool.update(pool);
        metrics::render(&self.registry)
    }

    /// The database's signals into their gauges, unless read less than
    /// SIGNALS_MAX_AGE ago (a failed read counts: a database away is not
    /// asked again by every scrape).
    async fn read_signals(&self, pool: &sqlx::MySqlPool) {
        let mut last_read = self.signals.last_read.lock().await;
        if last_read.is_some_and(|at| at.elapsed() < SIGNALS_MAX_AGE) {
            return;
        }
        *last_read = Some(Instant::now());
        self.signals.reads.inc();
        let read = tokio::time::timeout(SIGNALS_TIMEOUT, async {
            let mut conn = pool.acquire().await?;
            let signals = ticket_core::db::signals::read(&mut conn).await?;
            let seats = ticket_core::db::signals::seats_on_sale(&mut conn, SEATS_CONCERTS).await?;
            Ok::<_, sqlx::Error>((signals, seats))
        })
        .await;
        match read {
            Ok(Ok((signals, seats))) => {
                self.signals.show_seats(&seats);
                let gauges = &self.signals;
                gauges
                    .oldest_open_request
                    .set(signals.oldest_open_request_seconds);
                gauges.holds_overdue.set(signals.holds_overdue_seconds);
                gauges.server_connections.set(signals.server_connections);
                gauges
                    .server_max_connections
                    .set(signals.server_max_connections);
            }
            Ok(Err(e)) => tracing::warn!(error = %e, "database signals not read"),
            Err(_) => tracing::warn!("database signals not read in time"),
        }
    }
}
