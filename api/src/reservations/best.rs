//! Best available and standing: a request for `count` seats of a price
//! category or places of a standing area, the line choosing which (see
//! `ticket_core::domain::allocation::best`).

use ticket_core::db::{self, request_pools};
use ticket_core::domain::{AskedPool, BestAsk, ConcertId, PoolName};

use crate::concerts::sale_windows::SaleTerms;
use crate::error::ApiResult;

/// The pool `named`, read with the concert's line locked, as a change of
/// its categories or areas locks it: a place read before the lock may be
/// another category's by the time the request or entry is written (a
/// request would be decided at another price). Call in the transaction
/// that writes it.
pub(crate) async fn pool_under_line_lock(
    tx: &mut db::Conn,
    concert: ConcertId,
    named: &PoolName,
) -> ApiResult<AskedPool> {
    db::line::lock_lines(tx, &[concert]).await?;
    Ok(request_pools::names_of(tx, concert).await?.pool(named)?)
}

/// The ask for `count` places of the concert's category or area named in
/// `pool`, by its `terms`: 400 naming the field for a category or area it
/// does not have or a count outside 1 to its `maxSeatsPerOrder`.
pub(super) fn ask(
    terms: &SaleTerms,
    pool: &PoolName,
    count: u64,
    allow_split: bool,
) -> ApiResult<BestAsk> {
    let position = terms.pools.pool(pool)?;
    Ok(BestAsk::parse(
        position,
        count,
        allow_split,
        terms.max_seats_per_order,
    )?)
}
