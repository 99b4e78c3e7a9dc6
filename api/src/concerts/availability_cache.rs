//! Every seat's state for seat maps, per concert, read at most once a second
//! per instance and kept ready to send: the JSON body, its gzip, and a
//! strong ETag. Any number of readers cost the database about one query per
//! second per instance and concert; a CDN in front (`max-age=1`) takes the
//! rest.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use prometheus::IntCounter;
use serde::Serialize;
use sqlx::MySqlPool;
use ticket_core::db;
use ticket_core::db::seats::SeatState;
use ticket_core::domain::{ConcertId, SeatId, SeatStatus};
use utoipa::ToSchema;

use crate::cached_body::CachedBody;
use crate::error::{ApiError, ApiResult};
use crate::fresh_cache::FreshCache;

/// How old an answer may be.
pub const FRESH_FOR: Duration = Duration::from_secs(1);
/// Concerts kept; past it the one read longest ago goes.
const MAX_CONCERTS: usize = 1_024;

/// The seat map's state, in a form of about one byte per seat.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AvailabilityBody {
    concert_id: u64,
    /// The seats (standing places aside), in id order, as runs of
    /// consecutive ids: [first id, how many].
    #[schema(value_type = Vec<Vec<u64>>, example = json!([[1, 100]]))]
    seat_ranges: Vec<[u64; 2]>,
    /// One letter per seat, in the order of `seatRanges`: A (available),
    /// H (held) or R (reserved).
    #[schema(example = "AAHRA")]
    states: String,
    #[serde(flatten)]
    counts: SeatCounts,
    /// Available seats of each price category, by its position in the
    /// concert's `categories` (what best available may still give): one
    /// count for every category, 0 for one without a seat; empty without
    /// categories. Standing places are counted by area.
    #[schema(example = json!([120, 8]))]
    available_by_category: Vec<u64>,
    /// Available places of each standing area, by its position in the
    /// concert's `areas`; empty without areas. The counts above include
    /// them.
    #[schema(example = json!([4200]))]
    available_by_area: Vec<u64>,
}

/// Adds `id` to runs of consecutive ids ([first id, how many]), as seat maps
/// carry their seats.
pub(crate) fn add_to_runs(runs: &mut Vec<[u64; 2]>, id: SeatId) {
    match runs.last_mut() {
        Some([first, count]) if *first + *count == id.get() => *count += 1,
        _ => runs.push([id.get(), 1]),
    }
}

impl AvailabilityBody {
    /// `pools`: how many categories and areas the concert has, so that a
    /// pool without a free seat, or without any seat, is counted (0) too.
    fn of(concert: ConcertId, seats: &[SeatState], pools: (usize, usize)) -> Self {
        let mut seat_ranges: Vec<[u64; 2]> = Vec::new();
        let mut states = String::with_capacity(seats.len());
        let mut counts = SeatCounts::default();
        let mut available_by_category: Vec<u64> = vec![0; pools.0];
        let mut available_by_area: Vec<u64> = vec![0; pools.1];
        for seat in seats {
            // Each pool counted, those sold out too.
            let (by_pool, pool) = match seat.area {
                Some(area) => (&mut available_by_area, Some(area)),
                None => (&mut available_by_category, seat.category),
            };
            let pool = pool.map(usize::from);
            if let Some(p) = pool
                && by_pool.len() <= p
            {
                by_pool.resize(p + 1, 0);
            }
            let letter = match seat.status {
                SeatStatus::Available => {
                    counts.available += 1;
                    if let Some(free) = pool.and_then(|p| by_pool.get_mut(p)) {
                        *free += 1;
                    }
                    'A'
                }
                SeatStatus::Held => {
                    counts.held += 1;
                    'H'
                }
                SeatStatus::Reserved => {
                    counts.reserved += 1;
                    'R'
                }
            };
            if seat.area.is_none() {
                add_to_runs(&mut seat_ranges, seat.id);
                states.push(letter);
            }
        }
        Self {
            concert_id: concert.get(),
            seat_ranges,
            states,
            counts,
            available_by_category,
            available_by_area,
        }
    }
}

/// One concert's answer, ready to send.
#[derive(Debug)]
pub struct Snapshot {
    pub body: CachedBody,
    pub counts: SeatCounts,
}

/// How many seats are in each state.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, ToSchema)]
pub struct SeatCounts {
    pub available: u64,
    pub held: u64,
    pub reserved: u64,
}

impl Snapshot {
    fn of(body: &AvailabilityBody) -> Self {
        let json = serde_json::to_vec(body).unwrap_or_default();
        Self {
            body: CachedBody::new(Bytes::from(json), flate2::Compression::fast()),
            counts: body.counts,
        }
    }
}

pub struct AvailabilityCache {
    cache: FreshCache<ConcertId, Arc<Snapshot>>,
    queries: IntCounter,
}

impl AvailabilityCache {
    pub fn new(queries: IntCounter) -> Self {
        Self {
            cache: FreshCache::new(FRESH_FOR, MAX_CONCERTS),
            queries,
        }
    }

    /// The concert's availability, at most about a second old; None when
    /// there is no such concert.
    pub async fn get(
        &self,
        pool: &MySqlPool,
        concert: ConcertId,
    ) -> ApiResult<Option<Arc<Snapshot>>> {
        self.cache
            .get(concert, || async {
                self.queries.inc();
                let mut conn = pool.acquire().await?;
                let seats = db::seats::states_of_concert(&mut conn, concert).await?;
                if seats.is_empty() && db::concerts::find(&mut conn, concert).await?.is_none() {
                    return Ok::<_, ApiError>(None);
                }
                let pools = db::concerts::pool_counts(&mut conn, concert).await?;
                Ok(Some(Arc::new(Snapshot::of(&AvailabilityBody::of(
                    concert, &seats, pools,
                )))))
            })
            .await
            .map_err(ApiError::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seats_come_as_runs_of_ids_and_a_letter_each() {
        let seat = |id, status, category, area| SeatState {
            id: SeatId(id),
            status,
            category: Some(category),
            area,
        };
        let seats = [
            seat(10, SeatStatus::Available, 0, None),
            seat(11, SeatStatus::Held, 0, None),
            seat(12, SeatStatus::Reserved, 1, None),
            seat(20, SeatStatus::Available, 0, None),
            seat(21, SeatStatus::Reserved, 2, None),
            seat(30, SeatStatus::Available, 0, Some(1)),
            seat(31, SeatStatus::Reserved, 0, Some(1)),
        ];
        // Four categories (the last with no seat) and two areas.
        let body = AvailabilityBody::of(ConcertId(3), &seats, (4, 2));
        assert_eq!(
            body.seat_ranges,
            vec![[10, 3], [20, 2]],
            "places are not on the map"
        );
        assert_eq!(body.states, "AHRAR");
        assert_eq!(
            body.counts,
            SeatCounts {
                available: 3,
                held: 1,
                reserved: 3
            }
        );
        // Each pool counted, those sold out or without seats too.
        assert_eq!(body.available_by_category, vec![2, 0, 0, 0]);
        assert_eq!(body.available_by_area, vec![0, 1]);
        let snapshot = Snapshot::of(&body);
        assert_eq!(
            snapshot.body.etag(),
            Snapshot::of(&body).body.etag(),
            "the same state, the same tag"
        );
    }
}
