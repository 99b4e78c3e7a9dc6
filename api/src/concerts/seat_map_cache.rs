//! Each concert's seat layout (which seats, in natural order, with their
//! numbers) for seat maps, read at most every few seconds per instance and
//! kept ready to send: one small gzipped answer instead of a page of the
//! seat list per thousand seats, and no query per buyer when a sale opens.
//! Seats change rarely (an operator adds, renumbers or removes one); a map
//! that finds ids it does not know in the availability reads it again.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use serde::Serialize;
use sqlx::MySqlPool;
use ticket_core::db;
use ticket_core::domain::{ConcertId, SeatId};
use utoipa::ToSchema;

use crate::cached_body::CachedBody;
use crate::concerts::availability_cache::add_to_runs;
use crate::error::{ApiError, ApiResult};
use crate::fresh_cache::FreshCache;

/// How old an answer may be.
pub const FRESH_FOR: Duration = Duration::from_secs(5);
/// Concerts kept; past it the one read longest ago goes.
const MAX_CONCERTS: usize = 1_024;

/// The seats of a concert in natural order, in about a seat number's
/// bytes per seat.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SeatMapBody {
    concert_id: u64,
    /// The seats' ids in natural order, as runs of consecutive ids: [first
    /// id, how many].
    #[schema(value_type = Vec<Vec<u64>>, example = json!([[1, 3]]))]
    id_ranges: Vec<[u64; 2]>,
    /// The seats' numbers, in the same order.
    #[schema(example = json!(["A1", "A2", "A3"]))]
    seat_numbers: Vec<String>,
}

impl SeatMapBody {
    fn of(concert: ConcertId, seats: Vec<(SeatId, String)>) -> Self {
        let mut id_ranges: Vec<[u64; 2]> = Vec::new();
        let mut seat_numbers = Vec::with_capacity(seats.len());
        for (id, number) in seats {
            add_to_runs(&mut id_ranges, id);
            seat_numbers.push(number);
        }
        Self {
            concert_id: concert.get(),
            id_ranges,
            seat_numbers,
        }
    }
}

pub struct SeatMapCache {
    cache: FreshCache<ConcertId, Arc<CachedBody>>,
}

impl Default for SeatMapCache {
    fn default() -> Self {
        Self {
            cache: FreshCache::new(FRESH_FOR, MAX_CONCERTS),
        }
    }
}

impl SeatMapCache {
    /// The concert's layout, at most a few seconds old; None when there is
    /// no such concert.
    pub async fn get(
        &self,
        pool: &MySqlPool,
        concert: ConcertId,
    ) -> ApiResult<Option<Arc<CachedBody>>> {
        self.cache
            .get(concert, || async {
                let mut conn = pool.acquire().await?;
                let seats = db::seats::layout_of_concert(&mut conn, concert).await?;
                if seats.is_empty() && db::concerts::find(&mut conn, concert).await?.is_none() {
                    return Ok::<_, ApiError>(None);
                }
                let json = serde_json::to_vec(&SeatMapBody::of(concert, seats)).unwrap_or_default();
                Ok(Some(Arc::new(CachedBody::new(
                    Bytes::from(json),
                    flate2::Compression::default(),
                ))))
            })
            .await
            .map_err(ApiError::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seats_come_as_runs_of_ids_in_natural_order_with_their_numbers() {
        let seats = vec![
            (SeatId(1), "A1".to_owned()),
            (SeatId(2), "A2".to_owned()),
            (SeatId(9), "A3".to_owned()),
            (SeatId(3), "B1".to_owned()),
        ];
        let body = SeatMapBody::of(ConcertId(1), seats);
        assert_eq!(body.id_ranges, vec![[1, 2], [9, 1], [3, 1]]);
        assert_eq!(body.seat_numbers, ["A1", "A2", "A3", "B1"]);
    }
}
