//! Payments of holds (issue 46): one row per attempt, written before the
//! provider is asked, so a process killed in between leaves a row the sweep
//! finds. Statuses only move forward: OPEN → SUCCEEDED | FAILED |
//! CANCELED, FAILED → SUCCEEDED | CANCELED (a declined card may be paid
//! again), and SUCCEEDED is never left.

use chrono::{DateTime, Utc};
use sqlx::MySqlConnection;

use super::Traced as _;
use crate::domain::payment::{PaymentStatus, Provider};
use crate::domain::{ConcertId, PaymentId, ReservationId, UserId};

/// How long after a payment starts (or was last looked at) the sweep asks
/// the provider about it, when no webhook has settled it.
pub const CHECK_AFTER_SECS: i64 = 60;

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct PaymentRow {
    pub id: PaymentId,
    pub concert_id: ConcertId,
    pub reservation_id: ReservationId,
    pub user_id: UserId,
    pub attempt: u8,
    pub provider: String,
    pub provider_payment_id: Option<String>,
    pub client_secret: Option<String>,
    pub amount: u64,
    pub currency: String,
    pub status: String,
    pub failure: Option<String>,
    pub created_at: DateTime<Utc>,
    pub succeeded_at: Option<DateTime<Utc>>,
}

impl PaymentRow {
    pub fn status(&self) -> PaymentStatus {
        PaymentStatus::from_stored(&self.status).unwrap_or(PaymentStatus::Open)
    }

    pub fn provider(&self) -> Provider {
        Provider::from_stored(&self.provider).unwrap_or(Provider::Manual)
    }
}

const COLUMNS: &str = "id, concert_id, reservation_id, user_id, attempt, provider, provider_payment_id, \
                       client_secret, amount, currency, status, failure, created_at, succeeded_at";

/// The reservation's latest payment attempt.
pub async fn latest_of(
    conn: &mut MySqlConnection,
    reservation: ReservationId,
) -> Result<Option<PaymentRow>, sqlx::Error> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM payments WHERE reservation_id = ? ORDER BY attempt DESC LIMIT 1"
    )))
    .bind(reservation)
    .fetch_optional(conn)
    .traced("SELECT", "payments")
    .await
}

/// Every payment of the reservations, oldest first.
pub async fn of_reservation(
    conn: &mut MySqlConnection,
    reservation: ReservationId,
) -> Result<Vec<PaymentRow>, sqlx::Error> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM payments WHERE reservation_id = ? ORDER BY attempt"
    )))
    .bind(reservation)
    .fetch_all(conn)
    .traced("SELECT", "payments")
    .await
}

pub async fn find_by_provider_id(
    conn: &mut MySqlConnection,
    provider: Provider,
    provider_payment_id: &str,
) -> Result<Option<PaymentRow>, sqlx::Error> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM payments WHERE provider = ? AND provider_payment_id = ?"
    )))
    .bind(provider.as_str())
    .bind(provider_payment_id)
    .fetch_optional(conn)
    .traced("SELECT", "payments")
    .await
}

/// Locks a payment (after its reservation and seats, the order every
/// writer uses).
pub async fn lock(
    conn: &mut MySqlConnection,
    id: PaymentId,
) -> Result<Option<PaymentRow>, sqlx::Error> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM payments WHERE id = ? FOR UPDATE"
    )))
    .bind(id)
    .fetch_optional(conn)
    .traced("SELECT", "payments")
    .await
}

/// A payment about to be asked of the provider (or, MANUAL, already
/// taken by the operator).
#[derive(Debug, Clone)]
pub struct NewPayment {
    pub concert: ConcertId,
    pub reservation: ReservationId,
    pub user: UserId,
    pub provider: Provider,
    pub amount: u64,
    pub currency: String,
}

/// Writes the reservation's next attempt: OPEN, to be checked with the
/// provider in a minute, or SUCCEEDED for a MANUAL one. Call with the
/// reservation locked.
pub async fn insert(
    conn: &mut MySqlConnection,
    new: &NewPayment,
    status: PaymentStatus,
    now: DateTime<Utc>,
) -> Result<PaymentId, sqlx::Error> {
    async move {
        let succeeded = (status == PaymentStatus::Succeeded).then_some(now.naive_utc());
        let check_at = (status == PaymentStatus::Open)
            .then(|| (now + chrono::Duration::seconds(CHECK_AFTER_SECS)).naive_utc());
        let done = sqlx::query(
            "INSERT INTO payments (concert_id, reservation_id, user_id, attempt, provider, amount, currency, \
                                   status, created_at, updated_at, succeeded_at, check_at) \
             SELECT ?, ?, ?, COALESCE(MAX(attempt), 0) + 1, ?, ?, ?, ?, ?, ?, ?, ? \
               FROM payments WHERE reservation_id = ?",
        )
        .bind(new.concert)
        .bind(new.reservation)
        .bind(new.user)
        .bind(new.provider.as_str())
        .bind(new.amount)
        .bind(&new.currency)
        .bind(status.as_str())
        .bind(now.naive_utc())
        .bind(now.naive_utc())
        .bind(succeeded)
        .bind(check_at)
        .bind(new.reservation)
        .execute(&mut *conn)
        .await?;
        Ok(PaymentId(done.last_insert_id()))
    }
    .traced("INSERT", "payments")
    .await
}

