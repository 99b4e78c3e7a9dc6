//! The line of each sale: the ranks that fix each request's place as it is
//! written, the lottery's buckets that place its requests once the sale
//! opens, and the line's front that positions are counted from. Nothing
//! here reads the line itself, but the opening's one count of its lottery:
//! every other statement costs the same with a million in line as with ten.

use std::collections::HashMap;

use sqlx::{AssertSqlSafe, MySqlConnection};

use super::{BindIds as _, IdList, Traced as _};
use crate::domain::line_position::{DECIDED_BEYOND_READ, PartFront};
use crate::domain::{ConcertId, LineFront, LineKey, LinePart, LineRank, QueueId};

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

/// A concert's line as last read: its front, and whether its lottery has
/// been counted (its requests can be placed, see [`lottery_place`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LineState {
    pub front: LineFront,
    /// The lottery's bucket bits once the opening has counted it.
    pub lottery: Option<LotteryCount>,
    /// The sale has opened, by the database's clock.
    pub opened: bool,
}

impl LineState {
    /// An opened lottery that nobody has counted yet.
    pub fn lottery_to_count(&self) -> bool {
        self.opened && self.lottery.is_none() && self.front.part(LinePart::Lottery).entered > 0
    }
}

/// How a concert's lottery was counted at its opening.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LotteryCount {
    pub requests: u64,
    pub bucket_bits: u8,
}

/// Statuses a lottery request can have, in the concert's line index: its
/// place counts every one of them.
const ANY_STATUS: &str = "'WAITING', 'PENDING', 'PROCESSING', 'SUCCESS', 'FAILED'";

/// Each concert's line: what entered each part, and the lowest request
/// still open in each (a few index dives per concert), with those decided
/// out of turn beyond it (a bounded read; none while decisions go in line
/// order). A concert that never had a request has an empty line.
pub async fn fronts(
    conn: &mut MySqlConnection,
    concerts: &[ConcertId],
) -> Result<HashMap<ConcertId, LineState>, sqlx::Error> {
    let mut lines: HashMap<ConcertId, LineState> = concerts
        .iter()
        .map(|c| (*c, LineState::default()))
        .collect();
    async {
        let Some(list) = IdList::of(concerts) else {
            return Ok::<(), sqlx::Error>(());
        };
        let lowest: Vec<String> = LOWEST
            .iter()
            .map(|(part, status)| {
                format!(
                    "(SELECT q.id FROM reservation_queue q \
                      WHERE q.concert_id = s.concert_id AND q.status = '{status}' AND {} \
                      ORDER BY q.line_key, q.id LIMIT 1)",
                    key_range(*part, "q.")
                )
            })
            .collect();
        let rows: Vec<FrontRow> = sqlx::query_as(AssertSqlSafe(format!(
            "SELECT s.concert_id, s.presale_entered, s.lottery_entered, s.after_entered, \
                    s.lottery_counted, s.lottery_bucket_bits, \
                    (c.opens_at IS NULL OR c.opens_at <= UTC_TIMESTAMP(6)), {} \
             FROM sale_lines s JOIN concerts c ON c.id = s.concert_id WHERE s.concert_id IN ({list})",
            lowest.join(", ")
        )))
        .bind_ids(&list)
        .fetch_all(&mut *conn)
        .await?;
        let ids: Vec<QueueId> = rows.iter().flat_map(|row| row.lowest).flatten().collect();
        let found: HashMap<QueueId, (LineKey, Option<LineRank>)> = match IdList::of(&ids) {
            None => HashMap::new(),
            Some(ids) => {
                let found: Vec<(QueueId, LineKey, Option<LineRank>)> =
                    sqlx::query_as(AssertSqlSafe(format!(
                        "SELECT id, line_key, line_rank FROM reservation_queue WHERE id IN ({ids})"
                    )))
                    .bind_ids(&ids)
                    .fetch_all(&mut *conn)
                    .await?;
                found
                    .into_iter()
                    .map(|(id, key, rank)| (id, (key, rank)))
                    .collect()
            }
        };
        for row in rows {
            let line = row.line(&found, conn).await?;
            lines.insert(row.concert_id, line);
        }
        Ok(())
    }
    .traced("SELECT", "sale_lines")
    .await?;
    Ok(lines)
}

