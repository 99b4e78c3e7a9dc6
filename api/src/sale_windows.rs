//! Each concert's sale window, remembered for a second: every request needs
//! it (too early, lottery, or open), and a query per request would double
//! the enqueue's round trips. An admin's change is seen within a second;
//! the workers read the opening from the database themselves and decide
//! nothing before it, whatever an API instance believed.

use std::collections::HashMap;
use std::sync::RwLock;
use std::time::{Duration, Instant};

use sqlx::MySqlPool;
use ticket_core::db;
use ticket_core::domain::{ConcertId, SaleWindow};

use crate::error::ApiResult;

const FRESH_FOR: Duration = Duration::from_secs(1);
/// Entries kept before the cache starts again empty.
const MAX_ENTRIES: usize = 1 << 16;

#[derive(Debug, Default)]
pub struct SaleWindows {
    known: RwLock<HashMap<ConcertId, (SaleWindow, Instant)>>,
    /// One refresh at a time: while it runs, others use what is known.
    refreshing: tokio::sync::Mutex<()>,
}

impl SaleWindows {
    /// The concert's sale window, about a second old at most. A concert that
    /// is gone has none (its seats are gone too: the enqueue answers 404).
    pub async fn of(&self, pool: &MySqlPool, concert: ConcertId) -> ApiResult<SaleWindow> {
        let known = self.read().get(&concert).copied();
        let _refresh = match known {
            Some((window, at)) if at.elapsed() < FRESH_FOR => return Ok(window),
            // Stale: one request refreshes it, the others go on with it.
            Some((window, _)) => match self.refreshing.try_lock() {
                Ok(guard) => guard,
                Err(_) => return Ok(window),
            },
            None => self.refreshing.lock().await,
        };
        if let Some((window, at)) = self.read().get(&concert)
            && at.elapsed() < FRESH_FOR
        {
            return Ok(*window);
        }
        let mut conn = pool.acquire().await?;
        let window = db::concerts::sale_windows(&mut conn, &[concert])
            .await?
            .first()
            .map(|(_, window)| *window)
            .unwrap_or_default();
        let mut known = self
            .known
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if known.len() >= MAX_ENTRIES {
            known.clear();
        }
        known.insert(concert, (window, Instant::now()));
        Ok(window)
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, HashMap<ConcertId, (SaleWindow, Instant)>> {
        self.known
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}
