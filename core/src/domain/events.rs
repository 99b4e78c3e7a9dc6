//! What the outbox announces about a reservation: the event kinds and the
//! body every webhook receives, built from the reservation's facts.

use chrono::{DateTime, SecondsFormat, Utc};
use serde::Serialize;

use super::price::{Amount, Currency, SeatPrice, total_of};
use super::{ConcertId, QueueId, ReservationId, ReservationStatus, SeatId, UserId};

/// One seat of a reservation, by id and number, with the price it was
/// decided at (none for a concert without categories).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReservedSeat {
    pub seat_id: SeatId,
    pub seat_number: String,
    pub price: Option<SeatPrice>,
    /// Where it is, as the venue names it; read where a person is shown
    /// the seat (default where only its id and number matter).
    pub place: super::SeatPlace,
}

/// The total of a reservation's seats and its currency, when priced.
pub fn total_of_seats(seats: &[ReservedSeat]) -> Option<(Amount, Currency)> {
    total_of(seats.iter().map(|s| s.price.as_ref()))
}

/// What happened to a reservation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    /// A won request's seats are held until `holdExpiresAt`.
    Held,
    /// Sold: a hold confirmed, or a won request of a concert without holds.
    Confirmed,
    /// A hold ran out; its seats are offered again.
    Expired,
    /// Cancelled by its buyer or an admin; its seats are offered again.
    Cancelled,
    /// Seats that came back, held for a fan from the concert's waiting list
    /// until `holdExpiresAt` (a hold like `Held`, confirmed the same way).
    Offered,
    /// Money goes back to the fan: a payment that came after its hold
    /// ended, tickets refunded, a cancelled show (`status` is the
    /// reservation's after it).
    Refunded,
}

impl EventKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Held => "ReservationHeld",
            Self::Confirmed => "ReservationConfirmed",
            Self::Expired => "ReservationExpired",
            Self::Cancelled => "ReservationCancelled",
            Self::Offered => "WaitingListOffered",
            Self::Refunded => "ReservationRefunded",
        }
    }
}

/// The `data` of an event: the reservation as the change left it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReservationEvent {
    #[serde(skip)]
    pub kind: EventKind,
    pub reservation_id: ReservationId,
    pub queue_id: Option<QueueId>,
    pub user_id: UserId,
    pub concert_id: ConcertId,
    pub status: &'static str,
    pub seats: Vec<EventSeat>,
    /// What the reservation costs, in `currency`'s minor units: the amount
    /// to charge on a confirm, to refund on a cancel (null without prices).
    pub total: Option<u64>,
    pub currency: Option<String>,
    pub hold_expires_at: Option<String>,
    pub payment_reference: Option<String>,
    pub occurred_at: String,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EventSeat {
    pub seat_id: u64,
    pub seat_number: String,
    pub category: Option<String>,
    pub price: Option<u64>,
}

/// The facts of a reservation an event reports.
#[derive(Debug, Clone)]
pub struct Subject<'a> {
    pub reservation_id: ReservationId,
    pub queue_id: Option<QueueId>,
    pub user_id: UserId,
    pub concert_id: ConcertId,
    pub seats: &'a [ReservedSeat],
    pub hold_expires_at: Option<DateTime<Utc>>,
    pub payment_reference: Option<&'a str>,
}

impl ReservationEvent {
    pub fn new(kind: EventKind, subject: &Subject<'_>, at: DateTime<Utc>) -> Self {
        let status = match kind {
            EventKind::Held | EventKind::Offered => ReservationStatus::Held,
            EventKind::Confirmed => ReservationStatus::Confirmed,
            EventKind::Expired => ReservationStatus::Expired,
            EventKind::Cancelled | EventKind::Refunded => ReservationStatus::Cancelled,
        };
        let total = total_of_seats(subject.seats);
        Self {
            kind,
            reservation_id: subject.reservation_id,
            queue_id: subject.queue_id,
            user_id: subject.user_id,
            concert_id: subject.concert_id,
            status: status.as_str(),
            seats: subject
                .seats
                .iter()
                .map(|s| EventSeat {
                    seat_id: s.seat_id.get(),
                    seat_number: s.seat_number.clone(),
                    category: s.price.as_ref().map(|p| p.category.clone()),
                    price: s.price.as_ref().map(|p| p.price.get()),
                })
                .collect(),
            total: total.map(|(amount, _)| amount.get()),
            currency: total.map(|(_, currency)| currency.as_str().to_owned()),
            hold_expires_at: subject.hold_expires_at.map(rfc3339),
            payment_reference: subject.payment_reference.map(str::to_owned),
            occurred_at: rfc3339(at),
        }
    }
}

impl ReservationEvent {
    /// The same event saying the reservation is `status` after it (a
    /// refund leaves a reservation as it finds it, or cancels it).
    pub fn leaving(mut self, status: ReservationStatus) -> Self {
        self.status = status.as_str();
        self
    }
}

fn rfc3339(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Micros, true)
}
