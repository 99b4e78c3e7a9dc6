//! Values read from the database at most once per period per key and
//! shared by every request meanwhile. When a value goes stale one request
//! reads it again while the others go on with the stale one, so a key never
//! costs more than one query at a time, however many ask.
//!
//! Only keys that have a value are kept (a concert that exists): an unknown
//! key is read for whoever asks and then forgotten, so made-up ids cannot
//! fill the cache or push out the concerts on sale. When more keys have a
//! value than the cache keeps, the one read longest ago goes (a concert on
//! sale is read again every period, so it is never that one).
//!
//! A read that fails fails for everyone who was waiting for it: they do
//! not each try again in turn (during an outage the tenth in line would
//! otherwise wait ten connection timeouts).

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::{Duration, Instant};

pub struct FreshCache<K, V> {
    slots: RwLock<HashMap<K, Arc<Slot<V>>>>,
    fresh_for: Duration,
    /// Keys with a value kept at most.
    max_keys: usize,
    /// Numbers the reads, to let go of the oldest.
    reads: AtomicU64,
}

/// Why there is no answer.
#[derive(Debug, PartialEq, Eq)]
pub enum Unanswered<E> {
    /// This request's own read failed.
    Failed(E),
    /// The read this request waited for failed (in another request, which
    /// has its cause).
    ReadFailed,
}

struct Slot<V> {
    state: RwLock<SlotState<V>>,
    reading: tokio::sync::Mutex<()>,
}

struct SlotState<V> {
    /// The last answer (`None`: the key has no value) and when it was read.
    answer: Option<(Option<V>, Instant)>,
    /// The number of the read that gave it.
    read: u64,
    failed_at: Option<Instant>,
}

impl<K: Hash + Eq + Copy, V: Clone> FreshCache<K, V> {
    pub fn new(fresh_for: Duration, max_keys: usize) -> Self {
        Self {
            slots: RwLock::default(),
            fresh_for,
            max_keys: max_keys.max(1),
            reads: AtomicU64::new(0),
        }
    }

    /// The value of `key` (`None`: it has none), read with `load` when it
    /// is older than the period or unknown (then every asker waits for the
    /// one read).
    pub async fn get<E, F>(
        &self,
        key: K,
        load: impl FnOnce() -> F,
    ) -> Result<Option<V>, Unanswered<E>>
    where
        F: Future<Output = Result<Option<V>, E>>,
    {
        let slot = self.slot(key);
        let arrived = Instant::now();
        let _reading = match slot.answer() {
            Some((answer, at)) if at.elapsed() < self.fresh_for => return Ok(answer),
            Some((Some(stale), _)) => match slot.reading.try_lock() {
                Ok(guard) => guard,
                Err(_) => return Ok(Some(stale)),
            },
            _ => slot.reading.lock().await,
        };
        if let Some((answer, at)) = slot.answer()
            && at.elapsed() < self.fresh_for
        {
            return Ok(answer);
        }
        if slot.failed_since(arrived) {
            return Err(Unanswered::ReadFailed);
        }
        let answer = load().await;
        let had_value = matches!(slot.answer(), Some((Some(_), _)));
        let mut state = slot.state.write().unwrap_or_else(PoisonError::into_inner);
        match &answer {
            Ok(value) => {
                state.answer = Some((value.clone(), Instant::now()));
                state.read = self.reads.fetch_add(1, Ordering::Relaxed);
            }
            Err(_) => state.failed_at = Some(Instant::now()),
        }
        drop(state);
        match &answer {
            Ok(Some(_)) if !had_value => self.make_room_beside(key),
            Ok(None) => self.forget(key, &slot),
            Err(_) if !had_value => self.forget(key, &slot),
            _ => {}
        }
        answer.map_err(Unanswered::Failed)
    }

    /// Forgets `key`'s value: the next ask reads it again (a change this
    /// instance made itself, to be seen here at once).
    pub fn invalidate(&self, key: K) {
        self.slots
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&key);
    }

    fn slot(&self, key: K) -> Arc<Slot<V>> {
        if let Some(slot) = self
            .slots
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&key)
        {
            return slot.clone();
        }
        self.slots
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(key)
            .or_insert_with(|| {
                Arc::new(Slot {
                    state: RwLock::new(SlotState {
                        answer: None,
                        read: 0,
                        failed_at: None,
                    }),
                    reading: tokio::sync::Mutex::new(()),
                })
            })
            .clone()
    }

    /// Drops the key's slot unless another has taken its place (a waiter
    /// still holding it gets its answer from it).
    fn forget(&self, key: K, slot: &Arc<Slot<V>>) {
        let mut slots = self.slots.write().unwrap_or_else(PoisonError::into_inner);
        if slots.get(&key).is_some_and(|kept| Arc::ptr_eq(kept, slot)) {
            slots.remove(&key);
        }
    }

    /// Keeps at most `max_keys` keys with a value now that `key` has one,
    /// dropping those read longest ago. Slots still waiting for their first
    /// answer stay: they leave by themselves when it comes.
    fn make_room_beside(&self, key: K) {
        let mut slots = self.slots.write().unwrap_or_else(PoisonError::into_inner);
        loop {
            let mut valued = 0;
            let mut oldest: Option<(K, u64)> = None;
            for (k, slot) in slots.iter() {
                let state = slot.state.read().unwrap_or_else(PoisonError::into_inner);
                if let Some((Some(_), _)) = state.answer {
                    valued += 1;
                    if *k != key && oldest.is_none_or(|(_, o)| state.read < o) {
                        oldest = Some((*k, state.read));
                    }
                }
            }
            match oldest {
                Some((k, _)) if valued > self.max_keys => slots.remove(&k),
                _ => return,
            };
        }
    }
}

