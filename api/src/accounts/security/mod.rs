//! Credentials: Argon2id password hashes and signed bearer tokens.

mod password;
pub mod revocations;
mod token;

pub use password::PasswordHasher;
pub use revocations::Revocations;
pub use token::{IssuedToken, Principal, TokenError, TokenKeys};
