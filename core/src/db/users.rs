use super::Traced as _;
use chrono::{DateTime, Utc};
use sqlx::MySqlConnection;

use crate::domain::{EmailAddress, Language, NickName, Role, UserId};

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct UserRow {
    pub id: UserId,
    pub nickname: String,
    pub password_hash: String,
    pub role: Role,
    /// Where the fan's mail goes; none: no mail.
    pub email: Option<String>,
    /// The page's and the mail's language ("en", "ko").
    pub language: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

const COLUMNS: &str = "id, nickname, password_hash, role, email, language, created_at, updated_at";

impl UserRow {
    pub fn language(&self) -> Language {
        Language::from_stored(&self.language)
    }
}

/// Fails with a violation of `uq_users_nickname` when the name is taken.
pub async fn insert(
    conn: &mut MySqlConnection,
    nickname: &NickName,
    password_hash: &str,
    role: Role,
    email: Option<&EmailAddress>,
    language: Language,
    now: DateTime<Utc>,
) -> Result<UserId, sqlx::Error> {
    let done = sqlx::query(
        "INSERT INTO users (nickname, password_hash, role, email, email_changed_at, language, \
         created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
    )
    .bind(nickname.as_str())
    .bind(password_hash)
    .bind(role)
    .bind(email.map(EmailAddress::as_str))
    .bind(email.map(|_| now.naive_utc()))
    .bind(language.code())
    .bind(now.naive_utc())
    .bind(now.naive_utc())
    .execute(conn)
    .traced("INSERT", "users")
    .await?;
    Ok(UserId(done.last_insert_id()))
}

/// Where an account was made from (kept until it leaves).
pub async fn note_signup_address(
    conn: &mut MySqlConnection,
    id: UserId,
    address: &str,
) -> Result<(), sqlx::Error> {
    sqlx::query("UPDATE users SET signup_address = ? WHERE id = ?")
        .bind(address)
        .bind(id)
        .execute(conn)
        .traced("UPDATE", "users")
        .await?;
    Ok(())
}

pub async fn find(conn: &mut MySqlConnection, id: UserId) -> Result<Option<UserRow>, sqlx::Error> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM users WHERE id = ? AND deleted_at IS NULL"
    )))
    .bind(id)
    .fetch_optional(conn)
    .traced("SELECT", "users")
    .await
}

/// Locks the user row for the rest of the transaction (an account that
/// left, anonymised, is no longer there).
pub async fn lock(conn: &mut MySqlConnection, id: UserId) -> Result<bool, sqlx::Error> {
    let row: Option<(UserId,)> =
        sqlx::query_as("SELECT id FROM users WHERE id = ? AND deleted_at IS NULL FOR UPDATE")
            .bind(id)
            .fetch_optional(conn)
            .traced("SELECT", "users")
            .await?;
    Ok(row.is_some())
}

pub async fn find_by_nickname(
    conn: &mut MySqlConnection,
    nickname: &NickName,
) -> Result<Option<UserRow>, sqlx::Error> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM users WHERE nickname = ? AND deleted_at IS NULL"
    )))
    .bind(nickname.as_str())
    .fetch_optional(conn)
    .traced("SELECT", "users")
    .await
}

/// Changes what is given and leaves the rest. Fails with a violation of
/// `uq_users_nickname` when the new name is taken.
pub async fn update(
    conn: &mut MySqlConnection,
    id: UserId,
    nickname: Option<&NickName>,
    password_hash: Option<&str>,
    language: Option<Language>,
    now: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "UPDATE users SET nickname = COALESCE(?, nickname), \
         password_hash = COALESCE(?, password_hash), language = COALESCE(?, language), \
         updated_at = ? WHERE id = ?",
    )
    .bind(nickname.map(NickName::as_str))
    .bind(password_hash)
    .bind(language.map(Language::code))
    .bind(now.naive_utc())
    .bind(id)
    .execute(conn)
    .traced("UPDATE", "users")
    .await?;
    Ok(())
}

/// Gives, changes (`Some`) or removes (`None`) the user's address.
pub async fn set_email(
    conn: &mut MySqlConnection,
    id: UserId,
    email: Option<&EmailAddress>,
    now: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    sqlx::query("UPDATE users SET email = ?, email_changed_at = ?, updated_at = ? WHERE id = ?")
        .bind(email.map(EmailAddress::as_str))
        .bind(now.naive_utc())
        .bind(now.naive_utc())
        .bind(id)
        .execute(conn)
        .traced("UPDATE", "users")
        .await?;
    Ok(())
}

/// Whether the user holds a CONFIRMED or HELD reservation or has a request
/// still in the queue; such an account must not disappear under its tickets.
pub async fn holds_tickets_or_requests(
    conn: &mut MySqlConnection,
    id: UserId,
) -> Result<bool, sqlx::Error> {
    let (held,): (bool,) = sqlx::query_as(
        "SELECT EXISTS (SELECT 1 FROM reservations WHERE user_id = ? AND status IN ('CONFIRMED', 'HELD')) \
             OR EXISTS (SELECT 1 FROM reservation_queue WHERE user_id = ? \
                        AND status IN ('WAITING', 'PENDING', 'PROCESSING'))",
    )
    .bind(id)
    .bind(id)
    .fetch_one(conn)
    .traced("SELECT", "reservations")
    .await?;
    Ok(held)
}

