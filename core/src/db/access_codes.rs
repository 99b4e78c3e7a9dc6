//! Presale access codes of a concert. What a code has taken (its uses and
//! seats) is counted from the requests that carry it, under the code's row
//! lock, so that two instances cannot both spend its last use.

use chrono::{DateTime, Utc};
use sqlx::{AssertSqlSafe, MySqlConnection, QueryBuilder};

use super::Traced as _;
use crate::domain::{AccessCodeId, CodeBatch, ConcertId, UserId};

/// Codes per multi-row INSERT.
const INSERT_CHUNK: usize = 1_000;

/// Stores a batch's codes (by their hashes) for `concert`; their ids in
/// the order of `hashes`. Call inside a transaction.
pub async fn insert_many(
    conn: &mut MySqlConnection,
    concert: ConcertId,
    batch: CodeBatch,
    hashes: &[[u8; 32]],
    now: DateTime<Utc>,
) -> Result<Vec<AccessCodeId>, sqlx::Error> {
    async move {
        let mut ids = Vec::with_capacity(hashes.len());
        for chunk in hashes.chunks(INSERT_CHUNK) {
            let mut insert = QueryBuilder::new(
                "INSERT INTO access_codes (concert_id, code_hash, uses_per_code, seats_per_code, created_at) ",
            );
            insert.push_values(chunk, |mut row, hash| {
                row.push_bind(concert)
                    .push_bind(hash.as_slice())
                    .push_bind(batch.uses_per_code)
                    .push_bind(batch.seats_per_code)
                    .push_bind(now.naive_utc());
            });
            insert.build().execute(&mut *conn).await?;
            let mut select =
                QueryBuilder::new("SELECT id, code_hash FROM access_codes WHERE concert_id = ");
            select.push_bind(concert).push(" AND code_hash IN (");
            let mut list = select.separated(", ");
            for hash in chunk {
                list.push_bind(hash.as_slice());
            }
            select.push(")");
            let rows: Vec<(AccessCodeId, Vec<u8>)> =
                select.build_query_as().fetch_all(&mut *conn).await?;
            let by_hash: std::collections::HashMap<Vec<u8>, AccessCodeId> =
                rows.into_iter().map(|(id, hash)| (hash, id)).collect();
            for hash in chunk {
                let id = by_hash.get(hash.as_slice()).copied().ok_or_else(|| {
                    sqlx::Error::Protocol("an access code just written is missing".into())
                })?;
                ids.push(id);
            }
        }
        Ok(ids)
    }
    .traced("INSERT", "access_codes")
    .await
}

/// A code as its presale request finds it, locked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LockedCode {
    pub id: AccessCodeId,
    /// The account it is bound to (the first that used it).
    pub user: Option<UserId>,
    pub uses_per_code: u16,
    pub seats_per_code: u16,
    pub revoked: bool,
    /// Requests with it that are open or won (a live reservation).
    pub uses: u64,
    /// The seats of those.
    pub seats: u64,
}

/// Locks the code of `concert` with this hash and counts what it has
/// taken at `now`; `None` when there is no such code.
pub async fn lock(
    conn: &mut MySqlConnection,
    concert: ConcertId,
    hash: &[u8; 32],
    now: DateTime<Utc>,
) -> Result<Option<LockedCode>, sqlx::Error> {
    async move {
        let row: Option<(AccessCodeId, Option<UserId>, u16, u16, bool)> = sqlx::query_as(
            "SELECT id, user_id, uses_per_code, seats_per_code, revoked_at IS NOT NULL \
             FROM access_codes WHERE concert_id = ? AND code_hash = ? FOR UPDATE",
        )
        .bind(concert)
        .bind(hash.as_slice())
        .fetch_optional(&mut *conn)
        .await?;
        let Some((id, user, uses_per_code, seats_per_code, revoked)) = row else {
            return Ok(None);
        };
        let usage = usage_of(conn, &[id], now).await?;
        let (uses, seats) = usage.get(&id).copied().unwrap_or((0, 0));
        Ok(Some(LockedCode {
            id,
            user,
            uses_per_code,
            seats_per_code,
            revoked,
            uses,
            seats,
        }))
    }
    .traced("SELECT", "access_codes")
    .await
}

/// Binds the code to the first account that uses it. Call with it locked.
pub async fn bind(
    conn: &mut MySqlConnection,
    code: AccessCodeId,
    user: UserId,
) -> Result<(), sqlx::Error> {
    sqlx::query("UPDATE access_codes SET user_id = ? WHERE id = ? AND user_id IS NULL")
        .bind(user)
        .bind(code)
        .execute(conn)
        .traced("UPDATE", "access_codes")
        .await?;
    Ok(())
}

