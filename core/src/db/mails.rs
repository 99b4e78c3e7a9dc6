//! Mails (issue 31): written in the transaction of the event they follow
//! (by [`queue_for`], from `outbox::record`), for fans with an address then;
//! claimed by the workers' mail relay under a lease (a claim moves `due_at`
//! to the lease's end, so one indexed condition finds what is due: new
//! mails, retries, and the mails of a relay that died), sent, and ended.
//! Each belongs to one reservation and its concert.

use chrono::{DateTime, Utc};
use sqlx::{AssertSqlSafe, MySqlConnection};

use super::due_claim::DueTable;
use super::{BindIds as _, IdList, Traced as _, execute_for_ids};
use crate::domain::events::ReservationEvent;
use crate::domain::mail::{Due, MailKind, REMINDER_WHEN_LEFT};
use crate::domain::{ConcertId, ReservationId, ReservationStatus, SeatId, TicketId, UserId};

/// Writes the mails that `events` (just recorded, in the caller's
/// transaction) are followed by, for the fans who have an address; returns
/// how many.
pub async fn queue_for(
    conn: &mut MySqlConnection,
    events: &[ReservationEvent],
    now: DateTime<Utc>,
) -> Result<u64, sqlx::Error> {
    let mut queued = 0;
    for kind in MailKind::ALL {
        let reservations: Vec<ReservationId> = events
            .iter()
            .filter(|e| kind.follows(e.kind))
            .map(|e| e.reservation_id)
            .collect();
        // A reminder is due when a quarter of its hold is left, measured
        // on the hold as the database wrote it; it needs a hold.
        let (due, held) = match kind.due() {
            Due::AtOnce => ("?".to_owned(), ""),
            Due::BeforeTheHoldEnds => (
                format!(
                    "TIMESTAMPADD(MICROSECOND, \
                     -(TIMESTAMPDIFF(MICROSECOND, r.created_at, r.hold_expires_at) DIV {REMINDER_WHEN_LEFT}), \
                     r.hold_expires_at)"
                ),
                "AND r.hold_expires_at IS NOT NULL",
            ),
        };
        queued += execute_for_ids(conn, &reservations, |list| {
            // A refund after another rewrites its order's mail, due again.
            let again = if kind.rewritten() {
                "ON DUPLICATE KEY UPDATE due_at = VALUES(due_at), outcome = NULL, ended_at = NULL, \
                 attempts = 0, lease_token = NULL, last_error = NULL"
            } else {
                ""
            };
            let insert = sqlx::query(AssertSqlSafe(format!(
                "INSERT INTO mails (concert_id, reservation_id, user_id, kind, created_at, due_at) \
                 SELECT r.concert_id, r.id, r.user_id, ?, ?, {due} \
                   FROM reservations r JOIN users u ON u.id = r.user_id \
                  WHERE u.email IS NOT NULL {held} AND r.id IN ({list}) {again}"
            )))
            .bind(kind.as_str())
            .bind(now.naive_utc());
            match kind.due() {
                Due::AtOnce => insert.bind(now.naive_utc()),
                Due::BeforeTheHoldEnds => insert,
            }
        })
        .traced("INSERT", "mails")
        .await?;
    }
    Ok(queued)
}

/// A mail claimed for sending.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Claimed {
    pub id: u64,
    pub reservation_id: ReservationId,
    pub kind: String,
    pub created_at: DateTime<Utc>,
    /// Attempts so far, this one included.
    pub attempts: u32,
}

/// Claims up to `limit` due mails (by `now`, the database's clock) for
/// `token` until `lease_until`, in a short transaction of the caller's
/// that commits at once; mails another relay is claiming are skipped.
pub async fn claim_due(
    conn: &mut MySqlConnection,
    token: u64,
    lease_until: DateTime<Utc>,
    limit: u32,
    now: DateTime<Utc>,
) -> Result<Vec<Claimed>, sqlx::Error> {
    async move {
        let ids =
            super::due_claim::claim(conn, DueTable::Mails, token, lease_until, limit, now).await?;
        let Some(list) = IdList::of(&ids) else {
            return Ok(Vec::new());
        };
        let select = sqlx::query_as(AssertSqlSafe(format!(
            "SELECT id, reservation_id, kind, created_at, attempts FROM mails \
             WHERE id IN ({list}) ORDER BY id"
        )));
        select.bind_ids(&list).fetch_all(conn).await
    }
    .traced("UPDATE", "mails")
    .await
}

/// What a mail is about, read when it is sent.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Subject {
    pub reservation_id: ReservationId,
    pub status: ReservationStatus,
    pub hold_expires_at: Option<DateTime<Utc>>,
    pub concert_id: ConcertId,
    pub user_id: UserId,
    /// The fan's address now (none: removed since the mail was written).
    pub email: Option<String>,
    pub nickname: String,
    /// The fan's language ("en", "ko"), in which the letter is written.
    pub language: String,
    pub title: String,
    pub venue: String,
    pub concert_date: DateTime<Utc>,
    /// The venue's, in which the letter gives its times.
    pub time_zone: String,
    /// Set when the show was cancelled.
    pub cancelled_at: Option<DateTime<Utc>>,
    /// What its refunds give back (pending or done), in minor units.
    pub refunded: Option<u64>,
    pub refunded_currency: Option<String>,
}

/// One seat of the reservation a mail is about, with its ticket when the
/// reservation is confirmed.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct MailSeat {
    pub seat_id: SeatId,
    pub seat_number: String,
    pub category: Option<String>,
    pub price: Option<u64>,
    pub currency: Option<String>,
    pub ticket_id: Option<TicketId>,
    pub ticket_version: Option<u32>,
}

