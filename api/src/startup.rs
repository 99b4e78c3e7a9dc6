//! Building and running the HTTP server.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use ticket_core::domain::ticket_code::TicketKeys;

use anyhow::Context;
use sqlx::MySqlPool;
use ticket_core::domain::{NickName, Password};
use tokio::net::TcpListener;

use crate::accounts::security::{PasswordHasher, Revocations, TokenKeys};
use crate::middleware::limits::{LimitSettings, Limits};
use crate::reservations::enqueue_batcher::EnqueueBatcher;
use crate::routes;
use crate::state::AppState;

/// Everything the server needs, already validated.
pub struct Settings {
    pub addr: SocketAddr,
    /// A port of its own for `/metrics`; `None` serves it on `addr`.
    pub metrics_addr: Option<SocketAddr>,
    pub auth_secret: Vec<u8>,
    pub token_ttl: Duration,
    pub admin: Option<(NickName, Password)>,
    pub max_concurrent_hashes: usize,
    pub limits: LimitSettings,
    /// Groups of reservation requests written at the same time.
    pub enqueue_writers: usize,
    /// Where the client's address is found behind proxies.
    pub client_address_header: Option<crate::extract::ProxyHeader>,
    /// Longest a connection may take to send a request's headers (and an
    /// idle keep-alive connection stays open).
    pub header_read_timeout: Duration,
    /// Longest a request may take after its headers, body included.
    pub request_timeout: Duration,
    /// The keys ticket codes are signed with (`TICKET_CODE_KEYS`); without
    /// them the ticket routes answer 503 TICKETS_UNAVAILABLE.
    pub ticket_keys: Option<TicketKeys>,
    /// Stripe (`TICKET_STRIPE_*`); without it a fan confirms a hold as
    /// before and `POST …/payment` answers 503 PAYMENTS_UNAVAILABLE.
    pub stripe: Option<ticket_core::payments::Stripe>,
    /// The zone of a concert created without one (`TICKET_TIME_ZONE`).
    pub time_zone: ticket_core::domain::VenueTimeZone,
}

pub struct Application {
    listener: TcpListener,
    metrics_listener: Option<TcpListener>,
    state: AppState,
    header_read_timeout: Duration,
    request_timeout: Duration,
}

impl Application {
    /// Binds the listener and prepares the state; with `settings.admin`,
    /// creates or updates that admin account first.
    pub async fn build(settings: Settings, pool: MySqlPool) -> anyhow::Result<Self> {
        let tokens = TokenKeys::new(&settings.auth_secret, settings.token_ttl)?;
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        // Each permit keeps a 19 MiB working area: the default stays within
        // the pod's memory whatever the node's core count.
        let hashes = match settings.max_concurrent_hashes {
            0 => cores.min(4),
            n => n,
        };
        let passwords = PasswordHasher::new(hashes)?;
        if let Some((nickname, password)) = &settings.admin {
            crate::accounts::bootstrap::admin(&pool, &passwords, nickname, password).await?;
            tracing::info!(nickname = nickname.as_str(), "admin account ready");
        }
        let listener =
            listen(settings.addr).with_context(|| format!("binding {}", settings.addr))?;
        let metrics_listener = settings
            .metrics_addr
            .map(|addr| listen(addr).with_context(|| format!("binding {addr} for metrics")))
            .transpose()?;
        let metrics = crate::middleware::metrics::ApiMetrics::new();
        let line = Arc::new(crate::reservations::line_watch::LineWatch::new(
            pool.clone(),
            metrics.line_queries.clone(),
            metrics.event_streams.clone(),
        ));
        Ok(Self {
            listener,
            metrics_listener,
            header_read_timeout: settings.header_read_timeout,
            request_timeout: settings.request_timeout,
            state: AppState::new(crate::state::Shared {
                enqueuer: EnqueueBatcher::start(
                    pool.clone(),
                    settings.limits.max_open_requests_per_user,
                    settings.enqueue_writers,
                ),
                pool,
                challenges: Arc::new(crate::proof_of_work::Challenges::new(&settings.auth_secret)),
                seats: Arc::default(),
                sales: Arc::default(),
                request_rates: Arc::default(),
                seat_maps: Arc::default(),
                availability: Arc::new(
                    crate::concerts::availability_cache::AvailabilityCache::new(
                        metrics.availability_queries.clone(),
                    ),
                ),
                line,
                tokens: Arc::new(tokens),
                revocations: Arc::new(Revocations::new(settings.token_ttl)),
                passwords,
                metrics,
                limits: Arc::new(Limits::new(settings.limits)),
                streams: Arc::new(crate::reservations::stream_permits::StreamPermits::new(
                    crate::reservations::stream_permits::StreamBounds {
                        per_user: settings.limits.max_streams_per_user,
                        per_instance: settings.limits.max_streams_per_instance,
                    },
                )),
                client_address_header: settings.client_address_header.map(Arc::new),
                ticket_keys: settings.ticket_keys.map(Arc::new),
                known_scanners: Arc::default(),
                stripe: settings.stripe.map(Arc::new),
                time_zone: settings.time_zone,
                database_reached: Arc::default(),
            }),
        })
    }

    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// The metrics port, when it is not the public one.
    pub fn metrics_addr(&self) -> std::io::Result<Option<SocketAddr>> {
        self.metrics_listener
            .as_ref()
            .map(TcpListener::local_addr)
            .transpose()
    }

