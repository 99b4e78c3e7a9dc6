//! Organizers, their members, and what a caller is on a concert's organizer:
//! the one read every operator route's permission check makes.
//!
//! Long because the team's reads and writes share its tables' locking
//! rules (owners locked first), which read best side by side.

use chrono::{DateTime, Utc};
use sqlx::MySqlConnection;

use super::{BindIds as _, IdList, Traced as _};
use crate::domain::{
    ConcertId, MemberRole, OrganizerId, OrganizerName, OrganizerSlug, RefundId, SeatId, UserId,
};
use sqlx::AssertSqlSafe;

/// The organizer the migration made for an installation's existing
/// concerts and admins (`20261223000001_organizers.sql`).
pub const DEFAULT: OrganizerId = OrganizerId(1);

/// An organizer as stored, with the caller's role in it when asked for.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct OrganizerRow {
    pub id: OrganizerId,
    pub name: String,
    pub slug: String,
    pub created_at: DateTime<Utc>,
    /// The most the desk gives back in one refund (minor units); None: no
    /// limit set.
    pub desk_refund_limit: Option<u64>,
    pub role: Option<MemberRole>,
    /// Whether the caller's role covers only some concerts.
    pub limited: Option<bool>,
}

/// A caller's standing on one organizer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, sqlx::FromRow)]
pub struct Membership {
    pub organizer: OrganizerId,
    /// None: not a member of it.
    pub role: Option<MemberRole>,
    /// False for a member whose role is limited to concerts other than
    /// the one asked about.
    pub covers: bool,
}

/// Stores a new organizer; its id. The slug's uniqueness is the
/// database's (`uq_organizers_slug`).
pub async fn insert(
    conn: &mut MySqlConnection,
    name: &OrganizerName,
    slug: &OrganizerSlug,
    now: DateTime<Utc>,
) -> Result<OrganizerId, sqlx::Error> {
    let done = sqlx::query(
        "INSERT INTO organizers (name, slug, created_at, updated_at) VALUES (?, ?, ?, ?)",
    )
    .bind(name.as_str())
    .bind(slug.as_str())
    .bind(now.naive_utc())
    .bind(now.naive_utc())
    .execute(conn)
    .traced("INSERT", "organizers")
    .await?;
    Ok(OrganizerId(done.last_insert_id()))
}

/// Changes an organizer's name or slug (found first by the caller).
pub async fn update(
    conn: &mut MySqlConnection,
    id: OrganizerId,
    change: &Change<'_>,
    now: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    let (set_limit, limit) = match change.desk_refund_limit {
        Some(limit) => (true, limit),
        None => (false, None),
    };
    sqlx::query(
        "UPDATE organizers SET name = COALESCE(?, name), slug = COALESCE(?, slug), \
         desk_refund_limit = IF(?, ?, desk_refund_limit), updated_at = ? WHERE id = ?",
    )
    .bind(change.name.map(OrganizerName::as_str))
    .bind(change.slug.map(OrganizerSlug::as_str))
    .bind(set_limit)
    .bind(limit)
    .bind(now.naive_utc())
    .bind(id)
    .execute(conn)
    .traced("UPDATE", "organizers")
    .await?;
    Ok(())
}

/// What a change of an organizer sets; None leaves a field as it is.
#[derive(Debug, Default)]
pub struct Change<'a> {
    pub name: Option<&'a OrganizerName>,
    pub slug: Option<&'a OrganizerSlug>,
    /// Some(None): no limit.
    pub desk_refund_limit: Option<Option<u64>>,
}

/// The most the organizer's desk gives back in one refund; None: no limit.
pub async fn desk_refund_limit(
    conn: &mut MySqlConnection,
    id: OrganizerId,
) -> Result<Option<u64>, sqlx::Error> {
    let limit: Option<Option<u64>> =
        sqlx::query_scalar("SELECT desk_refund_limit FROM organizers WHERE id = ?")
            .bind(id)
            .fetch_optional(conn)
            .traced("SELECT", "organizers")
            .await?;
    Ok(limit.flatten())
}

