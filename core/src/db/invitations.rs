//! Invitations to an organizer's team: made by its owner, accepted or
//! declined by the invitee, lapsing after a week by the database's clock.

use chrono::{DateTime, Utc};
use sqlx::MySqlConnection;

use super::Traced as _;
use crate::domain::{ConcertId, InvitationId, MemberRole, OrganizerId, UserId};

/// How long an invitation waits for its answer.
pub const LASTS_DAYS: u32 = 7;

/// An invitation as its routes show it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct InvitationRow {
    pub id: InvitationId,
    pub organizer_id: OrganizerId,
    pub organizer_name: String,
    pub user_id: UserId,
    pub nickname: String,
    pub role: MemberRole,
    pub concert_ids: Option<String>,
    /// PENDING (and not lapsed), EXPIRED, ACCEPTED, DECLINED or REVOKED.
    pub status: String,
    pub created_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
}

impl InvitationRow {
    /// The concerts the role will cover; empty: every one.
    pub fn concerts(&self) -> Vec<ConcertId> {
        self.concert_ids
            .as_deref()
            .unwrap_or("")
            .split(',')
            .filter_map(|id| id.parse().ok().map(ConcertId))
            .collect()
    }
}

const COLUMNS: &str = "i.id, i.organizer_id, o.name AS organizer_name, i.user_id, u.nickname, i.role, \
     i.concert_ids, IF(i.status = 'PENDING' AND i.expires_at <= UTC_TIMESTAMP(6), 'EXPIRED', i.status) AS status, \
     i.created_at, i.expires_at \
     FROM organizer_invitations i JOIN organizers o ON o.id = i.organizer_id JOIN users u ON u.id = i.user_id";

/// Invites `user` with `role` (on `concerts` only, when named), for a
/// week from now by the database's clock.
pub async fn insert(
    conn: &mut MySqlConnection,
    organizer: OrganizerId,
    user: UserId,
    role: MemberRole,
    concerts: &[ConcertId],
    by: UserId,
) -> Result<InvitationId, sqlx::Error> {
    let listed = (!concerts.is_empty()).then(|| {
        concerts
            .iter()
            .map(|c| c.get().to_string())
            .collect::<Vec<_>>()
            .join(",")
    });
    let done = sqlx::query(
        "INSERT INTO organizer_invitations (organizer_id, user_id, role, concert_ids, invited_by, created_at, expires_at) \
         VALUES (?, ?, ?, ?, ?, UTC_TIMESTAMP(6), UTC_TIMESTAMP(6) + INTERVAL ? DAY)",
    )
    .bind(organizer)
    .bind(user)
    .bind(role)
    .bind(listed)
    .bind(by)
    .bind(LASTS_DAYS)
    .execute(conn)
    .traced("INSERT", "organizer_invitations")
    .await?;
    Ok(InvitationId(done.last_insert_id()))
}

pub async fn find(
    conn: &mut MySqlConnection,
    id: InvitationId,
) -> Result<Option<InvitationRow>, sqlx::Error> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} WHERE i.id = ?"
    )))
    .bind(id)
    .fetch_optional(conn)
    .traced("SELECT", "organizer_invitations")
    .await
}

/// Locks an invitation for its answer, as [`find`] reads it.
pub async fn lock(
    conn: &mut MySqlConnection,
    id: InvitationId,
) -> Result<Option<InvitationRow>, sqlx::Error> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} WHERE i.id = ? FOR UPDATE"
    )))
    .bind(id)
    .fetch_optional(conn)
    .traced("SELECT", "organizer_invitations")
    .await
}

/// The organizer's invitations, newest first (the latest 100).
pub async fn of_organizer(
    conn: &mut MySqlConnection,
    organizer: OrganizerId,
) -> Result<Vec<InvitationRow>, sqlx::Error> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} WHERE i.organizer_id = ? ORDER BY i.id DESC LIMIT 100"
    )))
    .bind(organizer)
    .fetch_all(conn)
    .traced("SELECT", "organizer_invitations")
    .await
}

/// An account's invitations still waiting for their answer.
pub async fn pending_for(
    conn: &mut MySqlConnection,
    user: UserId,
) -> Result<Vec<InvitationRow>, sqlx::Error> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} WHERE i.user_id = ? AND i.status = 'PENDING' \
         AND i.expires_at > UTC_TIMESTAMP(6) ORDER BY i.id DESC LIMIT 100"
    )))
    .bind(user)
    .fetch_all(conn)
    .traced("SELECT", "organizer_invitations")
    .await
}

/// Closes a pending invitation that has not lapsed (by the database's
/// clock, in this statement) with `status`; false when it was not open.
pub async fn close(
    conn: &mut MySqlConnection,
    id: InvitationId,
    status: &str,
) -> Result<bool, sqlx::Error> {
    let done = sqlx::query(
        "UPDATE organizer_invitations SET status = ?, decided_at = UTC_TIMESTAMP(6) \
         WHERE id = ? AND status = 'PENDING' AND expires_at > UTC_TIMESTAMP(6)",
    )
    .bind(status)
    .bind(id)
    .execute(conn)
    .traced("UPDATE", "organizer_invitations")
    .await?;
    Ok(done.rows_affected() == 1)
}

/// The living accounts whose address is `email` (at most two: one is an
/// answer, two are too many).
pub async fn accounts_at(
    conn: &mut MySqlConnection,
    email: &str,
) -> Result<Vec<UserId>, sqlx::Error> {
    sqlx::query_scalar("SELECT id FROM users WHERE email = ? AND deleted_at IS NULL LIMIT 2")
        .bind(email)
        .fetch_all(conn)
        .traced("SELECT", "users")
        .await
}
