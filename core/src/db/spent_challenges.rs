//! Proof-of-work challenges already spent: each is accepted once, whichever
//! instance sees it, and only before its end by the database's clock.

use chrono::{DateTime, Utc};
use sqlx::MySqlConnection;

use super::Traced as _;
use crate::domain::ConcertId;

/// What spending a challenge found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Spend {
    Fresh,
    /// Its end has passed (by the database's clock).
    Expired,
    /// Spent before.
    Replayed,
}

/// Records the challenge (`id`: a hash of its signature) as spent, in the
/// statement that compares its end with the database's clock.
pub async fn spend(
    conn: &mut MySqlConnection,
    concert: ConcertId,
    id: &[u8; 32],
    expires_at: DateTime<Utc>,
) -> Result<Spend, sqlx::Error> {
    let done = sqlx::query(
        "INSERT IGNORE INTO spent_challenges (concert_id, challenge, expires_at) \
         SELECT ?, ?, ? FROM DUAL WHERE ? > UTC_TIMESTAMP(6)",
    )
    .bind(concert)
    .bind(id.as_slice())
    .bind(expires_at.naive_utc())
    .bind(expires_at.naive_utc())
    .execute(&mut *conn)
    .traced("INSERT", "spent_challenges")
    .await?;
    if done.rows_affected() == 1 {
        return Ok(Spend::Fresh);
    }
    let (live,): (bool,) = sqlx::query_as("SELECT ? > UTC_TIMESTAMP(6)")
        .bind(expires_at.naive_utc())
        .fetch_one(conn)
        .traced("SELECT", "spent_challenges")
        .await?;
    Ok(if live {
        Spend::Replayed
    } else {
        Spend::Expired
    })
}

/// Forgets challenges that ended before `before`; how many.
pub async fn forget_ended(
    conn: &mut MySqlConnection,
    before: DateTime<Utc>,
    limit: u32,
) -> Result<u64, sqlx::Error> {
    let done = sqlx::query("DELETE FROM spent_challenges WHERE expires_at < ? LIMIT ?")
        .bind(before.naive_utc())
        .bind(limit)
        .execute(conn)
        .traced("DELETE", "spent_challenges")
        .await?;
    Ok(done.rows_affected())
}
