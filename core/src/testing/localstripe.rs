//! A real Stripe-compatible server for a test: localstripe
//! (`scripts/localstripe-server.py`, installed by `scripts/localstripe.sh`)
//! on a port of its own, and the calls a fan's browser makes to pay.

use std::io::{BufRead as _, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use serde_json::Value;

/// The API key the tests configure (localstripe takes any).
pub const SECRET_KEY: &str = "sk_test_ticket";
pub const PUBLISHABLE_KEY: &str = "pk_test_ticket";
pub const WEBHOOK_SECRET: &str = "whsec_ticket_test";

pub struct LocalStripe {
    port: u16,
    /// None: a server someone else started (a benchmark's).
    child: Option<Child>,
    http: reqwest::Client,
}

/// The interpreter with localstripe: `TICKET_LOCALSTRIPE_PYTHON`
/// (`scripts/localstripe.sh` prints it; `make test` sets it), else the
/// project's virtualenv.
fn python() -> PathBuf {
    std::env::var_os("TICKET_LOCALSTRIPE_PYTHON").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../.local/venv/bin/python"),
        PathBuf::from,
    )
}

impl LocalStripe {
    pub async fn start() -> Self {
        Self::start_with(&[]).await
    }

    /// With the launcher's flags (`--fail-refunds N`).
    pub async fn start_with(flags: &[&str]) -> Self {
        crate::tls::install_crypto_provider();
        let script =
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scripts/localstripe-server.py");
        let mut child = Command::new(python())
            .arg(script)
            .args(flags)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("localstripe did not start: run scripts/localstripe.sh");
        let stdout = child.stdout.take().expect("localstripe's stdout");
        let port = tokio::task::spawn_blocking(move || {
            let mut line = String::new();
            BufReader::new(stdout).read_line(&mut line).ok();
            line.trim().parse::<u16>().ok()
        })
        .await
        .ok()
        .flatten()
        .expect("localstripe printed no port");
        let stripe = Self {
            port,
            child: Some(child),
            http: reqwest::Client::new(),
        };
        // Up once it answers.
        for _ in 0..100 {
            if stripe
                .http
                .get(stripe.url("/v1/payment_intents"))
                .bearer_auth(SECRET_KEY)
                .send()
                .await
                .is_ok()
            {
                return stripe;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        panic!("localstripe did not answer on port {port}");
    }

    /// A server already running on `port` of this host.
    pub fn on_port(port: u16) -> Self {
        crate::tls::install_crypto_provider();
        Self {
            port,
            child: None,
            http: reqwest::Client::new(),
        }
    }

    /// Its API's base, for `TICKET_STRIPE_API_BASE`.
    pub fn base(&self) -> String {
        format!("http://127.0.0.1:{}/", self.port)
    }

    /// The API's provider, talking to this server.
    pub fn provider(&self) -> crate::payments::Stripe {
        provider_at(&self.base(), &self.js_url())
    }

    /// The workers' client of this server.
    pub fn client(&self) -> crate::payments::stripe::StripeClient {
        self.provider().client
    }

    /// Its fake Stripe.js, for `TICKET_STRIPE_JS_URL`.
    pub fn js_url(&self) -> String {
        self.url("/js.stripe.com/v3/")
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// Sends `payment_intent.*` events, signed with [`WEBHOOK_SECRET`], to
    /// `url` (a second after each happens, once, as localstripe does).
    pub async fn send_webhooks_to(&self, url: &str) {
        let response = self
            .http
            .post(self.url("/_config/webhooks/ticket"))
            .form(&[("url", url), ("secret", WEBHOOK_SECRET)])
            .send()
            .await
            .expect("localstripe's webhook configuration");
        assert!(response.status().is_success(), "{}", response.status());
    }

    async fn post(&self, path: &str, form: &[(&str, &str)]) -> (u16, Value) {
        let response = self
            .http
            .post(self.url(path))
            .bearer_auth(SECRET_KEY)
            .form(form)
            .send()
            .await
            .expect("localstripe answers");
        let status = response.status().as_u16();
        (status, response.json().await.unwrap_or(Value::Null))
    }

    /// Pays a PaymentIntent as Stripe.js would with a test card's payment
    /// method (`pm_card_visa`; `pm_card_chargeCustomerFail` is declined):
    /// the confirmation's status and body (402 for a declined card).
    pub async fn pay(&self, payment_intent: &str, payment_method: &str) -> (u16, Value) {
        let (status, body) = self
            .post(
                &format!("/v1/payment_intents/{payment_intent}"),
                &[("payment_method", payment_method)],
            )
            .await;
        assert_eq!(status, 200, "attaching the card: {body}");
        self.post(
            &format!("/v1/payment_intents/{payment_intent}/confirm"),
            &[],
        )
        .await
    }

    /// A PaymentIntent of `amount` paid at once by card (for tests that
    /// make many sold orders without a browser); its id.
    pub async fn paid_payment_intent(&self, amount: u64, currency: &str) -> String {
        let amount = amount.to_string();
        let (status, body) = self
            .post(
                "/v1/payment_intents",
                &[
                    ("amount", amount.as_str()),
                    ("currency", currency),
                    ("payment_method_types[]", "card"),
                    ("payment_method", "pm_card_visa"),
                    ("confirm", "true"),
                ],
            )
            .await;
        assert_eq!(status, 200, "{body}");
        body["id"]
            .as_str()
            .expect("a PaymentIntent's id")
            .to_owned()
    }

    /// What Stripe answers a GET of `path` with `query` (null when it is
    /// no JSON).
    async fn get(&self, path: &str, query: &[(&str, &str)]) -> Value {
        self.http
            .get(self.url(path))
            .query(query)
            .bearer_auth(SECRET_KEY)
            .send()
            .await
            .expect("localstripe answers")
            .json()
            .await
            .unwrap_or(Value::Null)
    }

    /// The PaymentIntent as Stripe has it.
    pub async fn payment_intent(&self, id: &str) -> Value {
        self.get(&format!("/v1/payment_intents/{id}"), &[]).await
    }

    /// Every PaymentIntent Stripe holds, page by page: what the provider
    /// knows whatever the database kept.
    pub async fn payment_intents(&self) -> Vec<Value> {
        let mut all: Vec<Value> = Vec::new();
        loop {
            let last = all
                .last()
                .and_then(|pi| pi["id"].as_str())
                .map(str::to_owned);
            let mut query = vec![("limit", "100")];
            if let Some(last) = &last {
                query.push(("starting_after", last));
            }
            let page = self.get("/v1/payment_intents", &query).await;
            let data = page["data"].as_array().cloned().unwrap_or_default();
            let more = page["has_more"].as_bool().unwrap_or(false) && !data.is_empty();
            all.extend(data);
            if !more {
                return all;
            }
        }
    }

    /// The refunds of a PaymentIntent: (id, amount) each.
    pub async fn refunds_of(&self, payment_intent: &str) -> Vec<(String, u64)> {
        let body = self
            .get(
                "/v1/refunds",
                &[("payment_intent", payment_intent), ("limit", "100")],
            )
            .await;
        body["data"]
            .as_array()
            .map(|refunds| {
                refunds
                    .iter()
                    .map(|r| {
                        (
                            r["id"].as_str().unwrap_or_default().to_owned(),
                            r["amount"].as_u64().unwrap_or_default(),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// A provider at `base` (a server that may not be there).
pub fn provider_at(base: &str, js_url: &str) -> crate::payments::Stripe {
    crate::payments::Stripe {
        client: crate::payments::stripe::StripeClient::new(
            reqwest::Url::parse(base).expect("a URL"),
            crate::secret::Secret::new(SECRET_KEY),
        )
        .expect("a Stripe client"),
        publishable_key: PUBLISHABLE_KEY.to_owned(),
        js_url: js_url.to_owned(),
        webhook_secret: crate::secret::Secret::new(WEBHOOK_SECRET),
    }
}

impl Drop for LocalStripe {
    fn drop(&mut self) {
        if let Some(child) = &mut self.child {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
