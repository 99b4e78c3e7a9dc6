//! Claiming work that is due under a lease, for the tables that keep it
//! the same way (mails, refunds): `due_at` is when a row may be claimed,
//! and a claim moves it to the end of its lease, so one indexed condition
//! finds new rows, retries and the rows of a claimant that died.

use chrono::{DateTime, Utc};
use sqlx::{AssertSqlSafe, MySqlConnection};

use super::{BindIds as _, IdList};

/// A table of due work: `id`, `due_at`, `lease_token`, `attempts`.
#[derive(Debug, Clone, Copy)]
pub(crate) enum DueTable {
    Mails,
    Refunds,
}

impl DueTable {
    fn name(self) -> &'static str {
        match self {
            Self::Mails => "mails",
            Self::Refunds => "refunds",
        }
    }
}

/// Claims up to `limit` rows of `table` due at `now` (the database's
/// clock) for `token` until `lease_until`, counting the attempt, in the
/// caller's short transaction; rows another claim is taking are skipped.
/// Returns their ids, in the order they were due.
pub(crate) async fn claim(
    conn: &mut MySqlConnection,
    table: DueTable,
    token: u64,
    lease_until: DateTime<Utc>,
    limit: u32,
    now: DateTime<Utc>,
) -> Result<Vec<u64>, sqlx::Error> {
    let table = table.name();
    let due: Vec<(u64,)> = sqlx::query_as(AssertSqlSafe(format!(
        "SELECT id FROM {table} WHERE due_at <= ? ORDER BY due_at LIMIT ? FOR UPDATE SKIP LOCKED"
    )))
    .bind(now.naive_utc())
    .bind(limit)
    .fetch_all(&mut *conn)
    .await?;
    let ids: Vec<u64> = due.into_iter().map(|(id,)| id).collect();
    let Some(list) = IdList::of(&ids) else {
        return Ok(ids);
    };
    let update = sqlx::query(AssertSqlSafe(format!(
        "UPDATE {table} SET lease_token = ?, due_at = ?, attempts = attempts + 1 WHERE id IN ({list})"
    )))
    .bind(token)
    .bind(lease_until.naive_utc());
    update.bind_ids(&list).execute(&mut *conn).await?;
    Ok(ids)
}
