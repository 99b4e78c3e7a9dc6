//! Money the workers look after (issue 46): payments no webhook settled
//! (asked of the provider a minute on, and cancelled there once their hold
//! has ended, so that a hold nobody paid can never be paid late), and
//! refunds (carried out at the provider under a claim, once each, slowing
//! down when it answers 429). Every worker runs both; claims skip what
//! another worker holds.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use futures::StreamExt as _;
use sqlx::MySqlPool;
use ticket_core::db::refunds::{self, Ending};
use ticket_core::db::{self, payments, whole};
use ticket_core::domain::payment::{PaymentStatus, Provider};
use ticket_core::payments::settle::{self, Applied};
use ticket_core::payments::stripe::StripeClient;
use ticket_core::payments::{
    ProviderError, ProviderPaymentStatus, ProviderRefund, ProviderRefundStatus,
};
use tokio_util::sync::CancellationToken;

/// Payments looked at per pass.
const CHECKS_PER_PASS: u32 = 50;
/// Refunds claimed per pass, and carried out this many at a time.
const REFUNDS_PER_PASS: u32 = 64;
const REFUNDS_AT_ONCE: usize = 8;
/// How long a claim on a refund lasts: a worker that dies mid-refund
/// leaves it to another after this (the provider's answer, then, is found
/// among the payment's refunds by the refund's id, not made again). It is
/// renewed as each refund's work starts, and covers that work: two calls
/// at the provider of at most its client's timeout each, and a margin.
const REFUND_LEASE_SECS: i64 = 60;
const IDLE_PAUSE: Duration = Duration::from_secs(1);
/// Longest wait between attempts at a refund the provider did not take.
const MOST_BACKOFF_SECS: i64 = 300;

/// How an attempt at a refund ended, and how long the provider asked to
/// be left alone.
type Attempt = (Ending, Option<Duration>);

pub struct Money {
    pool: MySqlPool,
    stripe: Arc<StripeClient>,
}

/// What one pass did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Pass {
    pub payments_checked: usize,
    pub confirmed: usize,
    pub refunds_succeeded: usize,
    pub refunds_retried: usize,
    pub refunds_failed: usize,
    /// The provider asked to slow down for this long.
    pub slow_down: Option<Duration>,
    /// A full batch was claimed: go again at once.
    pub more: bool,
}

impl Money {
    pub fn new(pool: MySqlPool, stripe: StripeClient) -> Self {
        Self {
            pool,
            stripe: Arc::new(stripe),
        }
    }

    /// One pass: the payments due a check, then the refunds due.
    pub async fn pass(&self) -> Result<Pass, sqlx::Error> {
        let mut pass = self.check_payments().await?;
        let refunds = self.carry_out_refunds().await?;
        pass.refunds_succeeded = refunds.refunds_succeeded;
        pass.refunds_retried = refunds.refunds_retried;
        pass.refunds_failed = refunds.refunds_failed;
        pass.slow_down = refunds.slow_down;
        pass.more |= refunds.more;
        Ok(pass)
    }