/// Money of the user's still on its way: a payment the provider may yet
/// take (OPEN, or FAILED and payable again until the sweep cancels it), or
/// a refund not yet carried out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MoneyInFlight {
    Payment,
    Refund,
}

pub async fn money_in_flight(
    conn: &mut MySqlConnection,
    id: UserId,
) -> Result<Option<MoneyInFlight>, sqlx::Error> {
    let (payment, refund): (bool, bool) = sqlx::query_as(
        "SELECT EXISTS (SELECT 1 FROM payments WHERE user_id = ? AND status IN ('OPEN', 'FAILED')), \
                EXISTS (SELECT 1 FROM refunds f JOIN payments p ON p.id = f.payment_id \
                         WHERE p.user_id = ? AND f.status = 'PENDING')",
    )
    .bind(id)
    .bind(id)
    .fetch_one(conn)
    .traced("SELECT", "payments")
    .await?;
    Ok(if payment {
        Some(MoneyInFlight::Payment)
    } else if refund {
        Some(MoneyInFlight::Refund)
    } else {
        None
    })
}

/// How an account left.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Left {
    /// Nothing of it is kept.
    Deleted,
    /// It paid for something: the person is anonymised (no name, address
    /// or password; its tokens revoked by the caller), and its orders,
    /// tickets, scans, payments and refunds stay, for the books.
    Anonymised,
}

/// Deletes the user with their finished requests, mails and waiting-list
/// entries; an account that ever paid keeps its money trail (see
/// [`Left::Anonymised`]), one that never did goes whole with its ended
/// reservations. Call with the user row locked, no live reservation or
/// open request ([`holds_tickets_or_requests`]) and no [`money_in_flight`].
pub async fn delete_with_history(
    conn: &mut MySqlConnection,
    id: UserId,
    now: DateTime<Utc>,
) -> Result<Left, sqlx::Error> {
    async move {
        for statement in [
            "DELETE FROM request_seats WHERE user_id = ?",
            "DELETE FROM request_pools WHERE user_id = ?",
            "DELETE FROM reservation_queue WHERE user_id = ?",
            "DELETE FROM mails WHERE user_id = ?",
            // Working for an organizer ends with the account (the limits
            // of a role go with it: member_concerts cascades).
            "DELETE FROM organizer_members WHERE user_id = ?",
            "DELETE FROM organizer_invitations WHERE user_id = ?",
            // As deleting the row would (ON DELETE SET NULL).
            "UPDATE organizer_invitations SET invited_by = NULL WHERE invited_by = ?",
            // Entries that led to no reservation; an offer's entry stays
            // with the reservation it made, whichever way the account goes.
            "DELETE FROM waiting_list_entries WHERE user_id = ? AND reservation_id IS NULL",
        ] {
            sqlx::query(statement).bind(id).execute(&mut *conn).await?;
        }
        let (paid,): (bool,) =
            sqlx::query_as("SELECT EXISTS (SELECT 1 FROM payments WHERE user_id = ?)")
                .bind(id)
                .fetch_one(&mut *conn)
                .await?;
        if paid {
            // As deleting the row would (ON DELETE SET NULL): its access
            // codes are bound to nobody.
            sqlx::query("UPDATE access_codes SET user_id = NULL WHERE user_id = ?")
                .bind(id)
                .execute(&mut *conn)
                .await?;
            // A leading space: no nickname a person can choose (names are
            // trimmed) equals it, so the name is free and cannot collide.
            sqlx::query(
                "UPDATE users SET nickname = CONCAT(' left ', id), password_hash = '', email = NULL, \
                        signup_address = NULL, \
                        email_changed_at = ?, updated_at = ?, deleted_at = ? WHERE id = ?",
            )
            .bind(now.naive_utc())
            .bind(now.naive_utc())
            .bind(now.naive_utc())
            .bind(id)
            .execute(&mut *conn)
            .await?;
            return Ok(Left::Anonymised);
        }
        // Nothing was paid, so no money row refers to what goes: its offers'
        // entries and the door's scans of its void tickets first, then
        // tickets, claims and orders.
        for statement in [
            "DELETE FROM waiting_list_entries WHERE user_id = ?",
            "DELETE c FROM check_ins c JOIN tickets t ON t.id = c.ticket_id \
              JOIN reservations r ON r.id = t.reservation_id WHERE r.user_id = ?",
            "DELETE t FROM tickets t JOIN reservations r ON r.id = t.reservation_id WHERE r.user_id = ?",
            "DELETE rs FROM reservation_seats rs JOIN reservations r ON r.id = rs.reservation_id \
             WHERE r.user_id = ?",
            "DELETE FROM reservations WHERE user_id = ?",
            "DELETE FROM users WHERE id = ?",
        ] {
            sqlx::query(statement).bind(id).execute(&mut *conn).await?;
        }
        Ok(Left::Deleted)
    }
    .traced("DELETE", "users")
    .await
}