/// One organizer, with `user`'s role in it.
pub async fn find(
    conn: &mut MySqlConnection,
    id: OrganizerId,
    user: UserId,
) -> Result<Option<OrganizerRow>, sqlx::Error> {
    sqlx::query_as(
        "SELECT o.id, o.name, o.slug, o.created_at, o.desk_refund_limit, m.role, m.limited FROM organizers o \
         LEFT JOIN organizer_members m ON m.organizer_id = o.id AND m.user_id = ? WHERE o.id = ?",
    )
    .bind(user)
    .bind(id)
    .fetch_optional(conn)
    .traced("SELECT", "organizers")
    .await
}

/// The organizers `user` is a member of, with the role, by id; every
/// organizer when `all` (the platform's admin).
pub async fn of_user(
    conn: &mut MySqlConnection,
    user: UserId,
    all: bool,
) -> Result<Vec<OrganizerRow>, sqlx::Error> {
    sqlx::query_as(
        "SELECT o.id, o.name, o.slug, o.created_at, o.desk_refund_limit, m.role, m.limited FROM organizers o \
         LEFT JOIN organizer_members m ON m.organizer_id = o.id AND m.user_id = ? \
         WHERE ? OR m.user_id IS NOT NULL ORDER BY o.id LIMIT 1000",
    )
    .bind(user)
    .bind(all)
    .fetch_all(conn)
    .traced("SELECT", "organizers")
    .await
}

/// Makes `user` a member of `organizer` with `role` (for every concert).
pub async fn add_member(
    conn: &mut MySqlConnection,
    organizer: OrganizerId,
    user: UserId,
    role: MemberRole,
    now: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO organizer_members (organizer_id, user_id, role, limited, created_at, updated_at) \
         VALUES (?, ?, ?, 0, ?, ?)",
    )
    .bind(organizer)
    .bind(user)
    .bind(role)
    .bind(now.naive_utc())
    .bind(now.naive_utc())
    .execute(conn)
    .traced("INSERT", "organizer_members")
    .await?;
    Ok(())
}

/// What `user` is on the organizer of `concert`; None when there is no
/// such concert.
pub async fn on_concert(
    conn: &mut MySqlConnection,
    user: UserId,
    concert: ConcertId,
) -> Result<Option<Membership>, sqlx::Error> {
    sqlx::query_as(
        "SELECT c.organizer_id AS organizer, m.role, \
                COALESCE(m.limited = 0 OR EXISTS (SELECT 1 FROM member_concerts mc \
                   WHERE mc.organizer_id = c.organizer_id AND mc.user_id = m.user_id \
                     AND mc.concert_id = c.id), 0) AS covers \
         FROM concerts c LEFT JOIN organizer_members m ON m.organizer_id = c.organizer_id AND m.user_id = ? \
         WHERE c.id = ?",
    )
    .bind(user)
    .bind(concert)
    .fetch_optional(conn)
    .traced("SELECT", "organizer_members")
    .await
}

/// What `user` is on `organizer`; None when there is no such organizer.
/// A limited member covers the organizer itself (not its other concerts).
pub async fn on_organizer(
    conn: &mut MySqlConnection,
    user: UserId,
    organizer: OrganizerId,
) -> Result<Option<Membership>, sqlx::Error> {
    sqlx::query_as(
        "SELECT o.id AS organizer, m.role, COALESCE(m.limited = 0, 0) AS covers \
         FROM organizers o LEFT JOIN organizer_members m ON m.organizer_id = o.id AND m.user_id = ? \
         WHERE o.id = ?",
    )
    .bind(user)
    .bind(organizer)
    .fetch_optional(conn)
    .traced("SELECT", "organizer_members")
    .await
}

/// The concert a seat belongs to.
pub async fn concert_of_seat(
    conn: &mut MySqlConnection,
    seat: SeatId,
) -> Result<Option<ConcertId>, sqlx::Error> {
    sqlx::query_scalar("SELECT concert_id FROM seats WHERE id = ?")
        .bind(seat)
        .fetch_optional(conn)
        .traced("SELECT", "seats")
        .await
}

/// The concert a refund gives money back for.
pub async fn concert_of_refund(
    conn: &mut MySqlConnection,
    refund: RefundId,
) -> Result<Option<ConcertId>, sqlx::Error> {
    sqlx::query_scalar("SELECT concert_id FROM refunds WHERE id = ?")
        .bind(refund)
        .fetch_optional(conn)
        .traced("SELECT", "refunds")
        .await
}

