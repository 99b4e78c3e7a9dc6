use chrono::{DateTime, Datelike, SubsecRound, Utc};

use super::{FieldError, SeatNumber, parse_text};

/// A concert's title: 1–200 characters after trimming.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConcertTitle(String);

impl ConcertTitle {
    pub fn parse(raw: &str) -> Result<Self, FieldError> {
        parse_text("title", raw, 200).map(Self)
    }
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Where a concert takes place: 1–200 characters after trimming.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Venue(String);

impl Venue {
    pub fn parse(raw: &str) -> Result<Self, FieldError> {
        parse_text("venue", raw, 200).map(Self)
    }
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// When a concert starts: an RFC 3339 instant in the future, kept in UTC at
/// the database's microsecond precision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConcertDate(DateTime<Utc>);

impl ConcertDate {
    pub fn parse(raw: &str, now: DateTime<Utc>) -> Result<Self, FieldError> {
        let parsed = DateTime::parse_from_rfc3339(raw.trim()).map_err(|_| {
            FieldError::new(
                "concertDate",
                "must be an RFC 3339 date-time such as 2030-05-01T19:00:00+09:00",
            )
        })?;
        let utc = parsed.with_timezone(&Utc).trunc_subsecs(6);
        if utc <= now {
            return Err(FieldError::new("concertDate", "must be in the future"));
        }
        // DATETIME stops at 9999-12-31.
        if utc.year() > 9999 {
            return Err(FieldError::new(
                "concertDate",
                "must be before the year 10000",
            ));
        }
        Ok(Self(utc))
    }

    pub fn get(self) -> DateTime<Utc> {
        self.0
    }
}

/// The seats a new concert starts with: `rows` rows lettered A…Z, AA, AB…
/// with `seats_per_row` seats each, numbered from 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SeatLayout {
    rows: u32,
    seats_per_row: u32,
}

impl SeatLayout {
    pub const MAX_SEATS: u32 = 100_000;
    /// The original's layout: one row, A1…A100.
    pub const DEFAULT: Self = Self {
        rows: 1,
        seats_per_row: 100,
    };

    pub fn parse(rows: Option<u32>, seats_per_row: Option<u32>) -> Result<Self, FieldError> {
        if rows.is_none() && seats_per_row.is_none() {
            return Ok(Self::DEFAULT);
        }
        let rows = rows.unwrap_or(1);
        let seats_per_row = seats_per_row.unwrap_or(Self::DEFAULT.seats_per_row);
        if rows == 0 {
            return Err(FieldError::new("rows", "must be at least 1"));
        }
        if seats_per_row == 0 {
            return Err(FieldError::new("seatsPerRow", "must be at least 1"));
        }
        if u64::from(rows) * u64::from(seats_per_row) > u64::from(Self::MAX_SEATS) {
            return Err(FieldError::new(
                "seatsPerRow",
                format!("rows × seatsPerRow must be at most {}", Self::MAX_SEATS),
            ));
        }
        Ok(Self {
            rows,
            seats_per_row,
        })
    }

    pub fn seat_count(self) -> u32 {
        self.rows * self.seats_per_row
    }

    /// Every seat number of the layout, row by row.
    pub fn seat_numbers(self) -> impl Iterator<Item = SeatNumber> {
        self.seats().map(|s| s.number)
    }

    /// Every seat of the layout, row by row, where it is: row A is the
    /// front, and a row's centre is its best.
    pub fn seats(self) -> impl Iterator<Item = GridSeat> {
        (0..self.rows).flat_map(move |row| {
            let label = row_label(row);
            (0..self.seats_per_row).map(move |position| GridSeat {
                number: SeatNumber::from_generated(format!("{label}{}", position + 1)),
                row,
                position,
                rank: super::allocation::best::grid_rank(row, position, self.seats_per_row),
            })
        })
    }
}

/// A seat of rows × seatsPerRow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GridSeat {
    pub number: SeatNumber,
    pub row: u32,
    pub position: u32,
    pub rank: u32,
}

/// Bijective base-26: 0 → A, 25 → Z, 26 → AA, 701 → ZZ, 702 → AAA.
fn row_label(mut index: u32) -> String {
    let mut letters = Vec::new();
    loop {
        letters.push(b'A' + (index % 26) as u8);
        if index < 26 {
            break;
        }
        index = index / 26 - 1;
    }
    letters.reverse();
    String::from_utf8_lossy(&letters).into_owned()
}

#[cfg(test)]
mod tests {
    use chrono::Duration;

    use super::*;

    #[test]
    fn row_labels_continue_past_z() {
        let labels: Vec<_> = [0, 1, 25, 26, 27, 51, 52, 701, 702].map(row_label).into();
        assert_eq!(labels, ["A", "B", "Z", "AA", "AB", "AZ", "BA", "ZZ", "AAA"]);
    }

    #[test]
    fn default_layout_is_a1_to_a100() {
        let layout = SeatLayout::parse(None, None).unwrap();
        let numbers: Vec<_> = layout
            .seat_numbers()
            .map(|s| s.as_str().to_owned())
            .collect();
        assert_eq!(numbers.len(), 100);
        assert_eq!(numbers.first().map(String::as_str), Some("A1"));
        assert_eq!(numbers.last().map(String::as_str), Some("A100"));
    }

    #[test]
    fn layout_bounds() {
        assert_eq!(
            SeatLayout::parse(Some(3), Some(4)).unwrap().seat_count(),
            12
        );
        assert_eq!(SeatLayout::parse(Some(2), None).unwrap().seat_count(), 200);
        assert_eq!(SeatLayout::parse(None, Some(7)).unwrap().seat_count(), 7);
        assert!(SeatLayout::parse(Some(0), Some(10)).is_err());
        assert!(SeatLayout::parse(Some(10), Some(0)).is_err());
        assert!(SeatLayout::parse(Some(100), Some(1000)).is_ok());
        assert!(SeatLayout::parse(Some(100), Some(1001)).is_err());
        assert!(
            SeatLayout::parse(Some(u32::MAX), Some(u32::MAX)).is_err(),
            "no overflow"
        );
        let wide = SeatLayout::parse(Some(30), Some(2)).unwrap();
        let last: Vec<_> = wide
            .seat_numbers()
            .skip(58)
            .map(|s| s.as_str().to_owned())
            .collect();
        assert_eq!(last, ["AD1", "AD2"]);
    }

    #[test]
    fn concert_date_must_be_future_rfc3339() {
        let now = Utc::now();
        let future = (now + Duration::days(30)).to_rfc3339();
        assert!(ConcertDate::parse(&future, now).is_ok());
        let past = (now - Duration::seconds(1)).to_rfc3339();
        assert!(ConcertDate::parse(&past, now).is_err());
        assert!(
            ConcertDate::parse("2030-05-01", now).is_err(),
            "a date alone is not an instant"
        );
        assert!(ConcertDate::parse("tomorrow", now).is_err());
        let seoul = ConcertDate::parse("2099-05-01T19:00:00+09:00", now).unwrap();
        assert_eq!(seoul.get().to_rfc3339(), "2099-05-01T10:00:00+00:00");
    }

    #[test]
    fn titles_and_venues_are_trimmed_and_bounded() {
        assert_eq!(
            ConcertTitle::parse(" IU Live ").unwrap().as_str(),
            "IU Live"
        );
        assert!(ConcertTitle::parse(&"x".repeat(201)).is_err());
        assert!(Venue::parse("").is_err());
    }
}