    pub fn state(&self) -> &AppState {
        &self.state
    }

    /// Serves until `shutdown` completes, then finishes in-flight requests.
    pub async fn run_until(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        let limits = self.state.limits.clone();
        // Idle clients' budgets are forgotten once a minute.
        let forget = tokio::spawn(async move {
            let mut every = tokio::time::interval(Duration::from_secs(60));
            loop {
                every.tick().await;
                limits.forget_idle();
            }
        });
        let revocations = tokio::spawn(
            self.state
                .revocations
                .clone()
                .follow(self.state.pool.clone()),
        );
        // Readiness waits for the first contact with the database (see
        // `/readyz`), whether or not a probe asks meanwhile.
        let first_contact = tokio::spawn({
            let (pool, reached) = (self.state.pool.clone(), self.state.database_reached.clone());
            async move {
                while ticket_core::db::ping(&pool).await.is_err() {
                    tokio::time::sleep(Duration::from_millis(500)).await;
                }
                reached.store(true, std::sync::atomic::Ordering::Relaxed);
            }
        });
        let publishing = tokio::spawn(
            self.state
                .request_rates
                .clone()
                .publish_every_second(self.state.pool.clone()),
        );
        let line = self.state.line.clone();
        let following = tokio::spawn(line.clone().follow());
        // Event streams last until their decision: they end first, or the
        // server would wait for them to finish.
        let shutdown = async move {
            shutdown.await;
            line.close();
        };
        let metrics = self
            .metrics_listener
            .map(|listener| (listener, routes::metrics_only(self.state.clone())));
        let app = routes::router(self.state, metrics.is_none(), self.request_timeout);
        tracing::info!(addr = %self.listener.local_addr()?, "listening");
        // The metrics port stops with the public one; scrapes are short.
        let (stop_metrics, metrics_stopped) = tokio::sync::oneshot::channel::<()>();
        let metrics = metrics.map(|(listener, router)| {
            if let Ok(addr) = listener.local_addr() {
                tracing::info!(%addr, "serving /metrics");
            }
            tokio::spawn(crate::server::serve(
                listener,
                router,
                self.header_read_timeout,
                async move {
                    let _ = metrics_stopped.await;
                },
            ))
        });
        let served =
            crate::server::serve(self.listener, app, self.header_read_timeout, shutdown).await;
        drop(stop_metrics);
        if let Some(metrics) = metrics {
            let _ = metrics.await;
        }
        forget.abort();
        revocations.abort();
        following.abort();
        publishing.abort();
        first_contact.abort();
        served
    }
}

/// Pending connections the kernel may hold for us (capped by its
/// `net.core.somaxconn`). When tickets open, thousands of clients connect in
/// the same second; with the usual 1,024 the rest see their SYN dropped and
/// retry only after a second.
const LISTEN_BACKLOG: u32 = 8192;

fn listen(addr: SocketAddr) -> std::io::Result<TcpListener> {
    let socket = if addr.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    socket.set_reuseaddr(true)?;
    socket.set_nodelay(true)?;
    socket.bind(addr)?;
    socket.listen(LISTEN_BACKLOG)
}
