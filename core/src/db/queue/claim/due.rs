//! Which rows a claim takes: the first due in one concert's line, the
//! concerts taking turns.

use sqlx::{AssertSqlSafe, MySqlConnection};

use crate::domain::{LineKey, QueueId};

/// The first `limit` rows in line of one concert that are due by the
/// database's clock, locked: its PENDING rows and, once its sale has
/// opened, its lottery's WAITING rows (nothing admits them: the claim reads
/// the opening itself). Rows another transaction holds are skipped, not
/// waited for. The concerts in line take turns, from a random one on, so
/// that one sale's line does not keep another's waiting, and a claim (and
/// its decision) touches one concert's rows.
///
/// Every claim reads through the concert's line index: a claim that has
/// read past its last row keeps that index entry locked until its commit,
/// and only an entry of the same index is one a decision of another
/// worker's already holds (and so skips).
pub(super) async fn first_due(
    conn: &mut MySqlConnection,
    limit: u32,
) -> Result<Vec<QueueId>, sqlx::Error> {
    let concerts = crate::db::line::concerts_in_line(conn).await?;
    let start = turn(concerts.len());
    for i in 0..concerts.len() {
        let concert = concerts[(start + i) % concerts.len()];
        let due = due_in(conn, concert, limit).await?;
        if !due.is_empty() {
            return Ok(due);
        }
    }
    Ok(Vec::new())
}

/// Where the concerts' turns begin for this claim.
fn turn(concerts: usize) -> usize {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    nanos as usize % concerts.max(1)
}

/// [`first_due`] in one concert. Its lottery's rows are read first, and
/// the PENDING ones only as far as the last of them: after the opening the
/// PENDING rows are mostly requests after it, all behind the lottery, so
/// little is locked and not taken (such rows stay locked until the caller's
/// commit; other workers skip them).
async fn due_in(
    conn: &mut MySqlConnection,
    concert: crate::db::line::InLine,
    limit: u32,
) -> Result<Vec<QueueId>, sqlx::Error> {
    let mut rows: Vec<(LineKey, QueueId)> = if concert.opened {
        sqlx::query_as(
            "SELECT line_key, id FROM reservation_queue FORCE INDEX (idx_queue_concert_line) \
             WHERE concert_id = ? AND status = 'WAITING' \
             ORDER BY line_key, id LIMIT ? FOR UPDATE SKIP LOCKED",
        )
        .bind(concert.concert_id)
        .bind(limit)
        .fetch_all(&mut *conn)
        .await?
    } else {
        Vec::new()
    };
    let cutoff = rows
        .last()
        .copied()
        .filter(|_| rows.len() >= limit as usize);
    let before = if cutoff.is_some() {
        "AND (line_key < ? OR (line_key = ? AND id < ?))"
    } else {
        ""
    };
    let mut pending = sqlx::query_as(AssertSqlSafe(format!(
        "SELECT line_key, id FROM reservation_queue FORCE INDEX (idx_queue_concert_line) \
         WHERE concert_id = ? AND status = 'PENDING' \
           AND (retry_at IS NULL OR retry_at <= UTC_TIMESTAMP(6)) {before} \
         ORDER BY line_key, id LIMIT ? FOR UPDATE SKIP LOCKED"
    )))
    .bind(concert.concert_id);
    if let Some((key, id)) = cutoff {
        pending = pending.bind(key).bind(key).bind(id);
    }
    let pending: Vec<(LineKey, QueueId)> = pending.bind(limit).fetch_all(&mut *conn).await?;
    rows.extend(pending);
    rows.sort_unstable();
    rows.truncate(limit as usize);
    Ok(rows.into_iter().map(|(_, id)| id).collect())
}
