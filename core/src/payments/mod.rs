//! Money (issue 46): the payment provider behind a small boundary (Stripe
//! first, a manual provider for the box office's cash and bank transfers),
//! and what the provider's news does to a hold ([`settle`]), shared by the
//! API's webhook and the workers' sweep so both apply it the same way.

pub mod refund;
pub mod settle;
pub mod stripe;

use std::time::Duration;

use clap::Args;

use crate::secret::{self, Secret};

/// What the provider says of a payment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderPayment {
    pub id: String,
    pub status: ProviderPaymentStatus,
    /// Minor units of `currency` (upper case).
    pub amount: u64,
    pub currency: String,
    /// What the payer's browser needs to pay it.
    pub client_secret: Option<String>,
    /// Why the last attempt was declined, in the provider's words.
    pub failure: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProviderPaymentStatus {
    /// Nobody has paid yet (no card, or a step such as 3-D Secure to go).
    AwaitingPayer,
    /// Paid, the money not yet settled at the provider.
    Processing,
    /// The last attempt was declined; it may be paid again.
    Declined,
    Succeeded,
    Canceled,
}

/// A refund as the provider has it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderRefund {
    pub id: String,
    pub amount: u64,
    pub status: ProviderRefundStatus,
    /// Ours (`refunds.id`), from its metadata: which refund it carried out.
    pub refund_id: Option<u64>,
}

/// Where a refund is at the provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProviderRefundStatus {
    /// The money went back.
    Succeeded,
    /// On its way (or a step to go): read again later, never made again.
    Pending,
    /// It did not go back (refused by the bank, cancelled): an operator
    /// must look.
    Failed,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProviderError {
    /// Not reached, timed out, or a 5xx: try again later.
    #[error("payment provider unavailable: {0}")]
    Unavailable(String),
    /// Too many requests: wait this long.
    #[error("payment provider asks to slow down (429)")]
    RateLimited(Duration),
    /// Refused for good (a 4xx other than 429).
    #[error("payment provider refused: {0}")]
    Refused(String),
}

/// The settings of the Stripe provider (the API and the workers read the
/// same ones). Payments are on when the secret key is set.
#[derive(Debug, Clone, Args)]
pub struct StripeArgs {
    /// Stripe's API (tests point it at localstripe).
    #[arg(
        long,
        env = "TICKET_STRIPE_API_BASE",
        default_value = "https://api.stripe.com/"
    )]
    pub stripe_api_base: String,

    /// The Stripe.js the page loads (and the page's CSP allows).
    #[arg(
        long,
        env = "TICKET_STRIPE_JS_URL",
        default_value = "https://js.stripe.com/v3/"
    )]
    pub stripe_js_url: String,

    /// The publishable key the page gives Stripe.js (not a secret).
    #[arg(long, env = "TICKET_STRIPE_PUBLISHABLE_KEY")]
    pub stripe_publishable_key: Option<String>,
}

/// Stripe, configured: the client, the page's key and Stripe.js, and the
/// webhook's signing secret.
#[derive(Debug, Clone)]
pub struct Stripe {
    pub client: stripe::StripeClient,
    pub publishable_key: String,
    pub js_url: String,
    pub webhook_secret: Secret,
}

impl Stripe {
    /// The origins a paying page reaches: Stripe.js's, and the API's that
    /// Stripe.js sends the card to.
    pub fn page_origins(&self) -> (String, String) {
        let js = reqwest::Url::parse(&self.js_url)
            .map(|u| u.origin().ascii_serialization())
            .unwrap_or_default();
        (js, self.client.base().origin().ascii_serialization())
    }
}

impl StripeArgs {
    /// Stripe when `TICKET_STRIPE_SECRET_KEY` (or `_FILE`) is set; then the
    /// publishable key and the webhook secret are required too.
    pub fn stripe(&self) -> anyhow::Result<Option<Stripe>> {
        let Some(client) = self.client()? else {
            return Ok(None);
        };
        let webhook_secret = secret::required("TICKET_STRIPE_WEBHOOK_SECRET")?;
        let publishable_key = self
            .stripe_publishable_key
            .clone()
            .filter(|k| !k.trim().is_empty())
            .ok_or_else(|| {
                anyhow::anyhow!(
                    "TICKET_STRIPE_PUBLISHABLE_KEY is required with TICKET_STRIPE_SECRET_KEY"
                )
            })?;
        reqwest::Url::parse(&self.stripe_js_url)
            .map_err(|e| anyhow::anyhow!("TICKET_STRIPE_JS_URL is not a URL: {e}"))?;
        Ok(Some(Stripe {
            client,
            publishable_key,
            js_url: self.stripe_js_url.clone(),
            webhook_secret,
        }))
    }
}

impl StripeArgs {
    /// The API client alone (what the workers need), when
    /// `TICKET_STRIPE_SECRET_KEY` (or `_FILE`) is set.
    pub fn client(&self) -> anyhow::Result<Option<stripe::StripeClient>> {
        let Some(key) = secret::from_env("TICKET_STRIPE_SECRET_KEY")? else {
            return Ok(None);
        };
        let mut base = reqwest::Url::parse(&self.stripe_api_base)
            .map_err(|e| anyhow::anyhow!("TICKET_STRIPE_API_BASE is not a URL: {e}"))?;
        if !base.path().ends_with('/') {
            let path = format!("{}/", base.path());
            base.set_path(&path);
        }
        Ok(Some(stripe::StripeClient::new(base, key)?))
    }
}

/// The idempotency key of a payment's PaymentIntent: one per payment row,
/// so asking again for the same hold never makes a second one.
pub fn payment_key(payment: crate::domain::PaymentId) -> String {
    format!("ticket-payment-{payment}")
}