/// The reservation `id` with its fan and concert, and its live seats (with
/// their valid tickets) in seat order.
pub async fn subject(
    conn: &mut MySqlConnection,
    id: ReservationId,
) -> Result<Option<(Subject, Vec<MailSeat>)>, sqlx::Error> {
    async move {
        let subject: Option<Subject> = sqlx::query_as(
            "SELECT r.id AS reservation_id, r.status, r.hold_expires_at, r.concert_id, r.user_id, \
                    u.email, u.nickname, u.language, c.title, c.venue, c.concert_date, c.time_zone, c.cancelled_at, \
                    (SELECT CAST(SUM(f.amount) AS UNSIGNED) FROM refunds f \
                      WHERE f.reservation_id = r.id AND f.status <> 'FAILED') AS refunded, \
                    (SELECT MAX(f.currency) FROM refunds f WHERE f.reservation_id = r.id) AS refunded_currency \
               FROM reservations r JOIN users u ON u.id = r.user_id JOIN concerts c ON c.id = r.concert_id \
              WHERE r.id = ?",
        )
        .bind(id)
        .fetch_optional(&mut *conn)
        .await?;
        let Some(subject) = subject else {
            return Ok(None);
        };
        let seats = sqlx::query_as(
            "SELECT rs.seat_id, s.seat_number, rs.category, rs.price, rs.currency, \
                    t.id AS ticket_id, t.version AS ticket_version \
               FROM reservation_seats rs JOIN seats s ON s.id = rs.seat_id \
               LEFT JOIN tickets t ON t.reservation_id = rs.reservation_id AND t.seat_id = rs.seat_id \
                    AND t.status = 'VALID' \
              WHERE rs.reservation_id = ? AND rs.status = ? ORDER BY s.sort_key",
        )
        .bind(id)
        .bind(subject.status)
        .fetch_all(&mut *conn)
        .await?;
        Ok(Some((subject, seats)))
    }
    .traced("SELECT", "mails")
    .await
}

/// How an attempt at a mail ended.
#[derive(Debug, Clone)]
pub enum Ending {
    /// Accepted by the SMTP server for `recipient`.
    Sent { recipient: String },
    /// Not sent: nothing is left to say (`why`).
    Skipped { why: String },
    /// Refused for good, or not accepted within the retry period.
    Failed { error: String },
    /// Try again at `at`.
    Retry { at: DateTime<Utc>, error: String },
}

/// Records how the attempt under `token` at mail `id` ended; false when the
/// lease was lost (another relay took the mail over after it ran out).
pub async fn record(
    conn: &mut MySqlConnection,
    id: u64,
    token: u64,
    ending: &Ending,
    now: DateTime<Utc>,
) -> Result<bool, sqlx::Error> {
    let (outcome, due, recipient, error) = match ending {
        Ending::Sent { recipient } => (Some("SENT"), None, Some(recipient.as_str()), None),
        Ending::Skipped { why } => (Some("SKIPPED"), None, None, Some(why.as_str())),
        Ending::Failed { error } => (Some("FAILED"), None, None, Some(error.as_str())),
        Ending::Retry { at, error } => (None, Some(*at), None, Some(error.as_str())),
    };
    let done = sqlx::query(
        "UPDATE mails SET outcome = ?, ended_at = IF(? IS NULL, NULL, ?), due_at = ?, \
                recipient = COALESCE(?, recipient), last_error = ?, lease_token = NULL \
          WHERE id = ? AND lease_token = ?",
    )
    .bind(outcome)
    .bind(outcome)
    .bind(now.naive_utc())
    .bind(due.map(|t| t.naive_utc()))
    .bind(recipient)
    .bind(error.map(|e| e.chars().take(255).collect::<String>()))
    .bind(id)
    .bind(token)
    .execute(conn)
    .traced("UPDATE", "mails")
    .await?;
    Ok(done.rows_affected() == 1)
}

/// How many mails wait to be sent (due or not yet) and how many failed.
pub async fn backlog(conn: &mut MySqlConnection) -> Result<(i64, i64), sqlx::Error> {
    sqlx::query_as(
        "SELECT (SELECT COUNT(*) FROM mails WHERE due_at IS NOT NULL), \
                (SELECT COUNT(*) FROM mails WHERE outcome = 'FAILED')",
    )
    .fetch_one(conn)
    .traced("SELECT", "mails")
    .await
}

/// Deletes up to `limit` mails written before `before` that nobody holds:
/// those that ended, and, when `unsent_too` (nobody sends mail here), those
/// never sent. Call inside a transaction.
pub async fn delete_old(
    conn: &mut MySqlConnection,
    before: DateTime<Utc>,
    unsent_too: bool,
    limit: u32,
) -> Result<u64, sqlx::Error> {
    async move {
        // Ids follow time: the oldest come first in the primary key.
        let locked: Vec<(u64,)> = sqlx::query_as(
            "SELECT id FROM mails WHERE created_at < ? AND (due_at IS NULL OR ?) \
             ORDER BY id LIMIT ? FOR UPDATE SKIP LOCKED",
        )
        .bind(before.naive_utc())
        .bind(unsent_too)
        .bind(limit)
        .fetch_all(&mut *conn)
        .await?;
        let ids: Vec<u64> = locked.into_iter().map(|(id,)| id).collect();
        execute_for_ids(conn, &ids, |list| {
            sqlx::query(AssertSqlSafe(format!(
                "DELETE FROM mails WHERE id IN ({list})"
            )))
        })
        .await
    }
    .traced("DELETE", "mails")
    .await
}
