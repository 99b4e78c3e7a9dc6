//! Randomness without another dependency: std's per-process random SipHash
//! keys over a counter and the clock.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

pub fn u64() -> u64 {
    static KEYS: OnceLock<RandomState> = OnceLock::new();
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut hasher = KEYS.get_or_init(RandomState::new).build_hasher();
    hasher.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    hasher.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    hasher.finish()
}

/// `base` stretched by a random factor in [1, 1 + spread), so that many
/// workers polling or retrying do not move in lockstep.
pub fn jitter(base: std::time::Duration, spread: f64) -> std::time::Duration {
    let unit = (u64() >> 11) as f64 / (1u64 << 53) as f64;
    base.mul_f64(1.0 + spread * unit)
}
