//! Presale access codes: 16 characters of Crockford's base32 (80 random
//! bits), shown in groups of four. People type them from a mail or a
//! screenshot, so case, dashes and spaces do not matter, and the letters
//! that look like digits read as those digits. Only a code's SHA-256 is
//! stored: with 80 random bits, a plain hash cannot be reversed by trying.

use sha2::{Digest, Sha256};

use super::FieldError;

/// Crockford's alphabet: no I, L, O or U.
const ALPHABET: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";

#[derive(Clone, PartialEq, Eq)]
pub struct AccessCode([u8; AccessCode::LEN]);

impl std::fmt::Debug for AccessCode {
    /// Never the code itself: it is a secret until it is used.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AccessCode(…)")
    }
}

impl AccessCode {
    pub const LEN: usize = 16;
    /// Longer input is not a code, however it is spaced.
    pub const MAX_INPUT: usize = 64;

    pub fn generate() -> Result<Self, getrandom::Error> {
        let mut bytes = [0u8; Self::LEN];
        getrandom::getrandom(&mut bytes)?;
        Ok(Self(bytes.map(|b| ALPHABET[usize::from(b & 31)])))
    }

    /// The code someone typed, or an error when it cannot be one (too
    /// long, or not 16 characters of the alphabet once dashes and spaces
    /// are dropped).
    pub fn parse(raw: &str) -> Result<Self, FieldError> {
        let invalid = || FieldError::new("accessCode", "is not an access code");
        if raw.len() > Self::MAX_INPUT {
            return Err(invalid());
        }
        let mut code = [0u8; Self::LEN];
        let mut n = 0;
        for c in raw.bytes().filter(|c| !matches!(c, b'-' | b' ')) {
            let c = match c.to_ascii_uppercase() {
                b'O' => b'0',
                b'I' | b'L' => b'1',
                c => c,
            };
            if n == Self::LEN || !ALPHABET.contains(&c) {
                return Err(invalid());
            }
            code[n] = c;
            n += 1;
        }
        if n < Self::LEN {
            return Err(invalid());
        }
        Ok(Self(code))
    }

    pub fn hash(&self) -> [u8; 32] {
        Sha256::digest(self.0).into()
    }

    /// As it is handed out: `ABCD-EFGH-JKMN-PQRS`.
    pub fn shown(&self) -> String {
        self.0
            .chunks(4)
            .map(|group| String::from_utf8_lossy(group).into_owned())
            .collect::<Vec<_>>()
            .join("-")
    }
}

/// A batch of codes an admin asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CodeBatch {
    pub count: u32,
    /// Requests one code may have open or won at a time.
    pub uses_per_code: u16,
    /// Seats over all of a code's open and won requests.
    pub seats_per_code: u16,
}

impl CodeBatch {
    pub const MAX_COUNT: u32 = 10_000;
    pub const MAX_PER_CODE: u16 = 1_000;

    pub fn parse(
        count: u64,
        uses_per_code: u64,
        seats_per_code: u64,
    ) -> Result<Self, Vec<FieldError>> {
        let mut errors = Vec::new();
        let count = u32::try_from(count)
            .ok()
            .filter(|n| (1..=Self::MAX_COUNT).contains(n));
        if count.is_none() {
            errors.push(FieldError::new(
                "count",
                format!("must be 1 to {}", Self::MAX_COUNT),
            ));
        }
        let per_code = |n: u64, field: &'static str, errors: &mut Vec<FieldError>| {
            let n = u16::try_from(n)
                .ok()
                .filter(|n| (1..=Self::MAX_PER_CODE).contains(n));
            if n.is_none() {
                errors.push(FieldError::new(
                    field,
                    format!("must be 1 to {}", Self::MAX_PER_CODE),
                ));
            }
            n
        };
        let uses = per_code(uses_per_code, "usesPerCode", &mut errors);
        let seats = per_code(seats_per_code, "seatsPerCode", &mut errors);
        match (count, uses, seats) {
            (Some(count), Some(uses_per_code), Some(seats_per_code)) => Ok(Self {
                count,
                uses_per_code,
                seats_per_code,
            }),
            _ => Err(errors),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_generated_code_reads_back_however_it_is_typed() {
        let code = AccessCode::generate().unwrap();
        let shown = code.shown();
        assert_eq!(shown.len(), 19);
        assert_eq!(AccessCode::parse(&shown).unwrap(), code);
        assert_eq!(AccessCode::parse(&shown.to_lowercase()).unwrap(), code);
        assert_eq!(AccessCode::parse(&shown.replace('-', " ")).unwrap(), code);
        assert_eq!(
            AccessCode::parse("0OIL-1111-2222-3333").unwrap(),
            AccessCode::parse("0011-1111-2222-3333").unwrap(),
            "letters that look like digits read as them"
        );
        assert_ne!(AccessCode::generate().unwrap(), code);
    }

    #[test]
    fn what_cannot_be_a_code_is_refused() {
        for bad in [
            "",
            "ABCD",
            "ABCD-EFGH-JKMN-PQRS-T",
            "ABCD-EFGH-JKMN-PQR!",
            "ÄBCD-EFGH-JKMN-PQRS",
            &"-".repeat(65),
        ] {
            assert!(AccessCode::parse(bad).is_err(), "{bad:?}");
        }
        assert!(format!("{:?}", AccessCode::generate().unwrap()).contains('…'));
    }

    #[test]
    fn a_batch_is_bounded() {
        assert!(CodeBatch::parse(1, 1, 1).is_ok());
        assert!(CodeBatch::parse(10_000, 1_000, 1_000).is_ok());
        assert_eq!(CodeBatch::parse(0, 0, 1_001).unwrap_err().len(), 3);
    }
}
