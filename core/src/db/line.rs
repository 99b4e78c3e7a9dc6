//! The line of each sale: opening it (its lottery's requests become due)
//! and reading who is still in it (positions).

use chrono::{DateTime, Utc};
use sqlx::{AssertSqlSafe, MySqlConnection};

use super::{BindIds as _, IdList, Traced as _};
use crate::domain::{ConcertId, LineKey, QueueId};

/// Concerts with WAITING requests whose sale has opened at `now` (or no
/// longer has an opening time). The WAITING entries are read from the
/// claim index alone, which carries each row's concert.
pub async fn opened_with_waiting(
    conn: &mut MySqlConnection,
    now: DateTime<Utc>,
) -> Result<Vec<ConcertId>, sqlx::Error> {
    sqlx::query_as(
        "SELECT c.id FROM concerts c \
         WHERE c.id IN (SELECT q.concert_id FROM reservation_queue q WHERE q.status = 'WAITING') \
           AND (c.opens_at IS NULL OR c.opens_at <= ?)",
    )
    .bind(now.naive_utc())
    .fetch_all(conn)
    .traced("SELECT", "reservation_queue")
    .await
    .map(|rows: Vec<(ConcertId,)>| rows.into_iter().map(|(id,)| id).collect())
}

/// Makes up to `limit` of the concert's WAITING requests PENDING (their
/// sale has opened); returns how many. Their place in line was drawn when
/// they were written, so the order in which they are let in changes
/// nothing, and two workers doing it at once only share the work.
pub async fn admit_waiting(
    conn: &mut MySqlConnection,
    concert: ConcertId,
    limit: u32,
    now: DateTime<Utc>,
) -> Result<u64, sqlx::Error> {
    Ok(sqlx::query(
        "UPDATE reservation_queue SET status = 'PENDING', updated_at = ? \
         WHERE status = 'WAITING' AND concert_id = ? LIMIT ?",
    )
    .bind(now.naive_utc())
    .bind(concert)
    .bind(limit)
    .execute(conn)
    .traced("UPDATE", "reservation_queue")
    .await?
    .rows_affected())
}

/// One open request in its concert's line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, sqlx::FromRow)]
pub struct InLine {
    pub concert_id: ConcertId,
    pub line_key: LineKey,
    pub id: QueueId,
}

/// Every open request (WAITING, PENDING or PROCESSING) of `concerts`, in
/// no particular order, handed to `each`: read from the claim index alone
/// (one range per status), never from the rows. A long line is read in
/// steps that give the runtime back, so that the requests served beside it
/// do not wait for the whole of it.
pub async fn open_requests(
    conn: &mut MySqlConnection,
    concerts: &[ConcertId],
    mut each: impl FnMut(InLine),
) -> Result<(), sqlx::Error> {
    use futures::TryStreamExt as _;
    async move {
        let Some(list) = IdList::of(concerts) else {
            return Ok(());
        };
        let select = sqlx::query_as(AssertSqlSafe(format!(
            "SELECT concert_id, line_key, id FROM reservation_queue FORCE INDEX (idx_queue_line) \
             WHERE status IN ('WAITING', 'PENDING', 'PROCESSING') AND concert_id IN ({list})"
        )));
        let mut rows = select.bind_ids(&list).fetch(conn);
        let mut read = 0_u32;
        while let Some(row) = rows.try_next().await? {
            each(row);
            read += 1;
            if read.is_multiple_of(1024) {
                tokio::task::yield_now().await;
            }
        }
        Ok(())
    }
    .traced("SELECT", "reservation_queue")
    .await
}

/// A `request_seats` row's place in line as one number, as
/// [`LineKey::place`] computes it (`alias` is the row's, with its dot).
pub(crate) fn place_sql(alias: &str) -> String {
    let after = LineKey::AFTER_OPENING.get();
    format!(
        "IF({alias}line_key = 0, {alias}queue_id, \
         IF({alias}line_key < {after}, {alias}line_key, {after} + {alias}queue_id))"
    )
}