    /// Asks the provider about the payments whose check is due, and
    /// applies what it says as the webhook would.
    pub async fn check_payments(&self) -> Result<Pass, sqlx::Error> {
        let mut conn = self.pool.acquire().await?;
        let due = whole::run(&mut conn, async |tx| {
            let now = db::now(tx).await?;
            payments::claim_due_checks(tx, now, payments::CHECK_AFTER_SECS, CHECKS_PER_PASS).await
        })
        .await?;
        let mut pass = Pass {
            payments_checked: due.len(),
            more: due.len() == CHECKS_PER_PASS as usize,
            ..Pass::default()
        };
        for check in due {
            let Some(provider_id) = check.provider_payment_id.as_deref() else {
                // Never made at the provider (it did not answer): once the
                // hold has ended nobody can pay it.
                if check.hold_ended {
                    let now = db::now(&mut conn).await?;
                    payments::set_status(&mut conn, check.id, PaymentStatus::Canceled, None, now)
                        .await?;
                }
                continue;
            };
            let client = &self.stripe;
            let mut news = match client.payment(provider_id).await {
                Ok(news) => news,
                Err(e) => {
                    tracing::warn!(error = %e, payment = %check.id, "cannot ask the provider about a payment");
                    continue;
                }
            };
            if check.hold_ended
                && matches!(
                    news.status,
                    ProviderPaymentStatus::AwaitingPayer | ProviderPaymentStatus::Declined
                )
            {
                // Nobody paid it while the hold ran: make sure nobody can.
                news = match client.cancel_payment(provider_id).await {
                    Ok(news) => news,
                    // Paid in the meantime (or cancelled already): read it again.
                    Err(ProviderError::Refused(_)) => match client.payment(provider_id).await {
                        Ok(news) => news,
                        Err(_) => continue,
                    },
                    Err(_) => continue,
                };
            }
            let applied = whole::run(&mut conn, async |tx| {
                let now = db::now(tx).await?;
                settle::apply(tx, Provider::Stripe, &news, now).await
            })
            .await?;
            if applied == Applied::Confirmed {
                pass.confirmed += 1;
            }
            if applied != Applied::Nothing {
                tracing::info!(payment = %check.id, ?applied, "payment settled by the sweep");
            }
        }
        Ok(pass)
    }

    /// Claims the refunds due and carries them out at the provider.
    pub async fn carry_out_refunds(&self) -> Result<Pass, sqlx::Error> {
        let token = crate::random::u64();
        let mut conn = self.pool.acquire().await?;
        let claimed = whole::run(&mut conn, async |tx| {
            let now = db::now(tx).await?;
            let lease_until = now + chrono::Duration::seconds(REFUND_LEASE_SECS);
            refunds::claim_due(tx, token, lease_until, REFUNDS_PER_PASS, now).await
        })
        .await?;
        drop(conn);
        let mut pass = Pass {
            more: claimed.len() == REFUNDS_PER_PASS as usize,
            ..Pass::default()
        };
        let endings: Vec<Result<Option<Attempt>, sqlx::Error>> = futures::stream::iter(claimed)
            .map(|refund| async move { self.carry_out(&refund, token).await })
            .buffer_unordered(REFUNDS_AT_ONCE)
            .collect()
            .await;
        for ending in endings {
            let Some((ending, slow_down)) = ending? else {
                continue;
            };
            match ending {
                Ending::Succeeded { .. } => pass.refunds_succeeded += 1,
                Ending::Retry { .. } => pass.refunds_retried += 1,
                Ending::Failed { .. } => pass.refunds_failed += 1,
            }
            pass.slow_down = pass.slow_down.max(slow_down);
        }
        if pass.slow_down.is_some() {
            pass.more = false;
        }
        Ok(pass)
    }

    /// Carries out one claimed refund under a lease renewed as its work
    /// starts, and records how it ended at once; None when the claim was
    /// lost before (another executor has it) or after (it records).
    async fn carry_out(
        &self,
        refund: &refunds::Claimed,
        token: u64,
    ) -> Result<Option<Attempt>, sqlx::Error> {
        let mut conn = self.pool.acquire().await?;
        let now = db::now(&mut conn).await?;
        let until = now + chrono::Duration::seconds(REFUND_LEASE_SECS);
        if !refunds::renew(&mut conn, refund.id, token, until).await? {
            tracing::warn!(refund = %refund.id, "lost the claim on a refund before its work; another worker has it");
            return Ok(None);
        }
        drop(conn);
        let (ending, slow_down) = self.refund_at_provider(refund, now).await;
        let mut conn = self.pool.acquire().await?;
        let now = db::now(&mut conn).await?;
        if !refunds::record(&mut conn, refund.id, token, &ending, now).await? {
            tracing::warn!(refund = %refund.id, "lost the claim on a refund; another worker records it");
            return Ok(None);
        }
        if let Ending::Failed { error } = &ending {
            tracing::error!(refund = %refund.id, %error, "the provider refused a refund; an operator must look");
        }
        Ok(Some((ending, slow_down)))
    }

