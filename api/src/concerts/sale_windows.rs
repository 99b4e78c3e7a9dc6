//! Each concert's sale window, cap per fan and pools, remembered for a
//! second: every request needs them (too early, lottery, or open; over the
//! cap; which category a request by count names), and a query per request
//! would double the enqueue's round trips. An admin's change is seen within
//! a second; the workers read the opening and the cap from the database
//! themselves and decide nothing before the one nor past the other, and a
//! request by count has its pool named again under its concert's line lock
//! where it is written, whatever an API instance believed.

use std::sync::Arc;
use std::time::Duration;

use sqlx::MySqlPool;
use ticket_core::db;
use ticket_core::db::request_pools;
use ticket_core::domain::{
    ConcertId, MaxSeatsPerOrder, MaxSeatsPerUser, PoolNames, ProofOfWork, SaleWindow,
};

use crate::error::{ApiError, ApiResult};
use crate::fresh_cache::FreshCache;

pub struct SaleWindows(FreshCache<ConcertId, SaleTerms>);

/// What an enqueue needs of its concert.
#[derive(Debug, Clone)]
pub struct SaleTerms {
    pub window: SaleWindow,
    pub max_seats_per_user: MaxSeatsPerUser,
    pub max_seats_per_order: MaxSeatsPerOrder,
    pub proof_of_work: ProofOfWork,
    /// The concert was cancelled: nothing more is sold.
    pub cancelled: bool,
    /// Its price categories and standing areas, by name.
    pub pools: Arc<PoolNames>,
    /// The count of changes of those `pools` was read after (see
    /// `line::pools_version`).
    pub pools_version: u32,
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
            max_seats_per_order: MaxSeatsPerOrder::default(),
            proof_of_work: ProofOfWork::default(),
            cancelled: false,
            pools: Arc::default(),
            pools_version: 0,
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
        Ok(self.of_existing(pool, concert).await?.unwrap_or_default())
    }

    /// The concert's terms, about a second old at most; `None` for a
    /// concert that does not exist.
    pub async fn of_existing(
        &self,
        pool: &MySqlPool,
        concert: ConcertId,
    ) -> ApiResult<Option<SaleTerms>> {
        self.0
            .get(concert, || async {
                let mut conn = pool.acquire().await?;
                let Some(c) = db::concerts::find(&mut conn, concert).await? else {
                    return Ok::<_, ApiError>(None);
                };
                // The version first: a change between the two reads leaves
                // an older version with newer names, which the enqueue
                // reads again, never the other way round.
                let pools_version = db::line::pools_version(&mut conn, concert).await?;
                let pools = request_pools::names_of(&mut conn, concert).await?;
                Ok(Some(SaleTerms {
                    window: c.sale(),
                    max_seats_per_user: MaxSeatsPerUser::from_stored(c.max_seats_per_user),
                    max_seats_per_order: MaxSeatsPerOrder::parse(u64::from(c.max_seats_per_order))
                        .unwrap_or_default(),
                    proof_of_work: ProofOfWork::from_stored(c.proof_of_work),
                    cancelled: c.cancelled_at.is_some(),
                    pools: Arc::new(pools),
                    pools_version,
                }))
            })
            .await
            .map_err(ApiError::from)
    }
}
