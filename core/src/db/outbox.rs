//! Events written in the transaction of the change they announce: an event
//! exists if and only if its change committed. Each belongs to one
//! reservation (its `aggregate_id`) and one concert.

use chrono::{DateTime, Utc};

use super::{BindIds as _, IdList, Traced as _, execute_for_ids};
use crate::domain::events::ReservationEvent;

/// Writes the events, in the order given (their ids keep that order), and
/// the mails they are followed by (`mails::queue_for`); returns how many
/// events.
pub async fn record(
    conn: &mut sqlx::MySqlConnection,
    events: &[ReservationEvent],
    now: DateTime<Utc>,
) -> Result<u64, sqlx::Error> {
    let recorded = insert(conn, events, now).await?;
    super::mails::queue_for(conn, events, now).await?;
    Ok(recorded)
}

async fn insert(
    conn: &mut sqlx::MySqlConnection,
    events: &[ReservationEvent],
    now: DateTime<Utc>,
) -> Result<u64, sqlx::Error> {
    if events.is_empty() {
        return Ok(0);
    }
    let mut insert = sqlx::QueryBuilder::new(
        "INSERT INTO outbox (event_type, aggregate_id, concert_id, payload, created_at) ",
    );
    insert.push_values(events, |mut row, e| {
        row.push_bind(e.kind.as_str())
            .push_bind(e.reservation_id)
            .push_bind(e.concert_id)
            .push_bind(serde_json::to_string(e).unwrap_or_default())
            .push_bind(now.naive_utc());
    });
    Ok(insert
        .build()
        .execute(conn)
        .traced("INSERT", "outbox")
        .await?
        .rows_affected())
}

/// An event claimed for delivery.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Deliverable {
    pub id: u64,
    pub event_type: String,
    pub payload: String,
    pub created_at: DateTime<Utc>,
    /// Deliveries tried so far, this one included.
    pub attempts: u32,
}

/// Claims up to `limit` events for delivery under a lease (`token` until
/// `lease_until`), in a short transaction of the caller's that commits at
/// once. An event is due when it is neither delivered nor given up, its
/// next attempt is due (by `now`, the database's clock) and no lease on it
/// runs; of each reservation only the earliest undelivered event is ever
/// claimed, so its events go out in order (a later one waits while an
/// earlier one is retried). Rows another relay holds are skipped, not
/// waited for.
///
/// The events waiting behind an earlier one of their reservation are left
/// out by the statement itself, not after its `LIMIT`: otherwise a page of
/// them (one reservation's refused event each, its later events behind it)
/// fills every claim and no other reservation's event is ever delivered.
pub async fn claim_deliverable(
    conn: &mut sqlx::MySqlConnection,
    token: u64,
    lease_until: DateTime<Utc>,
    limit: u32,
    now: DateTime<Utc>,
) -> Result<Vec<Deliverable>, sqlx::Error> {
    async move {
        let due: Vec<(u64,)> = sqlx::query_as(
            "SELECT o.id FROM outbox o \
             WHERE o.published_at IS NULL AND o.failed_at IS NULL \
               AND (o.next_attempt_at IS NULL OR o.next_attempt_at <= ?) \
               AND (o.lease_until IS NULL OR o.lease_until < ?) \
               AND NOT EXISTS (SELECT 1 FROM outbox e FORCE INDEX (idx_outbox_reservation) \
                               WHERE e.aggregate_id = o.aggregate_id AND e.id < o.id \
                                 AND e.published_at IS NULL AND e.failed_at IS NULL) \
             ORDER BY o.id LIMIT ? FOR UPDATE SKIP LOCKED",
        )
        .bind(now.naive_utc())
        .bind(now.naive_utc())
        .bind(limit)
        .fetch_all(&mut *conn)
        .await?;
        let ids: Vec<u64> = due.into_iter().map(|(id,)| id).collect();
        let Some(list) = IdList::of(&ids) else {
            return Ok(Vec::new());
        };
        let update = sqlx::query(sqlx::AssertSqlSafe(format!(
            "UPDATE outbox SET lease_token = ?, lease_until = ?, attempts = attempts + 1 WHERE id IN ({list})"
        )))
        .bind(token)
        .bind(lease_until.naive_utc());
        update.bind_ids(&list)
            .execute(&mut *conn)
            .await?;
        let select = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT id, event_type, payload, created_at, attempts FROM outbox \
             WHERE id IN ({list}) ORDER BY id"
        )));
        select.bind_ids(&list).fetch_all(conn).await
    }
    .traced("UPDATE", "outbox")
    .await
}

/// How a delivery ended.
#[derive(Debug, Clone)]
pub enum Delivery {
    Delivered,
    /// Try again at the given time.
    Retry {
        at: DateTime<Utc>,
        error: String,
    },
    /// Given up: undeliverable within the retry period.
    Failed {
        error: String,
    },
}

/// Records how the delivery of an event under this lease ended; false when
/// the lease was lost (another relay took the event over after it ran out).
pub async fn record_delivery(
    conn: &mut sqlx::MySqlConnection,
    id: u64,
    token: u64,
    outcome: &Delivery,
    now: DateTime<Utc>,
) -> Result<bool, sqlx::Error> {
    let (published, next, failed, error) = match outcome {
        Delivery::Delivered => (Some(now), None, None, None),
        Delivery::Retry { at, error } => (None, Some(*at), None, Some(error.as_str())),
        Delivery::Failed { error } => (None, None, Some(now), Some(error.as_str())),
    };
    let done = sqlx::query(
        "UPDATE outbox SET published_at = ?, next_attempt_at = ?, failed_at = ?, last_error = ?, \
         lease_token = NULL, lease_until = NULL WHERE id = ? AND lease_token = ?",
    )
    .bind(published.map(|t| t.naive_utc()))
    .bind(next.map(|t| t.naive_utc()))
    .bind(failed.map(|t| t.naive_utc()))
    .bind(error.map(|e| e.chars().take(255).collect::<String>()))
    .bind(id)
    .bind(token)
    .execute(conn)
    .traced("UPDATE", "outbox")
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Marks events delivered under this lease, all in one statement; returns
/// how many were still ours.
pub async fn mark_delivered(
    conn: &mut sqlx::MySqlConnection,
    ids: &[u64],
    token: u64,
    now: DateTime<Utc>,
) -> Result<u64, sqlx::Error> {
    execute_for_ids(conn, ids, |list| {
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "UPDATE outbox SET published_at = ?, next_attempt_at = NULL, last_error = NULL, \
             lease_token = NULL, lease_until = NULL WHERE lease_token = ? AND id IN ({list})"
        )))
        .bind(now.naive_utc())
        .bind(token)
    })
    .traced("UPDATE", "outbox")
    .await
}

/// How many events wait for delivery and how many were given up.
pub async fn backlog(conn: &mut sqlx::MySqlConnection) -> Result<(i64, i64), sqlx::Error> {
    // Each through its own index: the outbox keeps a month of events.
    sqlx::query_as(
        "SELECT (SELECT COUNT(*) FROM outbox WHERE published_at IS NULL AND failed_at IS NULL), \
                (SELECT COUNT(*) FROM outbox WHERE failed_at IS NOT NULL)",
    )
    .fetch_one(conn)
    .traced("SELECT", "outbox")
    .await
}
