//! A decision's window on a pool (best available, standing): the best
//! free places read without locks, and the bound below which they are all
//! of the pool's, for [`super::lock_free`] to lock and the worker to prove
//! its decision with.

use crate::db::{BindIds as _, IdList, Traced as _};
use crate::domain::{AskedPool, ConcertId, SeatId};
use chrono::{DateTime, Utc};
use sqlx::MySqlConnection;

/// A free seat as a window reads it (from the pool's index alone).
#[derive(Debug, Clone, Copy, PartialEq, Eq, sqlx::FromRow)]
struct Ranked {
    id: SeatId,
    seat_rank: u32,
    row_index: u32,
}

/// The best free places of a pool (a price category's seats, or a standing
/// area's places), read, not locked: up to `limit` (all with `None`), best
/// first, and the rank below which every free place of the pool is among
/// them (`None`: all are). For a category, every free seat of each row
/// those are in besides: a block lies in one row, so a block with a seat
/// not read lies in a row none of whose seats was, all its seats ranked at
/// least the bound. The caller locks them ([`super::lock_free`], in id order) and
/// decides with them only what the bound proves. AVAILABLE places come
/// through the pool's index in rank order; holds that have ended (HELD,
/// not yet swept) are read apart.
pub async fn best_free(
    conn: &mut MySqlConnection,
    concert: ConcertId,
    pool: AskedPool,
    limit: Option<u32>,
    now: DateTime<Utc>,
) -> Result<(Vec<SeatId>, Option<u32>), sqlx::Error> {
    async move {
        // An area's places share its price category: the index's next part.
        let category = match pool {
            AskedPool::Category(position) => Some(position),
            AskedPool::Area(area) => category_of_area(conn, concert, area).await?,
        };
        let take = limit.map_or(String::new(), |n| format!(" LIMIT {}", u64::from(n) + 1));
        let read = |status: &str| {
            format!(
                "SELECT id, seat_rank, row_index FROM seats FORCE INDEX (idx_seats_best) \
                  WHERE concert_id = ? AND area <=> ? AND category <=> ? AND {status} \
                  ORDER BY seat_rank, id{take}"
            )
        };
        let available: Vec<Ranked> =
            sqlx::query_as(sqlx::AssertSqlSafe(read("status = 'AVAILABLE'")))
                .bind(concert)
                .bind(pool.area())
                .bind(category)
                .fetch_all(&mut *conn)
                .await?;
        let ended: Vec<Ranked> = sqlx::query_as(sqlx::AssertSqlSafe(read(
            "status = 'HELD' AND held_until <= ?",
        )))
        .bind(concert)
        .bind(pool.area())
        .bind(category)
        .bind(now.naive_utc())
        .fetch_all(&mut *conn)
        .await?;
        let (mut seats, bound) = best_of(&available, &ended, limit);
        if let (Some(bound), AskedPool::Category(category)) = (bound, pool) {
            let mut rows: Vec<u32> = seats.iter().map(|s| s.row_index).collect();
            rows.sort_unstable();
            rows.dedup();
            seats.extend(rest_of_rows(conn, concert, category, &rows, bound, now).await?);
        }
        Ok((seats.into_iter().map(|s| s.id).collect(), bound))
    }
    .traced("SELECT", "seats")
    .await
}

/// The price category of a standing area's places (they share one).
async fn category_of_area(
    conn: &mut MySqlConnection,
    concert: ConcertId,
    area: u8,
) -> Result<Option<u8>, sqlx::Error> {
    let row: Option<(Option<u8>,)> = sqlx::query_as(
        "SELECT category FROM seats FORCE INDEX (idx_seats_best) WHERE concert_id = ? AND area = ? LIMIT 1",
    )
    .bind(concert)
    .bind(area)
    .fetch_optional(conn)
    .await?;
    Ok(row.and_then(|(category,)| category))
}

/// The free seats of `category` in `rows` ranked from `bound` on (those
/// below it were read already), through the rows' index in rank order.
async fn rest_of_rows(
    conn: &mut MySqlConnection,
    concert: ConcertId,
    category: u8,
    rows: &[u32],
    bound: u32,
    now: DateTime<Utc>,
) -> Result<Vec<Ranked>, sqlx::Error> {
    let Some(list) = IdList::of(rows) else {
        return Ok(Vec::new());
    };
    let select = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT id, seat_rank, row_index FROM seats FORCE INDEX (idx_seats_row) \
          WHERE concert_id = ? AND row_index IN ({list}) AND seat_rank >= ? \
            AND area IS NULL AND category = ? \
            AND (status = 'AVAILABLE' OR (status = 'HELD' AND held_until <= ?))"
    )))
    .bind(concert);
    select
        .bind_ids(&list)
        .bind(bound)
        .bind(category)
        .bind(now.naive_utc())
        .fetch_all(conn)
        .await
}

/// Merges two reads of up to `limit + 1` seats each (best first): the
/// seats ranked below the first rank either read left unread.
fn best_of(
    available: &[Ranked],
    ended: &[Ranked],
    limit: Option<u32>,
) -> (Vec<Ranked>, Option<u32>) {
    let cut = |read: &[Ranked]| match limit {
        Some(n) if read.len() > n as usize => read.last().map(|s| s.seat_rank),
        _ => None,
    };
    let bound = match (cut(available), cut(ended)) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    let seats = available
        .iter()
        .chain(ended)
        .filter(|s| bound.is_none_or(|b| s.seat_rank < b))
        .copied()
        .collect();
    (seats, bound)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_seats_ranked_below_what_was_left_unread_are_taken() {
        let read = |ranks: &[u32]| -> Vec<Ranked> {
            ranks
                .iter()
                .map(|&r| Ranked {
                    id: SeatId(u64::from(r) + 100),
                    seat_rank: r,
                    row_index: 0,
                })
                .collect()
        };
        let best_of = |available: Vec<Ranked>, ended: Vec<Ranked>, limit| {
            let (seats, bound) = super::best_of(&available, &ended, limit);
            (seats.into_iter().map(|s| s.id).collect::<Vec<_>>(), bound)
        };
        // Both reads complete: everything, no bound.
        assert_eq!(
            best_of(read(&[1, 5]), read(&[3]), Some(2)),
            (vec![SeatId(101), SeatId(105), SeatId(103)], None)
        );
        // The available read was cut at rank 7 (its third row): seats from 7 on are unknown.
        let (seats, bound) = best_of(read(&[1, 5, 7]), read(&[6, 9]), Some(2));
        assert_eq!(bound, Some(7));
        assert_eq!(seats, vec![SeatId(101), SeatId(105), SeatId(106)]);
        // Both cut: the lower cut bounds.
        let (seats, bound) = best_of(read(&[1, 5, 8]), read(&[2, 3, 4]), Some(2));
        assert_eq!(bound, Some(4));
        assert_eq!(seats, vec![SeatId(101), SeatId(102), SeatId(103)]);
    }
}
