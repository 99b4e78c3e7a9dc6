//! Refunds (issue 46): written PENDING in the transaction that decides
//! them (tickets voided, a late payment found, a show cancelled), then
//! claimed under a lease (`due_claim`, as mails are) and carried out at the provider by whoever holds the claim.
//! The amount a payment has given back, pending or done, never exceeds
//! it: [`write`] checks under the payment's lock.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use sqlx::{AssertSqlSafe, MySqlConnection};

use super::due_claim::DueTable;
use super::{BindIds as _, IdList, Traced as _};
use crate::domain::payment::{Provider, RefundReason, RefundStatus};
use crate::domain::{ConcertId, PaymentId, RefundId, ReservationId, SeatId, TicketId, UserId};

#[derive(Debug, Clone)]
pub struct NewRefund {
    pub concert: ConcertId,
    pub reservation: ReservationId,
    pub payment: PaymentId,
    pub amount: u64,
    pub currency: String,
    pub reason: RefundReason,
    pub requested_by: Option<UserId>,
    /// The tickets it pays back, each with its price (none for a late
    /// payment, which bought no ticket).
    pub tickets: Vec<(TicketId, u64)>,
}

/// Why a refund could not be written.
#[derive(Debug, thiserror::Error)]
pub enum RefundRefused {
    #[error("the refund would give back more than was paid")]
    MoreThanPaid,
    #[error(transparent)]
    Database(#[from] sqlx::Error),
}

/// Writes a refund of `new.amount`, PENDING: due at once for the workers
/// to carry out at `provider`, or (money taken by hand) never due, until an
/// operator records that it went back ([`record_paid_back`]). Refuses one
/// that would take the payment's refunds past `paid`. Call with the
/// payment locked.
pub async fn write(
    conn: &mut MySqlConnection,
    new: &NewRefund,
    paid: u64,
    provider: Provider,
    now: DateTime<Utc>,
) -> Result<RefundId, RefundRefused> {
    let (given,): (u64,) = sqlx::query_as(
        "SELECT CAST(COALESCE(SUM(amount), 0) AS UNSIGNED) FROM refunds \
          WHERE payment_id = ? AND status <> 'FAILED'",
    )
    .bind(new.payment)
    .fetch_one(&mut *conn)
    .traced("SELECT", "refunds")
    .await?;
    if given.saturating_add(new.amount) > paid {
        return Err(RefundRefused::MoreThanPaid);
    }
    let due = (provider != Provider::Manual).then_some(now.naive_utc());
    let done = sqlx::query(
        "INSERT INTO refunds (concert_id, reservation_id, payment_id, amount, currency, reason, status, \
                              requested_by, due_at, created_at, ended_at) \
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    )
    .bind(new.concert)
    .bind(new.reservation)
    .bind(new.payment)
    .bind(new.amount)
    .bind(&new.currency)
    .bind(new.reason.as_str())
    .bind(RefundStatus::Pending.as_str())
    .bind(new.requested_by)
    .bind(due)
    .bind(now.naive_utc())
    .bind(None::<chrono::NaiveDateTime>)
    .execute(&mut *conn)
    .traced("INSERT", "refunds")
    .await?;
    let id = RefundId(done.last_insert_id());
    if !new.tickets.is_empty() {
        let mut insert = sqlx::QueryBuilder::new(
            "INSERT INTO refund_tickets (refund_id, ticket_id, concert_id, amount) ",
        );
        insert.push_values(&new.tickets, |mut row, (ticket, amount)| {
            row.push_bind(id)
                .push_bind(*ticket)
                .push_bind(new.concert)
                .push_bind(*amount);
        });
        insert
            .build()
            .execute(&mut *conn)
            .traced("INSERT", "refund_tickets")
            .await?;
    }
    Ok(id)
}

/// A refund as the API shows it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct RefundRow {
    pub id: RefundId,
    pub reservation_id: ReservationId,
    pub payment_id: PaymentId,
    pub amount: u64,
    pub currency: String,
    pub reason: String,
    pub status: String,
    pub created_at: DateTime<Utc>,
    pub ended_at: Option<DateTime<Utc>>,
}

impl RefundRow {
    pub fn status(&self) -> RefundStatus {
        RefundStatus::from_stored(&self.status).unwrap_or(RefundStatus::Pending)
    }
}

const COLUMNS: &str =
    "id, reservation_id, payment_id, amount, currency, reason, status, created_at, ended_at";

pub async fn find(
    conn: &mut MySqlConnection,
    id: RefundId,
) -> Result<Option<RefundRow>, sqlx::Error> {
    sqlx::query_as(AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM refunds WHERE id = ?"
    )))
    .bind(id)
    .fetch_optional(conn)
    .traced("SELECT", "refunds")
    .await
}

