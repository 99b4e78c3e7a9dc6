//! Where mail goes and how hard to try: the SMTP server (`TICKET_SMTP_URL`,
//! a secret: it may carry credentials), the sender, and the relay's pace.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, ensure};
use lettre::message::Mailbox;
use lettre::transport::smtp::PoolConfig;
use lettre::transport::smtp::authentication::Credentials;
use lettre::transport::smtp::extension::ClientId;
use lettre::{AsyncSmtpTransport, Tokio1Executor};
use ticket_core::domain::ticket_code::TicketKeys;
use ticket_core::secret::Secret;

/// The SMTP server, as `TICKET_SMTP_URL` names it (lettre's URL forms):
/// `smtp://host:port` plain, `smtp://host:port?tls=required` STARTTLS (or
/// fail), `?tls=opportunistic` STARTTLS when offered, `smtps://host:port`
/// TLS from the first byte; `user:password@` in it, or the password from
/// `TICKET_SMTP_PASSWORD` (or `_FILE`) with the user in the URL.
#[derive(Clone)]
pub struct SmtpServer {
    url: Secret,
    password: Option<Secret>,
}

impl std::fmt::Debug for SmtpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SmtpServer({})", self.redacted())
    }
}

impl SmtpServer {
    pub fn new(url: Secret, password: Option<Secret>) -> anyhow::Result<Self> {
        let server = Self { url, password };
        let parsed = server.parsed()?;
        ensure!(
            matches!(parsed.scheme(), "smtp" | "smtps"),
            "TICKET_SMTP_URL must be an smtp:// or smtps:// URL"
        );
        ensure!(parsed.host_str().is_some(), "TICKET_SMTP_URL has no host");
        let encrypted = parsed.scheme() == "smtps"
            || parsed
                .query_pairs()
                .any(|(k, v)| k == "tls" && v == "required");
        let credentials = !parsed.username().is_empty() || server.password.is_some();
        // A password in clear over a network is one an onlooker has too.
        ensure!(
            !credentials || encrypted || server.is_loopback(),
            "TICKET_SMTP_URL: credentials go only over TLS (smtps://, or smtp://…?tls=required), \
             unless the server is on this host"
        );
        ensure!(
            server.password.is_none() || !parsed.username().is_empty(),
            "TICKET_SMTP_PASSWORD needs the user name in TICKET_SMTP_URL (smtp://user@host)"
        );
        Ok(server)
    }

    fn parsed(&self) -> anyhow::Result<reqwest::Url> {
        reqwest::Url::parse(self.url.expose()).context("TICKET_SMTP_URL is not a URL")
    }

    fn is_loopback(&self) -> bool {
        self.parsed().ok().is_some_and(|u| {
            let host = u.host_str().unwrap_or("");
            host == "localhost"
                || host
                    .trim_start_matches('[')
                    .trim_end_matches(']')
                    .parse::<std::net::IpAddr>()
                    .is_ok_and(|ip| ip.is_loopback())
        })
    }

    /// The URL without its credentials, for logs.
    pub fn redacted(&self) -> String {
        self.parsed().map_or_else(
            |_| "(unparsable)".to_owned(),
            |u| {
                format!(
                    "{}://{}:{}",
                    u.scheme(),
                    u.host_str().unwrap_or(""),
                    u.port()
                        .map_or_else(|| "default".to_owned(), |p| p.to_string())
                )
            },
        )
    }

    /// A pooled transport to the server: `connections` at most at once,
    /// every command given `timeout`.
    pub fn transport(
        &self,
        hello: &str,
        timeout: Duration,
        connections: u32,
    ) -> anyhow::Result<AsyncSmtpTransport<Tokio1Executor>> {
        let mut builder = AsyncSmtpTransport::<Tokio1Executor>::from_url(self.url.expose())
            .context("TICKET_SMTP_URL")?
            .hello_name(ClientId::Domain(hello.to_owned()))
            .timeout(Some(timeout))
            .pool_config(
                PoolConfig::new()
                    .max_size(connections)
                    .idle_timeout(Duration::from_secs(30)),
            );
        if let Some(password) = &self.password {
            let user = self.parsed()?.username().to_owned();
            builder = builder.credentials(Credentials::new(user, password.expose().to_owned()));
        }
        Ok(builder.build())
    }
}

/// The mail relay's settings.
#[derive(Clone)]
pub struct MailConfig {
    pub server: SmtpServer,
    /// `From:` of every message; its domain names the Message-IDs and
    /// greets the server.
    pub from: Mailbox,
    /// Signs the tickets' codes in the confirmations (TICKET_CODE_KEYS, as
    /// the API's).
    pub keys: Arc<TicketKeys>,
    /// The box office's address for links (`…/#/me/tickets`); none: no
    /// links.
    pub public_url: Option<String>,
    /// One SMTP command's limit (connecting included).
    pub timeout: Duration,
    /// How long a mail that is not accepted is retried before it fails.
    pub give_up_after: Duration,
    /// Mails claimed at a time, and sent at once (over `connections`).
    pub batch: u32,
    pub connections: u32,
    /// How long a claimed mail stays this relay's: beyond a message's
    /// every command, so that only a dead relay's mails are taken over.
    pub lease: Duration,
    pub poll_interval: Duration,
    pub first_backoff: Duration,
    pub max_backoff: Duration,
}

impl std::fmt::Debug for MailConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MailConfig")
            .field("server", &self.server)
            .field("from", &self.from.to_string())
            .finish_non_exhaustive()
    }
}

impl MailConfig {
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
    pub const DEFAULT_GIVE_UP_AFTER: Duration = Duration::from_secs(72 * 3600);

    pub fn new(server: SmtpServer, from: Mailbox, keys: Arc<TicketKeys>) -> Self {
        Self {
            server,
            from,
            keys,
            public_url: None,
            timeout: Self::DEFAULT_TIMEOUT,
            give_up_after: Self::DEFAULT_GIVE_UP_AFTER,
            batch: 32,
            connections: 8,
            // A message takes a handful of commands, each within the timeout.
            lease: Self::DEFAULT_TIMEOUT * 10,
            poll_interval: Duration::from_millis(500),
            first_backoff: Duration::from_secs(5),
            max_backoff: Duration::from_secs(3600),
        }
    }

    /// The sender's domain: Message-IDs are made in it, and the relay
    /// greets the server with it.
    pub fn domain(&self) -> &str {
        self.from.email.domain()
    }
}
