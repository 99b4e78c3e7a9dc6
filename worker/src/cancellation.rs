//! Cancelled concerts, carried out (issue 46): every worker ends their
//! holds and gives back their sold orders, one order per transaction, so a
//! worker killed in the middle leaves every order either done (refund
//! written, tickets voided, fan mailed) or untouched for the next pass;
//! the refunds themselves are the payments executor's.

use std::time::Duration;

use sqlx::MySqlPool;
use ticket_core::db::refunds::RefundRefused;
use ticket_core::db::reservations::LockedReservation;
use ticket_core::db::{self, concerts, outbox, reservations, seats, whole};
use ticket_core::domain::events::EventKind;
use ticket_core::domain::payment::RefundReason;
use ticket_core::domain::{ReservationId, ReservationStatus, SeatId};
use ticket_core::payments::refund::give_back;
use tokio_util::sync::CancellationToken;

/// Orders looked at per concert and pass.
const BATCH: u32 = 50;
const IDLE_PAUSE: Duration = Duration::from_secs(1);

pub struct Cancellations {
    pool: MySqlPool,
}

/// What one pass did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Pass {
    pub holds_ended: usize,
    pub orders_given_back: usize,
    /// A full batch was found: go again at once.
    pub more: bool,
}

impl Cancellations {
    pub fn new(pool: MySqlPool) -> Self {
        Self { pool }
    }

    /// Ends up to a batch of each cancelled concert's live reservations.
    pub async fn pass(&self) -> Result<Pass, sqlx::Error> {
        let mut conn = self.pool.acquire().await?;
        let mut pass = Pass::default();
        for concert in concerts::cancelled(&mut conn).await? {
            let live = reservations::live_of_concert(&mut conn, concert, BATCH).await?;
            pass.more |= live.len() == BATCH as usize;
            for id in live {
                match whole::run(&mut conn, async |tx| end_one(tx, id).await).await? {
                    Some(ReservationStatus::Held) => pass.holds_ended += 1,
                    Some(_) => pass.orders_given_back += 1,
                    None => {}
                }
            }
        }
        Ok(pass)
    }

    /// Passes until `shutdown`: at once while there is more, else every
    /// second.
    pub async fn run(self, shutdown: CancellationToken) {
        crate::passes::until_shutdown(
            shutdown,
            "cancellation",
            IDLE_PAUSE,
            || self.pass(),
            |pass: &Pass| {
                if pass.more {
                    Duration::ZERO
                } else {
                    IDLE_PAUSE
                }
            },
        )
        .await;
    }
}

/// Ends one reservation of a cancelled concert: a hold is cancelled, a
/// sold order given back whole. Returns what it was, or None when someone
/// else ended it first.
async fn end_one(
    tx: &mut sqlx::MySqlConnection,
    id: ReservationId,
) -> Result<Option<ReservationStatus>, sqlx::Error> {
    let Some(locked) = reservations::lock_with_seats(tx, id).await? else {
        return Ok(None);
    };
    let now = db::now(tx).await?;
    match locked.status {
        ReservationStatus::Held => cancel(tx, &locked, now).await?,
        ReservationStatus::Confirmed => {
            let valid = db::tickets::valid_with_prices(tx, id).await?;
            let reason = RefundReason::ConcertCancelled;
            match give_back(tx, &locked, &valid, &valid, reason, None, now).await {
                Ok(_) => {}
                // Given back in part beyond what its tickets are worth:
                // the order ends, and `ticket-api check` names the payment
                // for an operator rather than this pass retrying for ever.
                Err(RefundRefused::MoreThanPaid) => {
                    tracing::error!(reservation = %id, "a cancelled concert's order was over-refunded already");
                    cancel(tx, &locked, now).await?;
                }
                Err(RefundRefused::Database(e)) => return Err(e),
            }
        }
        ReservationStatus::Expired | ReservationStatus::Cancelled => return Ok(None),
    }
    Ok(Some(locked.status))
}

/// Cancels a reservation with nothing to give back; its seats go free.
async fn cancel(
    tx: &mut sqlx::MySqlConnection,
    locked: &LockedReservation,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<(), sqlx::Error> {
    reservations::end(tx, &[locked.id], ReservationStatus::Cancelled, now).await?;
    let seats: Vec<SeatId> = locked.seats.iter().map(|s| s.seat_id).collect();
    seats::free_unclaimed(tx, &seats, now).await?;
    outbox::record(tx, &[locked.event(EventKind::Cancelled, None, now)], now).await?;
    Ok(())
}