/// The refunds of `reservations`, oldest first.
pub async fn of_reservations(
    conn: &mut MySqlConnection,
    reservations: &[ReservationId],
) -> Result<Vec<RefundRow>, sqlx::Error> {
    let Some(list) = IdList::of(reservations) else {
        return Ok(Vec::new());
    };
    let select = sqlx::query_as(AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM refunds WHERE reservation_id IN ({list}) ORDER BY id"
    )));
    select
        .bind_ids(&list)
        .fetch_all(conn)
        .traced("SELECT", "refunds")
        .await
}

/// The seats whose tickets each of `refunds` gives back, in seat order
/// (none for a refund of an order as a whole, made before its tickets).
pub async fn seats_of(
    conn: &mut MySqlConnection,
    refunds: &[RefundId],
) -> Result<HashMap<RefundId, Vec<SeatId>>, sqlx::Error> {
    let Some(list) = IdList::of(refunds) else {
        return Ok(HashMap::new());
    };
    let select = sqlx::query_as(AssertSqlSafe(format!(
        "SELECT rt.refund_id, t.seat_id FROM refund_tickets rt JOIN tickets t ON t.id = rt.ticket_id \
         WHERE rt.refund_id IN ({list}) ORDER BY rt.refund_id, t.seat_id"
    )));
    let rows: Vec<(RefundId, SeatId)> = select
        .bind_ids(&list)
        .fetch_all(conn)
        .traced("SELECT", "refund_tickets")
        .await?;
    let mut seats: HashMap<RefundId, Vec<SeatId>> = HashMap::new();
    for (refund, seat) in rows {
        seats.entry(refund).or_default().push(seat);
    }
    Ok(seats)
}

/// A refund claimed for carrying out at its provider.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Claimed {
    pub id: RefundId,
    pub concert_id: ConcertId,
    pub amount: u64,
    pub provider: String,
    pub provider_payment_id: Option<String>,
    /// What the payment took, against which the provider's refunds are
    /// capped (a provider that does not cap them itself).
    pub paid: u64,
    /// Attempts so far, this one included.
    pub attempts: u32,
}

/// Claims up to `limit` due refunds (by `now`, the database's clock) for
/// `token` until `lease_until`, in a short transaction of the caller's;
/// refunds another executor is claiming are skipped.
pub async fn claim_due(
    conn: &mut MySqlConnection,
    token: u64,
    lease_until: DateTime<Utc>,
    limit: u32,
    now: DateTime<Utc>,
) -> Result<Vec<Claimed>, sqlx::Error> {
    async move {
        let ids =
            super::due_claim::claim(conn, DueTable::Refunds, token, lease_until, limit, now).await?;
        let Some(list) = IdList::of(&ids) else {
            return Ok(Vec::new());
        };
        let select = sqlx::query_as(AssertSqlSafe(format!(
            "SELECT f.id, f.concert_id, f.amount, p.provider, p.provider_payment_id, p.amount AS paid, f.attempts \
               FROM refunds f JOIN payments p ON p.id = f.payment_id \
              WHERE f.id IN ({list}) ORDER BY f.id"
        )));
        select.bind_ids(&list).fetch_all(conn).await
    }
    .traced("UPDATE", "refunds")
    .await
}

