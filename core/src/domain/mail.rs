//! What the box office mails a fan, and when: the rules, pure. A mail
//! follows an event of the outbox (written in the event's transaction, for a
//! fan with an address then) and is sent by the workers at least once; its
//! `Message-ID` is made from the reservation and the kind, which never
//! change, so a message sent again is recognisable as the same one.

use super::events::EventKind;
use super::{ReservationId, ReservationStatus};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MailKind {
    /// A reservation is sold: the order with its tickets (a QR code each).
    OrderConfirmation,
    /// A hold is running out: confirm it before it ends.
    HoldReminder,
    /// Seats from the waiting list are held for the fan.
    WaitingListOffer,
    /// Money goes back: what, why, and which tickets no longer admit.
    /// Written again by every later refund of the order (one mail a
    /// reservation, saying all its refunds).
    Refund,
}

/// When a mail may go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Due {
    /// As soon as its event is written.
    AtOnce,
    /// When `1 / REMINDER_WHEN_LEFT` of the hold is left: 75 s before the
    /// end of a 5-minute hold, 3¾ minutes before the end of a waiting
    /// list's 15-minute offer, 15 minutes before the end of an hour's.
    BeforeTheHoldEnds,
}

/// The reminder goes when a quarter of the hold is left.
pub const REMINDER_WHEN_LEFT: u32 = 4;

impl MailKind {
    pub const ALL: [Self; 4] = [
        Self::OrderConfirmation,
        Self::HoldReminder,
        Self::WaitingListOffer,
        Self::Refund,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::OrderConfirmation => "ORDER_CONFIRMATION",
            Self::HoldReminder => "HOLD_REMINDER",
            Self::WaitingListOffer => "WAITING_LIST_OFFER",
            Self::Refund => "REFUND",
        }
    }

    pub fn from_stored(kind: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == kind)
    }

    /// Whether an event of `event` kind is followed by a mail of this kind.
    pub fn follows(self, event: EventKind) -> bool {
        matches!(
            (self, event),
            (Self::OrderConfirmation, EventKind::Confirmed)
                | (Self::HoldReminder, EventKind::Held | EventKind::Offered)
                | (Self::WaitingListOffer, EventKind::Offered)
                | (Self::Refund, EventKind::Refunded)
        )
    }

    pub fn due(self) -> Due {
        match self {
            Self::HoldReminder => Due::BeforeTheHoldEnds,
            Self::OrderConfirmation | Self::WaitingListOffer | Self::Refund => Due::AtOnce,
        }
    }

    /// Whether a later event of its kind writes it again (due at once)
    /// rather than adding another.
    pub fn rewritten(self) -> bool {
        self == Self::Refund
    }

    /// Whether the mail still has something to say about a reservation in
    /// `status` (a hold still running, when it is about one): a confirmation
    /// of an order cancelled meanwhile, or a reminder of a hold confirmed,
    /// is not sent.
    pub fn still_wanted(self, status: ReservationStatus, hold_running: bool) -> bool {
        match self {
            Self::OrderConfirmation => status == ReservationStatus::Confirmed,
            Self::HoldReminder | Self::WaitingListOffer => {
                status == ReservationStatus::Held && hold_running
            }
            Self::Refund => true,
        }
    }

    /// The `Message-ID` of this mail about `reservation`, in the sender's
    /// `domain` (RFC 5322 `msg-id`, without its angle brackets).
    pub fn message_id(self, reservation: ReservationId, domain: &str) -> String {
        let kind = self.as_str().to_ascii_lowercase().replace('_', "-");
        format!("reservation-{reservation}.{kind}@{domain}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_event_is_followed_by_its_mails() {
        let follow = |event| -> Vec<MailKind> {
            MailKind::ALL
                .into_iter()
                .filter(|k| k.follows(event))
                .collect()
        };
        assert_eq!(follow(EventKind::Confirmed), [MailKind::OrderConfirmation]);
        assert_eq!(follow(EventKind::Held), [MailKind::HoldReminder]);
        assert_eq!(
            follow(EventKind::Offered),
            [MailKind::HoldReminder, MailKind::WaitingListOffer]
        );
        assert!(follow(EventKind::Expired).is_empty());
        assert!(follow(EventKind::Cancelled).is_empty());
    }

    #[test]
    fn a_mail_with_nothing_left_to_say_is_not_sent() {
        use ReservationStatus::*;
        let confirmation = MailKind::OrderConfirmation;
        assert!(confirmation.still_wanted(Confirmed, false));
        assert!(!confirmation.still_wanted(Cancelled, false));
        let reminder = MailKind::HoldReminder;
        assert!(reminder.still_wanted(Held, true));
        assert!(!reminder.still_wanted(Held, false), "the hold ran out");
        assert!(!reminder.still_wanted(Confirmed, false));
        assert!(!MailKind::WaitingListOffer.still_wanted(Expired, false));
    }

    #[test]
    fn message_ids_are_stable_and_name_the_reservation_and_kind() {
        let id = MailKind::HoldReminder.message_id(ReservationId(42), "tickets.example");
        assert_eq!(id, "reservation-42.hold-reminder@tickets.example");
        assert_eq!(
            id,
            MailKind::HoldReminder.message_id(ReservationId(42), "tickets.example")
        );
        for kind in MailKind::ALL {
            assert_eq!(MailKind::from_stored(kind.as_str()), Some(kind));
        }
    }
}
