//! A concert's time zone: where its venue is, so that its date and its
//! sale's times are shown in the venue's time whatever the viewer's.

use std::str::FromStr as _;

use chrono::{DateTime, Utc};
use chrono_tz::Tz;

use super::FieldError;

/// An IANA time zone (`Asia/Seoul`), as the tz database names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VenueTimeZone(Tz);

impl VenueTimeZone {
    pub const UTC: Self = Self(Tz::UTC);

    pub fn parse(name: &str) -> Result<Self, FieldError> {
        Tz::from_str(name.trim()).map(Self).map_err(|_| {
            FieldError::new(
                "timeZone",
                "must be an IANA time zone such as Asia/Seoul or Europe/Berlin",
            )
        })
    }

    /// As stored: a name that is no zone (none is written) reads as UTC.
    pub fn from_stored(name: &str) -> Self {
        Self::parse(name).unwrap_or(Self::UTC)
    }

    pub fn name(self) -> &'static str {
        self.0.name()
    }

    /// `at` in the venue's time, as a letter writes it ("Sun 9 Sep 2029,
    /// 18:00 KST").
    pub fn show(self, at: DateTime<Utc>) -> String {
        at.with_timezone(&self.0)
            .format("%a %-d %b %Y, %H:%M %Z")
            .to_string()
    }

    /// The wall time `at` shows at the venue.
    pub fn local(self, at: DateTime<Utc>) -> chrono::NaiveDateTime {
        at.with_timezone(&self.0).naive_local()
    }

    /// The zone's abbreviation at `at` ("KST"; "CET" or "CEST" by the
    /// season); "+04" where the tz database has none.
    pub fn abbreviation_at(self, at: DateTime<Utc>) -> String {
        at.with_timezone(&self.0).format("%Z").to_string()
    }
}

impl Default for VenueTimeZone {
    fn default() -> Self {
        Self::UTC
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_zone_is_named_as_the_tz_database_names_it() {
        let seoul = VenueTimeZone::parse("Asia/Seoul").unwrap();
        assert_eq!(seoul.name(), "Asia/Seoul");
        assert!(VenueTimeZone::parse("Seoul").is_err());
        assert!(VenueTimeZone::parse("").is_err());
        assert_eq!(VenueTimeZone::from_stored("nowhere"), VenueTimeZone::UTC);
    }

    #[test]
    fn the_abbreviation_follows_the_season() {
        let at = |s: &str| DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc);
        let seoul = VenueTimeZone::parse("Asia/Seoul").unwrap();
        assert_eq!(seoul.abbreviation_at(at("2030-09-09T09:00:00Z")), "KST");
        let berlin = VenueTimeZone::parse("Europe/Berlin").unwrap();
        assert_eq!(berlin.abbreviation_at(at("2030-01-09T09:00:00Z")), "CET");
        assert_eq!(berlin.abbreviation_at(at("2030-07-09T09:00:00Z")), "CEST");
        assert_eq!(
            seoul.show(at("2030-09-09T09:00:00Z")),
            "Mon 9 Sep 2030, 18:00 KST"
        );
        assert_eq!(
            VenueTimeZone::UTC.show(at("2030-09-09T09:00:00Z")),
            "Mon 9 Sep 2030, 09:00 UTC"
        );
    }
}
