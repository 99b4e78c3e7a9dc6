//! Ticket codes (issue 31): compact, self-verifying, URL-safe. A scanner
//! that has the concert's public keys verifies a code with no network, as
//! pretix's `pretix_sig1` secrets are verified by pretixSCAN.
//!
//! The layout (documented for scanner authors in docs/concepts.md, "Ticket
//! codes"), big-endian, then base64url without padding:
//!
//! | bytes  | field                                                    |
//! |--------|----------------------------------------------------------|
//! | 0      | format version, 1                                        |
//! | 1–4    | key id: the first 4 bytes of SHA-256(raw public key)     |
//! | 5–12   | ticket id (u64)                                          |
//! | 13–20  | concert id (u64)                                         |
//! | 21–28  | seat id (u64)                                            |
//! | 29–32  | ticket version (u32; a reissue raises it)                |
//! | 33–96  | Ed25519 signature (RFC 8032) of bytes 0–32               |
//!
//! 97 bytes, 130 characters.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ed25519_dalek::{Signature, Signer as _, SigningKey, Verifier as _, VerifyingKey};
use sha2::{Digest as _, Sha256};

use super::{ConcertId, SeatId, TicketId};

pub const FORMAT: u8 = 1;
const SIGNED_LEN: usize = 33;
pub const CODE_LEN: usize = SIGNED_LEN + 64;

/// What a code says: which ticket, of which concert and seat, which issue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TicketIdentity {
    pub ticket: TicketId,
    pub concert: ConcertId,
    pub seat: SeatId,
    pub version: u32,
}

impl TicketIdentity {
    fn signed_bytes(&self, key: KeyId) -> [u8; SIGNED_LEN] {
        let mut bytes = [0u8; SIGNED_LEN];
        bytes[0] = FORMAT;
        bytes[1..5].copy_from_slice(&key.0);
        bytes[5..13].copy_from_slice(&self.ticket.get().to_be_bytes());
        bytes[13..21].copy_from_slice(&self.concert.get().to_be_bytes());
        bytes[21..29].copy_from_slice(&self.seat.get().to_be_bytes());
        bytes[29..33].copy_from_slice(&self.version.to_be_bytes());
        bytes
    }
}

/// A public key's short name: its SHA-256's first four bytes, as 8 hex
/// digits in the keys document.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct KeyId([u8; 4]);

impl KeyId {
    pub fn of(key: &VerifyingKey) -> Self {
        let digest = Sha256::digest(key.as_bytes());
        Self([digest[0], digest[1], digest[2], digest[3]])
    }

    pub fn hex(&self) -> String {
        self.0.iter().map(|b| format!("{b:02x}")).collect()
    }
}

/// Why a code is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum CodeError {
    #[error("the code is not a ticket code (not base64url of the right length)")]
    Malformed,
    #[error("the code's format version is unknown")]
    UnknownFormat,
    #[error("the code was signed by a key this concert does not have")]
    UnknownKey,
    #[error("the code's signature does not verify")]
    BadSignature,
}

/// The keys tickets are signed with: the first signs new codes, every one
/// verifies (a rotation adds a key in front and keeps the old ones until
/// their tickets have been used).
#[derive(Clone)]
pub struct TicketKeys {
    keys: Vec<(KeyId, SigningKey)>,
}

impl std::fmt::Debug for TicketKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ids: Vec<String> = self.keys.iter().map(|(id, _)| id.hex()).collect();
        f.debug_struct("TicketKeys").field("ids", &ids).finish()
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeysError {
    #[error("no ticket signing key: one base64url 32-byte seed per line")]
    Empty,
    #[error("line {0}: not a base64url 32-byte Ed25519 seed")]
    BadKey(usize),
}

