//! Command line and environment of `ticket-worker`.

use std::time::Duration;

use clap::{Parser, ValueEnum};
use ticket_core::config::DatabaseArgs;

#[derive(Debug, Parser)]
#[command(
    name = "ticket-worker",
    version,
    about = "Reservation queue worker of the ticket reservation system",
    after_help = "Secrets have no flags: they are read from the environment, or from the file \
that NAME_FILE names (as Kubernetes and Docker mount them).\n  \
DATABASE_URL   MySQL 8.0+ / MariaDB 10.6+ URL, e.g. mysql://user:pass@host:3306/ticket"
)]
pub struct Cli {
    #[command(flatten)]
    pub database: DatabaseArgs,

    #[command(flatten)]
    pub stripe: ticket_core::payments::StripeArgs,

    /// Most queue rows claimed and decided together.
    #[arg(long, env = "TICKET_WORKER_BATCH_SIZE", default_value_t = 1000,
          value_parser = clap::value_parser!(u32).range(1..=WorkerConfig::MAX_BATCH_SIZE as i64))]
    pub batch_size: u32,

    /// Wait between polls of an idle queue (ms); a full batch is followed by
    /// the next claim at once.
    #[arg(long, env = "TICKET_WORKER_POLL_INTERVAL_MS", default_value_t = 50,
          value_parser = clap::value_parser!(u64).range(1..=60_000))]
    pub poll_interval_ms: u64,

    /// How long claimed rows stay ours (ms); after that any worker may claim
    /// them again, so a crashed worker's rows are not stuck.
    #[arg(long, env = "TICKET_WORKER_LEASE_MS", default_value_t = 30_000,
          value_parser = clap::value_parser!(u64).range(100..=3_600_000))]
    pub lease_ms: u64,

    /// Claims of one request that may end without a decision (a failed
    /// attempt, or a worker that died holding it) before it is set aside as
    /// FAILED with reason PROCESSING_FAILED, so that it cannot stall the queue.
    #[arg(long, env = "TICKET_WORKER_MAX_ATTEMPTS", default_value_t = WorkerConfig::DEFAULT_MAX_ATTEMPTS,
          value_parser = clap::value_parser!(u32).range(1..=WorkerConfig::MAX_ATTEMPTS_LIMIT as i64))]
    pub max_attempts: u32,

    /// `batch` claims a batch and decides it in one transaction (a worker
    /// that dies loses its transaction, and the rows are at once open to the
    /// next); `leased-batch` first commits the claim as PROCESSING under a
    /// lease, then decides (a dead worker's rows wait out their lease; the
    /// way `batch` itself takes rows that failed for a reason in them, to
    /// split their batch and count their attempts). The original system's
    /// algorithm, the benchmark baseline, is in `ticket-bench`.
    #[arg(long, env = "TICKET_WORKER_MODE", value_enum, default_value_t = Mode::Batch)]
    pub mode: Mode,

    /// Where `/healthz` (liveness) is served; it fails when the claim loop
    /// has not turned for two minutes.
    #[arg(
        long,
        env = "TICKET_WORKER_HEALTH_ADDR",
        default_value = "127.0.0.1:8081"
    )]
    pub health_addr: std::net::SocketAddr,

    /// ConfigMap to watch for live batchSize / pollIntervalMs / leaseMs
    /// (through the Kubernetes API; in-cluster or from the kubeconfig).
    /// Without it the settings above are fixed.
    #[arg(long, env = "TICKET_WORKER_CONFIGMAP")]
    pub configmap: Option<String>,

    /// Namespace of that ConfigMap (default: the client's namespace).
    #[arg(long, env = "POD_NAMESPACE")]
    pub namespace: Option<String>,

    /// Name recorded as the owner of claimed rows (default: host name and pid).
    #[arg(long, env = "TICKET_WORKER_ID")]
    pub worker_id: Option<String>,

    /// Days decided requests and delivered events are kept; older ones are
    /// removed in small batches. Open requests and undelivered events are
    /// kept however old. 0: keep everything.
    #[arg(long, env = "TICKET_RETENTION_DAYS",
          default_value_t = ticket_core::db::retention::DEFAULT_RETENTION_DAYS,
          value_parser = clap::value_parser!(u32).range(0..=36_500))]
    pub retention_days: u32,

    /// Hours an idempotency key is remembered: a retry with the same key
    /// within this time gets the original answer, later it is a new
    /// request. 0: forever.
    #[arg(long, env = "TICKET_IDEMPOTENCY_KEY_HOURS",
          default_value_t = ticket_core::db::retention::DEFAULT_IDEMPOTENCY_KEY_HOURS,
          value_parser = clap::value_parser!(u32).range(0..=876_000))]
    pub idempotency_key_hours: u32,

    /// Where events (ReservationHeld, …Confirmed, …Expired, …Cancelled) are
    /// POSTed as signed webhooks, with the secret TICKET_WEBHOOK_SECRET (or
    /// _FILE). Without it, events are kept for the retention period only.
    #[arg(long, env = "TICKET_WEBHOOK_URL")]
    pub webhook_url: Option<reqwest::Url>,

    /// One delivery's time limit (ms), connecting included.
    #[arg(long, env = "TICKET_WEBHOOK_TIMEOUT_MS", default_value_t = 10_000,
          value_parser = clap::value_parser!(u64).range(100..=120_000))]
    pub webhook_timeout_ms: u64,

    /// Hours an undeliverable event is retried (with exponential backoff)
    /// before it is marked failed.
    #[arg(long, env = "TICKET_WEBHOOK_RETRY_HOURS", default_value_t = 72,
          value_parser = clap::value_parser!(u64).range(24..=720))]
    pub webhook_retry_hours: u64,

    /// `From:` of the mail the workers send (`Box Office
    /// <tickets@example.com>`), when TICKET_SMTP_URL (a secret, or _FILE)
    /// names the SMTP server; its domain makes the Message-IDs. Mail also
    /// needs TICKET_CODE_KEYS (the tickets it carries).
    #[arg(long, env = "TICKET_MAIL_FROM")]
    pub mail_from: Option<String>,

    /// The box office's public address (`https://tickets.example`): mail
    /// links to its pages. Unset: no links.
    #[arg(long, env = "TICKET_PUBLIC_URL")]
    pub public_url: Option<reqwest::Url>,

    /// One SMTP command's time limit (ms), connecting included.
    #[arg(long, env = "TICKET_MAIL_TIMEOUT_MS", default_value_t = 30_000,
          value_parser = clap::value_parser!(u64).range(100..=300_000))]
    pub mail_timeout_ms: u64,

    /// Hours a mail the server does not accept is retried (with exponential
    /// backoff) before it is marked failed.
    #[arg(long, env = "TICKET_MAIL_RETRY_HOURS", default_value_t = 72,
          value_parser = clap::value_parser!(u64).range(1..=720))]
    pub mail_retry_hours: u64,

    /// SMTP connections a worker keeps open and sends over at once.
    #[arg(long, env = "TICKET_MAIL_CONNECTIONS", default_value_t = 8,
          value_parser = clap::value_parser!(u32).range(1..=64))]
    pub mail_connections: u32,
}

