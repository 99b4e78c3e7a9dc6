//! Argon2id password hashing, off the async threads and bounded in
//! concurrency so that a flood of logins cannot take every core, nor the
//! pod's memory: each permit owns one Argon2 working area (19 MiB),
//! allocated the first time it is needed and reused for ever after. Hashing
//! into a fresh buffer each time let the allocator keep every freed area in
//! its per-thread arenas: 100 concurrent sign-ups left the API at ~650 MB.

use std::sync::{Arc, Mutex};

use argon2::password_hash::rand_core::OsRng;
use argon2::password_hash::{Output, ParamsString, PasswordHash, SaltString};
use argon2::{Algorithm, Argon2, Block, Params, Version};
use tokio::sync::Semaphore;

#[derive(Clone)]
pub struct PasswordHasher {
    permits: Arc<Semaphore>,
    /// The working areas not in use; never more than there are permits.
    areas: Arc<Mutex<Vec<Vec<Block>>>>,
    /// Verified against when the nickname does not exist, so that a wrong
    /// nickname costs as much time as a wrong password.
    dummy_hash: Arc<str>,
}

impl PasswordHasher {
    pub fn new(max_concurrent: usize) -> anyhow::Result<Self> {
        let mut area = Vec::new();
        let dummy_hash = hash_in(&mut area, "dummy password for timing")?;
        Ok(Self {
            permits: Arc::new(Semaphore::new(max_concurrent.max(1))),
            areas: Arc::new(Mutex::new(vec![area])),
            dummy_hash: dummy_hash.into(),
        })
    }

    pub async fn hash(&self, password: &str) -> anyhow::Result<String> {
        let password = password.to_owned();
        self.run(move |area| hash_in(area, &password)).await?
    }

    /// Whether `password` matches `hash`; with no hash (unknown user) the
    /// same work is done and the answer is no.
    pub async fn verify(&self, password: &str, hash: Option<&str>) -> anyhow::Result<bool> {
        let password = password.to_owned();
        let known = hash.is_some();
        let hash = hash.map_or_else(|| self.dummy_hash.to_string(), str::to_owned);
        let matches = self
            .run(move |area| verify_in(area, &password, &hash))
            .await??;
        Ok(known && matches)
    }

    async fn run<T: Send + 'static>(
        &self,
        work: impl FnOnce(&mut Vec<Block>) -> T + Send + 'static,
    ) -> anyhow::Result<T> {
        let permit = Arc::clone(&self.permits).acquire_owned().await?;
        // Holding a permit guarantees an area is free or may be made.
        let mut area = take_area(&self.areas);
        let areas = Arc::clone(&self.areas);
        // The permit and the area belong to the blocking work, not to this
        // future: a request abandoned mid-hash (its client gone, its time
        // up) drops the future while the hash runs on, and a permit freed
        // then let a new area be made beside the one still in use (200
        // logins abandoned after 50 ms took the API from 50 to 849 MB).
        let result = tokio::task::spawn_blocking(move || {
            let result = work(&mut area);
            return_area(&areas, area);
            drop(permit);
            result
        })
        .await?;
        Ok(result)
    }

    /// Working areas allocated so far (for tests).
    #[cfg(test)]
    fn areas_kept(&self) -> usize {
        self.areas.lock().map(|a| a.len()).unwrap_or_default()
    }
}

fn take_area(areas: &Mutex<Vec<Vec<Block>>>) -> Vec<Block> {
    areas
        .lock()
        .map(|mut areas| areas.pop())
        .ok()
        .flatten()
        .unwrap_or_default()
}

fn return_area(areas: &Mutex<Vec<Vec<Block>>>, area: Vec<Block>) {
    if let Ok(mut areas) = areas.lock() {
        areas.push(area);
    }
}

/// The first `params.block_count()` blocks of `area`, grown once if a
/// stored hash asks for more memory than any before it.
fn blocks<'a>(area: &'a mut Vec<Block>, params: &Params) -> &'a mut [Block] {
    let needed = params.block_count();
    if area.len() < needed {
        area.resize(needed, Block::default());
    }
    &mut area[..needed]
}

/// Argon2id with the crate's defaults (19 MiB, 2 passes, 1 lane: OWASP's
/// recommended minimum), in PHC string form.
fn hash_in(area: &mut Vec<Block>, password: &str) -> anyhow::Result<String> {
    let failed = |e: &dyn std::fmt::Display| anyhow::anyhow!("password hashing failed: {e}");
    let params = Params::default();
    let salt = SaltString::generate(&mut OsRng);
    let mut salt_buf = [0u8; 64];
    let salt_bytes = salt.decode_b64(&mut salt_buf).map_err(|e| failed(&e))?;
    let argon2 = Argon2::new(Algorithm::Argon2id, Version::V0x13, params.clone());
    let output = Output::init_with(Params::DEFAULT_OUTPUT_LEN, |out| {
        argon2
            .hash_password_into_with_memory(
                password.as_bytes(),
                salt_bytes,
                out,
                blocks(area, &params),
            )
            .map_err(Into::into)
    })
    .map_err(|e| failed(&e))?;
    let hash = PasswordHash {
        algorithm: Algorithm::Argon2id.ident(),
        version: Some(Version::V0x13.into()),
        params: ParamsString::try_from(&params).map_err(|e| failed(&e))?,
        salt: Some(salt.as_salt()),
        hash: Some(output),
    };
    Ok(hash.to_string())
}

