//! What a seat costs (issue 31, first step): a concert's price categories,
//! each a name, a price in the currency's minor units (no floating point
//! anywhere) and the rows it covers; one currency per concert. A seat's
//! category is its row's; seats of rows no category names go to the first.
//! Its unit tests are in price/tests.rs.

use std::collections::HashSet;

use super::{FieldError, parse_text};

/// An ISO 4217 currency code (upper case), with the number of its minor
/// units' decimals (KRW 0, EUR 2, KWD 3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Currency([u8; 3]);

/// The active ISO 4217 codes (2025, with those being replaced), three
/// letters each.
const ISO_4217: &str = "AED AFN ALL AMD ANG AOA ARS AUD AWG AZN BAM BBD BDT BGN BHD BIF BMD BND \
    BOB BRL BSD BTN BWP BYN BZD CAD CDF CHF CLP CNY COP CRC CUP CVE CZK DJF DKK DOP DZD EGP ERN \
    ETB EUR FJD FKP GBP GEL GHS GIP GMD GNF GTQ GYD HKD HNL HTG HUF IDR ILS INR IQD IRR ISK JMD \
    JOD JPY KES KGS KHR KMF KPW KRW KWD KYD KZT LAK LBP LKR LRD LSL LYD MAD MDL MGA MKD MMK MNT \
    MOP MRU MUR MVR MWK MXN MYR MZN NAD NGN NIO NOK NPR NZD OMR PAB PEN PGK PHP PKR PLN PYG QAR \
    RON RSD RUB RWF SAR SBD SCR SDG SEK SGD SHP SLE SOS SRD SSP STN SVC SYP SZL THB TJS TMT TND \
    TOP TRY TTD TWD TZS UAH UGX USD UYU UZS VED VES VND VUV WST XAF XCD XCG XOF XPF YER ZAR ZMW \
    ZWG ZWL";

/// Codes whose minor unit is the unit itself.
const NO_DECIMALS: &str = "BIF CLP DJF GNF ISK JPY KMF KRW PYG RWF UGX VND VUV XAF XOF XPF";
/// Codes with a thousandth as their minor unit.
const THREE_DECIMALS: &str = "BHD IQD JOD KWD LYD OMR TND";

impl Currency {
    pub fn parse(raw: &str) -> Result<Self, FieldError> {
        let code = raw.trim().to_ascii_uppercase();
        let bytes: [u8; 3] = code
            .as_bytes()
            .try_into()
            .map_err(|_| FieldError::new("currency", "must be a three-letter ISO 4217 code"))?;
        if !ISO_4217.split_whitespace().any(|c| c == code) {
            return Err(FieldError::new(
                "currency",
                format!("{code} is not an ISO 4217 currency"),
            ));
        }
        Ok(Self(bytes))
    }

    /// A code as stored (written only after [`Currency::parse`]).
    pub fn from_stored(code: &str) -> Option<Self> {
        Self::parse(code).ok()
    }

    pub fn as_str(&self) -> &str {
        // Only parsed codes are held: three ASCII letters.
        std::str::from_utf8(&self.0).unwrap_or("XXX")
    }

    /// Decimals of the minor unit: 0, 2 or 3.
    pub fn decimals(&self) -> u32 {
        let code = self.as_str();
        if NO_DECIMALS.split_whitespace().any(|c| c == code) {
            0
        } else if THREE_DECIMALS.split_whitespace().any(|c| c == code) {
            3
        } else {
            2
        }
    }
}

/// An amount in a currency's minor units (cents, won). Bounded so that no
/// order's total can overflow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Amount(u64);

impl Amount {
    /// A hundred billion minor units: far above any ticket, and a total of
    /// any order (at most a hundred seats) still fits in 2^53, so a
    /// JavaScript client reads it exactly.
    pub const MAX: u64 = 100_000_000_000;

