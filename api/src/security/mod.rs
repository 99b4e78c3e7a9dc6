//! Credentials: Argon2id password hashes and signed bearer tokens.

mod password;
mod token;

pub use password::PasswordHasher;
pub use token::{IssuedToken, Principal, TokenError, TokenKeys};