impl Cli {
    /// What the worker's sweeper removes, and when; `mail_sent` when this
    /// worker sends mail (unsent mails are then kept until they end).
    pub fn retention(&self, mail_sent: bool) -> crate::retention::Retention {
        let days = chrono::Duration::days(self.retention_days.into());
        let hours = chrono::Duration::hours(self.idempotency_key_hours.into());
        crate::retention::Retention {
            decided: (self.retention_days > 0).then_some(days),
            idempotency_keys: (self.idempotency_key_hours > 0).then_some(hours),
            events: if self.webhook_url.is_some() {
                ticket_core::db::retention::EventsKept::UntilDelivered
            } else {
                ticket_core::db::retention::EventsKept::ForTheRetentionOnly
            },
            mails: if mail_sent {
                ticket_core::db::retention::EventsKept::UntilDelivered
            } else {
                ticket_core::db::retention::EventsKept::ForTheRetentionOnly
            },
        }
    }

    /// The webhook relay's settings, when a URL is configured.
    pub fn webhook(&self) -> anyhow::Result<Option<crate::relay::WebhookConfig>> {
        let Some(url) = self.webhook_url.clone() else {
            return Ok(None);
        };
        anyhow::ensure!(
            matches!(url.scheme(), "https" | "http"),
            "TICKET_WEBHOOK_URL must be an http(s) URL"
        );
        let secret = ticket_core::secret::required("TICKET_WEBHOOK_SECRET")?;
        let mut config = crate::relay::WebhookConfig::new(url, secret);
        config.timeout = Duration::from_millis(self.webhook_timeout_ms);
        config.lease = config.timeout * 3;
        config.give_up_after = Duration::from_secs(self.webhook_retry_hours * 3600);
        Ok(Some(config))
    }

