//! Command line and environment of `ticket-api`.

use std::net::SocketAddr;

use clap::{Args, Parser, Subcommand};
use ticket_core::config::DatabaseArgs;

#[derive(Debug, Parser)]
#[command(
    name = "ticket-api",
    version,
    about = "HTTP API of the ticket reservation system",
    after_help = "Secrets have no flags: they are read from the environment, or from the file \
that NAME_FILE names (as Kubernetes and Docker mount them).\n  \
DATABASE_URL            MySQL 8.0+ / MariaDB 10.6+ URL, e.g. mysql://user:pass@host:3306/ticket\n  \
TICKET_AUTH_SECRET      key that signs access tokens (at least 32 bytes), shared by every instance\n  \
TICKET_ADMIN_PASSWORD   password of the admin account TICKET_ADMIN_NICKNAME, created at start-up\n  \
TICKET_CODE_KEYS        Ed25519 seeds that sign ticket codes, one base64url 32-byte seed a line, \
the signing one first (the rest still verify: rotation); without them ticket routes answer 503"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,

    #[command(flatten)]
    pub database: DatabaseArgs,

    #[command(flatten)]
    pub server: ServerArgs,

    #[command(flatten)]
    pub stripe: ticket_core::payments::StripeArgs,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve the HTTP API (the default).
    Serve,
    /// Wait for the database server, create the database if it does not
    /// exist, apply pending migrations, exit.
    Migrate {
        /// How long to wait for the server to accept connections (it may be
        /// starting beside the API), with backoff; 0: try once.
        #[arg(long, env = "TICKET_DB_WAIT_SECS", default_value_t = 60)]
        wait_secs: u64,
    },
    /// Inspect the database and report every violated invariant (a seat sold
    /// twice, seats and reservations that disagree, a SUCCESS without its
    /// reservation, a reservation without its event, a request stuck in
    /// PROCESSING long after its lease, a request claimed more often than
    /// the workers' attempt limit). Exits 1 when any is violated.
    Check {
        /// A PROCESSING request whose lease ended more than this long ago
        /// counts as stuck.
        #[arg(long, default_value_t = 300)]
        stuck_after_secs: u32,
        /// The workers' attempt limit (their TICKET_WORKER_MAX_ATTEMPTS).
        #[arg(long, env = "TICKET_WORKER_MAX_ATTEMPTS",
              default_value_t = ticket_core::db::queue::DEFAULT_MAX_ATTEMPTS)]
        max_attempts: u32,
        /// The workers' retention (their TICKET_RETENTION_DAYS): delivered
        /// events older than this may be gone, and their reservations are
        /// not reported for it.
        #[arg(long, env = "TICKET_RETENTION_DAYS",
              default_value_t = ticket_core::db::retention::DEFAULT_RETENTION_DAYS)]
        retention_days: u32,
    },
}

#[derive(Debug, Clone, Args)]
pub struct ServerArgs {
    /// The time zone of a concert created without one (an IANA name such
    /// as `Asia/Seoul`): where the venues of this box office mostly are.
    #[arg(long, env = "TICKET_TIME_ZONE", default_value = "UTC")]
    pub time_zone: String,

    /// Address and port to listen on.
    #[arg(long, env = "TICKET_API_ADDR", default_value = "127.0.0.1:8080")]
    pub addr: SocketAddr,

    /// Where Prometheus scrapes `/metrics`, away from the public port (the
    /// metrics name routes, queue depths and pool sizes). Unset: `/metrics`
    /// is served on the public port, as suits a developer machine.
    #[arg(long, env = "TICKET_METRICS_ADDR")]
    pub metrics_addr: Option<SocketAddr>,

    /// Lifetime of an access token, in seconds.
    #[arg(long, env = "TICKET_TOKEN_TTL_SECS", default_value_t = 3600)]
    pub token_ttl_secs: u64,

    /// Nickname of an admin account created (or updated) at start-up, with
    /// the password in TICKET_ADMIN_PASSWORD.
    #[arg(long, env = "TICKET_ADMIN_NICKNAME")]
    pub admin_nickname: Option<String>,

    /// Most password hashes computed at once (Argon2id takes tens of
    /// milliseconds of one core each, and each permit keeps a 19 MiB working
    /// area once used); 0 means one per CPU core, at most 4.
    #[arg(long, env = "TICKET_MAX_CONCURRENT_HASHES", default_value_t = 0)]
    pub max_concurrent_hashes: usize,

    /// Requests per second one signed-in user may make (bursts of twice
    /// that); over it, 429 RATE_LIMITED with Retry-After. 0: no limit.
    #[arg(long, env = "TICKET_USER_REQUESTS_PER_SEC", default_value_t = 20)]
    pub user_requests_per_sec: u32,

    /// Requests per second one client address may make without a valid
    /// token, on every route but the probes (bursts of twice that); over it,
    /// 429 RATE_LIMITED with Retry-After. The default lets a page refresh
    /// the seat map every second with room to spare; behind a NAT many
    /// buyers share one address, so raise it if they do. 0: no limit.
    #[arg(long, env = "TICKET_ANONYMOUS_REQUESTS_PER_SEC", default_value_t = 20)]
    pub anonymous_requests_per_sec: u32,