/// The lowest open request looked for in each part, by status.
const LOWEST: [(LinePart, &str); 7] = [
    (LinePart::Presale, "PENDING"),
    (LinePart::Presale, "PROCESSING"),
    (LinePart::Lottery, "WAITING"),
    (LinePart::Lottery, "PENDING"),
    (LinePart::Lottery, "PROCESSING"),
    (LinePart::AfterOpening, "PENDING"),
    (LinePart::AfterOpening, "PROCESSING"),
];

/// The keys of a part's requests, on `alias`'s rows.
fn key_range(part: LinePart, alias: &str) -> String {
    let after = LineKey::AFTER_OPENING.get();
    match part {
        LinePart::Presale => format!("{alias}line_key = 0"),
        LinePart::Lottery => format!("{alias}line_key > 0 AND {alias}line_key < {after}"),
        LinePart::AfterOpening => format!("{alias}line_key = {after}"),
    }
}

struct FrontRow {
    concert_id: ConcertId,
    presale_entered: u64,
    lottery_entered: u64,
    after_entered: u64,
    lottery_counted: Option<u64>,
    lottery_bucket_bits: u8,
    opened: bool,
    /// The ids of [`LOWEST`], in its order.
    lowest: [Option<QueueId>; 7],
}

impl<'r> sqlx::FromRow<'r, sqlx::mysql::MySqlRow> for FrontRow {
    fn from_row(row: &'r sqlx::mysql::MySqlRow) -> Result<Self, sqlx::Error> {
        use sqlx::Row as _;
        let mut lowest = [None; 7];
        for (i, id) in lowest.iter_mut().enumerate() {
            *id = row.try_get(7 + i)?;
        }
        Ok(Self {
            concert_id: row.try_get(0)?,
            presale_entered: row.try_get(1)?,
            lottery_entered: row.try_get(2)?,
            after_entered: row.try_get(3)?,
            lottery_counted: row.try_get(4)?,
            lottery_bucket_bits: row.try_get(5)?,
            opened: row.try_get(6)?,
            lowest,
        })
    }
}

impl FrontRow {
    async fn line(
        &self,
        found: &HashMap<QueueId, (LineKey, Option<LineRank>)>,
        conn: &mut MySqlConnection,
    ) -> Result<LineState, sqlx::Error> {
        let lottery = self.lottery_counted.map(|requests| LotteryCount {
            requests,
            bucket_bits: self.lottery_bucket_bits,
        });
        let mut state = LineState {
            front: LineFront::default(),
            lottery,
            opened: self.opened,
        };
        for part in LinePart::ALL {
            let (entered, placed) = match part {
                LinePart::Presale => (self.presale_entered, self.presale_entered),
                LinePart::Lottery => {
                    let counted = lottery.map_or(0, |l| l.requests);
                    (self.lottery_entered.max(counted), counted)
                }
                LinePart::AfterOpening => (self.after_entered, self.after_entered),
            };
            // The part's lowest open request, by (key, id).
            let lowest = LOWEST
                .iter()
                .zip(&self.lowest)
                .filter(|((p, _), _)| *p == part)
                .filter_map(|(_, id)| id.and_then(|id| found.get(&id).map(|f| (f.0, id, f.1))))
                .min_by_key(|(key, id, _)| (*key, *id));
            let lowest_open = match (part, lowest) {
                (_, None) => None,
                (LinePart::Lottery, Some((key, id, _))) => match lottery {
                    Some(count) => lottery_place(conn, self.concert_id, count, key, id).await?,
                    None => None,
                },
                (_, Some((_, _, rank))) => rank.map(LineRank::place),
            };
            let decided_beyond = match lowest {
                Some((key, id, _)) => decided_beyond(conn, self.concert_id, part, key, id).await?,
                None => Vec::new(),
            };
            *state.front.part_mut(part) = PartFront {
                entered,
                placed,
                lowest_open,
                decided_beyond,
            };
        }
        Ok(state)
    }
}

