//! What a buyer asks for and what a concert allows per order.

use super::{FieldError, SeatId, char_len};

/// The seats of one request: 1 to [`SeatIds::MAX`] distinct seats, kept in
/// id order (the order seats are locked in). Whether they belong to one
/// concert, and to no more than that concert's `maxSeatsPerOrder`, is known
/// only from the database.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SeatIds(Vec<SeatId>);

impl SeatIds {
    /// The most any concert allows (`maxSeatsPerOrder` ≤ 10).
    pub const MAX: usize = MaxSeatsPerOrder::MOST as usize;

    pub fn parse(raw: &[u64]) -> Result<Self, FieldError> {
        if raw.is_empty() {
            return Err(FieldError::new("seatIds", "must name at least one seat"));
        }
        if raw.len() > Self::MAX {
            return Err(FieldError::new(
                "seatIds",
                format!("must name at most {} seats", Self::MAX),
            ));
        }
        let mut seats: Vec<SeatId> = raw.iter().copied().map(SeatId).collect();
        seats.sort_unstable();
        if seats.windows(2).any(|pair| pair[0] == pair[1]) {
            return Err(FieldError::new("seatIds", "must not name a seat twice"));
        }
        Ok(Self(seats))
    }

    pub fn one(seat: SeatId) -> Self {
        Self(vec![seat])
    }

    /// The lowest seat id: the request's `seatId` for one-seat clients.
    pub fn first(&self) -> SeatId {
        self.0[0]
    }

    pub fn as_slice(&self) -> &[SeatId] {
        &self.0
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Never true: a `SeatIds` names at least one seat.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// What a request asks for: the seats it names, or the best places of a
/// price category (best available).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Asked {
    Seats(SeatIds),
    Best(BestAsk),
}

impl Asked {
    /// The seats it names (none when it asks for the best).
    pub fn seats(&self) -> &[SeatId] {
        match self {
            Self::Seats(seats) => seats.as_slice(),
            Self::Best(_) => &[],
        }
    }

    /// How many seats it takes when it wins.
    pub fn count(&self) -> u8 {
        match self {
            Self::Seats(seats) => u8::try_from(seats.len()).unwrap_or(u8::MAX),
            Self::Best(best) => best.count,
        }
    }
}

/// `count` places of a pool of the concert, the best the line leaves: a
/// price category's seats side by side in one row (with `allow_split`,
/// when no such block is free, the best in the fewest blocks), or a
/// standing area's places (the lowest entry numbers left).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BestAsk {
    pub pool: AskedPool,
    pub count: u8,
    pub allow_split: bool,
}

/// Where a request by count asks: a price category or a standing area, by
/// its position in the concert.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AskedPool {
    Category(u8),
    Area(u8),
}

impl AskedPool {
    /// One number for both kinds, as `request_pools.open_pool` stores it:
    /// a category's position, or 256 + an area's.
    pub fn code(self) -> u16 {
        match self {
            Self::Category(position) => u16::from(position),
            Self::Area(position) => 256 + u16::from(position),
        }
    }

    pub fn from_code(code: u16) -> Self {
        match u8::try_from(code) {
            Ok(position) => Self::Category(position),
            Err(_) => Self::Area(u8::try_from(code - 256).unwrap_or(u8::MAX)),
        }
    }

    pub fn category(self) -> Option<u8> {
        match self {
            Self::Category(position) => Some(position),
            Self::Area(_) => None,
        }
    }

    pub fn area(self) -> Option<u8> {
        match self {
            Self::Category(_) => None,
            Self::Area(position) => Some(position),
        }
    }
}

impl BestAsk {
    /// `count` must be 1 to the concert's `maxSeatsPerOrder`. A standing
    /// area's places are never side by side: nothing to split.
    pub fn parse(
        pool: AskedPool,
        count: u64,
        allow_split: bool,
        max: MaxSeatsPerOrder,
    ) -> Result<Self, FieldError> {
        match u8::try_from(count) {
            Ok(count) if (1..=max.get()).contains(&count) => Ok(Self {
                pool,
                count,
                allow_split: allow_split && pool.category().is_some(),
            }),
            _ => Err(FieldError::new(
                "count",
                format!(
                    "must be 1 to {} (the concert's maxSeatsPerOrder)",
                    max.get()
                ),
            )),
        }
    }
}

/// How long a won request holds its seats before it must be confirmed:
/// 0 (the default of a free concert) confirms at once, as the original flow
/// did; at most an hour (pretix holds carts 30 minutes, alf.io 25,
/// Hi.Events 15). A priced concert always holds: its fans need the time to
/// pay, and a seat confirmed at once would be sold for nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct HoldDuration(u32);

impl HoldDuration {
    pub const MAX_SECONDS: u32 = 3_600;

    pub fn parse(seconds: u64) -> Result<Self, FieldError> {
        match u32::try_from(seconds) {
            Ok(s) if s <= Self::MAX_SECONDS => Ok(Self(s)),
            _ => Err(FieldError::new(
                "holdSeconds",
                format!("must be 0 to {}", Self::MAX_SECONDS),
            )),
        }
    }

    pub fn seconds(self) -> u32 {
        self.0
    }

    pub fn is_hold(self) -> bool {
        self.0 > 0
    }

    /// A priced concert's hold when the operator gives none (Hi.Events'
    /// and Big Neon's 15 minutes).
    pub const PAYMENT_DEFAULT: Self = Self(900);