impl<V: Clone> Slot<V> {
    fn answer(&self) -> Option<(Option<V>, Instant)> {
        self.state
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .answer
            .clone()
    }

    fn failed_since(&self, t: Instant) -> bool {
        self.state
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .failed_at
            .is_some_and(|failed| failed >= t)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicU32;

    use super::*;

    fn counted(reads: &AtomicU32) -> u32 {
        reads.fetch_add(1, Ordering::SeqCst) + 1
    }

    #[tokio::test]
    async fn a_key_is_read_once_per_period_however_many_ask() {
        let cache: FreshCache<u8, u32> = FreshCache::new(Duration::from_secs(60), 4);
        let reads = AtomicU32::new(0);
        let load = || async { Ok::<_, ()>(Some(counted(&reads))) };
        let answers = futures::future::join_all((0..50).map(|_| cache.get(1, load))).await;
        assert!(answers.iter().all(|a| *a == Ok(Some(1))));
        assert_eq!(reads.load(Ordering::SeqCst), 1);
        assert_eq!(
            cache.get(2, load).await,
            Ok(Some(2)),
            "another key is read on its own"
        );
    }

    #[tokio::test]
    async fn a_failed_read_fails_for_its_waiters_instead_of_being_tried_by_each() {
        let cache: FreshCache<u8, u32> = FreshCache::new(Duration::from_secs(60), 4);
        let reads = AtomicU32::new(0);
        let failing = || async {
            counted(&reads);
            // Lets the other askers line up behind this read.
            tokio::task::yield_now().await;
            Err::<Option<u32>, _>("down")
        };
        let answers = futures::future::join_all((0..20).map(|_| cache.get(1, failing))).await;
        assert_eq!(reads.load(Ordering::SeqCst), 1, "one read for 20 askers");
        assert_eq!(answers[0], Err(Unanswered::Failed("down")));
        assert!(
            answers[1..]
                .iter()
                .all(|a| *a == Err(Unanswered::ReadFailed))
        );
        let load = || async { Ok::<_, &str>(Some(7)) };
        assert_eq!(
            cache.get(1, load).await,
            Ok(Some(7)),
            "a later asker reads again"
        );
    }

    #[tokio::test]
    async fn unknown_keys_are_not_kept_and_do_not_push_out_known_ones() {
        let cache: FreshCache<u32, u32> = FreshCache::new(Duration::from_secs(60), 4);
        let reads = AtomicU32::new(0);
        let known = |k: u32| move || async move { Ok::<_, ()>(Some(k)) };
        for k in 0..4 {
            assert_eq!(cache.get(k, known(k)).await, Ok(Some(k)));
        }
        for k in 100..2_100 {
            let unknown = || async {
                counted(&reads);
                Ok::<Option<u32>, ()>(None)
            };
            assert_eq!(cache.get(k, unknown).await, Ok(None));
        }
        assert_eq!(reads.load(Ordering::SeqCst), 2_000, "each unknown id read");
        assert_eq!(cache.slots.read().unwrap().len(), 4, "and none kept");
        let never = || async { Err::<Option<u32>, ()>(()) };
        for k in 0..4 {
            assert_eq!(cache.get(k, never).await, Ok(Some(k)), "still cached");
        }
    }

    #[tokio::test]
    async fn past_its_size_the_cache_lets_go_of_the_key_read_longest_ago() {
        let cache: FreshCache<u32, u32> = FreshCache::new(Duration::from_secs(60), 3);
        let known = |k: u32| move || async move { Ok::<_, ()>(Some(k)) };
        for k in 0..5 {
            cache.get(k, known(k)).await.unwrap();
        }
        let mut kept: Vec<u32> = cache.slots.read().unwrap().keys().copied().collect();
        kept.sort_unstable();
        assert_eq!(kept, [2, 3, 4]);
    }
}
