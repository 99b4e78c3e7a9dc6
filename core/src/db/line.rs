//! The line of each sale: the ranks that fix each request's place as it is
//! written (or, for a lottery, as its sale opens), and the line's front
//! that positions are counted from. Nothing here reads the line itself:
//! every statement costs the same with a million in line as with ten.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use sqlx::{AssertSqlSafe, MySqlConnection};

use super::{BindIds as _, IdList, Traced as _};
use crate::domain::line_position::{DECIDED_BEYOND_READ, PartFront};
use crate::domain::{ConcertId, LineFront, LineKey, LinePart, LineRank, QueueId};

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

/// Makes the first `limit` of the concert's WAITING requests in the
/// lottery's drawn order PENDING (their sale has opened), ranking them
/// after those ranked before; returns how many. Call in a transaction of
/// its own per chunk: the concert's line stays locked until its commit, so
/// two workers take turns, and a worker that dies mid-chunk leaves it to
/// the next as if it had never begun.
pub async fn admit_waiting(
    conn: &mut MySqlConnection,
    concert: ConcertId,
    limit: u32,
    now: DateTime<Utc>,
) -> Result<u64, sqlx::Error> {
    async move {
        lock_lines(conn, &[concert]).await?;
        let (ranked,): (u64,) =
            sqlx::query_as("SELECT lottery_ranked FROM sale_lines WHERE concert_id = ? FOR UPDATE")
                .bind(concert)
                .fetch_one(&mut *conn)
                .await?;
        let admitted = sqlx::query(
            "UPDATE reservation_queue q \
             JOIN (SELECT id, ROW_NUMBER() OVER (ORDER BY line_key, id) AS n FROM reservation_queue \
                   WHERE status = 'WAITING' AND concert_id = ? ORDER BY line_key, id LIMIT ?) w \
               ON w.id = q.id \
             SET q.status = 'PENDING', q.line_rank = ? + w.n, q.updated_at = ?",
        )
        .bind(concert)
        .bind(limit)
        .bind(LinePart::Lottery.base() + ranked)
        .bind(now.naive_utc())
        .execute(&mut *conn)
        .await?
        .rows_affected();
        // Once all are in, requests counted but never ranked (withdrawn
        // while waiting) no longer count.
        let entered = if admitted < u64::from(limit) {
            "lottery_entered = lottery_ranked"
        } else {
            "lottery_entered = GREATEST(lottery_entered, lottery_ranked)"
        };
        sqlx::query(AssertSqlSafe(format!(
            "UPDATE sale_lines SET lottery_ranked = lottery_ranked + ?, {entered} WHERE concert_id = ?"
        )))
        .bind(admitted)
        .bind(concert)
        .execute(&mut *conn)
        .await?;
        Ok(admitted)
    }
    .traced("UPDATE", "reservation_queue")
    .await
}

