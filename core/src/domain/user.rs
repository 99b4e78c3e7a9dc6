use super::{FieldError, char_len, parse_text};

/// A user's public name: 1–50 characters after trimming.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NickName(String);

impl NickName {
    pub const MAX_CHARS: usize = 50;

    pub fn parse(raw: &str) -> Result<Self, FieldError> {
        parse_text("nickName", raw, Self::MAX_CHARS).map(Self)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A plaintext password on its way to the hasher: 8–128 characters, taken
/// exactly as typed (no trimming: spaces are legitimate password characters).
#[derive(Clone, PartialEq, Eq)]
pub struct Password(String);

impl Password {
    pub const MIN_CHARS: usize = 8;
    pub const MAX_CHARS: usize = 128;

    pub fn parse(raw: &str) -> Result<Self, FieldError> {
        let len = char_len(raw);
        if len < Self::MIN_CHARS {
            return Err(FieldError::new(
                "password",
                format!("must be at least {} characters", Self::MIN_CHARS),
            ));
        }
        if len > Self::MAX_CHARS {
            return Err(FieldError::new(
                "password",
                format!("must be at most {} characters", Self::MAX_CHARS),
            ));
        }
        Ok(Self(raw.to_owned()))
    }

    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Why this is too weak for an administrator account (which can create
    /// and delete concerts and see every request), if it is: shorter than 16
    /// characters, fewer than 8 different characters, or containing the
    /// account's nickname.
    pub fn weakness_for_admin(&self, nickname: &NickName) -> Option<&'static str> {
        let chars: Vec<char> = self.0.chars().collect();
        let distinct: std::collections::HashSet<&char> = chars.iter().collect();
        if chars.len() < 16 {
            Some("shorter than 16 characters")
        } else if distinct.len() < 8 {
            Some("fewer than 8 different characters")
        } else if self
            .0
            .to_lowercase()
            .contains(&nickname.as_str().to_lowercase())
        {
            Some("contains the nickname")
        } else {
            None
        }
    }
}

// Never print a password, not even in debug output.
impl std::fmt::Debug for Password {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Password(***)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn admin_passwords_must_be_long_varied_and_not_the_nickname() {
        let nick = NickName::parse("Root").unwrap();
        let weakness = |p: &str| Password::parse(p).unwrap().weakness_for_admin(&nick);
        assert_eq!(
            weakness("admin-password"),
            Some("shorter than 16 characters")
        );
        assert_eq!(
            weakness("aaaaaaaabbbbbbbbcccc"),
            Some("fewer than 8 different characters")
        );
        assert_eq!(
            weakness("my-ROOT-password-2026"),
            Some("contains the nickname")
        );
        assert_eq!(weakness("0f3a9c4e7b21d8e65a4c"), None);
        assert_eq!(weakness("correct horse battery staple"), None);
    }

    #[test]
    fn nickname_is_trimmed_and_bounded_in_characters() {
        assert_eq!(NickName::parse("  alice ").unwrap().as_str(), "alice");
        assert!(NickName::parse("   ").is_err());
        assert!(NickName::parse("").is_err());
        assert!(
            NickName::parse(&"가".repeat(50)).is_ok(),
            "50 multibyte characters fit"
        );
        assert!(NickName::parse(&"가".repeat(51)).is_err());
        assert!(NickName::parse("bad\u{0}name").is_err());
        assert!(NickName::parse("line\nbreak").is_err());
    }

    #[test]
    fn password_length_is_checked_in_characters_without_trimming() {
        assert!(Password::parse("1234567").is_err());
        assert!(Password::parse("12345678").is_ok());
        assert!(Password::parse("        ").is_ok(), "spaces are characters");
        assert!(Password::parse(&"p".repeat(128)).is_ok());
        assert!(Password::parse(&"p".repeat(129)).is_err());
        assert_eq!(
            format!("{:?}", Password::parse("secret-pass").unwrap()),
            "Password(***)"
        );
    }
}
