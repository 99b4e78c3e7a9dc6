//! A concert as the API answers it: its settings, its venue's time zone,
//! its prices and standing areas, and with its seat counts.

use chrono::{DateTime, Utc};
use serde::Serialize;
use ticket_core::db::concerts::ConcertRow;
use ticket_core::domain::{PageRequest, PriceCategories, StandingAreas};
use utoipa::ToSchema;

use super::availability_cache::SeatCounts;

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConcertResponse {
    id: u64,
    /// The organizer that runs it.
    organizer_id: u64,
    title: String,
    venue: String,
    concert_date: DateTime<Utc>,
    seat_count: u32,
    hold_seconds: u32,
    max_seats_per_order: u8,
    /// Seats one user may have in the concert (held, confirmed and asked
    /// for by open requests).
    max_seats_per_user: u8,
    /// When the sale opens; null: on sale.
    opens_at: Option<DateTime<Utc>>,
    /// When the presale begins (requests need an access code until
    /// `opensAt`); null: no presale.
    presale_starts_at: Option<DateTime<Utc>>,
    lottery_window_seconds: u32,
    /// 0: off; else the proof-of-work level a request must pay.
    proof_of_work: u8,
    /// How long seats offered from the waiting list are held for the fan.
    waiting_list_offer_seconds: u32,
    /// Until when a fan may give back tickets paid through the payment
    /// provider; null: never (an admin always may).
    refundable_until: Option<DateTime<Utc>>,
    /// When the concert was cancelled (its orders are refunded), and why;
    /// null: it was not.
    cancelled_at: Option<DateTime<Utc>>,
    cancel_reason: Option<String>,
    /// The price categories, in order (the first takes the rows no other
    /// names); empty: the concert has no prices.
    categories: Vec<CategoryResponse>,
    /// The standing areas, in order (an area's position is its index, as
    /// in the availability's `availableByArea`); empty: none. `seatCount`
    /// counts their places.
    areas: Vec<AreaResponse>,
    /// The venue's IANA time zone: show the times above in it.
    #[schema(example = "Asia/Seoul")]
    time_zone: String,
    /// The zone's abbreviation at each time shown ("KST"; "CET" or "CEST"
    /// by the season), for a page to write after the venue's time.
    time_zone_names: ZoneNames,
    created_at: DateTime<Utc>,
    updated_at: DateTime<Utc>,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ZoneNames {
    #[schema(example = "KST")]
    concert_date: String,
    opens_at: Option<String>,
    presale_starts_at: Option<String>,
    refundable_until: Option<String>,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CategoryResponse {
    name: String,
    /// In the currency's minor units.
    price: u64,
    currency: String,
    rows: Vec<String>,
    /// `#rrggbb`, or null for the page's palette.
    colour: Option<String>,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AreaResponse {
    name: String,
    capacity: u32,
    /// The price category of its places, by name; null: the first (or
    /// none, without prices).
    category: Option<String>,
}

fn areas_of(areas: Option<&StandingAreas>) -> Vec<AreaResponse> {
    areas.map_or_else(Vec::new, |a| {
        a.areas
            .iter()
            .map(|a| AreaResponse {
                name: a.name.clone(),
                capacity: a.capacity,
                category: a.category.clone(),
            })
            .collect()
    })
}

fn categories_of(categories: Option<&PriceCategories>) -> Vec<CategoryResponse> {
    let Some(categories) = categories else {
        return Vec::new();
    };
    categories
        .categories
        .iter()
        .map(|c| CategoryResponse {
            name: c.name.clone(),
            price: c.price.get(),
            currency: categories.currency.as_str().to_owned(),
            rows: c.rows.iter().map(|r| r.as_str().to_owned()).collect(),
            colour: c.colour.as_ref().map(|c| c.as_str().to_owned()),
        })
        .collect()
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConcertDetailResponse {
    #[serde(flatten)]
    concert: ConcertResponse,
    /// The seat counts are at most about a second old (the availability's).
    available_seats: u64,
    /// Seats under a running hold (a hold that has just run out counts here
    /// until the sweep frees it, within seconds).
    held_seats: u64,
    reserved_seats: u64,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConcertPage {
    /// Each with its seat counts, as `GET /api/concerts/{id}` gives them.
    content: Vec<ConcertDetailResponse>,
    page: u32,
    size: u32,
    total_elements: u64,
    total_pages: u64,
}

impl ConcertPage {
    pub(super) fn new(
        content: Vec<ConcertDetailResponse>,
        page: PageRequest,
        total_elements: u64,
    ) -> Self {
        Self {
            content,
            page: page.page,
            size: page.size,
            total_elements,
            total_pages: page.total_pages(total_elements),
        }
    }
}

impl ConcertDetailResponse {
    /// The concert with its seat counts.
    pub(super) fn new(concert: ConcertResponse, counts: SeatCounts) -> Self {
        Self {
            concert,
            available_seats: counts.available,
            held_seats: counts.held,
            reserved_seats: counts.reserved,
        }
    }
}

impl ConcertResponse {
    pub(super) fn new(
        c: ConcertRow,
        categories: Option<&PriceCategories>,
        areas: Option<&StandingAreas>,
    ) -> Self {
        let zone = c.time_zone();
        let name = |at: Option<DateTime<Utc>>| at.map(|at| zone.abbreviation_at(at));
        Self {
            time_zone: zone.name().to_owned(),
            time_zone_names: ZoneNames {
                concert_date: zone.abbreviation_at(c.concert_date),
                opens_at: name(c.opens_at),
                presale_starts_at: name(c.presale_starts_at),
                refundable_until: name(c.refundable_until),
            },
            id: c.id.get(),
            organizer_id: c.organizer_id.get(),
            title: c.title,
            venue: c.venue,
            concert_date: c.concert_date,
            seat_count: c.seat_count,
            hold_seconds: c.hold_seconds,
            max_seats_per_order: c.max_seats_per_order,
            max_seats_per_user: c.max_seats_per_user,
            opens_at: c.opens_at,
            presale_starts_at: c.presale_starts_at,
            lottery_window_seconds: c.lottery_window_seconds,
            proof_of_work: c.proof_of_work,
            waiting_list_offer_seconds: c.waiting_list_offer_seconds,
            refundable_until: c.refundable_until,
            cancelled_at: c.cancelled_at,
            cancel_reason: c.cancel_reason,
            categories: categories_of(categories),
            areas: areas_of(areas),
            created_at: c.created_at,
            updated_at: c.updated_at,
        }
    }
}
