//! The line of each sale: the ranks that fix each request's place as it is
//! written, the lottery's buckets that place its requests once the sale
//! opens, and the line's front that positions are counted from. Nothing
//! here reads the line itself, but the opening's one count of its lottery:
//! every other statement costs the same with a million in line as with ten.
//!
//! Here: the line lock every writer of requests takes, the ranks it gives,
//! and which concerts the claims look in; `fronts.rs` reads the fronts,
//! `lottery.rs` counts a lottery at its opening and places its requests.

use std::collections::HashMap;

use sqlx::{AssertSqlSafe, MySqlConnection};

use super::{BindIds as _, IdList, Traced as _};
use crate::domain::{ConcertId, LineKey, LinePart, LineRank, QueueId};

mod fronts;
mod lottery;

pub use fronts::*;
pub use lottery::*;

/// Locks the lines of `concerts` for the caller's transaction (making them
/// on a concert's first request), and returns each one's pools version
/// (see [`pools_changed`]). Call before writing requests of those
/// concerts, and [`rank_entered`] after: ids are given as the rows are
/// inserted, so writers of one concert taking turns from before their
/// INSERT to their commit is what makes ranks follow ids, which is line
/// order.
pub async fn lock_lines(
    conn: &mut MySqlConnection,
    concerts: &[ConcertId],
) -> Result<HashMap<ConcertId, u32>, sqlx::Error> {
    let mut concerts = concerts.to_vec();
    concerts.sort_unstable();
    concerts.dedup();
    let Some(list) = IdList::of(&concerts) else {
        return Ok(HashMap::new());
    };
    // Lines that exist are locked by a read, not an insert: an INSERT
    // checks its concert's row first (a shared lock, for the foreign key)
    // and only then finds the duplicate, and a writer holding that lock
    // while it waits for the line deadlocks with an operator's change of
    // categories, which holds the line and then locks the concert.
    let found: Vec<(ConcertId, u32)> = sqlx::query_as(AssertSqlSafe(format!(
        "SELECT concert_id, pools_version FROM sale_lines WHERE concert_id IN ({list}) FOR UPDATE"
    )))
    .bind_ids(&list)
    .fetch_all(&mut *conn)
    .traced("SELECT", "sale_lines")
    .await?;
    let mut versions: HashMap<ConcertId, u32> = found.into_iter().collect();
    let missing: Vec<ConcertId> = concerts
        .into_iter()
        .filter(|c| !versions.contains_key(c))
        .collect();
    let Some(list) = IdList::of(&missing) else {
        return Ok(versions);
    };
    // The padding repeats the last concert: one row, locked once.
    let values = list.to_string().replace('?', "(?)");
    sqlx::query(AssertSqlSafe(format!(
        "INSERT INTO sale_lines (concert_id) VALUES {values} \
         ON DUPLICATE KEY UPDATE presale_entered = presale_entered"
    )))
    .bind_ids(&list)
    .execute(conn)
    .traced("INSERT", "sale_lines")
    .await?;
    versions.extend(missing.into_iter().map(|c| (c, 0)));
    Ok(versions)
}

/// Counts a change of the concert's categories or standing areas; call
/// with its line locked ([`lock_lines`]), in the change's transaction.
pub async fn pools_changed(
    conn: &mut MySqlConnection,
    concert: ConcertId,
) -> Result<(), sqlx::Error> {
    sqlx::query("UPDATE sale_lines SET pools_version = pools_version + 1 WHERE concert_id = ?")
        .bind(concert)
        .execute(conn)
        .traced("UPDATE", "sale_lines")
        .await?;
    Ok(())
}

/// How many changes of its categories and areas the concert has had, as
/// the last commit left it: read before the names a request's pool is
/// resolved by, so that a change between the two reads is seen as one.
pub async fn pools_version(
    conn: &mut MySqlConnection,
    concert: ConcertId,
) -> Result<u32, sqlx::Error> {
    let found: Option<(u32,)> =
        sqlx::query_as("SELECT pools_version FROM sale_lines WHERE concert_id = ?")
            .bind(concert)
            .fetch_optional(conn)
            .traced("SELECT", "sale_lines")
            .await?;
    Ok(found.map_or(0, |(v,)| v))
}

