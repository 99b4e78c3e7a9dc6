//! Best available and standing: a request for `count` seats of a price
//! category or places of a standing area, the line choosing which (see
//! `ticket_core::domain::allocation::best`).

use ticket_core::db::{self, prices, standing_areas};
use ticket_core::domain::{
    AskedPool, BestAsk, ConcertId, FieldError, MaxSeatsPerOrder, PriceCategories, StandingAreas,
};

use crate::error::{ApiError, ApiResult};
use crate::state::AppState;

/// A pool as a request names it.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Named<'a> {
    Category(&'a str),
    Area(&'a str),
}

impl Named<'_> {
    /// The request's field that names it.
    pub(crate) fn field(self) -> &'static str {
        match self {
            Self::Category(_) => "category",
            Self::Area(_) => "area",
        }
    }
}

/// A concert's price categories and standing areas: what a request or a
/// waiting-list entry names a pool by, and what an answer names it by.
pub(crate) struct PoolNames {
    categories: Option<PriceCategories>,
    areas: StandingAreas,
}

impl PoolNames {
    pub(crate) async fn of(conn: &mut db::Conn, concert: ConcertId) -> ApiResult<Self> {
        Ok(Self {
            categories: prices::of_concert(conn, concert).await?,
            areas: standing_areas::of_concert(conn, concert).await?,
        })
    }

    fn category_names(&self) -> Vec<&str> {
        self.categories.as_ref().map_or_else(Vec::new, |c| {
            c.categories.iter().map(|c| c.name.as_str()).collect()
        })
    }

    /// The pool `named`: 400 naming the field for a category or area the
    /// concert does not have.
    pub(crate) fn pool(&self, named: Named<'_>) -> Result<AskedPool, FieldError> {
        let (position, names, kind) = match named {
            Named::Category(name) => (
                self.categories
                    .as_ref()
                    .and_then(|c| c.position_of(name))
                    .and_then(|p| u8::try_from(p).ok())
                    .map(AskedPool::Category),
                self.category_names(),
                "price categories",
            ),
            Named::Area(name) => (
                self.areas.position_of(name).map(AskedPool::Area),
                self.areas.areas.iter().map(|a| a.name.as_str()).collect(),
                "standing areas",
            ),
        };
        position.ok_or_else(|| {
            let message = if names.is_empty() {
                format!("this concert has no {kind} to ask for")
            } else {
                format!("must be one of this concert's {kind}: {}", names.join(", "))
            };
            FieldError::new(named.field(), message)
        })
    }

    /// The category's and the area's names of `pool` (each `None` when it
    /// is not of that kind, or is no more).
    pub(crate) fn names(&self, pool: Option<AskedPool>) -> (Option<String>, Option<String>) {
        match pool {
            None => (None, None),
            Some(AskedPool::Category(p)) => {
                let name = self
                    .category_names()
                    .get(usize::from(p))
                    .map(|n| (*n).to_owned());
                (name, None)
            }
            Some(AskedPool::Area(p)) => {
                let name = self.areas.areas.get(usize::from(p)).map(|a| a.name.clone());
                (None, name)
            }
        }
    }
}

/// The pool `named`, read with the concert's line locked, as a change of
/// its categories or areas locks it: a place read before the lock may be
/// another category's by the time the request or entry is written (a
/// request would be decided at another price). Call in the transaction
/// that writes it.
pub(crate) async fn pool_under_line_lock(
    tx: &mut db::Conn,
    concert: ConcertId,
    named: Named<'_>,
) -> ApiResult<AskedPool> {
    db::line::lock_lines(tx, &[concert]).await?;
    Ok(PoolNames::of(tx, concert).await?.pool(named)?)
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
    let position = PoolNames::of(&mut conn, concert).await?.pool(pool)?;
    let max = MaxSeatsPerOrder::parse(u64::from(found.max_seats_per_order)).unwrap_or_default();
    Ok(BestAsk::parse(position, count, allow_split, max)?)
}
