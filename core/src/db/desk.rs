//! The desk's shifts, the buyers it serves, and the money it moves: every
//! sale and refund at the desk names its shift, so that a shift's drawer
//! is counted from the money rows themselves.

use chrono::{DateTime, Utc};
use sqlx::MySqlConnection;

use super::Traced as _;
use crate::domain::desk::{DeskMethod, Movement};
use crate::domain::{ConcertId, EmailAddress, Language, PaymentId, RefundId, ShiftId, UserId};

/// A shift as stored, with its clerk's name.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ShiftRow {
    pub id: ShiftId,
    pub concert_id: ConcertId,
    pub user_id: Option<UserId>,
    pub nickname: Option<String>,
    pub currency: Option<String>,
    pub float_amount: u64,
    pub opened_at: DateTime<Utc>,
    pub closed_at: Option<DateTime<Utc>>,
    pub expected_cash: Option<i64>,
    pub counted_cash: Option<u64>,
}

const COLUMNS: &str = "s.id, s.concert_id, s.user_id, u.nickname, s.currency, s.float_amount, s.opened_at, \
     s.closed_at, s.expected_cash, s.counted_cash FROM desk_shifts s LEFT JOIN users u ON u.id = s.user_id";

/// Opens a shift for `clerk`; a violation of `uq_desk_shifts_open` when
/// they have one open at this concert already.
pub async fn open(
    conn: &mut MySqlConnection,
    concert: ConcertId,
    clerk: UserId,
    currency: Option<&str>,
    float: u64,
    now: DateTime<Utc>,
) -> Result<ShiftId, sqlx::Error> {
    let done = sqlx::query(
        "INSERT INTO desk_shifts (concert_id, user_id, currency, float_amount, open_clerk, opened_at) \
         VALUES (?, ?, ?, ?, ?, ?)",
    )
    .bind(concert)
    .bind(clerk)
    .bind(currency)
    .bind(float)
    .bind(clerk)
    .bind(now.naive_utc())
    .execute(conn)
    .traced("INSERT", "desk_shifts")
    .await?;
    Ok(ShiftId(done.last_insert_id()))
}

pub async fn find(
    conn: &mut MySqlConnection,
    id: ShiftId,
) -> Result<Option<ShiftRow>, sqlx::Error> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} WHERE s.id = ?"
    )))
    .bind(id)
    .fetch_optional(conn)
    .traced("SELECT", "desk_shifts")
    .await
}

/// `clerk`'s open shift at `concert`, if any.
pub async fn open_of(
    conn: &mut MySqlConnection,
    concert: ConcertId,
    clerk: UserId,
) -> Result<Option<ShiftId>, sqlx::Error> {
    sqlx::query_scalar("SELECT id FROM desk_shifts WHERE concert_id = ? AND open_clerk = ?")
        .bind(concert)
        .bind(clerk)
        .fetch_optional(conn)
        .traced("SELECT", "desk_shifts")
        .await
}

/// Locks a shift: a sale on it and its close take turns, so that a sale
/// is either counted at the close or refused after it.
pub async fn lock(
    conn: &mut MySqlConnection,
    id: ShiftId,
) -> Result<Option<ShiftRow>, sqlx::Error> {
    let found: Option<ShiftId> =
        sqlx::query_scalar("SELECT id FROM desk_shifts WHERE id = ? FOR UPDATE")
            .bind(id)
            .fetch_optional(&mut *conn)
            .traced("SELECT", "desk_shifts")
            .await?;
    match found {
        Some(id) => find(conn, id).await,
        None => Ok(None),
    }
}

/// The concert's shifts, the latest first (at most 500).
pub async fn of_concert(
    conn: &mut MySqlConnection,
    concert: ConcertId,
) -> Result<Vec<ShiftRow>, sqlx::Error> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} WHERE s.concert_id = ? ORDER BY s.id DESC LIMIT 500"
    )))
    .bind(concert)
    .fetch_all(conn)
    .traced("SELECT", "desk_shifts")
    .await
}

/// Closes an open shift with what was expected and counted; false when
/// it was closed already.
pub async fn close(
    conn: &mut MySqlConnection,
    id: ShiftId,
    expected: i64,
    counted: u64,
    now: DateTime<Utc>,
) -> Result<bool, sqlx::Error> {
    let done = sqlx::query(
        "UPDATE desk_shifts SET closed_at = ?, expected_cash = ?, counted_cash = ?, open_clerk = NULL \
         WHERE id = ? AND closed_at IS NULL",
    )
    .bind(now.naive_utc())
    .bind(expected)
    .bind(counted)
    .bind(id)
    .execute(conn)
    .traced("UPDATE", "desk_shifts")
    .await?;
    Ok(done.rows_affected() == 1)
}