/// Whether `user` is a member of any organizer (an operator, not a fan).
pub async fn is_member(conn: &mut MySqlConnection, user: UserId) -> Result<bool, sqlx::Error> {
    let found: Option<u64> =
        sqlx::query_scalar("SELECT organizer_id FROM organizer_members WHERE user_id = ? LIMIT 1")
            .bind(user)
            .fetch_optional(conn)
            .traced("SELECT", "organizer_members")
            .await?;
    Ok(found.is_some())
}

/// A member as listed to the team's owners.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct MemberRow {
    pub user_id: UserId,
    pub nickname: String,
    pub role: MemberRole,
    pub limited: bool,
    /// The concerts a limited role covers.
    #[sqlx(skip)]
    pub concerts: Vec<ConcertId>,
}

/// The organizer's members, by user id.
pub async fn members(
    conn: &mut MySqlConnection,
    organizer: OrganizerId,
) -> Result<Vec<MemberRow>, sqlx::Error> {
    members_among(conn, organizer, None).await
}

/// The organizer's members, or only `user` when named.
async fn members_among(
    conn: &mut MySqlConnection,
    organizer: OrganizerId,
    user: Option<UserId>,
) -> Result<Vec<MemberRow>, sqlx::Error> {
    let mut rows: Vec<MemberRow> = sqlx::query_as(
        "SELECT m.user_id, u.nickname, m.role, m.limited \
         FROM organizer_members m JOIN users u ON u.id = m.user_id \
         WHERE m.organizer_id = ? AND (? IS NULL OR m.user_id = ?) ORDER BY m.user_id LIMIT 10000",
    )
    .bind(organizer)
    .bind(user)
    .bind(user)
    .fetch_all(&mut *conn)
    .traced("SELECT", "organizer_members")
    .await?;
    // Read apart, not folded into one text column: a list of a thousand
    // concerts is longer than MySQL's default GROUP_CONCAT keeps.
    let covered: Vec<(UserId, ConcertId)> = sqlx::query_as(
        "SELECT user_id, concert_id FROM member_concerts \
         WHERE organizer_id = ? AND (? IS NULL OR user_id = ?) ORDER BY user_id, concert_id",
    )
    .bind(organizer)
    .bind(user)
    .bind(user)
    .fetch_all(conn)
    .traced("SELECT", "member_concerts")
    .await?;
    for (member, concert) in covered {
        if let Ok(i) = rows.binary_search_by_key(&member, |r| r.user_id) {
            rows[i].concerts.push(concert);
        }
    }
    Ok(rows)
}

/// The concerts each of `user`'s limited roles covers, by organizer.
pub async fn covered_by(
    conn: &mut MySqlConnection,
    user: UserId,
) -> Result<Vec<(OrganizerId, ConcertId)>, sqlx::Error> {
    sqlx::query_as(
        "SELECT organizer_id, concert_id FROM member_concerts WHERE user_id = ? \
         ORDER BY organizer_id, concert_id",
    )
    .bind(user)
    .fetch_all(conn)
    .traced("SELECT", "member_concerts")
    .await
}

/// Makes `user` an owner of the first organizer when it has none: the
/// admin named at start-up owns the installation's own organizer, as the
/// migration made every admin before it. Safe when instances start at once.
pub async fn own_first_if_ownerless(
    conn: &mut MySqlConnection,
    user: UserId,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT IGNORE INTO organizer_members (organizer_id, user_id, role, limited, created_at, updated_at) \
         SELECT ?, ?, 'OWNER', 0, UTC_TIMESTAMP(6), UTC_TIMESTAMP(6) FROM DUAL WHERE NOT EXISTS \
           (SELECT 1 FROM organizer_members WHERE organizer_id = ? AND role = 'OWNER')",
    )
    .bind(DEFAULT)
    .bind(user)
    .bind(DEFAULT)
    .execute(conn)
    .traced("INSERT", "organizer_members")
    .await?;
    Ok(())
}

/// One member of the organizer, if `user` is one.
pub async fn member(
    conn: &mut MySqlConnection,
    organizer: OrganizerId,
    user: UserId,
) -> Result<Option<MemberRow>, sqlx::Error> {
    Ok(members_among(conn, organizer, Some(user)).await?.pop())
}

