//! Each concert's sale window, remembered for a second: every request needs
//! it (too early, lottery, or open), and a query per request would double
//! the enqueue's round trips. An admin's change is seen within a second;
//! the workers read the opening from the database themselves and decide
//! nothing before it, whatever an API instance believed.

use std::time::Duration;

use sqlx::MySqlPool;
use ticket_core::db;
use ticket_core::domain::{ConcertId, SaleWindow};

use crate::error::{ApiError, ApiResult};
use crate::fresh_cache::FreshCache;

pub struct SaleWindows(FreshCache<ConcertId, SaleWindow>);

impl Default for SaleWindows {
    fn default() -> Self {
        Self(FreshCache::new(Duration::from_secs(1), 1 << 16))
    }
}

impl SaleWindows {
    /// The concert's sale window, about a second old at most. A concert that
    /// is gone has none (its seats are gone too: the enqueue answers 404).
    pub async fn of(&self, pool: &MySqlPool, concert: ConcertId) -> ApiResult<SaleWindow> {
        self.0
            .get(concert, || async {
                let mut conn = pool.acquire().await?;
                let row = db::concerts::find(&mut conn, concert).await?;
                Ok::<_, ApiError>(row.map(|c| c.sale()))
            })
            .await
            .map(Option::unwrap_or_default)
            .map_err(ApiError::from)
    }
}