/// An account for a buyer at the desk, that nobody signs in to (no
/// password; a name no person can choose), its mail to `email`.
pub async fn insert_guest(
    conn: &mut MySqlConnection,
    concert: ConcertId,
    shift: ShiftId,
    email: Option<&EmailAddress>,
    language: Language,
    now: DateTime<Utc>,
) -> Result<UserId, sqlx::Error> {
    async move {
        // A leading space: names people choose are trimmed, so none is
        // this one; UUID() only keeps it unique until the id is known.
        let done = sqlx::query(
            "INSERT INTO users (nickname, password_hash, role, email, email_changed_at, language, created_at, updated_at) \
             VALUES (CONCAT(' desk ', UUID()), '', 'USER', ?, ?, ?, ?, ?)",
        )
        .bind(email.map(EmailAddress::as_str))
        .bind(email.map(|_| now.naive_utc()))
        .bind(language.code())
        .bind(now.naive_utc())
        .bind(now.naive_utc())
        .execute(&mut *conn)
        .await?;
        let guest = UserId(done.last_insert_id());
        sqlx::query("UPDATE users SET nickname = CONCAT(' desk ', id) WHERE id = ?")
            .bind(guest)
            .execute(&mut *conn)
            .await?;
        sqlx::query(
            "INSERT INTO desk_guests (user_id, concert_id, shift_id, created_at) VALUES (?, ?, ?, ?)",
        )
        .bind(guest)
        .bind(concert)
        .bind(shift)
        .bind(now.naive_utc())
        .execute(&mut *conn)
        .await?;
        Ok(guest)
    }
    .traced("INSERT", "desk_guests")
    .await
}

/// Says a payment was taken on `shift`, by `method`.
pub async fn tag_payment(
    conn: &mut MySqlConnection,
    payment: PaymentId,
    shift: ShiftId,
    method: DeskMethod,
) -> Result<(), sqlx::Error> {
    sqlx::query("UPDATE payments SET shift_id = ?, desk_method = ? WHERE id = ?")
        .bind(shift)
        .bind(method.as_str())
        .bind(payment)
        .execute(conn)
        .traced("UPDATE", "payments")
        .await?;
    Ok(())
}

/// Says a refund was given back on `shift`, by `method`.
pub async fn tag_refund(
    conn: &mut MySqlConnection,
    refund: RefundId,
    shift: ShiftId,
    method: DeskMethod,
) -> Result<(), sqlx::Error> {
    sqlx::query("UPDATE refunds SET shift_id = ?, desk_method = ? WHERE id = ?")
        .bind(shift)
        .bind(method.as_str())
        .bind(refund)
        .execute(conn)
        .traced("UPDATE", "refunds")
        .await?;
    Ok(())
}

/// How an order's money was taken at the desk, if it was.
pub async fn method_of_order(
    conn: &mut MySqlConnection,
    refund: RefundId,
) -> Result<Option<DeskMethod>, sqlx::Error> {
    let method: Option<Option<String>> = sqlx::query_scalar(
        "SELECT p.desk_method FROM refunds f JOIN payments p ON p.id = f.payment_id WHERE f.id = ?",
    )
    .bind(refund)
    .fetch_optional(conn)
    .traced("SELECT", "payments")
    .await?;
    Ok(method.flatten().and_then(|m| DeskMethod::parse(&m).ok()))
}

/// One line of a shift's money: a sale or a refund of an order.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct MovementRow {
    pub reservation_id: u64,
    pub amount: u64,
    pub method: String,
    /// 1: a refund.
    pub refund: i64,
    pub at: DateTime<Utc>,
}

impl MovementRow {
    pub fn movement(&self) -> Option<Movement> {
        Some(Movement {
            method: DeskMethod::parse(&self.method).ok()?,
            amount: self.amount,
            refund: self.refund == 1,
        })
    }
}

/// The money a shift took and gave back, in time order: payments that
/// succeeded and refunds given back.
pub async fn movements(
    conn: &mut MySqlConnection,
    shift: ShiftId,
) -> Result<Vec<MovementRow>, sqlx::Error> {
    sqlx::query_as(
        "SELECT reservation_id, amount, desk_method AS method, 0 AS refund, created_at AS at \
           FROM payments WHERE shift_id = ? AND status = 'SUCCEEDED' \
         UNION ALL \
         SELECT reservation_id, amount, desk_method, 1, created_at \
           FROM refunds WHERE shift_id = ? AND status = 'SUCCEEDED' \
         ORDER BY at, refund LIMIT 10000",
    )
    .bind(shift)
    .bind(shift)
    .fetch_all(conn)
    .traced("SELECT", "payments")
    .await
}
