//! Token revocations: "every token of this user issued before this instant
//! is void". Read by every API instance into memory (see the API's
//! `security::revocations`), so that no request pays a query.

use super::Traced as _;
use chrono::{DateTime, Utc};
use sqlx::MySqlConnection;

use crate::domain::UserId;

/// Voids the user's tokens issued before `before`. Call inside the
/// transaction of the change that requires it.
pub async fn record(
    conn: &mut MySqlConnection,
    user: UserId,
    before: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO token_revocations (user_id, revoked_before, recorded_at) \
         VALUES (?, ?, UTC_TIMESTAMP(6))",
    )
    .bind(user)
    .bind(before.naive_utc())
    .execute(conn)
    .traced("INSERT", "token_revocations")
    .await?;
    Ok(())
}

/// Revocations recorded at or after `since`: (user, revoked before).
pub async fn recorded_since(
    conn: &mut MySqlConnection,
    since: DateTime<Utc>,
) -> Result<Vec<(UserId, DateTime<Utc>)>, sqlx::Error> {
    sqlx::query_as("SELECT user_id, revoked_before FROM token_revocations WHERE recorded_at >= ?")
        .bind(since.naive_utc())
        .fetch_all(conn)
        .traced("SELECT", "token_revocations")
        .await
}

/// Deletes up to `limit` revocations recorded before `before`: once every
/// token they void has expired, they say nothing any more.
pub async fn prune(
    conn: &mut MySqlConnection,
    before: DateTime<Utc>,
    limit: u32,
) -> Result<u64, sqlx::Error> {
    let done =
        sqlx::query("DELETE FROM token_revocations WHERE recorded_at < ? ORDER BY id LIMIT ?")
            .bind(before.naive_utc())
            .bind(limit)
            .execute(conn)
            .traced("DELETE", "token_revocations")
            .await?;
    Ok(done.rows_affected())
}
