//! The mail relay: sends the mails the outbox's events are followed by (an
//! order's confirmation with its tickets, a hold's reminder, a waiting
//! list's offer) over SMTP, at least once, as the webhook relay delivers
//! events. Any number of workers share the mails: each claims the due ones
//! under a lease with SKIP LOCKED, composes them from the reservation as it
//! is now (a mail with nothing left to say is skipped), sends them over a
//! pool of connections, and records each outcome under its lease. A relay
//! that dies mid-send leaves its lease to run out and the mail goes again
//! with the same Message-ID, so a reader (or a deduplicating server) knows
//! it for the same message.
//!
//! A mail the server does not take (no connection, a 4xx reply) is retried
//! with exponential backoff and full jitter until `give_up_after` has passed
//! since it was written; one the server refuses for good (a 5xx reply to the
//! message or its recipient) fails at once. Failed mails are counted and
//! reported by `ticket-api check`.

pub mod config;
pub mod letter;
pub mod qr_png;
pub mod words;

use std::sync::Arc;

use chrono::{DateTime, Utc};
use futures::StreamExt as _;
use lettre::message::Mailbox;
use lettre::{AsyncSmtpTransport, AsyncTransport as _, Tokio1Executor};
use sqlx::{MySqlConnection, MySqlPool};
use ticket_core::db::{
    self,
    mails::{self, Claimed, Ending},
    whole,
};
use ticket_core::domain::mail::MailKind;
use tokio_util::sync::CancellationToken;

pub use config::{MailConfig, SmtpServer};

pub struct MailRelay {
    pool: MySqlPool,
    config: MailConfig,
    transport: AsyncSmtpTransport<Tokio1Executor>,
    metrics: Option<Arc<crate::WorkerMetrics>>,
}

/// What one round did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Round {
    pub claimed: usize,
    pub sent: usize,
    pub skipped: usize,
    pub retried: usize,
    pub failed: usize,
}

/// A claimed mail with what it is about, to be composed and sent.
struct Ready {
    kind: MailKind,
    subject: mails::Subject,
    seats: Vec<mails::MailSeat>,
    to: Mailbox,
    /// The address, as recorded once sent.
    email: String,
}

/// A claimed mail, ready to go or not.
enum Prepared {
    Ready(Box<Ready>),
    /// Nothing left to say.
    Skip(String),
    /// It can never be sent (an address lettre will not take).
    Broken(String),
}

/// How sending a prepared mail went.
enum Sending {
    Sent(String),
    Skipped(String),
    Refused { error: String, for_good: bool },
}

impl MailRelay {
    pub fn new(pool: MySqlPool, config: MailConfig) -> anyhow::Result<Self> {
        let transport =
            config
                .server
                .transport(config.domain(), config.timeout, config.connections)?;
        Ok(Self {
            pool,
            config,
            transport,
            metrics: None,
        })
    }

    /// Counts mails in the worker's metrics.
    pub fn counted_in(mut self, metrics: Arc<crate::WorkerMetrics>) -> Self {
        self.metrics = Some(metrics);
        self
    }

    /// Claims what is due, sends it (a few at once) and records each outcome.
    pub async fn send_once(&self) -> Result<Round, sqlx::Error> {
        let token = crate::random::u64();
        let mut conn = self.pool.acquire().await?;
        let now = db::now(&mut conn).await?;
        let lease_until = now + chrono::Duration::from_std(self.config.lease).unwrap_or_default();
        let claimed = whole::run(&mut conn, async |tx| {
            mails::claim_due(tx, token, lease_until, self.config.batch, now).await
        })
        .await?;
        let mut prepared = Vec::with_capacity(claimed.len());
        for mail in &claimed {
            prepared.push(self.prepare(&mut conn, mail, now).await?);
        }
        let sent: Vec<Sending> = futures::stream::iter(prepared.into_iter().map(|p| self.send(p)))
            .buffered(self.config.connections.max(1) as usize)
            .collect()
            .await;
        // Retries are due by the database's clock, as of the sends' end.
        let now = db::now(&mut conn).await?;
        let mut round = Round {
            claimed: claimed.len(),
            ..Round::default()
        };
        for (mail, sending) in claimed.iter().zip(sent) {
            let ending = self.judge(mail, sending, now);
            match &ending {
                Ending::Sent { .. } => round.sent += 1,
                Ending::Skipped { .. } => round.skipped += 1,
                Ending::Retry { error, .. } => {
                    round.retried += 1;
                    tracing::warn!(
                        mail = mail.id,
                        attempts = mail.attempts,
                        error,
                        "mail not sent; retrying later"
                    );
                }
                Ending::Failed { error } => {
                    round.failed += 1;
                    tracing::error!(
                        mail = mail.id,
                        attempts = mail.attempts,
                        error,
                        "mail given up"
                    );
                }
            }
            mails::record(&mut conn, mail.id, token, &ending, now).await?;
        }
        if let Some(metrics) = &self.metrics {
            metrics.mails(&round);
        }
        Ok(round)
    }