    pub fn parse(field: &'static str, minor: u64) -> Result<Self, FieldError> {
        if minor > Self::MAX {
            return Err(FieldError::new(
                field,
                format!("must be at most {} (minor units)", Self::MAX),
            ));
        }
        Ok(Self(minor))
    }

    pub fn from_stored(minor: u64) -> Self {
        Self(minor)
    }

    pub fn get(self) -> u64 {
        self.0
    }

    /// The amount written out for a person in `currency`, its code first
    /// and its minor units as decimals: `KRW 240,000`, `EUR 1,234.50`.
    pub fn display_in(self, currency: Currency) -> String {
        let scale = 10u64.pow(currency.decimals());
        let (units, minor) = (self.0 / scale, self.0 % scale);
        let digits = units.to_string();
        let mut grouped = String::with_capacity(digits.len() + digits.len() / 3);
        for (i, digit) in digits.chars().enumerate() {
            if i > 0 && (digits.len() - i) % 3 == 0 {
                grouped.push(',');
            }
            grouped.push(digit);
        }
        match currency.decimals() {
            0 => format!("{} {grouped}", currency.as_str()),
            d => format!(
                "{} {grouped}.{minor:0width$}",
                currency.as_str(),
                width = d as usize
            ),
        }
    }

    /// The sum of the amounts (never past `u64`: each is bounded).
    pub fn total(amounts: impl IntoIterator<Item = Self>) -> Self {
        Self(
            amounts
                .into_iter()
                .fold(0u64, |sum, a| sum.saturating_add(a.0)),
        )
    }
}

/// A row of seats by its label's letters (`A`, `AB`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RowLabel(String);

impl RowLabel {
    pub fn parse(raw: &str) -> Result<Self, FieldError> {
        let label = raw.trim().to_ascii_uppercase();
        if label.is_empty() || label.len() > 4 || !label.bytes().all(|b| b.is_ascii_uppercase()) {
            return Err(FieldError::new(
                "categories",
                format!("row {raw:?} must be 1 to 4 letters, as in the seat numbers (A, B, AA)"),
            ));
        }
        Ok(Self(label))
    }

    /// The row of a seat number: its leading letters (`AB12` → `AB`);
    /// None for a label that does not start with letters.
    pub fn of_seat(seat_number: &str) -> Option<Self> {
        let letters: String = seat_number
            .chars()
            .take_while(char::is_ascii_alphabetic)
            .collect();
        Self::parse(&letters).ok()
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// One price category as asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CategoryInput<'a> {
    pub name: &'a str,
    pub price: u64,
    pub currency: &'a str,
    pub rows: &'a [String],
    /// "#c0392b"; none: the page's palette.
    pub colour: Option<&'a str>,
}

/// A category: its name, its price, and the rows it names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PriceCategory {
    pub name: String,
    pub price: Amount,
    pub rows: Vec<RowLabel>,
    pub colour: Option<Colour>,
}

/// A colour as the page paints it: `#` and six hex digits, kept lowercase.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Colour(String);

