//! Money (issue 46), the rules, pure: what a payment and a refund can be,
//! and what a payment that succeeded does to its hold. A payment is of one
//! hold and of exactly its total; money is kept only for seats sold.

use super::ReservationStatus;

/// Who took the money.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Provider {
    /// A PaymentIntent at Stripe (or a server that speaks its API).
    Stripe,
    /// The operator's word: cash at the box office, a bank transfer; the
    /// reference is the reservation's `paymentReference`.
    Manual,
}

impl Provider {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Stripe => "STRIPE",
            Self::Manual => "MANUAL",
        }
    }

    /// As the API names it (`provider` in responses).
    pub fn api_name(self) -> &'static str {
        match self {
            Self::Stripe => "stripe",
            Self::Manual => "manual",
        }
    }

    pub fn from_stored(raw: &str) -> Option<Self> {
        [Self::Stripe, Self::Manual]
            .into_iter()
            .find(|p| p.as_str() == raw)
    }
}

/// Where a payment stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PaymentStatus {
    /// Waiting for the fan to pay, or for the provider to say so.
    Open,
    /// The money was taken.
    Succeeded,
    /// Declined; the hold runs on and the fan may try again.
    Failed,
    /// Never paid, and now never will be (its hold ended first).
    Canceled,
}

impl PaymentStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Open => "OPEN",
            Self::Succeeded => "SUCCEEDED",
            Self::Failed => "FAILED",
            Self::Canceled => "CANCELED",
        }
    }

    pub fn from_stored(raw: &str) -> Option<Self> {
        [Self::Open, Self::Succeeded, Self::Failed, Self::Canceled]
            .into_iter()
            .find(|s| s.as_str() == raw)
    }

    /// Whether the provider may still move it (the sweep asks about it).
    pub fn may_still_change(self) -> bool {
        matches!(self, Self::Open | Self::Failed)
    }
}

/// Why money goes back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RefundReason {
    /// The payment arrived after its hold ended: no seat was sold for it.
    LatePayment,
    /// A second payment for a hold already paid for.
    ExtraPayment,
    /// Asked for by the fan (while the concert allows) or an operator.
    Requested,
    /// The show was cancelled.
    ConcertCancelled,
    /// The organizer voided the order after the sale (bots, fraud).
    Voided,
}

impl RefundReason {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::LatePayment => "LATE_PAYMENT",
            Self::ExtraPayment => "EXTRA_PAYMENT",
            Self::Requested => "REQUESTED",
            Self::ConcertCancelled => "CONCERT_CANCELLED",
            Self::Voided => "VOIDED",
        }
    }

    pub fn from_stored(raw: &str) -> Option<Self> {
        [
            Self::LatePayment,
            Self::ExtraPayment,
            Self::Requested,
            Self::ConcertCancelled,
            Self::Voided,
        ]
        .into_iter()
        .find(|r| r.as_str() == raw)
    }
}

/// Where a refund stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RefundStatus {
    /// Decided, not yet confirmed by the provider.
    Pending,
    Succeeded,
    /// Refused by the provider for good: an operator has to look.
    Failed,
}

impl RefundStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "PENDING",
            Self::Succeeded => "SUCCEEDED",
            Self::Failed => "FAILED",
        }
    }

    pub fn from_stored(raw: &str) -> Option<Self> {
        [Self::Pending, Self::Succeeded, Self::Failed]
            .into_iter()
            .find(|s| s.as_str() == raw)
    }
}

/// What a payment the provider says succeeded does, decided with its
/// reservation locked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Settlement {
    /// The hold is running: sell it (tickets, event, mail).
    Confirm,
    /// Already applied (the reservation was confirmed by this payment, or
    /// the payment was settled before): nothing to do.
    Nothing,
    /// No seat is sold for this money: give it all back.
    Refund(RefundReason),
}

/// The facts [`settle`] decides on.
#[derive(Debug, Clone, Copy)]
pub struct PaidHold {
    /// The payment as stored before this news.
    pub payment: PaymentStatus,
    /// The reservation as of now (a hold past its end is not live).
    pub reservation: ReservationStatus,
    pub hold_live: bool,
    /// Whether the reservation was sold by this payment.
    pub sold_by_this_payment: bool,
}

/// Money the provider took for a hold: sold when the hold still runs,
/// given back when the seat is not (or no longer) the payer's, and never
/// twice either.
pub fn settle(paid: PaidHold) -> Settlement {
    if paid.payment == PaymentStatus::Succeeded || paid.sold_by_this_payment {
        return Settlement::Nothing;
    }
    match paid.reservation {
        ReservationStatus::Held if paid.hold_live => Settlement::Confirm,
        ReservationStatus::Confirmed => Settlement::Refund(RefundReason::ExtraPayment),
        ReservationStatus::Held | ReservationStatus::Expired | ReservationStatus::Cancelled => {
            Settlement::Refund(RefundReason::LatePayment)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paid(reservation: ReservationStatus, hold_live: bool) -> PaidHold {
        PaidHold {
            payment: PaymentStatus::Open,
            reservation,
            hold_live,
            sold_by_this_payment: false,
        }
    }

    #[test]
    fn a_running_hold_is_sold_and_anything_else_refunded() {
        assert_eq!(
            settle(paid(ReservationStatus::Held, true)),
            Settlement::Confirm
        );
        for (status, live) in [
            (ReservationStatus::Held, false),
            (ReservationStatus::Expired, false),
            (ReservationStatus::Cancelled, false),
        ] {
            assert_eq!(
                settle(paid(status, live)),
                Settlement::Refund(RefundReason::LatePayment),
                "{status:?}"
            );
        }
        assert_eq!(
            settle(paid(ReservationStatus::Confirmed, false)),
            Settlement::Refund(RefundReason::ExtraPayment)
        );
    }

    #[test]
    fn news_applied_once_changes_nothing_again() {
        let mut again = paid(ReservationStatus::Confirmed, false);
        again.sold_by_this_payment = true;
        assert_eq!(settle(again), Settlement::Nothing);
        let mut settled = paid(ReservationStatus::Expired, false);
        settled.payment = PaymentStatus::Succeeded;
        assert_eq!(settle(settled), Settlement::Nothing);
    }

    #[test]
    fn stored_names_read_back() {
        for s in [
            PaymentStatus::Open,
            PaymentStatus::Succeeded,
            PaymentStatus::Failed,
            PaymentStatus::Canceled,
        ] {
            assert_eq!(PaymentStatus::from_stored(s.as_str()), Some(s));
        }
        for r in [
            RefundReason::LatePayment,
            RefundReason::ExtraPayment,
            RefundReason::Requested,
            RefundReason::ConcertCancelled,
        ] {
            assert_eq!(RefundReason::from_stored(r.as_str()), Some(r));
        }
        assert_eq!(Provider::from_stored("STRIPE"), Some(Provider::Stripe));
        assert_eq!(
            RefundStatus::from_stored("PENDING"),
            Some(RefundStatus::Pending)
        );
    }
}
