//! Giving back what tickets were sold for, written in the transaction that
//! voids them: the refund of exactly their prices, PENDING until the money
//! is back: through the provider that took it (the workers carry it out),
//! or, for money the operator took by hand, until an operator records that
//! it was given back by hand.

use chrono::{DateTime, Utc};
use sqlx::MySqlConnection;

use crate::db::refunds::{self, NewRefund, RefundRefused};
use crate::db::reservations::{self, LockedReservation};
use crate::db::tickets::{self, PricedTicket};
use crate::db::{outbox, payments, seats};
use crate::domain::events::EventKind;
use crate::domain::payment::{RefundReason, RefundStatus};
use crate::domain::{RefundId, ReservationId, ReservationStatus, SeatId, TicketId, UserId};

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
    tickets: &[PricedTicket],
    reason: RefundReason,
    requested_by: Option<UserId>,
    now: DateTime<Utc>,
) -> Result<Option<Written>, RefundRefused> {
    let Some(payment) = payments::sale_of(tx, reservation).await? else {
        return Ok(None);
    };
    let amount: u64 = tickets.iter().map(|t| t.price).sum();
    if amount == 0 {
        return Ok(None);
    }
    let new = NewRefund {
        concert: payment.concert_id,
        reservation,
        payment: payment.id,
        amount,
        currency: payment.currency.clone(),
        reason,
        requested_by,
        tickets: tickets.iter().map(|t| (t.id, t.price)).collect(),
    };
    let id = refunds::write(tx, &new, payment.amount, payment.provider(), now).await?;
    Ok(Some(Written {
        id,
        amount,
        currency: payment.currency,
        status: RefundStatus::Pending,
    }))
}

/// Whether `reservation` was paid for, through a provider or by hand (an
/// order that cost nothing its fan may cancel as they always could).
pub async fn paid_for(
    tx: &mut MySqlConnection,
    reservation: ReservationId,
) -> Result<bool, sqlx::Error> {
    Ok(payments::sale_of(tx, reservation).await?.is_some())
}

/// What giving back tickets did.
#[derive(Debug, Clone)]
pub struct GivenBack {
    /// The refund (none when nothing was paid for them).
    pub refund: Option<Written>,
    /// Every valid ticket went: the reservation is CANCELLED.
    pub whole_order: bool,
}

/// Gives back `chosen` of the confirmed reservation `locked` (locked with
/// its seats), whose valid tickets are `valid`: their refund, the tickets
/// voided (the revoked list), their seats back on sale (the line, then the
/// waiting list); all of them cancel the order, some leave the rest valid.
pub async fn give_back(
    tx: &mut MySqlConnection,
    locked: &LockedReservation,
    valid: &[PricedTicket],
    chosen: &[PricedTicket],
    reason: RefundReason,
    requested_by: Option<UserId>,
    now: DateTime<Utc>,
) -> Result<GivenBack, RefundRefused> {
    let refund = of_tickets(tx, locked.id, chosen, reason, requested_by, now).await?;
    let whole_order = chosen.len() == valid.len();
    let reference = locked.payment_reference.as_deref();
    let mut events = Vec::new();
    if whole_order {
        reservations::end(tx, &[locked.id], ReservationStatus::Cancelled, now).await?;
        let seats: Vec<SeatId> = locked.seats.iter().map(|s| s.seat_id).collect();
        seats::free_unclaimed(tx, &seats, now).await?;
        events.push(locked.event(EventKind::Cancelled, reference, now));
    } else {
        let ids: Vec<TicketId> = chosen.iter().map(|t| t.id).collect();
        let seats: Vec<SeatId> = chosen.iter().map(|t| t.seat_id).collect();
        tickets::void_ids(tx, &ids, now).await?;
        reservations::release_seats(tx, locked.id, &seats).await?;
        seats::free_unclaimed(tx, &seats, now).await?;
    }
    if refund.is_some() {
        let after = if whole_order {
            ReservationStatus::Cancelled
        } else {
            ReservationStatus::Confirmed
        };
        events.push(
            locked
                .event(EventKind::Refunded, reference, now)
                .leaving(after),
        );
    }
    outbox::record(tx, &events, now).await?;
    Ok(GivenBack {
        refund,
        whole_order,
    })
}
