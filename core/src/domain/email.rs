//! A user's mail address, as the box office accepts it: what a browser's
//! `<input type="email">` accepts (the WHATWG "valid e-mail address"), with
//! a domain of at least two labels (mail is delivered over the Internet,
//! not to `localhost`), at most 254 characters (RFC 5321's path limit less
//! its brackets) and a local part of at most 64. The domain is lower-cased
//! (domains are case-insensitive; local parts may not be).

use super::FieldError;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmailAddress(String);

impl EmailAddress {
    pub const MAX_CHARS: usize = 254;
    const MAX_LOCAL: usize = 64;
    const MAX_LABEL: usize = 63;

    pub fn parse(raw: &str) -> Result<Self, FieldError> {
        let invalid = |why: &str| FieldError::new("email", why.to_owned());
        let address = raw.trim();
        if address.is_empty() {
            return Err(invalid("must not be empty"));
        }
        if address.len() > Self::MAX_CHARS {
            return Err(invalid("must be at most 254 characters"));
        }
        let Some((local, domain)) = address.rsplit_once('@') else {
            return Err(invalid("must be an address like name@example.com"));
        };
        if local.is_empty() || local.len() > Self::MAX_LOCAL || !local.chars().all(local_char) {
            return Err(invalid(
                "the part before @ must be 1–64 letters, digits or .!#$%&'*+/=?^_`{|}~-",
            ));
        }
        let labels: Vec<&str> = domain.split('.').collect();
        if labels.len() < 2 || !labels.iter().all(|label| valid_label(label)) {
            return Err(invalid(
                "the part after @ must be a domain name like example.com",
            ));
        }
        Ok(Self(format!("{local}@{}", domain.to_ascii_lowercase())))
    }

    /// An address read back from the database (written by `parse`).
    pub fn from_stored(address: String) -> Self {
        Self(address)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The part after the `@`.
    pub fn domain(&self) -> &str {
        self.0.rsplit_once('@').map_or("", |(_, domain)| domain)
    }
}

fn local_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || "!#$%&'*+/=?^_`{|}~.-".contains(c)
}

fn valid_label(label: &str) -> bool {
    let bytes = label.as_bytes();
    !label.is_empty()
        && label.len() <= EmailAddress::MAX_LABEL
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || *b == b'-')
        && bytes.first() != Some(&b'-')
        && bytes.last() != Some(&b'-')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordinary_addresses_are_accepted_with_the_domain_lower_cased() {
        for (raw, kept) in [
            ("fan@example.com", "fan@example.com"),
            (
                "  Fan.Name+tickets@Mail.Example.COM ",
                "Fan.Name+tickets@mail.example.com",
            ),
            (
                "o'brien@xn--bcher-kva.example",
                "o'brien@xn--bcher-kva.example",
            ),
            ("a@b.co", "a@b.co"),
        ] {
            assert_eq!(EmailAddress::parse(raw).unwrap().as_str(), kept, "{raw}");
        }
        assert_eq!(
            EmailAddress::parse("x@Tickets.Example").unwrap().domain(),
            "tickets.example"
        );
    }

    #[test]
    fn what_cannot_be_delivered_is_refused() {
        for raw in [
            "",
            "fan",
            "fan@",
            "@example.com",
            "fan@localhost",
            "fan@example..com",
            "fan@-example.com",
            "fan@example-.com",
            "fan name@example.com",
            "fan@exa mple.com",
            "\"quoted\"@example.com",
            "fan@example.com\r\nBcc: victim@example.com",
            "fän@example.com",
            "fan@[127.0.0.1]",
        ] {
            let refused = EmailAddress::parse(raw);
            assert!(refused.is_err(), "{raw:?} was accepted");
            assert_eq!(refused.unwrap_err().field, "email");
        }
    }

    #[test]
    fn lengths_are_bounded() {
        let local = "l".repeat(64);
        assert!(EmailAddress::parse(&format!("{local}@example.com")).is_ok());
        assert!(EmailAddress::parse(&format!("{local}l@example.com")).is_err());
        let label = "d".repeat(63);
        assert!(EmailAddress::parse(&format!("fan@{label}.com")).is_ok());
        assert!(EmailAddress::parse(&format!("fan@{label}d.com")).is_err());
        let long = format!("fan@{}.com", vec!["d".repeat(60); 5].join("."));
        assert!(long.len() > 254);
        assert!(EmailAddress::parse(&long).is_err());
    }
}
