//! Argon2id password hashing, off the async threads and bounded in
//! concurrency so that a flood of logins cannot take every core.

use std::sync::Arc;

use argon2::password_hash::rand_core::OsRng;
use argon2::password_hash::{PasswordHash, SaltString};
use argon2::{Argon2, PasswordHasher as _, PasswordVerifier as _};
use tokio::sync::Semaphore;

#[derive(Clone)]
pub struct PasswordHasher {
    permits: Arc<Semaphore>,
    /// Verified against when the nickname does not exist, so that a wrong
    /// nickname costs as much time as a wrong password.
    dummy_hash: Arc<str>,
}

impl PasswordHasher {
    pub fn new(max_concurrent: usize) -> anyhow::Result<Self> {
        let dummy_hash = hash_blocking("dummy password for timing")?;
        Ok(Self {
            permits: Arc::new(Semaphore::new(max_concurrent.max(1))),
            dummy_hash: dummy_hash.into(),
        })
    }

    pub async fn hash(&self, password: &str) -> anyhow::Result<String> {
        let password = password.to_owned();
        self.run(move || hash_blocking(&password)).await?
    }

    /// Whether `password` matches `hash`; with no hash (unknown user) the
    /// same work is done and the answer is no.
    pub async fn verify(&self, password: &str, hash: Option<&str>) -> anyhow::Result<bool> {
        let password = password.to_owned();
        let known = hash.is_some();
        let hash = hash.map_or_else(|| self.dummy_hash.to_string(), str::to_owned);
        let matches = self
            .run(move || {
                PasswordHash::new(&hash)
                    .map(|parsed| {
                        Argon2::default()
                            .verify_password(password.as_bytes(), &parsed)
                            .is_ok()
                    })
                    .map_err(|e| anyhow::anyhow!("stored password hash is unreadable: {e}"))
            })
            .await??;
        Ok(known && matches)
    }

    async fn run<T: Send + 'static>(
        &self,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> anyhow::Result<T> {
        let _permit = self.permits.acquire().await?;
        Ok(tokio::task::spawn_blocking(work).await?)
    }
}

/// Argon2id with the crate's defaults (19 MiB, 2 passes, 1 lane: OWASP's
/// recommended minimum), in PHC string form.
fn hash_blocking(password: &str) -> anyhow::Result<String> {
    let salt = SaltString::generate(&mut OsRng);
    Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(|e| anyhow::anyhow!("password hashing failed: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn hashes_are_argon2id_salted_and_verify() {
        let hasher = PasswordHasher::new(2).unwrap();
        let a = hasher.hash("correct horse").await.unwrap();
        let b = hasher.hash("correct horse").await.unwrap();
        assert!(a.starts_with("$argon2id$"), "{a}");
        assert_ne!(a, b, "salted");
        assert!(hasher.verify("correct horse", Some(&a)).await.unwrap());
        assert!(!hasher.verify("wrong horse", Some(&a)).await.unwrap());
        assert!(
            !hasher
                .verify("dummy password for timing", None)
                .await
                .unwrap()
        );
    }
}
