//! When a concert's sale opens, and the order of its line.

use chrono::{DateTime, Datelike, SubsecRound, Utc};

use super::{FieldError, QueueId};

/// How long before the opening requests join the pre-opening lottery: 0
/// (default, no lottery) to a day.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LotteryWindow(u32);

impl LotteryWindow {
    pub const MAX_SECONDS: u32 = 86_400;

    pub fn parse(seconds: u64) -> Result<Self, FieldError> {
        match u32::try_from(seconds) {
            Ok(s) if s <= Self::MAX_SECONDS => Ok(Self(s)),
            _ => Err(FieldError::new(
                "lotteryWindowSeconds",
                format!("must be 0 to {}", Self::MAX_SECONDS),
            )),
        }
    }

    pub fn seconds(self) -> u32 {
        self.0
    }
}

/// When a sale opens: an RFC 3339 instant (a past one means open now), at
/// the database's microsecond precision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpensAt(DateTime<Utc>);

impl OpensAt {
    pub fn parse(raw: &str) -> Result<Self, FieldError> {
        instant(raw, "opensAt").map(Self)
    }

    /// As stored (written through `parse`).
    pub fn from_stored(at: DateTime<Utc>) -> Self {
        Self(at)
    }

    pub fn get(self) -> DateTime<Utc> {
        self.0
    }
}

/// Until when a fan may give back their own tickets of a concert sold
/// through a payment provider (an operator always may).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RefundableUntil(DateTime<Utc>);

impl RefundableUntil {
    pub fn parse(raw: &str) -> Result<Self, FieldError> {
        instant(raw, "refundableUntil").map(Self)
    }

    pub fn get(self) -> DateTime<Utc> {
        self.0
    }
}

/// When a presale begins: from then until the opening, a request needs an
/// access code. Before the opening, which the concert's settings check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PresaleStartsAt(DateTime<Utc>);

impl PresaleStartsAt {
    pub fn parse(raw: &str) -> Result<Self, FieldError> {
        instant(raw, "presaleStartsAt").map(Self)
    }

    /// As stored (written through `parse`).
    pub fn from_stored(at: DateTime<Utc>) -> Self {
        Self(at)
    }

    pub fn get(self) -> DateTime<Utc> {
        self.0
    }
}

/// An RFC 3339 instant at the database's microsecond precision.
fn instant(raw: &str, field: &'static str) -> Result<DateTime<Utc>, FieldError> {
    let parsed = DateTime::parse_from_rfc3339(raw.trim()).map_err(|_| {
        FieldError::new(
            field,
            "must be an RFC 3339 date-time such as 2030-05-01T10:00:00+09:00",
        )
    })?;
    let utc = parsed.with_timezone(&Utc).trunc_subsecs(6);
    if !(1970..=9999).contains(&utc.year()) {
        return Err(FieldError::new(
            field,
            "must be between the years 1970 and 9999",
        ));
    }
    Ok(utc)
}

/// A concert's sale as requests see it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SaleWindow {
    /// `None`: on sale from the start.
    pub opens_at: Option<DateTime<Utc>>,
    pub lottery: LotteryWindow,
    /// From then until `opens_at`, requests with an access code are taken.
    pub presale_starts_at: Option<DateTime<Utc>>,
}

/// What a request placed at a given time gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    /// Too early: not even the lottery has begun.
    NotYet { opens_at: DateTime<Utc> },
    /// Inside the lottery window: a random place, drawn now.
    Lottery { opens_at: DateTime<Utc> },
    /// The sale is open: behind everyone already in line.
    Open,
    /// In the presale, with an access code: behind the presale requests
    /// already in line, decided at once.
    Presale,
    /// In the presale without an access code (and outside the lottery).
    CodeRequired { opens_at: DateTime<Utc> },
}

impl SaleWindow {
    /// What a request without an access code gets at `now`.
    pub fn admission(self, now: DateTime<Utc>) -> Admission {
        let Some(opens_at) = self.opens_at else {
            return Admission::Open;
        };
        if now >= opens_at {
            Admission::Open
        } else if now >= opens_at - chrono::Duration::seconds(i64::from(self.lottery.seconds())) {
            Admission::Lottery { opens_at }
        } else if self.in_presale(now) {
            Admission::CodeRequired { opens_at }
        } else {
            Admission::NotYet { opens_at }
        }
    }