/// Locks the concert's line, if it has one, as [`lock_lines`] does: what
/// takes a concert's seats away first waits for the requests being written.
pub async fn lock_line_of(
    conn: &mut MySqlConnection,
    concert: ConcertId,
) -> Result<(), sqlx::Error> {
    sqlx::query("SELECT concert_id FROM sale_lines WHERE concert_id = ? FOR UPDATE")
        .bind(concert)
        .fetch_optional(conn)
        .traced("SELECT", "sale_lines")
        .await?;
    Ok(())
}

/// A request written in the caller's transaction, to be ranked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entered {
    pub concert: ConcertId,
    pub key: LineKey,
    pub id: QueueId,
}

/// Ranks the requests the caller's transaction wrote (and kept), its
/// concerts' lines locked by [`lock_lines`]: presale requests and requests
/// after the opening take the next places of their part in id order;
/// lottery requests are counted (their places are their keys' ranks, see
/// [`lottery_place`]). The lines are marked as having requests in line.
pub async fn rank_entered(
    conn: &mut MySqlConnection,
    entered: &[Entered],
) -> Result<(), sqlx::Error> {
    let mut groups: HashMap<(ConcertId, LinePart), Vec<QueueId>> = HashMap::new();
    for e in entered {
        groups
            .entry((e.concert, LinePart::of(e.key)))
            .or_default()
            .push(e.id);
    }
    async move {
        for ((concert, part), mut ids) in groups {
            ids.sort_unstable();
            ids.dedup();
            let count = ids.len() as u64;
            let set = match part {
                LinePart::Presale => "presale_entered = LAST_INSERT_ID(presale_entered + ?)",
                LinePart::Lottery => "lottery_entered = lottery_entered + ?",
                LinePart::AfterOpening => "after_entered = LAST_INSERT_ID(after_entered + ?)",
            };
            let done = sqlx::query(AssertSqlSafe(format!(
                "UPDATE sale_lines SET {set}, in_line = 1 WHERE concert_id = ?"
            )))
            .bind(count)
            .bind(concert)
            .execute(&mut *conn)
            .await?;
            if part == LinePart::Lottery {
                continue;
            }
            // LAST_INSERT_ID(expr) hands back the new count.
            let first = done.last_insert_id().saturating_sub(count);
            let Some(list) = IdList::of(&ids) else {
                continue;
            };
            sqlx::query(AssertSqlSafe(format!(
                "UPDATE reservation_queue SET line_rank = ? + FIELD(id, {list}) WHERE id IN ({list})"
            )))
            .bind(part.base() + first)
            .bind_ids(&list)
            .bind_ids(&list)
            .execute(&mut *conn)
            .await?;
        }
        Ok(())
    }
    .traced("UPDATE", "reservation_queue")
    .await
}

/// A concert with requests in line, as the claim sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, sqlx::FromRow)]
pub struct InLine {
    pub concert_id: ConcertId,
    /// Its sale has opened by the database's clock: its lottery's WAITING
    /// requests are in line.
    pub opened: bool,
}

/// The concerts that may have requests in line (a short list: those on
/// sale), with whether each has opened by the database's clock.
pub async fn concerts_in_line(conn: &mut MySqlConnection) -> Result<Vec<InLine>, sqlx::Error> {
    sqlx::query_as(
        "SELECT s.concert_id, (c.opens_at IS NULL OR c.opens_at <= UTC_TIMESTAMP(6)) AS opened \
         FROM sale_lines s JOIN concerts c ON c.id = s.concert_id WHERE s.in_line = 1",
    )
    .fetch_all(conn)
    .traced("SELECT", "sale_lines")
    .await
}

/// Whether the concert has an open request (three index dives).
async fn has_open(conn: &mut MySqlConnection, concert: ConcertId) -> Result<bool, sqlx::Error> {
    let open: Option<(QueueId,)> = sqlx::query_as(
        "SELECT id FROM reservation_queue FORCE INDEX (idx_queue_concert_line) \
         WHERE concert_id = ? AND status IN ('WAITING', 'PENDING', 'PROCESSING') LIMIT 1",
    )
    .bind(concert)
    .fetch_optional(conn)
    .await?;
    Ok(open.is_some())
}

