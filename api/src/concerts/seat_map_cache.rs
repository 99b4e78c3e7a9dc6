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
use ticket_core::db::seats::LayoutSeat;
use ticket_core::domain::{ConcertId, PriceCategories};
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
    /// The price categories (the legend); empty: the concert has no prices.
    categories: Vec<MapCategory>,
    /// Each seat's category, as an index into `categories`, in the same
    /// order as `seatNumbers`; empty without prices.
    #[schema(example = json!([0, 0, 1]))]
    seat_categories: Vec<u8>,
    /// A seating plan's drawing (empty without one): each seat's position
    /// in the plan's units, in the same order as `seatNumbers`.
    #[schema(example = json!([120.5, 141.0, 161.5]))]
    seat_x: Vec<f32>,
    #[schema(example = json!([80.0, 80.0, 80.0]))]
    seat_y: Vec<f32>,
    /// The plan's zones (stalls, balcony), and each seat's as an index
    /// into them.
    #[schema(example = json!(["Stalls"]))]
    zones: Vec<String>,
    #[schema(example = json!([0, 0, 0]))]
    seat_zones: Vec<u8>,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MapCategory {
    name: String,
    /// In the currency's minor units.
    price: u64,
    currency: String,
}

impl SeatMapBody {
    fn of(concert: ConcertId, seats: Vec<LayoutSeat>, prices: Option<&PriceCategories>) -> Self {
        let mut id_ranges: Vec<[u64; 2]> = Vec::new();
        let mut seat_numbers = Vec::with_capacity(seats.len());
        let mut seat_categories = Vec::new();
        // Drawn at the plan's positions only when every seat has one.
        let drawn =
            !seats.is_empty() && seats.iter().all(|s| s.pos_x.is_some() && s.pos_y.is_some());
        let (mut seat_x, mut seat_y, mut zones, mut seat_zones) =
            (Vec::new(), Vec::new(), Vec::<String>::new(), Vec::new());
        for seat in seats {
            if drawn {
                // A tenth of the plan's unit is finer than any screen shows.
                let tenth = |v: Option<f64>| (v.unwrap_or(0.0) * 10.0).round() as f32 / 10.0;
                seat_x.push(tenth(seat.pos_x));
                seat_y.push(tenth(seat.pos_y));
                let zone = seat.zone.as_deref().unwrap_or("");
                let index = match zones.iter().position(|z| z == zone) {
                    Some(i) => i,
                    None => {
                        zones.push(zone.to_owned());
                        zones.len() - 1
                    }
                };
                seat_zones.push(u8::try_from(index).unwrap_or(u8::MAX));
            }
            add_to_runs(&mut id_ranges, seat.id);
            seat_numbers.push(seat.seat_number);
            if prices.is_some() {
                seat_categories.push(seat.category.unwrap_or(0));
            }
        }
        let categories = prices.map_or_else(Vec::new, |p| {
            p.categories
                .iter()
                .map(|c| MapCategory {
                    name: c.name.clone(),
                    price: c.price.get(),
                    currency: p.currency.as_str().to_owned(),
                })
                .collect()
        });
        Self {
            concert_id: concert.get(),
            id_ranges,
            seat_numbers,
            categories,
            seat_categories,
            seat_x,
            seat_y,
            zones,
            seat_zones,
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
                let prices = db::prices::of_concert(&mut conn, concert).await?;
                let body = SeatMapBody::of(concert, seats, prices.as_ref());
                let json = serde_json::to_vec(&body).unwrap_or_default();
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
    use ticket_core::domain::SeatId;
    use ticket_core::domain::price::CategoryInput;

    #[test]
    fn seats_come_as_runs_of_ids_in_natural_order_with_their_numbers() {
        let seat = |id, number: &str, category| LayoutSeat {
            id: SeatId(id),
            seat_number: number.to_owned(),
            category,
            zone: None,
            pos_x: None,
            pos_y: None,
        };
        let seats = vec![
            seat(1, "A1", None),
            seat(2, "A2", None),
            seat(9, "A3", None),
            seat(3, "B1", None),
        ];
        let body = SeatMapBody::of(ConcertId(1), seats, None);
        assert_eq!(body.id_ranges, vec![[1, 2], [9, 1], [3, 1]]);
        assert_eq!(body.seat_numbers, ["A1", "A2", "A3", "B1"]);
        assert!(body.categories.is_empty() && body.seat_categories.is_empty());
        assert!(
            body.seat_x.is_empty() && body.zones.is_empty(),
            "no plan, no drawing"
        );
    }

    #[test]
    fn a_priced_map_has_its_legend_and_each_seats_category() {
        let rows = vec!["B".to_owned()];
        let input = [
            CategoryInput {
                name: "Standard",
                price: 90_000,
                currency: "KRW",
                rows: &[],
                colour: None,
            },
            CategoryInput {
                name: "VIP",
                price: 150_000,
                currency: "KRW",
                rows: &rows,
                colour: None,
            },
        ];
        let prices = PriceCategories::parse(&input).unwrap();
        let seats = vec![
            LayoutSeat {
                id: SeatId(1),
                seat_number: "A1".into(),
                category: Some(0),
                zone: None,
                pos_x: None,
                pos_y: None,
            },
            LayoutSeat {
                id: SeatId(2),
                seat_number: "B1".into(),
                category: Some(1),
                zone: None,
                pos_x: None,
                pos_y: None,
            },
        ];
        let body = SeatMapBody::of(ConcertId(1), seats, Some(&prices));
        assert_eq!(body.seat_categories, [0, 1]);
        assert_eq!(body.categories[1].name, "VIP");
        assert_eq!(body.categories[1].price, 150_000);
        assert_eq!(body.categories[1].currency, "KRW");
    }
}