/// Locks the lines of `concerts` for the caller's transaction (making them
/// on a concert's first request). Call before writing requests of those
/// concerts, and [`rank_entered`] after: ids are given as the rows are
/// inserted, so writers of one concert taking turns from before their
/// INSERT to their commit is what makes ranks follow ids, which is line
/// order.
pub async fn lock_lines(
    conn: &mut MySqlConnection,
    concerts: &[ConcertId],
) -> Result<(), sqlx::Error> {
    let mut concerts = concerts.to_vec();
    concerts.sort_unstable();
    concerts.dedup();
    let Some(list) = IdList::of(&concerts) else {
        return Ok(());
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
    Ok(())
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
/// lottery requests are only counted (the opening ranks them).
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
            let column = match part {
                LinePart::Presale => "presale_entered",
                LinePart::Lottery => "lottery_entered",
                LinePart::AfterOpening => "after_entered",
            };
            let done = sqlx::query(AssertSqlSafe(format!(
                "UPDATE sale_lines SET {column} = LAST_INSERT_ID({column} + ?) WHERE concert_id = ?"
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

/// Each concert's line front: what entered each part, and the lowest place
/// still open in it (a few index dives per concert), with the places
/// decided out of turn beyond it (a bounded read; none while decisions go
/// in line order). A concert that never had a request has an empty front.
pub async fn fronts(
    conn: &mut MySqlConnection,
    concerts: &[ConcertId],
) -> Result<HashMap<ConcertId, LineFront>, sqlx::Error> {
    let mut fronts: HashMap<ConcertId, LineFront> = concerts
        .iter()
        .map(|c| (*c, LineFront::default()))
        .collect();
    async {
        let Some(list) = IdList::of(concerts) else {
            return Ok::<(), sqlx::Error>(());
        };
        let lowest: Vec<String> = LinePart::ALL
            .iter()
            .flat_map(|part| {
                ["PENDING", "PROCESSING"].map(|status| {
                    format!(
                        "(SELECT q.line_rank FROM reservation_queue q \
                          WHERE q.concert_id = s.concert_id AND q.status = '{status}' \
                            AND q.line_rank > {} AND q.line_rank < {} \
                          ORDER BY q.line_rank LIMIT 1)",
                        part.base(),
                        part.end()
                    )
                })
            })
            .collect();
        let rows: Vec<FrontRow> = sqlx::query_as(AssertSqlSafe(format!(
            "SELECT s.concert_id, s.presale_entered, s.lottery_entered, s.lottery_ranked, \
                    s.after_entered, {} \
             FROM sale_lines s WHERE s.concert_id IN ({list})",
            lowest.join(", ")
        )))
        .bind_ids(&list)
        .fetch_all(&mut *conn)
        .await?;
        for row in rows {
            let mut front = front_of(&row);
            for part in LinePart::ALL {
                let Some(lowest) = front.part(part).lowest_open else {
                    continue;
                };
                front.part_mut(part).decided_beyond =
                    decided_beyond(conn, row.0, LineRank::new(part, lowest)).await?;
            }
            fronts.insert(row.0, front);
        }
        Ok(())
    }
    .traced("SELECT", "sale_lines")
    .await?;
    Ok(fronts)
}

/// A concert's counts, then the lowest open rank of each part, PENDING
/// and PROCESSING apart (one index range each).
type FrontRow = (
    ConcertId,
    u64,
    u64,
    u64,
    u64,
    Option<u64>,
    Option<u64>,
    Option<u64>,
    Option<u64>,
    Option<u64>,
    Option<u64>,
);

fn front_of(row: &FrontRow) -> LineFront {
    let (_, presale, lottery_entered, lottery_ranked, after, p0, p1, l0, l1, a0, a1) = *row;
    let part = |entered: u64, ranked: u64, lowest: [Option<u64>; 2], part: LinePart| PartFront {
        entered,
        ranked,
        lowest_open: lowest
            .into_iter()
            .flatten()
            .min()
            .map(|rank| rank - part.base()),
        decided_beyond: Vec::new(),
    };
    LineFront {
        parts: [
            part(presale, presale, [p0, p1], LinePart::Presale),
            part(lottery_entered, lottery_ranked, [l0, l1], LinePart::Lottery),
            part(after, after, [a0, a1], LinePart::AfterOpening),
        ],
    }
}

/// Places of `lowest`'s part beyond it whose requests are decided.
async fn decided_beyond(
    conn: &mut MySqlConnection,
    concert: ConcertId,
    lowest: LineRank,
) -> Result<Vec<u64>, sqlx::Error> {
    let part = lowest.part();
    let rows: Vec<(u64,)> = sqlx::query_as(
        "(SELECT line_rank FROM reservation_queue WHERE concert_id = ? AND status = 'SUCCESS' \
           AND line_rank > ? AND line_rank < ? ORDER BY line_rank LIMIT ?) \
         UNION ALL \
         (SELECT line_rank FROM reservation_queue WHERE concert_id = ? AND status = 'FAILED' \
           AND line_rank > ? AND line_rank < ? ORDER BY line_rank LIMIT ?)",
    )
    .bind(concert)
    .bind(lowest.get())
    .bind(part.end())
    .bind(DECIDED_BEYOND_READ)
    .bind(concert)
    .bind(lowest.get())
    .bind(part.end())
    .bind(DECIDED_BEYOND_READ)
    .fetch_all(conn)
    .await?;
    let mut places: Vec<u64> = rows.into_iter().map(|(rank,)| rank - part.base()).collect();
    places.sort_unstable();
    Ok(places)
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

/// A `request_seats` row's place in line as one number, as
/// [`LineKey::place`] computes it (`alias` is the row's, with its dot).
pub(crate) fn place_sql(alias: &str) -> String {
    let after = LineKey::AFTER_OPENING.get();
    format!(
        "IF({alias}line_key = 0, {alias}queue_id, \
         IF({alias}line_key < {after}, {alias}line_key, {after} + {alias}queue_id))"
    )
}
