//! What a claim does now and then besides claiming: looking after the
//! lotteries of sales that have opened, publishing the decision rates.

use crate::{Worker, opening};

/// The now-and-then work due at one claim.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Errands {
    look_after_opened: bool,
    publish_rates: bool,
}

impl Errands {
    pub(crate) fn any(self) -> bool {
        self.look_after_opened || self.publish_rates
    }
}

impl Worker {
    /// What a claim does besides claiming, now and then, that is due now
    /// (asking marks it done for one period).
    pub(crate) fn errands_due(&self) -> Errands {
        Errands {
            look_after_opened: self.opening_look.due(),
            publish_rates: self.publishing.due(),
        }
    }

    /// Looks after the opened lotteries, publishes the decision rates:
    /// those of `errands`.
    pub(crate) async fn run_errands(
        &self,
        conn: &mut sqlx::MySqlConnection,
        errands: Errands,
        now: chrono::DateTime<chrono::Utc>,
    ) -> Result<(), sqlx::Error> {
        if errands.look_after_opened {
            opening::look_after_opened(conn).await?;
        }
        if errands.publish_rates {
            self.rates.publish(conn, &self.owner, now).await?;
        }
        Ok(())
    }
}