/// Keeps the provider's id and the payer's secret of a payment just made
/// there; false when another request recorded it first.
pub async fn record_provider_id(
    conn: &mut MySqlConnection,
    id: PaymentId,
    provider_payment_id: &str,
    client_secret: Option<&str>,
    now: DateTime<Utc>,
) -> Result<bool, sqlx::Error> {
    let done = sqlx::query(
        "UPDATE payments SET provider_payment_id = ?, client_secret = ?, updated_at = ? \
         WHERE id = ? AND provider_payment_id IS NULL",
    )
    .bind(provider_payment_id)
    .bind(client_secret)
    .bind(now.naive_utc())
    .bind(id)
    .execute(conn)
    .traced("UPDATE", "payments")
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Moves a payment to `status` (SUCCEEDED stays): nothing more can happen to a
/// SUCCEEDED or CANCELED one, so the sweep forgets it.
pub async fn set_status(
    conn: &mut MySqlConnection,
    id: PaymentId,
    status: PaymentStatus,
    failure: Option<&str>,
    now: DateTime<Utc>,
) -> Result<bool, sqlx::Error> {
    let done = sqlx::query(
        "UPDATE payments SET status = ?, failure = COALESCE(?, failure), updated_at = ?, \
                succeeded_at = IF(? = 'SUCCEEDED', ?, succeeded_at), \
                check_at = IF(? IN ('SUCCEEDED', 'CANCELED'), NULL, check_at) \
         WHERE id = ? AND status <> 'SUCCEEDED'",
    )
    .bind(status.as_str())
    .bind(failure)
    .bind(now.naive_utc())
    .bind(status.as_str())
    .bind(now.naive_utc())
    .bind(status.as_str())
    .bind(id)
    .execute(conn)
    .traced("UPDATE", "payments")
    .await?;
    Ok(done.rows_affected() == 1)
}

/// A payment the sweep looks at, claimed until the next check.
#[derive(Debug, Clone)]
pub struct DueCheck {
    pub id: PaymentId,
    pub reservation_id: ReservationId,
    pub provider_payment_id: Option<String>,
    /// Whether its hold has ended (by the database's clock), so a payment
    /// nobody made yet is to be cancelled.
    pub hold_ended: bool,
}

/// Claims up to `limit` payments whose check is due at `now` (the
/// database's clock) by moving their next check `lease_secs` on, in the
/// caller's short transaction; those another sweep is claiming are skipped.
pub async fn claim_due_checks(
    conn: &mut MySqlConnection,
    now: DateTime<Utc>,
    lease_secs: i64,
    limit: u32,
) -> Result<Vec<DueCheck>, sqlx::Error> {
    async move {
        let locked: Vec<(PaymentId, ReservationId, Option<String>)> = sqlx::query_as(
            "SELECT id, reservation_id, provider_payment_id FROM payments \
              WHERE check_at <= ? ORDER BY check_at LIMIT ? FOR UPDATE SKIP LOCKED",
        )
        .bind(now.naive_utc())
        .bind(limit)
        .fetch_all(&mut *conn)
        .await?;
        let mut due = Vec::with_capacity(locked.len());
        for (id, reservation_id, provider_payment_id) in locked {
            let live: Option<(bool,)> = sqlx::query_as(
                "SELECT status = 'HELD' AND hold_expires_at > ? FROM reservations WHERE id = ?",
            )
            .bind(now.naive_utc())
            .bind(reservation_id)
            .fetch_optional(&mut *conn)
            .await?;
            due.push(DueCheck {
                id,
                reservation_id,
                provider_payment_id,
                hold_ended: !live.is_some_and(|(live,)| live),
            });
        }
        for d in &due {
            schedule_check(conn, d.id, now + chrono::Duration::seconds(lease_secs)).await?;
        }
        Ok(due)
    }
    .traced("UPDATE", "payments")
    .await
}

/// When the sweep next asks about a payment.
pub async fn schedule_check(
    conn: &mut MySqlConnection,
    id: PaymentId,
    at: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    sqlx::query("UPDATE payments SET check_at = ? WHERE id = ? AND check_at IS NOT NULL")
        .bind(at.naive_utc())
        .bind(id)
        .execute(conn)
        .traced("UPDATE", "payments")
        .await?;
    Ok(())
}

/// Notes a provider's event as applied, in the transaction applying it;
/// false when it was applied before (a replay).
pub async fn record_event(
    conn: &mut MySqlConnection,
    provider: Provider,
    event_id: &str,
    concert: Option<ConcertId>,
    now: DateTime<Utc>,
) -> Result<bool, sqlx::Error> {
    // A plain INSERT, the duplicate its refusal: `ON DUPLICATE KEY UPDATE`
    // counts a found row as affected under CLIENT_FOUND_ROWS (sqlx's
    // setting), so it could not tell a replay from a first delivery. The
    // refused statement alone is undone; the transaction goes on.
    let done = sqlx::query(
        "INSERT INTO payment_events (provider, event_id, concert_id, received_at) VALUES (?, ?, ?, ?)",
    )
    .bind(provider.as_str())
    .bind(event_id)
    .bind(concert)
    .bind(now.naive_utc())
    .execute(conn)
    .traced("INSERT", "payment_events")
    .await;
    match done {
        Ok(_) => Ok(true),
        Err(e) if super::violated_unique_key(&e) == Some("PRIMARY") => Ok(false),
        Err(e) => Err(e),
    }
}

/// The payment that sold the reservation: SUCCEEDED, MANUAL or the one
/// its `payment_reference` names.
pub async fn sale_of(
    conn: &mut MySqlConnection,
    reservation: ReservationId,
) -> Result<Option<PaymentRow>, sqlx::Error> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM payments p WHERE p.reservation_id = ? AND p.status = 'SUCCEEDED' \
            AND (p.provider = 'MANUAL' OR p.provider_payment_id = \
                 (SELECT r.payment_reference FROM reservations r WHERE r.id = p.reservation_id)) \
          ORDER BY p.attempt DESC LIMIT 1 FOR UPDATE"
    )))
    .bind(reservation)
    .fetch_optional(conn)
    .traced("SELECT", "payments")
    .await
}