/// The requests of `part` beyond (`key`, `id`) already decided, in the
/// part's order: their places, or for the lottery their keys.
async fn decided_beyond(
    conn: &mut MySqlConnection,
    concert: ConcertId,
    part: LinePart,
    key: LineKey,
    id: QueueId,
) -> Result<Vec<u64>, sqlx::Error> {
    let lottery = part == LinePart::Lottery;
    let (value, beyond) = if lottery {
        (
            "line_key",
            format!(
                "(line_key > ? OR (line_key = ? AND id > ?)) AND line_key < {}",
                LineKey::AFTER_OPENING.get()
            ),
        )
    } else {
        ("line_rank", "line_key = ? AND id > ?".to_owned())
    };
    let one = |status: &str| {
        format!(
            "(SELECT {value} AS v FROM reservation_queue FORCE INDEX (idx_queue_concert_line) \
              WHERE concert_id = ? AND status = '{status}' AND {beyond} \
              ORDER BY line_key, id LIMIT {DECIDED_BEYOND_READ})"
        )
    };
    let statement = format!("{} UNION ALL {}", one("SUCCESS"), one("FAILED"));
    let mut query = sqlx::query_as(AssertSqlSafe(statement));
    for _ in 0..2 {
        query = query.bind(concert).bind(key);
        if lottery {
            query = query.bind(key);
        }
        query = query.bind(id);
    }
    let rows: Vec<(Option<u64>,)> = query.fetch_all(conn).await?;
    let mut beyond: Vec<u64> = rows
        .into_iter()
        .filter_map(|(v,)| v)
        .map(|v| match part {
            LinePart::Lottery => v,
            _ => v.saturating_sub(part.base()),
        })
        .collect();
    beyond.sort_unstable();
    Ok(beyond)
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

/// Opened lotteries not counted yet, or counted before a request joined
/// (written as its sale opened, committed after the count).
pub async fn lotteries_to_count(conn: &mut MySqlConnection) -> Result<Vec<ConcertId>, sqlx::Error> {
    let rows: Vec<(ConcertId,)> = sqlx::query_as(
        "SELECT s.concert_id FROM sale_lines s JOIN concerts c ON c.id = s.concert_id \
         WHERE s.in_line = 1 AND s.lottery_entered > 0 \
           AND (c.opens_at IS NULL OR c.opens_at <= UTC_TIMESTAMP(6)) \
           AND (s.lottery_counted IS NULL OR s.lottery_counted <> s.lottery_entered)",
    )
    .fetch_all(conn)
    .traced("SELECT", "sale_lines")
    .await?;
    Ok(rows.into_iter().map(|(id,)| id).collect())
}

/// Requests per bucket the count aims at: a place costs a count of about
/// this many index entries.
const PER_BUCKET: u64 = 16;

/// Counts the concert's lottery into buckets (each bucket's requests and
/// how many have a lower key), in the caller's transaction, its line
/// locked so that no request joins meanwhile; returns how many it counted.
/// The one read of the whole lottery, once per opening (a request written
/// as the sale opened and committed after it has the count taken again).
pub async fn count_lottery(
    conn: &mut MySqlConnection,
    concert: ConcertId,
) -> Result<u64, sqlx::Error> {
    async move {
        lock_lines(conn, &[concert]).await?;
        let (entered, counted): (u64, Option<u64>) = sqlx::query_as(
            "SELECT lottery_entered, lottery_counted FROM sale_lines WHERE concert_id = ? FOR UPDATE",
        )
        .bind(concert)
        .fetch_one(&mut *conn)
        .await?;
        // Counted by another while this one waited for the line.
        if counted == Some(entered) {
            return Ok(entered);
        }
        let bits = bucket_bits(entered);
        sqlx::query("DELETE FROM lottery_buckets WHERE concert_id = ?")
            .bind(concert)
            .execute(&mut *conn)
            .await?;
        sqlx::query(AssertSqlSafe(format!(
            "INSERT INTO lottery_buckets (concert_id, bucket, before_count, requests) \
             SELECT ?, b, SUM(n) OVER (ORDER BY b) - n, n FROM \
               (SELECT {} AS b, COUNT(*) AS n FROM reservation_queue FORCE INDEX (idx_queue_concert_line) \
                WHERE concert_id = ? AND status IN ({ANY_STATUS}) AND {} GROUP BY b) g",
            bucket_sql(bits),
            key_range(LinePart::Lottery, "")
        )))
        .bind(concert)
        .bind(concert)
        .execute(&mut *conn)
        .await?;
        let (counted,): (u64,) = sqlx::query_as(
            "SELECT CAST(COALESCE(SUM(requests), 0) AS UNSIGNED) FROM lottery_buckets WHERE concert_id = ?",
        )
        .bind(concert)
        .fetch_one(&mut *conn)
        .await?;
        sqlx::query(
            "UPDATE sale_lines SET lottery_counted = ?, lottery_entered = ?, lottery_bucket_bits = ? \
             WHERE concert_id = ?",
        )
        .bind(counted)
        .bind(counted)
        .bind(bits)
        .bind(concert)
        .execute(&mut *conn)
        .await?;
        Ok(counted)
    }
    .traced("INSERT", "lottery_buckets")
    .await
}

/// Enough bits for about [`PER_BUCKET`] requests a bucket.
fn bucket_bits(requests: u64) -> u8 {
    let buckets = requests.div_ceil(PER_BUCKET).max(1);
    (u64::BITS - (buckets - 1).leading_zeros()).min(40) as u8
}

/// Lottery keys span [`LineKey::LOTTERY_FLOOR`] up to the after-opening
/// key: 2^61 keys, so a bucket is 2^(61 - bits) of them. (Keys drawn below
/// the floor, before presales existed, go in the first.)
fn bucket_of(key: LineKey, bits: u8) -> u64 {
    key.get().saturating_sub(LineKey::LOTTERY_FLOOR.get()) >> (61 - u32::from(bits.min(40)))
}

fn bucket_sql(bits: u8) -> String {
    let floor = LineKey::LOTTERY_FLOOR.get();
    format!(
        "IF(line_key < {floor}, 0, (line_key - {floor}) >> {})",
        61 - u32::from(bits.min(40))
    )
}

/// The lowest key of a bucket.
fn bucket_start(bucket: u64, bits: u8) -> u64 {
    if bucket == 0 {
        1
    } else {
        LineKey::LOTTERY_FLOOR.get() + (bucket << (61 - u32::from(bits.min(40))))
    }
}

/// A lottery request's place in its lottery (1: the first drawn), from its
/// bucket's count and a count of the few requests of its bucket ahead of
/// it. None when its bucket was not counted (it joined after the count).
pub async fn lottery_place(
    conn: &mut MySqlConnection,
    concert: ConcertId,
    count: LotteryCount,
    key: LineKey,
    id: QueueId,
) -> Result<Option<u64>, sqlx::Error> {
    let bucket = bucket_of(key, count.bucket_bits);
    let row: Option<(u64, i64)> = sqlx::query_as(AssertSqlSafe(format!(
        "SELECT b.before_count, \
                (SELECT COUNT(*) FROM reservation_queue q FORCE INDEX (idx_queue_concert_line) \
                 WHERE q.concert_id = ? AND q.status IN ({ANY_STATUS}) \
                   AND q.line_key >= ? AND (q.line_key < ? OR (q.line_key = ? AND q.id < ?))) \
         FROM lottery_buckets b WHERE b.concert_id = ? AND b.bucket = ?"
    )))
    .bind(concert)
    .bind(bucket_start(bucket, count.bucket_bits))
    .bind(key)
    .bind(key)
    .bind(id)
    .bind(concert)
    .bind(bucket)
    .fetch_optional(conn)
    .traced("SELECT", "lottery_buckets")
    .await?;
    Ok(row.map(|(before, within)| before + within.unsigned_abs() + 1))
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
