//! A lottery's places: counted into buckets once its sale opens, and a
//! request's place from its bucket and the few requests of its bucket
//! ahead of it.

use sqlx::{AssertSqlSafe, MySqlConnection};

use super::fronts::key_range;
use super::lock_lines;
use crate::db::Traced as _;
use crate::db::queue::{QueueRow, columns_of};
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
        // A bucket's ids, in drawn order, are a few hundred characters;
        // the default cap (1,024 on MySQL) could cut a crowded first bucket.
        sqlx::query("SET SESSION group_concat_max_len = 16777216")
            .execute(&mut *conn)
            .await?;
        sqlx::query(AssertSqlSafe(format!(
            "INSERT INTO lottery_buckets (concert_id, bucket, before_count, requests, ids) \
             SELECT ?, b, SUM(n) OVER (ORDER BY b) - n, n, ids FROM \
               (SELECT {} AS b, COUNT(*) AS n, GROUP_CONCAT(id ORDER BY line_key, id) AS ids \
                FROM reservation_queue FORCE INDEX (idx_queue_concert_line) \
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

/// A lottery request's place in its lottery (1: the first drawn), from its
/// bucket: how many have a lower key, and where it stands among the
/// bucket's own (one row, read by its key). None when its bucket was not
/// counted with it (it joined after the count).
pub async fn lottery_place(
    conn: &mut MySqlConnection,
    concert: ConcertId,
    count: LotteryCount,
    key: LineKey,
    id: QueueId,
) -> Result<Option<u64>, sqlx::Error> {
    let bucket = bucket_of(key, count.bucket_bits);
    let row: Option<Bucket> = sqlx::query_as(
        "SELECT before_count, requests, ids FROM lottery_buckets WHERE concert_id = ? AND bucket = ?",
    )
    .bind(concert)
    .bind(bucket)
    .fetch_optional(conn)
    .traced("SELECT", "lottery_buckets")
    .await?;
    Ok(row.and_then(|b| b.place_of(id)))
}

/// A counted bucket, as stored.
#[derive(Debug, Default, sqlx::FromRow)]
struct Bucket {
    before_count: Option<u64>,
    requests: Option<u64>,
    ids: Option<String>,
}

impl Bucket {
    /// The place of `id` if the bucket holds it. A list that does not hold
    /// as many ids as the bucket counted (cut short) places nobody.
    fn place_of(&self, id: QueueId) -> Option<u64> {
        let (before, requests, ids) = (self.before_count?, self.requests?, self.ids.as_deref()?);
        let wanted = id.get().to_string();
        let mut found = None;
        let mut listed = 0u64;
        for (i, listed_id) in ids.split(',').enumerate() {
            listed += 1;
            if listed_id == wanted {
                found = Some(before + i as u64 + 1);
            }
        }
        found.filter(|_| listed == requests)
    }
}

/// A request, and its place in its lottery (as [`lottery_place`]) when it
/// waits in a lottery already counted: one statement of three rows read
/// by their keys, so that a status poll costs one round trip however many
/// requests an instance has not seen.
pub async fn find_placed(
    conn: &mut MySqlConnection,
    id: QueueId,
) -> Result<Option<(QueueRow, Option<u64>)>, sqlx::Error> {
    let floor = LineKey::LOTTERY_FLOOR.get();
    let after = LineKey::AFTER_OPENING.get();
    let select = sqlx::query_as(AssertSqlSafe(format!(
        "SELECT {columns}, b.before_count, b.requests, b.ids \
         FROM reservation_queue q \
         LEFT JOIN sale_lines s ON s.concert_id = q.concert_id \
         LEFT JOIN lottery_buckets b ON b.concert_id = q.concert_id \
           AND q.line_rank IS NULL AND q.line_key > 0 AND q.line_key < {after} \
           AND q.status IN ('WAITING', 'PENDING', 'PROCESSING') AND s.lottery_counted IS NOT NULL \
           AND b.bucket = IF(q.line_key < {floor}, 0, (q.line_key - {floor}) >> (61 - s.lottery_bucket_bits)) \
         WHERE q.id = ?",
        columns = columns_of("q"),
    )));
    let row: Option<Placed> = select
        .bind(id)
        .fetch_optional(conn)
        .traced("SELECT", "reservation_queue")
        .await?;
    Ok(row.map(|p| {
        let place = p.bucket.place_of(p.row.id);
        (p.row, place)
    }))
}

#[derive(sqlx::FromRow)]
struct Placed {
    #[sqlx(flatten)]
    row: QueueRow,
    #[sqlx(flatten)]
    bucket: Bucket,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bucket(before: u64, requests: u64, ids: &str) -> Bucket {
        Bucket {
            before_count: Some(before),
            requests: Some(requests),
            ids: Some(ids.into()),
        }
    }

    #[test]
    fn a_place_is_the_count_before_its_bucket_and_its_place_within() {
        let b = bucket(100, 3, "7,3,12");
        assert_eq!(b.place_of(QueueId(7)), Some(101));
        assert_eq!(b.place_of(QueueId(12)), Some(103));
        // Not "1" in "12": ids are compared whole.
        assert_eq!(b.place_of(QueueId(1)), None);
    }

    #[test]
    fn a_list_cut_short_or_missing_places_nobody() {
        assert_eq!(bucket(0, 4, "7,3,12").place_of(QueueId(7)), None);
        assert_eq!(Bucket::default().place_of(QueueId(7)), None);
    }
}
