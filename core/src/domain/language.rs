//! The languages the box office speaks: its page and the mail it sends.

use super::FieldError;

/// A language of the page's catalogues and of the mail.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Language {
    #[default]
    English,
    Korean,
}

impl Language {
    /// The BCP 47 code ("en", "ko"), as the API and the page name it.
    pub fn parse(code: &str) -> Result<Self, FieldError> {
        match code.trim().to_ascii_lowercase().as_str() {
            "en" => Ok(Self::English),
            "ko" => Ok(Self::Korean),
            _ => Err(FieldError::new("language", "must be \"en\" or \"ko\"")),
        }
    }

    /// As stored: anything else (none is written) reads as English.
    pub fn from_stored(code: &str) -> Self {
        Self::parse(code).unwrap_or_default()
    }

    pub fn code(self) -> &'static str {
        match self {
            Self::English => "en",
            Self::Korean => "ko",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_language_is_its_code_in_any_case_and_nothing_else() {
        assert_eq!(Language::parse("ko"), Ok(Language::Korean));
        assert_eq!(Language::parse(" EN "), Ok(Language::English));
        assert_eq!(Language::parse("fr").unwrap_err().field, "language");
        assert_eq!(Language::parse("").unwrap_err().field, "language");
        assert_eq!(Language::from_stored("??"), Language::English);
        for language in [Language::English, Language::Korean] {
            assert_eq!(Language::parse(language.code()), Ok(language));
        }
    }
}