    /// The mail relay's settings, when an SMTP server is configured.
    pub fn mail(&self) -> anyhow::Result<Option<crate::mail::MailConfig>> {
        use anyhow::Context as _;
        use ticket_core::secret;
        let Some(url) = secret::from_env("TICKET_SMTP_URL")? else {
            anyhow::ensure!(
                self.mail_from.is_none(),
                "TICKET_MAIL_FROM is set without TICKET_SMTP_URL"
            );
            return Ok(None);
        };
        let server = crate::mail::SmtpServer::new(url, secret::from_env("TICKET_SMTP_PASSWORD")?)?;
        let from = self
            .mail_from
            .as_deref()
            .context("TICKET_SMTP_URL needs TICKET_MAIL_FROM (the sender)")?
            .parse()
            .context("TICKET_MAIL_FROM is not a mailbox (Name <address@example.com>)")?;
        let keys = secret::from_env("TICKET_CODE_KEYS")?
            .context("TICKET_SMTP_URL needs TICKET_CODE_KEYS: mail carries the tickets")?;
        let keys = ticket_core::domain::ticket_code::TicketKeys::parse(keys.expose())
            .context("TICKET_CODE_KEYS")?;
        let mut config = crate::mail::MailConfig::new(server, from, std::sync::Arc::new(keys));
        config.public_url = self.public_url.as_ref().map(ToString::to_string);
        config.timeout = Duration::from_millis(self.mail_timeout_ms);
        config.lease = config.timeout * 10;
        config.give_up_after = Duration::from_secs(self.mail_retry_hours * 3600);
        config.connections = self.mail_connections;
        Ok(Some(config))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Mode {
    Batch,
    LeasedBatch,
}

/// The settings the claim loop reads before every batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorkerConfig {
    pub batch_size: u32,
    pub poll_interval: Duration,
    pub lease: Duration,
    pub max_attempts: u32,
}

impl WorkerConfig {
    /// A batch's `IN (…)` lists and multi-row statements stay far below the
    /// server's packet and placeholder limits.
    pub const MAX_BATCH_SIZE: u32 = 10_000;

    /// Highest `max_attempts` accepted.
    pub const MAX_ATTEMPTS_LIMIT: u32 = 100;

    /// What `max_attempts` is unless configured.
    pub const DEFAULT_MAX_ATTEMPTS: u32 = ticket_core::db::queue::DEFAULT_MAX_ATTEMPTS;
}

impl Cli {
    pub fn worker_config(&self) -> WorkerConfig {
        WorkerConfig {
            batch_size: self.batch_size,
            poll_interval: Duration::from_millis(self.poll_interval_ms),
            lease: Duration::from_millis(self.lease_ms),
            max_attempts: self.max_attempts,
        }
    }

    pub fn owner(&self) -> String {
        self.worker_id.clone().unwrap_or_else(|| {
            let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "worker".to_owned());
            format!("{host}-{}", std::process::id())
        })
    }
}
