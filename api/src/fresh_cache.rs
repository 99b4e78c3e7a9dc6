//! Values read from the database at most once per period per key and
//! shared by every request meanwhile. When a value goes stale one request
//! reads it again while the others go on with the stale one, so a key never
//! costs more than one query at a time, however many ask.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

pub struct FreshCache<K, V> {
    slots: RwLock<HashMap<K, Arc<Slot<V>>>>,
    fresh_for: Duration,
    /// Keys kept before the cache starts again empty.
    max_keys: usize,
}

struct Slot<V> {
    current: RwLock<Option<(V, Instant)>>,
    refreshing: tokio::sync::Mutex<()>,
}

impl<K: Hash + Eq + Copy, V: Clone> FreshCache<K, V> {
    pub fn new(fresh_for: Duration, max_keys: usize) -> Self {
        Self {
            slots: RwLock::default(),
            fresh_for,
            max_keys,
        }
    }

    /// The value of `key`, read with `load` when it is older than the
    /// period (or unknown: then every asker waits for the one read).
    pub async fn get<E, F>(&self, key: K, load: impl FnOnce() -> F) -> Result<V, E>
    where
        F: Future<Output = Result<V, E>>,
    {
        let slot = self.slot(key);
        let _refresh = match slot.known() {
            Some((value, at)) if at.elapsed() < self.fresh_for => return Ok(value),
            Some((value, _)) => match slot.refreshing.try_lock() {
                Ok(guard) => guard,
                Err(_) => return Ok(value),
            },
            None => slot.refreshing.lock().await,
        };
        if let Some((value, at)) = slot.known()
            && at.elapsed() < self.fresh_for
        {
            return Ok(value);
        }
        let value = load().await?;
        *slot
            .current
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) =
            Some((value.clone(), Instant::now()));
        Ok(value)
    }

    fn slot(&self, key: K) -> Arc<Slot<V>> {
        if let Some(slot) = self
            .slots
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(&key)
        {
            return slot.clone();
        }
        let mut slots = self
            .slots
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if slots.len() >= self.max_keys && !slots.contains_key(&key) {
            slots.clear();
        }
        slots
            .entry(key)
            .or_insert_with(|| {
                Arc::new(Slot {
                    current: RwLock::new(None),
                    refreshing: tokio::sync::Mutex::new(()),
                })
            })
            .clone()
    }
}

impl<V: Clone> Slot<V> {
    fn known(&self) -> Option<(V, Instant)> {
        self.current
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU32, Ordering};

    use super::*;

    #[tokio::test]
    async fn a_key_is_read_once_per_period_however_many_ask() {
        let cache: FreshCache<u8, u32> = FreshCache::new(Duration::from_secs(60), 4);
        let reads = AtomicU32::new(0);
        let load = || async { Ok::<_, ()>(reads.fetch_add(1, Ordering::SeqCst) + 1) };
        let answers = futures::future::join_all((0..50).map(|_| cache.get(1, load))).await;
        assert!(answers.iter().all(|a| *a == Ok(1)));
        assert_eq!(reads.load(Ordering::SeqCst), 1);
        assert_eq!(
            cache.get(2, load).await,
            Ok(2),
            "another key is read on its own"
        );
    }
}
