//! Giving back what tickets were sold for, written in the transaction that
//! voids them: the refund of exactly their prices through the provider
//! that took the money (PENDING, for the workers), or SUCCEEDED at once
//! for money the operator took by hand (and gives back by hand).

use chrono::{DateTime, Utc};
use sqlx::MySqlConnection;

use crate::db::payments;
use crate::db::refunds::{self, NewRefund, RefundRefused};
use crate::domain::payment::{Provider, RefundReason, RefundStatus};
use crate::domain::{RefundId, ReservationId, TicketId, UserId};

/// A refund written, with what it gives back.
#[derive(Debug, Clone)]
pub struct Written {
    pub id: RefundId,
    pub amount: u64,
    pub currency: String,
    pub status: RefundStatus,
}

/// Writes the refund of `tickets` (each with its price) of `reservation`,
/// against the payment that sold it; none when nothing was paid (a free
/// concert, one sold without holds, or tickets that cost nothing). Call
/// with the reservation locked, before its tickets are voided.
pub async fn of_tickets(
    tx: &mut MySqlConnection,
    reservation: ReservationId,
    tickets: &[(TicketId, u64)],
    reason: RefundReason,
    requested_by: Option<UserId>,
    now: DateTime<Utc>,
) -> Result<Option<Written>, RefundRefused> {
    let Some(payment) = payments::sale_of(tx, reservation).await? else {
        return Ok(None);
    };
    let amount: u64 = tickets.iter().map(|(_, price)| price).sum();
    if amount == 0 {
        return Ok(None);
    }
    let status = match payment.provider() {
        Provider::Manual => RefundStatus::Succeeded,
        Provider::Stripe => RefundStatus::Pending,
    };
    let new = NewRefund {
        concert: payment.concert_id,
        reservation,
        payment: payment.id,
        amount,
        currency: payment.currency.clone(),
        reason,
        requested_by,
        tickets: tickets.to_vec(),
    };
    let id = refunds::write(tx, &new, payment.amount, status, now).await?;
    Ok(Some(Written {
        id,
        amount,
        currency: payment.currency,
        status,
    }))
}

/// Whether `reservation` was paid for through a provider (not by hand:
/// what the box office took, its fans may cancel as they always could).
pub async fn paid_through_provider(
    tx: &mut MySqlConnection,
    reservation: ReservationId,
) -> Result<bool, sqlx::Error> {
    Ok(payments::sale_of(tx, reservation)
        .await?
        .is_some_and(|p| p.provider() != Provider::Manual))
}
