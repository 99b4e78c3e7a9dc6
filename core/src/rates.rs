//! Events per second per concert, smoothed over the last few seconds: what
//! a worker decides and what an API instance accepts, counted as they
//! happen and rolled into rates once per publication.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::domain::ConcertId;

/// How often the processes publish their rates.
pub const PUBLISH_EVERY: Duration = Duration::from_secs(1);

/// Weight of the newest second in the smoothed rate: about the last few
/// seconds count.
const SMOOTHING: f64 = 0.4;

/// A concert's rate is published until it has been this low this long.
const FORGET_BELOW: f64 = 0.05;

#[derive(Debug, Default)]
pub struct SmoothedRates {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    /// Events per concert since the last roll.
    counted: HashMap<ConcertId, u64>,
    /// Smoothed events per second, per concert.
    rates: HashMap<ConcertId, f64>,
    last: Option<Instant>,
}

impl SmoothedRates {
    pub fn count(&self, events: impl IntoIterator<Item = ConcertId>) {
        if let Ok(mut inner) = self.inner.lock() {
            for concert in events {
                *inner.counted.entry(concert).or_default() += 1;
            }
        }
    }

    /// Folds what was counted since the last call into the smoothed rates
    /// and returns those worth publishing (in concert order).
    pub fn roll(&self) -> Vec<(ConcertId, f64)> {
        let Ok(mut inner) = self.inner.lock() else {
            return Vec::new();
        };
        let now = Instant::now();
        let elapsed = inner
            .last
            .map_or(PUBLISH_EVERY, |at| now.duration_since(at))
            .as_secs_f64()
            .max(0.001);
        inner.last = Some(now);
        let counted = std::mem::take(&mut inner.counted);
        let mut concerts: Vec<ConcertId> = inner.rates.keys().copied().collect();
        concerts.extend(counted.keys().copied());
        concerts.sort_unstable();
        concerts.dedup();
        let mut published = Vec::with_capacity(concerts.len());
        for concert in concerts {
            let current = counted.get(&concert).copied().unwrap_or(0) as f64 / elapsed;
            let rate = match inner.rates.get(&concert) {
                Some(previous) => previous + SMOOTHING * (current - previous),
                None => current,
            };
            if rate < FORGET_BELOW {
                inner.rates.remove(&concert);
            } else {
                inner.rates.insert(concert, rate);
            }
            published.push((concert, rate));
        }
        published
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rate_follows_the_counts_and_is_forgotten_when_idle() {
        let rates = SmoothedRates::default();
        rates.roll();
        rates.count(std::iter::repeat_n(ConcertId(1), 500));
        let first = rates.roll();
        assert_eq!(first.len(), 1);
        assert!(first[0].1 > 1_000.0, "{first:?}");
        let mut rounds = 0;
        while !rates.roll().is_empty() {
            rounds += 1;
            assert!(rounds < 100, "an idle concert is forgotten");
        }
    }
}
