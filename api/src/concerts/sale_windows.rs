//! Each concert's sale window and cap per fan, remembered for a second:
//! every request needs them (too early, lottery, or open; over the cap),
//! and a query per request would double the enqueue's round trips. An
//! admin's change is seen within a second; the workers read the opening
//! and the cap from the database themselves and decide nothing before the
//! one nor past the other, whatever an API instance believed.

use std::time::Duration;

use sqlx::MySqlPool;
use ticket_core::db;
use ticket_core::domain::{ConcertId, MaxSeatsPerUser, ProofOfWork, SaleWindow};

use crate::error::{ApiError, ApiResult};
use crate::fresh_cache::FreshCache;

pub struct SaleWindows(FreshCache<ConcertId, SaleTerms>);

/// What an enqueue needs of its concert.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SaleTerms {
    pub window: SaleWindow,
    pub max_seats_per_user: MaxSeatsPerUser,
    pub proof_of_work: ProofOfWork,
    /// The concert was cancelled: nothing more is sold.
    pub cancelled: bool,
}

impl SaleTerms {
    /// Refuses a cancelled concert's sale (requests, the waiting list).
    pub fn ensure_selling(&self) -> ApiResult<()> {
        if self.cancelled {
            return Err(crate::payments::routes::concert_cancelled());
        }
        Ok(())
    }
}

impl Default for SaleTerms {
    /// A concert that is gone: its seats are gone too, and the enqueue
    /// answers 404 whatever the terms.
    fn default() -> Self {
        Self {
            window: SaleWindow::default(),
            max_seats_per_user: MaxSeatsPerUser::from_stored(MaxSeatsPerUser::MOST),
            proof_of_work: ProofOfWork::default(),
            cancelled: false,
        }
    }
}

impl Default for SaleWindows {
    fn default() -> Self {
        Self(FreshCache::new(Duration::from_secs(1), 1 << 16))
    }
}

impl SaleWindows {
    /// The concert's sale window, about a second old at most. A concert that
    /// is gone has none (its seats are gone too: the enqueue answers 404).
    pub async fn of(&self, pool: &MySqlPool, concert: ConcertId) -> ApiResult<SaleWindow> {
        Ok(self.terms(pool, concert).await?.window)
    }

    /// Reads the concert's terms again at the next ask (this instance
    /// changed them: others see it within the second).
    pub fn forget(&self, concert: ConcertId) {
        self.0.invalidate(concert);
    }

    /// The concert's sale window and cap, about a second old at most.
    pub async fn terms(&self, pool: &MySqlPool, concert: ConcertId) -> ApiResult<SaleTerms> {
        self.0
            .get(concert, || async {
                let mut conn = pool.acquire().await?;
                let row = db::concerts::find(&mut conn, concert).await?;
                Ok::<_, ApiError>(row.map(|c| SaleTerms {
                    window: c.sale(),
                    max_seats_per_user: MaxSeatsPerUser::from_stored(c.max_seats_per_user),
                    proof_of_work: ProofOfWork::from_stored(c.proof_of_work),
                    cancelled: c.cancelled_at.is_some(),
                }))
            })
            .await
            .map(Option::unwrap_or_default)
            .map_err(ApiError::from)
    }
}