/// The organizer's owners, locked until the transaction ends: a change
/// that would leave it none is refused under this lock.
pub async fn lock_owners(
    conn: &mut MySqlConnection,
    organizer: OrganizerId,
) -> Result<Vec<UserId>, sqlx::Error> {
    sqlx::query_scalar(
        "SELECT user_id FROM organizer_members WHERE organizer_id = ? AND role = 'OWNER' \
         ORDER BY user_id FOR UPDATE",
    )
    .bind(organizer)
    .fetch_all(conn)
    .traced("SELECT", "organizer_members")
    .await
}

/// An organizer `user` is the only owner of, if any. Locks the owners of
/// every organizer `user` owns until the transaction ends, so that two
/// owners leaving at once cannot both go.
pub async fn solely_owned_by(
    conn: &mut MySqlConnection,
    user: UserId,
) -> Result<Option<OrganizerId>, sqlx::Error> {
    let owners: Vec<(OrganizerId, UserId)> = sqlx::query_as(
        "SELECT o.organizer_id, o.user_id FROM organizer_members o \
         JOIN organizer_members m ON m.organizer_id = o.organizer_id AND m.user_id = ? AND m.role = 'OWNER' \
         WHERE o.role = 'OWNER' ORDER BY o.organizer_id, o.user_id FOR UPDATE",
    )
    .bind(user)
    .fetch_all(conn)
    .traced("SELECT", "organizer_members")
    .await?;
    Ok(owners
        .iter()
        .map(|(organizer, _)| *organizer)
        .find(|organizer| owners.iter().filter(|(o, _)| o == organizer).count() == 1))
}

/// Sets `user`'s role on `organizer` (a member already or not), limited
/// to `concerts` when some are given (each checked to be the organizer's
/// by the caller). Call inside a transaction.
pub async fn set_member(
    conn: &mut MySqlConnection,
    organizer: OrganizerId,
    user: UserId,
    role: MemberRole,
    concerts: &[ConcertId],
    now: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO organizer_members (organizer_id, user_id, role, limited, created_at, updated_at) \
         VALUES (?, ?, ?, ?, ?, ?) \
         ON DUPLICATE KEY UPDATE role = VALUES(role), limited = VALUES(limited), updated_at = VALUES(updated_at)",
    )
    .bind(organizer)
    .bind(user)
    .bind(role)
    .bind(!concerts.is_empty())
    .bind(now.naive_utc())
    .bind(now.naive_utc())
    .execute(&mut *conn)
    .traced("INSERT", "organizer_members")
    .await?;
    sqlx::query("DELETE FROM member_concerts WHERE organizer_id = ? AND user_id = ?")
        .bind(organizer)
        .bind(user)
        .execute(&mut *conn)
        .traced("DELETE", "member_concerts")
        .await?;
    for concert in concerts {
        sqlx::query(
            "INSERT INTO member_concerts (organizer_id, user_id, concert_id) VALUES (?, ?, ?)",
        )
        .bind(organizer)
        .bind(user)
        .bind(concert)
        .execute(&mut *conn)
        .traced("INSERT", "member_concerts")
        .await?;
    }
    Ok(())
}

/// Removes `user` from `organizer`; false when they were no member.
pub async fn remove_member(
    conn: &mut MySqlConnection,
    organizer: OrganizerId,
    user: UserId,
) -> Result<bool, sqlx::Error> {
    let done = sqlx::query("DELETE FROM organizer_members WHERE organizer_id = ? AND user_id = ?")
        .bind(organizer)
        .bind(user)
        .execute(conn)
        .traced("DELETE", "organizer_members")
        .await?;
    Ok(done.rows_affected() > 0)
}

/// How many of `concerts` (distinct) belong to `organizer`.
pub async fn count_own_concerts(
    conn: &mut MySqlConnection,
    organizer: OrganizerId,
    concerts: &[ConcertId],
) -> Result<usize, sqlx::Error> {
    let ids: Vec<u64> = concerts.iter().map(|c| c.get()).collect();
    let Some(list) = IdList::of(&ids) else {
        return Ok(0);
    };
    let (counted,): (i64,) = sqlx::query_as(AssertSqlSafe(format!(
        "SELECT COUNT(*) FROM concerts WHERE organizer_id = ? AND id IN ({list})"
    )))
    .bind(organizer)
    .bind_ids(&list)
    .fetch_one(conn)
    .traced("SELECT", "concerts")
    .await?;
    Ok(usize::try_from(counted).unwrap_or(0))
}