    /// Requests per second (per instance) whose caller may force tracing
    /// with the sampled flag of its `traceparent`; beyond that the caller's
    /// trace id is continued but this service's own sampling decides.
    /// `unlimited`: every caller is trusted (the API is only reached through
    /// your own services); 0: never.
    #[arg(long, env = "TICKET_CALLER_SAMPLED_TRACES_PER_SEC", default_value = "10",
          value_parser = parse_rate_or_unlimited)]
    pub caller_sampled_traces_per_sec: u32,

    /// Login attempts per minute for one nickname. 0: no limit.
    #[arg(
        long,
        env = "TICKET_LOGINS_PER_MINUTE_PER_NICKNAME",
        default_value_t = 10
    )]
    pub logins_per_minute_per_nickname: u32,

    /// Login attempts per minute from one client address. 0: no limit.
    #[arg(
        long,
        env = "TICKET_LOGINS_PER_MINUTE_PER_CLIENT",
        default_value_t = 60
    )]
    pub logins_per_minute_per_client: u32,

    /// Seats in one user's open (WAITING, PENDING or PROCESSING)
    /// reservation requests; more answer 429 RATE_LIMITED. 0: no limit.
    #[arg(long, env = "TICKET_MAX_OPEN_REQUESTS_PER_USER", default_value_t = 10)]
    pub max_open_requests_per_user: u32,

    /// Event streams one user may have open on an instance; more answer 429
    /// RATE_LIMITED. 0: no limit.
    #[arg(long, env = "TICKET_MAX_STREAMS_PER_USER", default_value_t = 4)]
    pub max_streams_per_user: u32,

    /// Event streams an instance follows at once; more answer 503
    /// INSTANCE_BUSY, so that a load balancer moves the client. 0: no limit.
    #[arg(long, env = "TICKET_MAX_STREAMS", default_value_t = 20_000)]
    pub max_streams: u32,

    /// Groups of reservation requests written at the same time, each on a
    /// connection of its own. One makes the largest groups, which costs the
    /// database least per request and leaves it to the deciding workers
    /// (docs/benchmarks.md); more help only when one connection's round
    /// trips, not the database, are the limit.
    #[arg(long, env = "TICKET_ENQUEUE_WRITERS", default_value_t = 1,
          value_parser = clap::value_parser!(u16).range(1..=32))]
    pub enqueue_writers: u16,

    /// Sign-ups per minute from one client address. 0: no limit.
    #[arg(
        long,
        env = "TICKET_SIGNUPS_PER_MINUTE_PER_CLIENT",
        default_value_t = 20
    )]
    pub signups_per_minute_per_client: u32,

    /// Seconds a connection may take to send a request's headers; slower
    /// clients are disconnected, and so are keep-alive connections idle that
    /// long (keep a load balancer's idle timeout below it: 60 s is common).
    #[arg(long, env = "TICKET_HEADER_READ_TIMEOUT_SECS", default_value_t = 65,
          value_parser = clap::value_parser!(u64).range(1..=300))]
    pub header_read_timeout_secs: u64,

    /// Longest a request may take once its headers are in, body included
    /// (408 REQUEST_TIMEOUT); creating a 100,000-seat concert is the slowest
    /// legitimate request and takes a few seconds.
    #[arg(long, env = "TICKET_REQUEST_TIMEOUT_SECS", default_value_t = 30,
          value_parser = clap::value_parser!(u64).range(1..=600))]
    pub request_timeout_secs: u64,

    /// A developer machine: a weak admin password is accepted (with a
    /// warning) instead of refused.
    #[arg(long, env = "TICKET_DEV_MODE", default_value_t = false)]
    pub dev_mode: bool,

    /// Header to which the proxies in front of the API append the address
    /// they were connected from (e.g. X-Forwarded-For); without it, the
    /// connection's peer address is the client.
    #[arg(long, env = "TICKET_CLIENT_ADDRESS_HEADER")]
    pub client_address_header: Option<String>,

    /// How many proxies in front of the API append to that header (an
    /// ingress alone: 1; a CDN and then an ingress: 2). The client is the
    /// entry this many places from the right; what lies further left came
    /// from the client and is not trusted.
    #[arg(long, env = "TICKET_TRUSTED_PROXIES", default_value_t = 1,
          value_parser = clap::value_parser!(u64).range(1..=10))]
    pub trusted_proxies: u64,
}

/// A rate, or `unlimited` (`u32::MAX`).
fn parse_rate_or_unlimited(raw: &str) -> Result<u32, String> {
    match raw.trim() {
        "unlimited" => Ok(u32::MAX),
        n => n
            .parse::<u32>()
            .ok()
            .filter(|&n| n < u32::MAX)
            .ok_or_else(|| {
                format!("{raw:?} is neither a number of requests per second nor `unlimited`")
            }),
    }
}