/// The seats each of `users` could still reserve with a code of
/// `concert` bound to them at `now`: of their codes that are not revoked
/// and have a use left, the most seats any has left. A user missing holds
/// no such code.
pub async fn seats_left_for(
    conn: &mut MySqlConnection,
    concert: ConcertId,
    users: &[UserId],
    now: DateTime<Utc>,
) -> Result<std::collections::HashMap<UserId, u64>, sqlx::Error> {
    let Some(list) = super::IdList::of(users) else {
        return Ok(std::collections::HashMap::new());
    };
    async move {
        let select = sqlx::query_as(AssertSqlSafe(format!(
            "SELECT id, user_id, uses_per_code, seats_per_code FROM access_codes \
              WHERE concert_id = ? AND user_id IN ({list}) AND revoked_at IS NULL"
        )));
        let codes: Vec<(AccessCodeId, UserId, u16, u16)> =
            super::BindIds::bind_ids(select.bind(concert), &list)
                .fetch_all(&mut *conn)
                .await?;
        let ids: Vec<AccessCodeId> = codes.iter().map(|c| c.0).collect();
        let usage = usage_of(conn, &ids, now).await?;
        let mut left = std::collections::HashMap::new();
        for (id, user, uses_per_code, seats_per_code) in codes {
            let (uses, seats) = usage.get(&id).copied().unwrap_or((0, 0));
            if uses < u64::from(uses_per_code) {
                let here = u64::from(seats_per_code).saturating_sub(seats);
                let best: &mut u64 = left.entry(user).or_default();
                *best = (*best).max(here);
            }
        }
        Ok(left)
    }
    .traced("SELECT", "access_codes")
    .await
}

/// What each of `codes` has taken at `now`: (uses, seats) of its requests
/// that are open or won with a live reservation. A code missing has none.
async fn usage_of(
    conn: &mut MySqlConnection,
    codes: &[AccessCodeId],
    now: DateTime<Utc>,
) -> Result<std::collections::HashMap<AccessCodeId, (u64, u64)>, sqlx::Error> {
    let Some(list) = super::IdList::of(codes) else {
        return Ok(std::collections::HashMap::new());
    };
    let select = sqlx::query_as(AssertSqlSafe(format!(
        "SELECT q.access_code_id, CAST(COUNT(*) AS UNSIGNED), CAST(COALESCE(SUM(q.seat_count), 0) AS UNSIGNED) \
           FROM reservation_queue q FORCE INDEX (idx_queue_access_code) \
           LEFT JOIN reservations r ON r.id = q.reservation_id \
          WHERE q.access_code_id IN ({list}) \
            AND (q.status IN ('WAITING', 'PENDING', 'PROCESSING') \
                 OR (q.status = 'SUCCESS' AND (r.status = 'CONFIRMED' \
                     OR (r.status = 'HELD' AND r.hold_expires_at > ?)))) \
          GROUP BY q.access_code_id"
    )));
    let rows: Vec<(AccessCodeId, u64, u64)> = super::BindIds::bind_ids(select, &list)
        .bind(now.naive_utc())
        .fetch_all(conn)
        .await?;
    Ok(rows
        .into_iter()
        .map(|(id, uses, seats)| (id, (uses, seats)))
        .collect())
}

/// One code as an admin sees it (never the code itself).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CodeUsage {
    pub id: AccessCodeId,
    pub uses: u64,
    pub uses_per_code: u16,
    pub seats: u64,
    pub seats_per_code: u16,
    pub revoked: bool,
    pub user: Option<UserId>,
}

/// Every code of `concert`, in the order they were made, with what each
/// has taken at `now`.
pub async fn list(
    conn: &mut MySqlConnection,
    concert: ConcertId,
    now: DateTime<Utc>,
) -> Result<Vec<CodeUsage>, sqlx::Error> {
    async move {
        let codes: Vec<(AccessCodeId, u16, u16, bool, Option<UserId>)> = sqlx::query_as(
            "SELECT id, uses_per_code, seats_per_code, revoked_at IS NOT NULL, user_id \
             FROM access_codes WHERE concert_id = ? ORDER BY id",
        )
        .bind(concert)
        .fetch_all(&mut *conn)
        .await?;
        let mut usage = std::collections::HashMap::new();
        let ids: Vec<AccessCodeId> = codes.iter().map(|c| c.0).collect();
        for chunk in ids.chunks(1_000) {
            usage.extend(usage_of(conn, chunk, now).await?);
        }
        Ok(codes
            .into_iter()
            .map(|(id, uses_per_code, seats_per_code, revoked, user)| {
                let (uses, seats) = usage.get(&id).copied().unwrap_or((0, 0));
                CodeUsage {
                    id,
                    uses,
                    uses_per_code,
                    seats,
                    seats_per_code,
                    revoked,
                    user,
                }
            })
            .collect())
    }
    .traced("SELECT", "access_codes")
    .await
}

/// Revokes a code of `concert`; false when it has no such code. Requests
/// already taken with it stay in line.
pub async fn revoke(
    conn: &mut MySqlConnection,
    concert: ConcertId,
    code: AccessCodeId,
    now: DateTime<Utc>,
) -> Result<bool, sqlx::Error> {
    let done = sqlx::query(
        "UPDATE access_codes SET revoked_at = COALESCE(revoked_at, ?) WHERE id = ? AND concert_id = ?",
    )
    .bind(now.naive_utc())
    .bind(code)
    .bind(concert)
    .execute(&mut *conn)
    .traced("UPDATE", "access_codes")
    .await?;
    if done.rows_affected() == 1 {
        return Ok(true);
    }
    // Revoked before: the row is unchanged, and the server may count it
    // as not matched.
    let found: Option<(u64,)> =
        sqlx::query_as("SELECT id FROM access_codes WHERE id = ? AND concert_id = ?")
            .bind(code)
            .bind(concert)
            .fetch_optional(conn)
            .traced("SELECT", "access_codes")
            .await?;
    Ok(found.is_some())
}
