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
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Condvar, Mutex};
    use std::time::Duration;

    use super::*;

    /// Logins and sign-ups cannot pile Argon2 runs onto the CPU: beyond the
    /// permitted number, hashes wait for a permit instead of running.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn no_more_hashes_run_at_once_than_permitted() {
        let hasher = PasswordHasher::new(2).unwrap();
        let running = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let gate = Arc::new((Mutex::new(false), Condvar::new()));
        let (started_tx, mut started) = tokio::sync::mpsc::unbounded_channel();
        let mut tasks = Vec::new();
        for _ in 0..6 {
            let (hasher, running, most, gate, started_tx) = (
                hasher.clone(),
                running.clone(),
                most.clone(),
                gate.clone(),
                started_tx.clone(),
            );
            tasks.push(tokio::spawn(async move {
                hasher
                    .run(move || {
                        let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                        most.fetch_max(now, Ordering::SeqCst);
                        started_tx.send(()).unwrap();
                        let (open, opened) = &*gate;
                        let mut open = open.lock().unwrap();
                        while !*open {
                            open = opened.wait(open).unwrap();
                        }
                        running.fetch_sub(1, Ordering::SeqCst);
                    })
                    .await
                    .unwrap();
            }));
        }
        started.recv().await.unwrap();
        started.recv().await.unwrap();
        // Two hold the permits and wait at the gate; a third must not start.
        let third = tokio::time::timeout(Duration::from_millis(300), started.recv()).await;
        // Opened before asserting, so that a failure does not leave blocking
        // threads waiting for ever.
        *gate.0.lock().unwrap() = true;
        gate.1.notify_all();
        for task in tasks {
            task.await.unwrap();
        }
        assert!(
            third.is_err(),
            "a third hash ran while two held the permits"
        );
        assert_eq!(most.load(Ordering::SeqCst), 2);
    }

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
