//! Best available and standing: a request for `count` seats of a price
//! category or places of a standing area, the line choosing which (see
//! `ticket_core::domain::allocation::best`).

use ticket_core::db::{self, prices, standing_areas};
use ticket_core::domain::{AskedPool, BestAsk, ConcertId, FieldError, MaxSeatsPerOrder};

use crate::error::{ApiError, ApiResult};
use crate::state::AppState;

/// A pool as a request names it.
#[derive(Debug, Clone, Copy)]
pub(super) enum Named<'a> {
    Category(&'a str),
    Area(&'a str),
}

impl Named<'_> {
    /// The request's field that names it.
    pub(super) fn field(self) -> &'static str {
        match self {
            Self::Category(_) => "category",
            Self::Area(_) => "area",
        }
    }
}

/// The ask for `count` places of the concert's category or area named in
/// `pool`: 404 for a concert that does not exist, 400 naming the field for
/// a category or area it does not have or a count outside 1 to its
/// `maxSeatsPerOrder`.
pub(super) async fn ask(
    state: &AppState,
    concert: ConcertId,
    pool: Named<'_>,
    count: u64,
    allow_split: bool,
) -> ApiResult<BestAsk> {
    let mut conn = state.pool.acquire().await?;
    let Some(found) = db::concerts::find(&mut conn, concert).await? else {
        return Err(ApiError::concert_not_found());
    };
    let (position, names) = match pool {
        Named::Category(name) => {
            let categories = prices::of_concert(&mut conn, concert).await?;
            let position = categories
                .as_ref()
                .and_then(|c| c.position_of(name))
                .and_then(|p| u8::try_from(p).ok())
                .map(AskedPool::Category);
            let names = categories.map_or_else(Vec::new, |c| {
                c.categories.into_iter().map(|c| c.name).collect()
            });
            (position, names)
        }
        Named::Area(name) => {
            let areas = standing_areas::of_concert(&mut conn, concert).await?;
            let position = areas.position_of(name).map(AskedPool::Area);
            (position, areas.areas.into_iter().map(|a| a.name).collect())
        }
    };
    let Some(position) = position else {
        let kind = match pool {
            Named::Category(_) => "price categories",
            Named::Area(_) => "standing areas",
        };
        let message = if names.is_empty() {
            format!("this concert has no {kind} to ask for")
        } else {
            format!("must be one of this concert's {kind}: {}", names.join(", "))
        };
        return Err(FieldError::new(pool.field(), message).into());
    };
    let max = MaxSeatsPerOrder::parse(u64::from(found.max_seats_per_order)).unwrap_or_default();
    Ok(BestAsk::parse(position, count, allow_split, max)?)
}