impl Colour {
    pub fn parse(raw: &str) -> Result<Self, FieldError> {
        let raw = raw.trim();
        match raw.strip_prefix('#') {
            Some(hex) if hex.len() == 6 && hex.chars().all(|c| c.is_ascii_hexdigit()) => {
                Ok(Self(raw.to_ascii_lowercase()))
            }
            _ => Err(FieldError::new(
                "categories",
                "a colour is # and six hex digits, such as #c0392b",
            )),
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A concert's categories, in the order given (the first takes the rows no
/// category names), and their one currency.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PriceCategories {
    pub currency: Currency,
    pub categories: Vec<PriceCategory>,
}

impl PriceCategories {
    pub const MAX: usize = 20;
    pub const NAME_CHARS: usize = 40;

    pub fn parse(input: &[CategoryInput<'_>]) -> Result<Self, FieldError> {
        let Some(first) = input.first() else {
            return Err(FieldError::new(
                "categories",
                "must name at least one category",
            ));
        };
        if input.len() > Self::MAX {
            return Err(FieldError::new(
                "categories",
                format!("at most {} categories", Self::MAX),
            ));
        }
        let currency = Currency::parse(first.currency)?;
        let mut names = HashSet::new();
        let mut rows_named = HashSet::new();
        let mut categories = Vec::with_capacity(input.len());
        for category in input {
            if Currency::parse(category.currency)? != currency {
                return Err(FieldError::new(
                    "categories",
                    "every category of a concert has the same currency",
                ));
            }
            let name = parse_text("categories", category.name, Self::NAME_CHARS)?;
            if !names.insert(name.to_lowercase()) {
                return Err(FieldError::new(
                    "categories",
                    format!("the category name {name:?} is given twice"),
                ));
            }
            let mut rows = Vec::with_capacity(category.rows.len());
            for raw in category.rows {
                let row = RowLabel::parse(raw)?;
                if !rows_named.insert(row.clone()) {
                    return Err(FieldError::new(
                        "categories",
                        format!("row {} belongs to two categories", row.as_str()),
                    ));
                }
                rows.push(row);
            }
            categories.push(PriceCategory {
                name,
                price: Amount::parse("categories", category.price)?,
                rows,
                colour: category.colour.map(Colour::parse).transpose()?,
            });
        }
        Ok(Self {
            currency,
            categories,
        })
    }

    /// Whether any seat costs something (then won orders are paid for).
    pub fn is_priced(&self) -> bool {
        self.categories.iter().any(|c| c.price.get() > 0)
    }

    /// A category's name as sent to find one (`field` names it in errors).
    pub fn parse_name(field: &'static str, raw: &str) -> Result<String, FieldError> {
        parse_text(field, raw, Self::NAME_CHARS)
    }

    /// The position of the category named `name` (case-insensitively).
    pub fn position_of(&self, name: &str) -> Option<usize> {
        let wanted = name.trim().to_lowercase();
        self.categories
            .iter()
            .position(|c| c.name.to_lowercase() == wanted)
    }

    /// The price of a seat of the category at `position`.
    pub fn seat_price(&self, position: usize) -> Option<SeatPrice> {
        self.categories.get(position).map(|c| SeatPrice {
            category: c.name.clone(),
            price: c.price,
            currency: self.currency,
        })
    }

    /// The index of the category a seat belongs to, by its row: the one
    /// naming the row, else the first.
    pub fn index_of_seat(&self, seat_number: &str) -> usize {
        let Some(row) = RowLabel::of_seat(seat_number) else {
            return 0;
        };
        self.categories
            .iter()
            .position(|c| c.rows.contains(&row))
            .unwrap_or(0)
    }
}

/// What one seat costs: its category's name and price, in the concert's
/// currency. A claim keeps the one it was decided at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeatPrice {
    pub category: String,
    pub price: Amount,
    pub currency: Currency,
}

impl SeatPrice {
    /// The price of stored columns, all three or none.
    pub fn from_stored(
        category: Option<String>,
        price: Option<u64>,
        currency: Option<&str>,
    ) -> Option<Self> {
        Some(Self {
            category: category?,
            price: Amount::from_stored(price?),
            currency: Currency::from_stored(currency?)?,
        })
    }
}

/// What several seats cost together: the sum and the one currency, or
/// None when a seat has no price (a concert without categories).
pub fn total_of<'a>(
    prices: impl IntoIterator<Item = Option<&'a SeatPrice>>,
) -> Option<(Amount, Currency)> {
    let mut currency = None;
    let mut amounts = Vec::new();
    for price in prices {
        let price = price?;
        if currency.is_some_and(|c| c != price.currency) {
            return None;
        }
        currency = Some(price.currency);
        amounts.push(price.price);
    }
    Some((Amount::total(amounts), currency?))
}

#[cfg(test)]
mod tests;