    /// Carries out one refund: found among the payment's refunds at the
    /// provider when an earlier claim made it already (the provider may
    /// not honour idempotency keys), otherwise made, capped at what was
    /// paid.
    async fn refund_at_provider(
        &self,
        refund: &refunds::Claimed,
        now: DateTime<Utc>,
    ) -> (Ending, Option<Duration>) {
        let provider = Provider::from_stored(&refund.provider);
        let (Some(Provider::Stripe), Some(payment)) =
            (provider, refund.provider_payment_id.as_deref())
        else {
            // Money the operator took by hand goes back by hand.
            return (
                Ending::Succeeded {
                    provider_refund_id: None,
                },
                None,
            );
        };
        let client = &self.stripe;
        let made = match client.refunds_of(payment).await {
            Ok(made) => made,
            Err(e) => return retry(refund, now, e),
        };
        if let Some(done) = made.iter().find(|r| r.refund_id == Some(refund.id.get())) {
            return ending_of(refund, done, now);
        }
        // Money on its way back counts as given: it is not asked twice.
        let given: u64 = made
            .iter()
            .filter(|r| r.status != ProviderRefundStatus::Failed)
            .map(|r| r.amount)
            .sum();
        if given.saturating_add(refund.amount) > refund.paid {
            return (
                Ending::Failed {
                    error: format!(
                        "the provider has refunded {given} of {} already; {} more would exceed it",
                        refund.paid, refund.amount
                    ),
                },
                None,
            );
        }
        match client.refund(payment, refund.amount, refund.id.get()).await {
            Ok(done) => ending_of(refund, &done, now),
            Err(e) => retry(refund, now, e),
        }
    }

    /// Passes until `shutdown`: at once while there is more, as long as
    /// the provider asked after a 429, else every second.
    pub async fn run(self, shutdown: CancellationToken) {
        crate::passes::until_shutdown(
            shutdown,
            "payments",
            IDLE_PAUSE,
            || self.pass(),
            |pass: &Pass| match pass.slow_down {
                Some(wait) => wait,
                None if pass.more => Duration::ZERO,
                None => IDLE_PAUSE,
            },
        )
        .await;
    }
}

/// The ending of a refund the provider has, by its status: done, read
/// again later (found by its id then, never made twice), or failed there.
fn ending_of(
    refund: &refunds::Claimed,
    at_provider: &ProviderRefund,
    now: DateTime<Utc>,
) -> (Ending, Option<Duration>) {
    match at_provider.status {
        ProviderRefundStatus::Succeeded => (
            Ending::Succeeded {
                provider_refund_id: Some(at_provider.id.clone()),
            },
            None,
        ),
        ProviderRefundStatus::Pending => retry(
            refund,
            now,
            ProviderError::Unavailable(format!(
                "refund {} is pending at the provider",
                at_provider.id
            )),
        ),
        ProviderRefundStatus::Failed => (
            Ending::Failed {
                error: format!("refund {} failed at the provider", at_provider.id),
            },
            None,
        ),
    }
}

/// The ending of an attempt the provider did not take: again later
/// (backing off, or as long as a 429 asks), or never (a refusal).
fn retry(
    refund: &refunds::Claimed,
    now: DateTime<Utc>,
    error: ProviderError,
) -> (Ending, Option<Duration>) {
    match error {
        ProviderError::Refused(error) => (Ending::Failed { error }, None),
        ProviderError::RateLimited(wait) => (
            Ending::Retry {
                at: now + chrono::Duration::from_std(wait).unwrap_or_default(),
                error: "the provider asked to slow down (429)".into(),
            },
            Some(wait),
        ),
        ProviderError::Unavailable(error) => {
            let backoff = 1i64 << refund.attempts.min(8);
            (
                Ending::Retry {
                    at: now + chrono::Duration::seconds(backoff.min(MOST_BACKOFF_SECS)),
                    error,
                },
                None,
            )
        }
    }
}