    /// A concert's hold: the one `given`, else none for a free concert and
    /// [`Self::PAYMENT_DEFAULT`] for a priced one.
    pub fn of_concert(given: Option<Self>, priced: bool) -> Result<Self, FieldError> {
        let hold = given.unwrap_or(if priced {
            Self::PAYMENT_DEFAULT
        } else {
            Self(0)
        });
        hold.allowed_with_prices(priced)?;
        Ok(hold)
    }

    /// Refuses no hold for a concert with prices.
    pub fn allowed_with_prices(self, priced: bool) -> Result<(), FieldError> {
        if priced && !self.is_hold() {
            return Err(FieldError::new(
                "holdSeconds",
                format!(
                    "a concert with prices holds a won order while its fan pays: give 1 to {} \
                     seconds (default {})",
                    Self::MAX_SECONDS,
                    Self::PAYMENT_DEFAULT.0
                ),
            ));
        }
        Ok(())
    }
}

/// How many seats one request of a concert may name (1–10, default 4;
/// pretix caps orders at 10 tickets, alf.io at 5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MaxSeatsPerOrder(u8);

impl MaxSeatsPerOrder {
    pub const MOST: u8 = 10;
    pub const DEFAULT: Self = Self(4);

    pub fn parse(n: u64) -> Result<Self, FieldError> {
        match u8::try_from(n) {
            Ok(n) if (1..=Self::MOST).contains(&n) => Ok(Self(n)),
            _ => Err(FieldError::new(
                "maxSeatsPerOrder",
                format!("must be 1 to {}", Self::MOST),
            )),
        }
    }

    pub fn get(self) -> u8 {
        self.0
    }
}

impl Default for MaxSeatsPerOrder {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// How many seats one fan (a user) may have in a concert: held, confirmed
/// and asked for by open requests together (1–100; a new concert's default
/// is its `maxSeatsPerOrder`). Ticketmaster's per-account limits, counted
/// over every order rather than each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MaxSeatsPerUser(u8);

impl MaxSeatsPerUser {
    pub const MOST: u8 = 100;

    pub fn parse(n: u64) -> Result<Self, FieldError> {
        match u8::try_from(n) {
            Ok(n) if (1..=Self::MOST).contains(&n) => Ok(Self(n)),
            _ => Err(FieldError::new(
                "maxSeatsPerUser",
                format!("must be 1 to {}", Self::MOST),
            )),
        }
    }

    /// The default of a concert whose orders take up to `per_order` seats.
    pub fn same_as(per_order: MaxSeatsPerOrder) -> Self {
        Self(per_order.get())
    }

    /// As stored: the column's CHECK keeps it in range; anything else is
    /// read as the most restrictive cap.
    pub fn from_stored(n: u8) -> Self {
        Self(n.clamp(1, Self::MOST))
    }

    pub fn get(self) -> u8 {
        self.0
    }
}

/// The buyer's reference for the payment that confirms a hold (a payment
/// provider's id): 1–128 visible ASCII characters, kept and echoed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PaymentReference(String);

impl PaymentReference {
    pub const MAX_CHARS: usize = 128;

    pub fn parse(raw: &str) -> Result<Self, FieldError> {
        let len = char_len(raw);
        if len == 0 || len > Self::MAX_CHARS || !raw.chars().all(|c| c.is_ascii_graphic()) {
            return Err(FieldError::new(
                "paymentReference",
                format!("must be 1 to {} visible ASCII characters", Self::MAX_CHARS),
            ));
        }
        Ok(Self(raw.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seat_lists_are_distinct_bounded_and_sorted() {
        let seats = SeatIds::parse(&[7, 3, 5]).unwrap();
        assert_eq!(seats.as_slice(), &[SeatId(3), SeatId(5), SeatId(7)]);
        assert_eq!(seats.first(), SeatId(3));
        assert!(SeatIds::parse(&[]).is_err());
        assert!(SeatIds::parse(&[1, 2, 1]).is_err());
        assert!(SeatIds::parse(&(1..=10).collect::<Vec<_>>()).is_ok());
        assert!(SeatIds::parse(&(1..=11).collect::<Vec<_>>()).is_err());
    }

    #[test]
    fn settings_are_bounded() {
        assert_eq!(HoldDuration::parse(0).unwrap().seconds(), 0);
        assert!(!HoldDuration::parse(0).unwrap().is_hold());
        assert!(HoldDuration::parse(3_600).is_ok());
        assert!(HoldDuration::parse(3_601).is_err());
        assert!(HoldDuration::parse(u64::MAX).is_err());
        assert!(MaxSeatsPerOrder::parse(0).is_err());
        assert!(MaxSeatsPerOrder::parse(11).is_err());
        assert_eq!(MaxSeatsPerOrder::parse(10).unwrap().get(), 10);
        assert!(MaxSeatsPerUser::parse(0).is_err());
        assert!(MaxSeatsPerUser::parse(101).is_err());
        assert_eq!(MaxSeatsPerUser::parse(100).unwrap().get(), 100);
        assert_eq!(MaxSeatsPerUser::same_as(MaxSeatsPerOrder::DEFAULT).get(), 4);
        assert!(PaymentReference::parse("pi_3N2x").is_ok());
        assert!(PaymentReference::parse("").is_err());
        assert!(PaymentReference::parse("has space").is_err());
    }
}
