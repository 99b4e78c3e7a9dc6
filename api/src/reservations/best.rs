//! Best available: a request for `count` seats of a price category, the
//! line choosing which (see `ticket_core::domain::allocation::best`).

use ticket_core::db::{self, prices};
use ticket_core::domain::{BestAsk, ConcertId, FieldError, MaxSeatsPerOrder};

use crate::error::{ApiError, ApiResult};
use crate::state::AppState;

/// The ask for `count` seats of the concert's category named `category`:
/// 404 for a concert that does not exist, 400 naming the field for a
/// category it does not have or a count outside 1 to its `maxSeatsPerOrder`.
pub(super) async fn ask(
    state: &AppState,
    concert: ConcertId,
    category: &str,
    count: u64,
    allow_split: bool,
) -> ApiResult<BestAsk> {
    let mut conn = state.pool.acquire().await?;
    let Some(found) = db::concerts::find(&mut conn, concert).await? else {
        return Err(ApiError::concert_not_found());
    };
    let categories = prices::of_concert(&mut conn, concert).await?;
    let position = categories
        .as_ref()
        .and_then(|c| c.position_of(category))
        .and_then(|p| u8::try_from(p).ok());
    let Some(position) = position else {
        let names = categories
            .map(|c| {
                c.categories
                    .iter()
                    .map(|c| c.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .unwrap_or_default();
        let message = if names.is_empty() {
            "this concert has no price categories to ask for".to_owned()
        } else {
            format!("must be one of this concert's price categories: {names}")
        };
        return Err(FieldError::new("category", message).into());
    };
    let max = MaxSeatsPerOrder::parse(u64::from(found.max_seats_per_order)).unwrap_or_default();
    Ok(BestAsk::parse(position, count, allow_split, max)?)
}