    /// The mail composed from its reservation as it is now (a hold judged
    /// running by `now`, the database's clock at the claim).
    async fn prepare(
        &self,
        conn: &mut MySqlConnection,
        mail: &Claimed,
        now: DateTime<Utc>,
    ) -> Result<Prepared, sqlx::Error> {
        let Some(kind) = MailKind::from_stored(&mail.kind) else {
            return Ok(Prepared::Broken(format!("unknown kind {}", mail.kind)));
        };
        let Some((subject, seats)) = mails::subject(conn, mail.reservation_id).await? else {
            return Ok(Prepared::Skip("the reservation is gone".to_owned()));
        };
        let hold_running = subject.hold_expires_at.is_some_and(|end| end > now);
        if !kind.still_wanted(subject.status, hold_running) {
            return Ok(Prepared::Skip(format!(
                "nothing left to say: the reservation is {}{}",
                subject.status.as_str(),
                if hold_running { "" } else { " and not held" }
            )));
        }
        let Some(email) = subject.email.clone() else {
            return Ok(Prepared::Skip("the fan removed their address".to_owned()));
        };
        let to: Mailbox = match email.parse() {
            Ok(address) => Mailbox::new(Some(subject.nickname.clone()), address),
            Err(e) => {
                return Ok(Prepared::Broken(format!(
                    "the address is not one SMTP takes: {e}"
                )));
            }
        };
        Ok(Prepared::Ready(Box::new(Ready {
            kind,
            subject,
            seats,
            to,
            email,
        })))
    }

    /// Composes a ready mail (its QR codes drawn while other mails of the
    /// round wait on the network) and sends it.
    async fn send(&self, prepared: Prepared) -> Sending {
        let ready = match prepared {
            Prepared::Ready(ready) => ready,
            Prepared::Skip(why) => return Sending::Skipped(why),
            Prepared::Broken(error) => {
                return Sending::Refused {
                    error,
                    for_good: true,
                };
            }
        };
        let Ready {
            kind,
            subject,
            seats,
            to,
            email,
        } = *ready;
        let stationery = letter::Stationery {
            keys: &self.config.keys,
            public_url: self.config.public_url.as_deref(),
            domain: self.config.domain(),
        };
        let id = kind.message_id(subject.reservation_id, self.config.domain());
        let message = letter::compose(kind, &subject, &seats, &stationery)
            .map_err(|e| format!("a QR code could not be made: {e}"))
            .and_then(|composed| {
                letter::message(composed, &self.config.from, to, &id)
                    .map_err(|e| format!("the message could not be built: {e}"))
            });
        let message = match message {
            Ok(message) => message,
            Err(error) => {
                return Sending::Refused {
                    error,
                    for_good: true,
                };
            }
        };
        match self.transport.send(message).await {
            Ok(_) => Sending::Sent(email),
            Err(e) => Sending::Refused {
                for_good: refused_for_good(&e),
                error: e.to_string(),
            },
        }
    }

    /// The outcome of an attempt, as of `now` (the database's clock, which
    /// retries and the retry period are measured by).
    fn judge(&self, mail: &Claimed, sending: Sending, now: DateTime<Utc>) -> Ending {
        let (error, for_good) = match sending {
            Sending::Sent(recipient) => return Ending::Sent { recipient },
            Sending::Skipped(why) => return Ending::Skipped { why },
            Sending::Refused { error, for_good } => (error, for_good),
        };
        let give_up_at = mail.created_at
            + chrono::Duration::from_std(self.config.give_up_after).unwrap_or_default();
        if for_good || now >= give_up_at {
            return Ending::Failed { error };
        }
        let wait = crate::relay::backoff(
            mail.attempts,
            self.config.first_backoff,
            self.config.max_backoff,
        );
        let at = now + chrono::Duration::from_std(wait).unwrap_or_default();
        Ending::Retry {
            at: at.min(give_up_at),
            error,
        }
    }

    /// Sends until `shutdown`: at once again while a claim comes back full,
    /// otherwise after the poll interval.
    pub async fn run(self, shutdown: CancellationToken) {
        tracing::info!(server = %self.config.server.redacted(), from = %self.config.from, "sending mail");
        loop {
            let round = tokio::select! {
                () = shutdown.cancelled() => return,
                round = self.send_once() => round,
            };
            let pause = match round {
                Ok(round) if round.claimed == self.config.batch as usize => {
                    std::time::Duration::ZERO
                }
                Ok(_) => self.config.poll_interval,
                Err(e) => {
                    tracing::warn!(error = %e, "mail relay round failed; trying again");
                    self.config.poll_interval * 5
                }
            };
            tokio::select! {
                () = shutdown.cancelled() => return,
                () = tokio::time::sleep(crate::random::jitter(pause, 0.2)) => {}
            }
        }
    }
}

/// Whether the server refused the message for good: a permanent (5xx)
/// reply, except to the relay's own credentials (530, 534, 535, 538): those
/// are the operator's to fix, and the mail waits for them.
fn refused_for_good(error: &lettre::transport::smtp::Error) -> bool {
    let code = error.status().map(u16::from);
    error.is_permanent() && !matches!(code, Some(530 | 534 | 535 | 538))
}
