//! A lottery's places: counted into buckets once its sale opens, and a
//! request's place from its bucket and the few requests of its bucket
//! ahead of it.

use sqlx::{AssertSqlSafe, MySqlConnection};

use super::fronts::key_range;
use super::lock_lines;
use crate::db::Traced as _;
use crate::domain::{ConcertId, LineKey, LinePart, QueueId};

/// How a concert's lottery was counted at its opening.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LotteryCount {
    pub requests: u64,
    pub bucket_bits: u8,
}

/// Statuses a lottery request can have, in the concert's line index: its
/// place counts every one of them.
const ANY_STATUS: &str = "'WAITING', 'PENDING', 'PROCESSING', 'SUCCESS', 'FAILED'";

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
