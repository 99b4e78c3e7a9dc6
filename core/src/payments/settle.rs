//! What the provider's news about a payment does, applied in the caller's
//! transaction with the hold's seats, the hold and the payment locked (in
//! that order, every writer's): a payment that succeeded sells a running
//! hold, and anything else it paid for is given back; a declined or
//! cancelled one is written down. The webhook and the sweep both call
//! [`apply`], so a payment is settled the same way whichever comes first,
//! and once.

use chrono::{DateTime, Utc};
use sqlx::MySqlConnection;

use super::{ProviderPayment, ProviderPaymentStatus};
use crate::db::payments::{self, PaymentRow};
use crate::db::refunds::{self, NewRefund, RefundRefused};
use crate::db::reservations::{self, LockedReservation};
use crate::db::{outbox, seats};
use crate::domain::events::EventKind;
use crate::domain::payment::{PaidHold, PaymentStatus, Provider, RefundReason, Settlement, settle};
use crate::domain::{PaymentReference, ReservationStatus, SeatId, SeatStatus};

/// What applying the news did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Applied {
    /// Not a payment of ours.
    Unknown,
    /// The hold is sold.
    Confirmed,
    /// The money goes back (a refund written, PENDING).
    Refunded(RefundReason),
    Declined,
    Canceled,
    /// Nothing new (applied before, or nothing has happened yet).
    Nothing,
}

/// Applies what the provider says of the payment `news.id`.
pub async fn apply(
    tx: &mut MySqlConnection,
    provider: Provider,
    news: &ProviderPayment,
    now: DateTime<Utc>,
) -> Result<Applied, sqlx::Error> {
    let Some(found) = payments::find_by_provider_id(tx, provider, &news.id).await? else {
        return Ok(Applied::Unknown);
    };
    let Some(locked) = reservations::lock_with_seats(tx, found.reservation_id).await? else {
        return Ok(Applied::Unknown);
    };
    let Some(payment) = payments::lock(tx, found.id).await? else {
        return Ok(Applied::Unknown);
    };
    match news.status {
        ProviderPaymentStatus::Succeeded => succeeded(tx, &payment, &locked, &news.id, now).await,
        ProviderPaymentStatus::Declined if payment.status() == PaymentStatus::Open => {
            payments::set_status(
                tx,
                payment.id,
                PaymentStatus::Failed,
                news.failure.as_deref(),
                now,
            )
            .await?;
            Ok(Applied::Declined)
        }
        ProviderPaymentStatus::Canceled if payment.status().may_still_change() => {
            payments::set_status(tx, payment.id, PaymentStatus::Canceled, None, now).await?;
            Ok(Applied::Canceled)
        }
        _ => Ok(Applied::Nothing),
    }
}

async fn succeeded(
    tx: &mut MySqlConnection,
    payment: &PaymentRow,
    locked: &LockedReservation,
    provider_id: &str,
    now: DateTime<Utc>,
) -> Result<Applied, sqlx::Error> {
    let sold_by_this_payment = locked.status == ReservationStatus::Confirmed
        && locked.payment_reference.as_deref() == Some(provider_id);
    let mut settlement = settle(PaidHold {
        payment: payment.status(),
        reservation: locked.status,
        hold_live: locked.is_live_hold(now),
        sold_by_this_payment,
    });
    let reference = PaymentReference::parse(provider_id).ok();
    if settlement == Settlement::Confirm
        && (reference.is_none()
            || reservations::held_claims(tx, locked.id).await? != locked.seats.len() as u64)
    {
        // A seat of the hold went to someone else once it ended.
        settlement = Settlement::Refund(RefundReason::LatePayment);
    }
    payments::set_status(tx, payment.id, PaymentStatus::Succeeded, None, now).await?;
    match settlement {
        Settlement::Nothing => Ok(Applied::Nothing),
        Settlement::Confirm => {
            let confirmed = reservations::confirm(
                tx,
                locked.id,
                locked.seats.len(),
                reference.as_ref(),
                None,
                now,
            )
            .await?;
            if !confirmed {
                // Checked above under the same locks: cannot happen.
                return Err(sqlx::Error::Protocol(
                    "a running hold with its claims did not confirm".into(),
                ));
            }
            let seat_ids: Vec<SeatId> = locked.seats.iter().map(|s| s.seat_id).collect();
            seats::mark(tx, &seat_ids, SeatStatus::Reserved, None, now).await?;
            outbox::record(
                tx,
                &[locked.event(EventKind::Confirmed, Some(provider_id), now)],
                now,
            )
            .await?;
            Ok(Applied::Confirmed)
        }
        Settlement::Refund(reason) => {
            let after = match locked.status {
                ReservationStatus::Held => ReservationStatus::Expired,
                other => other,
            };
            give_back(tx, payment, locked, reason, after, now).await?;
            Ok(Applied::Refunded(reason))
        }
    }
}

/// Writes the refund of all of `payment` (no ticket was sold for it) and
/// tells the fan.
async fn give_back(
    tx: &mut MySqlConnection,
    payment: &PaymentRow,
    locked: &LockedReservation,
    reason: RefundReason,
    after: ReservationStatus,
    now: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    let refund = NewRefund {
        concert: payment.concert_id,
        reservation: payment.reservation_id,
        payment: payment.id,
        amount: payment.amount,
        currency: payment.currency.clone(),
        reason,
        requested_by: None,
        tickets: Vec::new(),
    };
    match refunds::write(tx, &refund, payment.amount, payment.provider(), now).await {
        Ok(_) => {}
        // Given back already (in part, by an operator): the rest stays
        // for the operator, and `ticket-api check` names the payment.
        Err(RefundRefused::MoreThanPaid) => {
            tracing::warn!(payment = %payment.id, "a late payment was partly refunded already");
            return Ok(());
        }
        Err(RefundRefused::Database(e)) => return Err(e),
    }
    let event = locked
        .event(
            EventKind::Refunded,
            payment.provider_payment_id.as_deref(),
            now,
        )
        .leaving(after);
    outbox::record(tx, &[event], now).await?;
    Ok(())
}
