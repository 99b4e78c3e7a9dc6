//! The pool each request by count asks for (best available): a price
//! category or a standing area of its concert. A row is open while its
//! request is, as in `request_seats`; (user, concert, open pool) is unique,
//! which is "one open request a fan and pool", and the open rows of a pool
//! in line order are its line (`AskedPool::code` is the pool's number).

use std::collections::HashMap;

use sqlx::{AssertSqlSafe, MySqlConnection};

use super::{BindIds as _, IdList, Traced as _, execute_for_ids};
use crate::domain::{AskedPool, BestAsk, ConcertId, LineKey, PoolNames, QueueId, UserId};

/// One request's pool, as written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestPool {
    pub queue_id: QueueId,
    pub user: UserId,
    pub concert: ConcertId,
    pub ask: BestAsk,
    pub line: LineKey,
}

/// Writes open rows; with `skip_conflicts`, a row whose fan already has an
/// open request for the pool is left out instead of failing the statement
/// (else it fails with a violation of `uq_request_pools_open`).
pub async fn insert(
    conn: &mut MySqlConnection,
    rows: &[RequestPool],
    skip_conflicts: bool,
) -> Result<u64, sqlx::Error> {
    if rows.is_empty() {
        return Ok(0);
    }
    let mut insert = sqlx::QueryBuilder::new(if skip_conflicts {
        "INSERT IGNORE INTO request_pools \
         (queue_id, user_id, concert_id, category, area, seat_count, allow_split, line_key, is_open) "
    } else {
        "INSERT INTO request_pools \
         (queue_id, user_id, concert_id, category, area, seat_count, allow_split, line_key, is_open) "
    });
    insert.push_values(rows, |mut row, r| {
        row.push_bind(r.queue_id)
            .push_bind(r.user)
            .push_bind(r.concert)
            .push_bind(r.ask.pool.category())
            .push_bind(r.ask.pool.area())
            .push_bind(r.ask.count)
            .push_bind(r.ask.allow_split)
            .push_bind(r.line)
            .push_bind(1_i8);
    });
    Ok(insert
        .build()
        .execute(conn)
        .traced("INSERT", "request_pools")
        .await?
        .rows_affected())
}

/// The price categories and standing areas of each of `concerts`: what a
/// request's pool name is resolved against (every concert given has an
/// entry, empty without either).
pub async fn names_of_concerts(
    conn: &mut MySqlConnection,
    concerts: &[ConcertId],
) -> Result<HashMap<ConcertId, PoolNames>, sqlx::Error> {
    let mut categories = super::prices::of_concerts(conn, concerts).await?;
    let mut areas = super::standing_areas::of_concerts(conn, concerts).await?;
    Ok(concerts
        .iter()
        .map(|&c| {
            let names = PoolNames::new(categories.remove(&c), areas.remove(&c).unwrap_or_default());
            (c, names)
        })
        .collect())
}

/// The names of the concert's pools.
pub async fn names_of(
    conn: &mut MySqlConnection,
    concert: ConcertId,
) -> Result<PoolNames, sqlx::Error> {
    Ok(names_of_concerts(conn, &[concert])
        .await?
        .remove(&concert)
        .unwrap_or_default())
}

/// What each of `requests` that asks by count asks for.
pub async fn of_requests(
    conn: &mut MySqlConnection,
    requests: &[QueueId],
) -> Result<HashMap<QueueId, BestAsk>, sqlx::Error> {
    let Some(list) = IdList::of(requests) else {
        return Ok(HashMap::new());
    };
    let select = sqlx::query_as(AssertSqlSafe(format!(
        "SELECT queue_id, CAST(COALESCE(256 + area, category) AS UNSIGNED), seat_count, allow_split \
         FROM request_pools WHERE queue_id IN ({list})"
    )));
    let rows: Vec<(QueueId, u16, u8, bool)> = select
        .bind_ids(&list)
        .fetch_all(conn)
        .traced("SELECT", "request_pools")
        .await?;
    Ok(rows
        .into_iter()
        .map(|(id, pool, count, allow_split)| {
            let ask = BestAsk {
                pool: AskedPool::from_code(pool),
                count,
                allow_split,
            };
            (id, ask)
        })
        .collect())
}

/// The fan's open request for `pool` of `concert`, if any (what a
/// QUEUE_DUPLICATED answer points to).
pub async fn find_open(
    conn: &mut MySqlConnection,
    user: UserId,
    concert: ConcertId,
    pool: AskedPool,
) -> Result<Option<QueueId>, sqlx::Error> {
    let row: Option<(QueueId,)> = sqlx::query_as(
        "SELECT queue_id FROM request_pools \
         WHERE user_id = ? AND concert_id = ? AND open_pool = ?",
    )
    .bind(user)
    .bind(concert)
    .bind(pool.code())
    .fetch_optional(conn)
    .traced("SELECT", "request_pools")
    .await?;
    Ok(row.map(|(id,)| id))
}

/// Closes the rows of decided requests.
pub async fn close(conn: &mut MySqlConnection, requests: &[QueueId]) -> Result<u64, sqlx::Error> {
    execute_for_ids(conn, requests, |list| {
        sqlx::query(AssertSqlSafe(format!(
            "UPDATE request_pools FORCE INDEX (PRIMARY) SET is_open = 0 WHERE is_open = 1 AND queue_id IN ({list})"
        )))
    })
    .traced("UPDATE", "request_pools")
    .await
}

/// Removes the rows of requests being taken back.
pub async fn delete(conn: &mut MySqlConnection, requests: &[QueueId]) -> Result<u64, sqlx::Error> {
    execute_for_ids(conn, requests, |list| {
        sqlx::query(AssertSqlSafe(format!(
            "DELETE FROM request_pools WHERE queue_id IN ({list})"
        )))
    })
    .traced("DELETE", "request_pools")
    .await
}

/// For each pool of `concert` in `pools`, the place in line of its first
/// open request outside `batch`: a free seat of the pool may be taken by
/// it, so it is folded into each seat's own line.
pub async fn first_open_elsewhere(
    conn: &mut MySqlConnection,
    concert: ConcertId,
    pools: &[AskedPool],
    batch: &[QueueId],
) -> Result<HashMap<AskedPool, u64>, sqlx::Error> {
    let Some(batch_list) = IdList::of(batch) else {
        return Ok(HashMap::new());
    };
    let mut firsts = HashMap::new();
    for &pool in pools {
        let select = sqlx::query_as(AssertSqlSafe(format!(
            "SELECT CAST({place} AS UNSIGNED) FROM request_pools o FORCE INDEX (idx_request_pools_line) \
              WHERE o.concert_id = ? AND o.open_pool = ? AND o.queue_id NOT IN ({batch_list}) \
              ORDER BY o.line_key, o.queue_id LIMIT 1",
            place = super::line::place_sql("o."),
        )))
        .bind(concert)
        .bind(pool.code());
        let first: Option<(u64,)> = select
            .bind_ids(&batch_list)
            .fetch_optional(&mut *conn)
            .traced("SELECT", "request_pools")
            .await?;
        if let Some((place,)) = first {
            firsts.insert(pool, place);
        }
    }
    Ok(firsts)
}
