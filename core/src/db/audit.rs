//! The audit trail: appended in the transaction of the change it records,
//! never changed or removed (the database's triggers refuse it), read by an
//! organizer's owners and finance.

use chrono::{DateTime, Utc};
use sqlx::{MySqlConnection, QueryBuilder};

use super::Traced as _;
use crate::domain::{ConcertId, OrganizerId, UserId};

/// One operator write, as recorded.
#[derive(Debug, Clone)]
pub struct NewEntry<'a> {
    pub organizer: OrganizerId,
    pub concert: Option<ConcertId>,
    pub user: UserId,
    /// The member's role, or ADMIN.
    pub role: &'static str,
    pub action: &'static str,
    pub target: Option<String>,
    /// `{"before": …, "after": …}`.
    pub changes: &'a serde_json::Value,
    pub request_id: Option<&'a str>,
    pub client_address: Option<String>,
}

/// Appends `entry`, stamped with the database's clock. Call inside the
/// transaction that makes the change.
pub async fn record(conn: &mut MySqlConnection, entry: &NewEntry<'_>) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO audit_entries (at, organizer_id, concert_id, user_id, role, action, target, changes, \
         request_id, client_address) VALUES (UTC_TIMESTAMP(6), ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    )
    .bind(entry.organizer)
    .bind(entry.concert)
    .bind(entry.user)
    .bind(entry.role)
    .bind(entry.action)
    .bind(entry.target.as_deref())
    .bind(entry.changes.to_string())
    .bind(entry.request_id)
    .bind(entry.client_address.as_deref())
    .execute(conn)
    .traced("INSERT", "audit_entries")
    .await?;
    Ok(())
}

/// An entry as read back.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct EntryRow {
    pub id: u64,
    pub at: DateTime<Utc>,
    pub concert_id: Option<ConcertId>,
    pub user_id: UserId,
    pub nickname: Option<String>,
    pub role: String,
    pub action: String,
    pub target: Option<String>,
    pub changes: String,
    pub request_id: Option<String>,
    pub client_address: Option<String>,
}

/// What the trail is read for.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    pub concert: Option<ConcertId>,
    pub user: Option<UserId>,
    pub action: Option<String>,
    pub from: Option<DateTime<Utc>>,
    pub to: Option<DateTime<Utc>>,
}

/// One organizer's entries matching `filter`, newest first, `size` from
/// `offset`.
pub async fn list(
    conn: &mut MySqlConnection,
    organizer: OrganizerId,
    filter: &Filter,
    offset: u64,
    size: u32,
) -> Result<Vec<EntryRow>, sqlx::Error> {
    let mut select = QueryBuilder::new(
        "SELECT a.id, a.at, a.concert_id, a.user_id, u.nickname, a.role, a.action, a.target, a.changes, \
         a.request_id, a.client_address FROM audit_entries a LEFT JOIN users u ON u.id = a.user_id \
         WHERE a.organizer_id = ",
    );
    select.push_bind(organizer);
    if let Some(concert) = filter.concert {
        select.push(" AND a.concert_id = ").push_bind(concert);
    }
    if let Some(user) = filter.user {
        select.push(" AND a.user_id = ").push_bind(user);
    }
    if let Some(action) = &filter.action {
        select.push(" AND a.action = ").push_bind(action.clone());
    }
    if let Some(from) = filter.from {
        select.push(" AND a.at >= ").push_bind(from.naive_utc());
    }
    if let Some(to) = filter.to {
        select.push(" AND a.at < ").push_bind(to.naive_utc());
    }
    select
        .push(" ORDER BY a.id DESC LIMIT ")
        .push_bind(size)
        .push(" OFFSET ")
        .push_bind(offset);
    select
        .build_query_as()
        .fetch_all(conn)
        .traced("SELECT", "audit_entries")
        .await
}