/// Takes the concert out of the claims' sight once it has no open request;
/// whether it did. Looked at without a lock first (the common answer: it
/// has some); only then in the caller's transaction with the line locked,
/// so that no request is being written meanwhile.
pub async fn leave_if_empty(
    conn: &mut MySqlConnection,
    concert: ConcertId,
) -> Result<bool, sqlx::Error> {
    async move {
        if has_open(conn, concert).await? {
            return Ok(false);
        }
        lock_lines(conn, &[concert]).await?;
        if has_open(conn, concert).await? {
            return Ok(false);
        }
        sqlx::query("UPDATE sale_lines SET in_line = 0 WHERE concert_id = ?")
            .bind(concert)
            .execute(&mut *conn)
            .await?;
        Ok(true)
    }
    .traced("UPDATE", "sale_lines")
    .await
}

/// The ranks of requests that have one now (a lottery request gets its own
/// at the opening).
pub async fn ranks_of(
    conn: &mut MySqlConnection,
    ids: &[QueueId],
) -> Result<Vec<(QueueId, LineRank)>, sqlx::Error> {
    let Some(list) = IdList::of(ids) else {
        return Ok(Vec::new());
    };
    sqlx::query_as(AssertSqlSafe(format!(
        "SELECT id, line_rank FROM reservation_queue WHERE id IN ({list}) AND line_rank IS NOT NULL"
    )))
    .bind_ids(&list)
    .fetch_all(conn)
    .traced("SELECT", "reservation_queue")
    .await
}

/// Ranks the open presale and after-opening requests that have no rank
/// (written straight into the table, as the tests' and benchmarks' seeds
/// do), in line order after those ranked, and counts them and the WAITING
/// (lottery) requests in their concerts' lines, as writing them through
/// the API does. Reads the whole queue: not for a sale in progress.
pub async fn rank_unranked(conn: &mut MySqlConnection) -> Result<(), sqlx::Error> {
    let after = LinePart::AfterOpening.base();
    let after_key = LineKey::AFTER_OPENING.get();
    let statements = [
        "INSERT IGNORE INTO sale_lines (concert_id) \
         SELECT DISTINCT concert_id FROM reservation_queue \
         WHERE line_rank IS NULL AND status IN ('WAITING', 'PENDING', 'PROCESSING')"
            .to_owned(),
        format!(
            "UPDATE reservation_queue q \
             JOIN (SELECT id, part, ROW_NUMBER() OVER (PARTITION BY concert_id, part ORDER BY id) AS n \
                   FROM (SELECT id, concert_id, IF(line_key = 0, 0, 2) AS part FROM reservation_queue \
                         WHERE status IN ('PENDING', 'PROCESSING') AND line_rank IS NULL \
                           AND (line_key = 0 OR line_key >= {after_key})) o) r ON r.id = q.id \
             JOIN sale_lines s ON s.concert_id = q.concert_id \
             SET q.line_rank = r.part * {} + r.n + IF(r.part = 0, s.presale_entered, s.after_entered)",
            LinePart::Lottery.base()
        ),
        format!(
            "UPDATE sale_lines s SET \
               presale_entered = GREATEST(presale_entered, COALESCE((SELECT MAX(q.line_rank) \
                 FROM reservation_queue q WHERE q.concert_id = s.concert_id AND q.line_rank < {after}), 0)), \
               after_entered = GREATEST(after_entered, COALESCE((SELECT MAX(q.line_rank) - {after} \
                 FROM reservation_queue q WHERE q.concert_id = s.concert_id AND q.line_rank > {after}), 0)), \
               lottery_entered = GREATEST(lottery_entered, (SELECT COUNT(*) FROM reservation_queue q \
                 WHERE q.concert_id = s.concert_id AND q.line_key > 0 AND q.line_key < {after_key})), \
               in_line = in_line OR EXISTS (SELECT 1 FROM reservation_queue q \
                 WHERE q.concert_id = s.concert_id AND q.status IN ('WAITING', 'PENDING', 'PROCESSING'))"
        ),
    ];
    async move {
        for statement in statements {
            sqlx::query(AssertSqlSafe(statement))
                .execute(&mut *conn)
                .await?;
        }
        Ok(())
    }
    .traced("UPDATE", "reservation_queue")
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