    /// What a request with an access code gets at `now`: a presale place
    /// while the presale runs; otherwise the code does not matter.
    pub fn admission_with_code(self, now: DateTime<Utc>) -> Admission {
        if self.in_presale(now) {
            Admission::Presale
        } else {
            self.admission(now)
        }
    }

    /// Whether the presale runs at `now`.
    pub fn in_presale(self, now: DateTime<Utc>) -> bool {
        matches!((self.presale_starts_at, self.opens_at), (Some(from), Some(until)) if from <= now && now < until)
    }

    /// When the lottery begins (requests are refused before).
    pub fn lottery_begins(self) -> Option<DateTime<Utc>> {
        self.opens_at
            .map(|at| at - chrono::Duration::seconds(i64::from(self.lottery.seconds())))
    }
}

/// A request's key in its concert's line: the line is in (key, queue id)
/// order. A presale request's key is [`LineKey::PRESALE`]: presale requests
/// keep their arrival order, ahead of everyone else. A lottery request's key
/// is uniformly random in [`LineKey::LOTTERY_FLOOR`, `AFTER_OPENING`),
/// drawn once when it is written, so the lottery's order is a uniformly
/// random permutation that no retry can improve (a user has one open
/// request per seat); every later request has exactly `AFTER_OPENING` and
/// keeps its arrival order behind them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LineKey(u64);

impl LineKey {
    pub const AFTER_OPENING: Self = Self(1 << 62);
    /// Below every lottery key: a presale request's place is its id.
    pub const PRESALE: Self = Self(0);
    /// Lottery keys are drawn at or above it, so that they are behind every
    /// presale request (whose place, its id, is far below).
    pub const LOTTERY_FLOOR: Self = Self(1 << 61);

    /// A lottery key from the operating system's random source.
    pub fn draw() -> Self {
        let mut bytes = [0u8; 8];
        if getrandom::getrandom(&mut bytes).is_err() {
            // Never seen on Linux; std's per-process random SipHash keys
            // over the clock are still unpredictable to a client.
            use std::hash::{BuildHasher, Hasher};
            let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
            hasher.write_u128(
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_nanos()),
            );
            bytes = hasher.finish().to_le_bytes();
        }
        Self((u64::from_le_bytes(bytes) & (Self::LOTTERY_FLOOR.0 - 1)) | Self::LOTTERY_FLOOR.0)
    }

    /// (Keys below the floor were drawn before presales existed.)
    pub fn is_lottery(self) -> bool {
        self != Self::PRESALE && self < Self::AFTER_OPENING
    }

    pub fn get(self) -> u64 {
        self.0
    }

    /// A stored key; anything at or above the after-opening key is one.
    pub fn from_stored(raw: u64) -> Self {
        Self(raw.min(Self::AFTER_OPENING.0))
    }

    /// The request's place in line as one number, ordered as (key, id): its
    /// id for a presale request, the key for a lottery request, else
    /// `AFTER_OPENING` + its id. The SQL of the decision computes the same
    /// (`db::line::place_sql`).
    pub fn place(self, id: QueueId) -> u64 {
        if self == Self::PRESALE {
            id.get()
        } else if self.is_lottery() {
            self.0
        } else {
            Self::AFTER_OPENING.0 + id.get()
        }
    }
}

impl From<LineKey> for u64 {
    fn from(key: LineKey) -> Self {
        key.0
    }
}

impl sqlx::Type<sqlx::MySql> for LineKey {
    fn type_info() -> sqlx::mysql::MySqlTypeInfo {
        <u64 as sqlx::Type<sqlx::MySql>>::type_info()
    }
    fn compatible(ty: &sqlx::mysql::MySqlTypeInfo) -> bool {
        <u64 as sqlx::Type<sqlx::MySql>>::compatible(ty)
    }
}

impl<'q> sqlx::Encode<'q, sqlx::MySql> for LineKey {
    fn encode_by_ref(
        &self,
        buf: &mut Vec<u8>,
    ) -> Result<sqlx::encode::IsNull, sqlx::error::BoxDynError> {
        <u64 as sqlx::Encode<sqlx::MySql>>::encode(self.0, buf)
    }
}

