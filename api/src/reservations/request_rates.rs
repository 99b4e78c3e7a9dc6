//! The requests this instance accepted, per concert and per second,
//! published once a second for the operator's on-sale view (which sums the
//! instances' figures: each sees only its own share of the traffic).

use std::sync::Arc;

use sqlx::MySqlPool;
use ticket_core::db::{self, rates};
use ticket_core::domain::ConcertId;
use ticket_core::rates::{PUBLISH_EVERY, SmoothedRates};

#[derive(Debug)]
pub struct RequestRates {
    /// This instance's name in `request_rates` (host name and pid: a pod's
    /// name in Kubernetes).
    instance: String,
    rates: SmoothedRates,
}

impl RequestRates {
    pub fn new() -> Self {
        let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "api".to_owned());
        let mut instance = format!("{host}-{}", std::process::id());
        instance.truncate(64);
        Self {
            instance,
            rates: SmoothedRates::default(),
        }
    }

    pub fn count(&self, accepted: impl IntoIterator<Item = ConcertId>) {
        self.rates.count(accepted);
    }

    /// Publishes every second while anything was accepted lately; a
    /// failed publication is logged and the next one goes on.
    pub async fn publish_every_second(self: Arc<Self>, pool: MySqlPool) {
        let mut every = tokio::time::interval(PUBLISH_EVERY);
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            every.tick().await;
            let rolled = self.rates.roll();
            if rolled.is_empty() {
                continue;
            }
            let published = async {
                let mut conn = pool.acquire().await?;
                let now = db::now(&mut conn).await?;
                rates::publish_requests(&mut conn, &self.instance, &rolled, now).await
            };
            if let Err(e) = published.await {
                tracing::warn!(error = %e, "publishing the request rates failed");
            }
        }
    }
}

impl Default for RequestRates {
    fn default() -> Self {
        Self::new()
    }
}