/// Moves the claim under `token` on to `until` just before its work starts,
/// so that the lease covers the work however long the batch before it
/// took; false when the claim was lost (its lease ran out and another
/// executor took the refund), and then the refund is not to be touched.
pub async fn renew(
    conn: &mut MySqlConnection,
    id: RefundId,
    token: u64,
    until: DateTime<Utc>,
) -> Result<bool, sqlx::Error> {
    let done = sqlx::query(
        "UPDATE refunds SET due_at = ? WHERE id = ? AND lease_token = ? AND status = 'PENDING'",
    )
    .bind(until.naive_utc())
    .bind(id)
    .bind(token)
    .execute(conn)
    .traced("UPDATE", "refunds")
    .await?;
    Ok(done.rows_affected() == 1)
}

/// How an attempt at a refund ended.
#[derive(Debug, Clone)]
pub enum Ending {
    Succeeded {
        provider_refund_id: Option<String>,
    },
    /// Refused for good.
    Failed {
        error: String,
    },
    /// Try again at `at`.
    Retry {
        at: DateTime<Utc>,
        error: String,
    },
}

/// Records how the attempt under `token` ended; false when the lease was
/// lost (another executor took the refund over after it ran out).
pub async fn record(
    conn: &mut MySqlConnection,
    id: RefundId,
    token: u64,
    ending: &Ending,
    now: DateTime<Utc>,
) -> Result<bool, sqlx::Error> {
    let (status, due, provider_id, error) = match ending {
        Ending::Succeeded { provider_refund_id } => {
            ("SUCCEEDED", None, provider_refund_id.as_deref(), None)
        }
        Ending::Failed { error } => ("FAILED", None, None, Some(error.as_str())),
        Ending::Retry { at, error } => ("PENDING", Some(*at), None, Some(error.as_str())),
    };
    let done = sqlx::query(
        "UPDATE refunds SET status = ?, due_at = ?, ended_at = IF(? = 'PENDING', NULL, ?), \
                provider_refund_id = COALESCE(?, provider_refund_id), last_error = ?, lease_token = NULL \
          WHERE id = ? AND lease_token = ? AND status = 'PENDING'",
    )
    .bind(status)
    .bind(due.map(|t| t.naive_utc()))
    .bind(status)
    .bind(now.naive_utc())
    .bind(provider_id)
    .bind(error.map(|e| e.chars().take(255).collect::<String>()))
    .bind(id)
    .bind(token)
    .execute(conn)
    .traced("UPDATE", "refunds")
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Records that an operator gave back by hand the money of the pending
/// refund `id` of a payment taken by hand (`reference`: how, e.g. a bank
/// transfer's id); false when there is no such refund still pending.
pub async fn record_paid_back(
    conn: &mut MySqlConnection,
    id: RefundId,
    reference: Option<&str>,
    now: DateTime<Utc>,
) -> Result<bool, sqlx::Error> {
    let done = sqlx::query(
        "UPDATE refunds f JOIN payments p ON p.id = f.payment_id \
            SET f.status = 'SUCCEEDED', f.ended_at = ?, f.provider_refund_id = ? \
          WHERE f.id = ? AND f.status = 'PENDING' AND p.provider = 'MANUAL'",
    )
    .bind(now.naive_utc())
    .bind(reference)
    .bind(id)
    .execute(conn)
    .traced("UPDATE", "refunds")
    .await?;
    Ok(done.rows_affected() == 1)
}

/// The provider of the payment a refund gives back.
pub async fn provider_of(
    conn: &mut MySqlConnection,
    id: RefundId,
) -> Result<Option<Provider>, sqlx::Error> {
    let row: Option<(String,)> = sqlx::query_as(
        "SELECT p.provider FROM refunds f JOIN payments p ON p.id = f.payment_id WHERE f.id = ?",
    )
    .bind(id)
    .fetch_optional(conn)
    .traced("SELECT", "refunds")
    .await?;
    Ok(row.and_then(|(p,)| Provider::from_stored(&p)))
}

/// Refunds still to carry out, and those refused for good.
pub async fn backlog(conn: &mut MySqlConnection) -> Result<(i64, i64), sqlx::Error> {
    sqlx::query_as(
        "SELECT CAST(COALESCE(SUM(status = 'PENDING'), 0) AS SIGNED), \
                CAST(COALESCE(SUM(status = 'FAILED'), 0) AS SIGNED) FROM refunds",
    )
    .fetch_one(conn)
    .traced("SELECT", "refunds")
    .await
}