impl<'r> sqlx::Decode<'r, sqlx::MySql> for LineKey {
    fn decode(value: sqlx::mysql::MySqlValueRef<'r>) -> Result<Self, sqlx::error::BoxDynError> {
        Ok(Self::from_stored(
            <u64 as sqlx::Decode<sqlx::MySql>>::decode(value)?,
        ))
    }
}

#[cfg(test)]
mod tests {
    use chrono::Duration;

    use super::*;

    #[test]
    fn admission_follows_the_window() {
        let opens = Utc::now();
        let sale = SaleWindow {
            opens_at: Some(opens),
            lottery: LotteryWindow::parse(600).unwrap(),
            presale_starts_at: None,
        };
        let at = |s: i64| sale.admission(opens + Duration::seconds(s));
        assert_eq!(at(-601), Admission::NotYet { opens_at: opens });
        assert_eq!(at(-600), Admission::Lottery { opens_at: opens });
        assert_eq!(at(-1), Admission::Lottery { opens_at: opens });
        assert_eq!(at(0), Admission::Open);
        assert_eq!(SaleWindow::default().admission(opens), Admission::Open);
        let no_lottery = SaleWindow {
            opens_at: Some(opens),
            lottery: LotteryWindow::default(),
            presale_starts_at: None,
        };
        assert_eq!(
            no_lottery.admission(opens - Duration::microseconds(1)),
            Admission::NotYet { opens_at: opens }
        );
    }

    #[test]
    fn a_presale_takes_codes_and_leaves_the_lottery_to_general_sale() {
        let opens = Utc::now();
        let sale = SaleWindow {
            opens_at: Some(opens),
            lottery: LotteryWindow::parse(600).unwrap(),
            presale_starts_at: Some(opens - Duration::seconds(3600)),
        };
        let plain = |s: i64| sale.admission(opens + Duration::seconds(s));
        let coded = |s: i64| sale.admission_with_code(opens + Duration::seconds(s));
        assert_eq!(plain(-3601), Admission::NotYet { opens_at: opens });
        assert_eq!(coded(-3601), Admission::NotYet { opens_at: opens });
        assert_eq!(plain(-3600), Admission::CodeRequired { opens_at: opens });
        assert_eq!(coded(-3600), Admission::Presale);
        assert_eq!(plain(-600), Admission::Lottery { opens_at: opens });
        assert_eq!(coded(-1), Admission::Presale);
        assert_eq!(plain(0), Admission::Open);
        assert_eq!(
            coded(0),
            Admission::Open,
            "after the opening a code changes nothing"
        );
    }

    #[test]
    fn lottery_keys_precede_every_later_request() {
        for _ in 0..1000 {
            let key = LineKey::draw();
            assert!(key.is_lottery());
            assert!(key.place(QueueId(u64::MAX >> 2)) < LineKey::AFTER_OPENING.place(QueueId(1)));
        }
        assert!(
            LineKey::AFTER_OPENING.place(QueueId(7)) < LineKey::AFTER_OPENING.place(QueueId(8))
        );
        assert_eq!(LineKey::from_stored(u64::MAX), LineKey::AFTER_OPENING);
    }

    #[test]
    fn presale_requests_keep_their_order_ahead_of_the_lottery() {
        let presale = LineKey::PRESALE;
        assert!(!presale.is_lottery());
        assert!(presale.place(QueueId(7)) < presale.place(QueueId(8)));
        for _ in 0..1000 {
            let key = LineKey::draw();
            assert!(key >= LineKey::LOTTERY_FLOOR);
            assert!(presale.place(QueueId(u64::MAX >> 3)) < key.place(QueueId(1)));
        }
    }

    #[test]
    fn draws_differ() {
        let keys: std::collections::HashSet<u64> =
            (0..1000).map(|_| LineKey::draw().get()).collect();
        assert_eq!(keys.len(), 1000);
    }

    #[test]
    fn bounds() {
        assert!(LotteryWindow::parse(86_401).is_err());
        assert!(OpensAt::parse("2030-05-01T10:00:00+09:00").is_ok());
        assert!(OpensAt::parse("soon").is_err());
        assert!(OpensAt::parse("0001-01-01T00:00:00Z").is_err());
    }
}
