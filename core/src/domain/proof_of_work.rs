//! A concert's proof-of-work level: the work a client spends on an ALTCHA
//! PoW v2 challenge (SHA-256, one hash an attempt, deterministic mode: the
//! server draws the counter the client must reach) before a request joins
//! the line. 0 is off; level L draws the counter uniformly in [1, 3W)
//! with W = 500 · 2^(L-1), so a solve takes 1.5 W hashes on average and
//! verifying it takes one. The range starts at the bottom: drawn from
//! [W, 2W), a solver that knew the level started at W and did a third of
//! the work.

use super::FieldError;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProofOfWork(u8);

impl ProofOfWork {
    pub const MOST: u8 = 12;

    pub fn parse(level: u64) -> Result<Self, FieldError> {
        match u8::try_from(level) {
            Ok(level) if level <= Self::MOST => Ok(Self(level)),
            _ => Err(FieldError::new(
                "proofOfWork",
                format!("must be 0 (off) to {}", Self::MOST),
            )),
        }
    }

    /// As stored: the column's CHECK keeps it in range.
    pub fn from_stored(level: u8) -> Self {
        Self(level.min(Self::MOST))
    }

    pub fn get(self) -> u8 {
        self.0
    }

    pub fn is_on(self) -> bool {
        self.0 > 0
    }

    /// The counters a challenge's is drawn from, `[1, 3 · W)`; `None`
    /// when off.
    pub fn counters(self) -> Option<(u32, u32)> {
        let unit = 500u32.checked_shl(u32::from(self.0.checked_sub(1)?))?;
        Some((1, unit.checked_mul(3)?))
    }

    /// Hashes a client spends on average (the table in docs/concepts.md).
    pub fn expected_hashes(self) -> u64 {
        self.counters()
            .map_or(0, |(low, high)| (u64::from(low) + u64::from(high)) / 2)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_double_the_work() {
        assert_eq!(ProofOfWork::parse(0).unwrap().counters(), None);
        assert_eq!(ProofOfWork::parse(1).unwrap().counters(), Some((1, 1500)));
        assert_eq!(ProofOfWork::parse(1).unwrap().expected_hashes(), 750);
        assert_eq!(ProofOfWork::parse(6).unwrap().expected_hashes(), 24_000);
        assert_eq!(ProofOfWork::parse(12).unwrap().expected_hashes(), 1_536_000);
        assert!(ProofOfWork::parse(13).is_err());
    }

    /// Knowing the level does not let a solver skip work: at every level
    /// the draw starts at the first counter, so starting anywhere else
    /// misses challenges, and the average is the documented 1.5 W.
    #[test]
    fn no_counter_is_ruled_out_by_the_level() {
        for level in 1..=ProofOfWork::MOST {
            let pow = ProofOfWork::parse(u64::from(level)).unwrap();
            let (low, high) = pow.counters().unwrap();
            let unit = 500u64 << (level - 1);
            assert_eq!(low, 1, "level {level}");
            assert_eq!(u64::from(high), 3 * unit, "level {level}");
            assert_eq!(pow.expected_hashes(), unit * 3 / 2, "level {level}");
        }
    }
}