impl TicketKeys {
    /// Keys as a secret file holds them: one base64url (or base64) 32-byte
    /// seed per line, the signing one first; blank lines and `#` comments
    /// are skipped.
    pub fn parse(text: &str) -> Result<Self, KeysError> {
        let mut keys = Vec::new();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let normalized: String = line
                .trim_end_matches('=')
                .chars()
                .map(|c| match c {
                    '+' => '-',
                    '/' => '_',
                    c => c,
                })
                .collect();
            let seed: [u8; 32] = URL_SAFE_NO_PAD
                .decode(normalized)
                .ok()
                .and_then(|bytes| bytes.try_into().ok())
                .ok_or(KeysError::BadKey(n + 1))?;
            let key = SigningKey::from_bytes(&seed);
            keys.push((KeyId::of(&key.verifying_key()), key));
        }
        if keys.is_empty() {
            return Err(KeysError::Empty);
        }
        Ok(Self { keys })
    }

    /// A new seed, as a line of a keys file.
    pub fn generate_line() -> Result<String, getrandom::Error> {
        let mut seed = [0u8; 32];
        getrandom::getrandom(&mut seed)?;
        Ok(URL_SAFE_NO_PAD.encode(seed))
    }

    /// The code of a ticket, signed with the first key.
    pub fn sign(&self, ticket: &TicketIdentity) -> String {
        let (id, key) = &self.keys[0];
        let signed = ticket.signed_bytes(*id);
        let signature = key.sign(&signed);
        let mut code = Vec::with_capacity(CODE_LEN);
        code.extend_from_slice(&signed);
        code.extend_from_slice(&signature.to_bytes());
        URL_SAFE_NO_PAD.encode(code)
    }

    /// What a code says, if one of the keys signed it.
    pub fn verify(&self, code: &str) -> Result<TicketIdentity, CodeError> {
        let bytes = URL_SAFE_NO_PAD
            .decode(code.trim())
            .map_err(|_| CodeError::Malformed)?;
        if bytes.len() != CODE_LEN {
            return Err(CodeError::Malformed);
        }
        if bytes[0] != FORMAT {
            return Err(CodeError::UnknownFormat);
        }
        let id = KeyId([bytes[1], bytes[2], bytes[3], bytes[4]]);
        let (_, key) = self
            .keys
            .iter()
            .find(|(k, _)| *k == id)
            .ok_or(CodeError::UnknownKey)?;
        let signature =
            Signature::from_slice(&bytes[SIGNED_LEN..]).map_err(|_| CodeError::BadSignature)?;
        key.verifying_key()
            .verify(&bytes[..SIGNED_LEN], &signature)
            .map_err(|_| CodeError::BadSignature)?;
        let u64_at = |at: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&bytes[at..at + 8]);
            u64::from_be_bytes(b)
        };
        let mut version = [0u8; 4];
        version.copy_from_slice(&bytes[29..33]);
        Ok(TicketIdentity {
            ticket: TicketId(u64_at(5)),
            concert: ConcertId(u64_at(13)),
            seat: SeatId(u64_at(21)),
            version: u32::from_be_bytes(version),
        })
    }

    /// Every public key: (key id in hex, raw 32 bytes in base64url).
    pub fn public_keys(&self) -> Vec<(String, String)> {
        self.keys
            .iter()
            .map(|(id, key)| {
                (
                    id.hex(),
                    URL_SAFE_NO_PAD.encode(key.verifying_key().as_bytes()),
                )
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEED_A: &str = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8";
    const SEED_B: &str = "HxweHRwbGhkYFxYVFBMSERAPDg0MCwoJCAcGBQQDAgE";

    fn ticket() -> TicketIdentity {
        TicketIdentity {
            ticket: TicketId(4_242),
            concert: ConcertId(7),
            seat: SeatId(123_456),
            version: 2,
        }
    }

    #[test]
    fn a_signed_code_verifies_to_what_it_says_and_is_compact() {
        let keys = TicketKeys::parse(SEED_A).unwrap();
        let code = keys.sign(&ticket());
        assert_eq!(code.len(), 130);
        assert!(
            code.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        );
        assert_eq!(keys.verify(&code), Ok(ticket()));
        // Deterministic (RFC 8032): the same ticket, the same code.
        assert_eq!(keys.sign(&ticket()), code);
    }

    #[test]
    fn a_changed_byte_or_another_key_is_refused() {
        let keys = TicketKeys::parse(SEED_A).unwrap();
        let code = keys.sign(&ticket());
        let mut bytes = URL_SAFE_NO_PAD.decode(&code).unwrap();
        bytes[20] ^= 1; // another concert
        assert_eq!(
            keys.verify(&URL_SAFE_NO_PAD.encode(&bytes)),
            Err(CodeError::BadSignature)
        );
        bytes[20] ^= 1;
        bytes[0] = 9;
        assert_eq!(
            keys.verify(&URL_SAFE_NO_PAD.encode(&bytes)),
            Err(CodeError::UnknownFormat)
        );
        let other = TicketKeys::parse(SEED_B).unwrap();
        assert_eq!(other.verify(&code), Err(CodeError::UnknownKey));
        for junk in ["", "abc", "!!!!", &code[..129]] {
            assert_eq!(keys.verify(junk), Err(CodeError::Malformed), "{junk:?}");
        }
    }

    #[test]
    fn a_rotation_signs_with_the_new_key_and_still_verifies_the_old_codes() {
        let old = TicketKeys::parse(SEED_A).unwrap();
        let issued = old.sign(&ticket());
        let rotated = TicketKeys::parse(&format!("# new first\n{SEED_B}\n\n{SEED_A}\n")).unwrap();
        assert_eq!(rotated.verify(&issued), Ok(ticket()));
        let new = rotated.sign(&ticket());
        assert_ne!(new, issued);
        assert_eq!(rotated.verify(&new), Ok(ticket()));
        assert_eq!(old.verify(&new), Err(CodeError::UnknownKey));
        assert_eq!(rotated.public_keys().len(), 2);
        assert_eq!(rotated.public_keys()[1], old.public_keys()[0]);
    }

    #[test]
    fn bad_key_files_say_which_line() {
        assert_eq!(
            TicketKeys::parse("# nothing\n").map(|_| ()),
            Err(KeysError::Empty)
        );
        assert_eq!(
            TicketKeys::parse(&format!("{SEED_A}\nshort\n")).map(|_| ()),
            Err(KeysError::BadKey(2))
        );
        let line = TicketKeys::generate_line().unwrap();
        assert!(TicketKeys::parse(&line).is_ok());
    }
}