/// Whether `password` is the one `stored` (a PHC string of any Argon2
/// variant and parameters) was made from.
fn verify_in(area: &mut Vec<Block>, password: &str, stored: &str) -> anyhow::Result<bool> {
    let unreadable =
        |e: &dyn std::fmt::Display| anyhow::anyhow!("stored password hash is unreadable: {e}");
    let parsed = PasswordHash::new(stored).map_err(|e| unreadable(&e))?;
    let algorithm = Algorithm::try_from(parsed.algorithm).map_err(|e| unreadable(&e))?;
    let version = parsed
        .version
        .map(Version::try_from)
        .transpose()
        .map_err(|e| unreadable(&e))?
        .unwrap_or_default();
    let params = Params::try_from(&parsed).map_err(|e| unreadable(&e))?;
    let (Some(salt), Some(expected)) = (parsed.salt, parsed.hash) else {
        return Err(anyhow::anyhow!(
            "stored password hash has no salt or no hash"
        ));
    };
    let mut salt_buf = [0u8; 64];
    let salt_bytes = salt.decode_b64(&mut salt_buf).map_err(|e| unreadable(&e))?;
    let argon2 = Argon2::new(algorithm, version, params.clone());
    let mut computed = vec![0u8; expected.len()];
    if argon2
        .hash_password_into_with_memory(
            password.as_bytes(),
            salt_bytes,
            &mut computed,
            blocks(area, &params),
        )
        .is_err()
    {
        return Ok(false);
    }
    // Output's equality is constant-time.
    Ok(Output::new(&computed).is_ok_and(|computed| computed == expected))
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
                    .run(move |_area| {
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

    /// Hashes already stored (made by the crate's own hasher) still verify,
    /// and the crate's verifier accepts the hashes made here.
    #[tokio::test]
    async fn hashes_are_those_of_the_argon2_crate() {
        use argon2::{PasswordHasher as _, PasswordVerifier as _};
        let hasher = PasswordHasher::new(1).unwrap();
        let salt = SaltString::generate(&mut OsRng);
        let theirs = Argon2::default()
            .hash_password(b"stored before", &salt)
            .unwrap()
            .to_string();
        assert!(hasher.verify("stored before", Some(&theirs)).await.unwrap());
        assert!(!hasher.verify("stored after", Some(&theirs)).await.unwrap());
        let ours = hasher.hash("made here").await.unwrap();
        let parsed = PasswordHash::new(&ours).unwrap();
        assert!(
            Argon2::default()
                .verify_password(b"made here", &parsed)
                .is_ok()
        );
    }

    /// A hash whose caller gave up keeps its permit and its area until it
    /// ends: hashes asked for meanwhile wait, and no area is made beside
    /// the ones in use.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_abandoned_hash_keeps_its_permit_and_area_until_it_ends() {
        let hasher = PasswordHasher::new(1).unwrap();
        let gate = Arc::new((Mutex::new(false), Condvar::new()));
        let (started_tx, mut started) = tokio::sync::mpsc::unbounded_channel();
        let abandoned = {
            let (hasher, gate, started_tx) = (hasher.clone(), gate.clone(), started_tx.clone());
            tokio::spawn(async move {
                hasher
                    .run(move |_area| {
                        started_tx.send("abandoned").unwrap();
                        let (open, opened) = &*gate;
                        let mut open = open.lock().unwrap();
                        while !*open {
                            open = opened.wait(open).unwrap();
                        }
                    })
                    .await
            })
        };
        assert_eq!(started.recv().await, Some("abandoned"));
        abandoned.abort();
        let _ = abandoned.await;
        // Its caller is gone; its hash is not: the next one must wait.
        let next = {
            let hasher = hasher.clone();
            tokio::spawn(async move {
                hasher
                    .run(move |_area| started_tx.send("next").unwrap())
                    .await
            })
        };
        let beside = tokio::time::timeout(Duration::from_millis(300), started.recv()).await;
        *gate.0.lock().unwrap() = true;
        gate.1.notify_all();
        next.await.unwrap().unwrap();
        assert!(beside.is_err(), "a hash ran beside an abandoned one");
        assert_eq!(hasher.areas_kept(), 1, "no second area was made");
    }

    /// However many hashes are asked for at once, the working areas never
    /// outnumber the permits: memory is bounded by the permits.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn working_areas_never_outnumber_the_permits() {
        let hasher = PasswordHasher::new(2).unwrap();
        let tasks: Vec<_> = (0..12)
            .map(|i| {
                let hasher = hasher.clone();
                tokio::spawn(async move { hasher.hash(&format!("password {i}")).await.unwrap() })
            })
            .collect();
        for task in tasks {
            task.await.unwrap();
        }
        assert!(
            (1..=2).contains(&hasher.areas_kept()),
            "{} working areas for 2 permits",
            hasher.areas_kept()
        );
    }
}
