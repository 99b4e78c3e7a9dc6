//! The decision rate a worker measures, per concert, and how long its
//! decisions took (request to commit), published for the API: the wait it
//! shows people in line is their position over the sum of the workers'
//! rates, and the operator's on-sale view shows both.

use std::collections::HashMap;
use std::sync::Mutex;

use chrono::{DateTime, Utc};
use sqlx::MySqlConnection;
use ticket_core::db::rates::{self, DecisionRate};
use ticket_core::domain::ConcertId;
pub use ticket_core::rates::PUBLISH_EVERY;
use ticket_core::rates::SmoothedRates;

/// Decision times kept per concert between publications; beyond it every
/// other one is dropped (the percentiles stay those of the whole second).
const MAX_SAMPLES: usize = 1 << 16;

#[derive(Debug, Default)]
pub struct DecisionRates {
    rates: SmoothedRates,
    times: Mutex<Times>,
}

#[derive(Debug, Default)]
struct Times {
    /// Milliseconds from request to commit since the last publication.
    since_last: HashMap<ConcertId, Vec<f64>>,
    /// The last percentiles of each concert, kept through quiet seconds.
    last: HashMap<ConcertId, (f64, f64)>,
}

impl DecisionRates {
    /// Counts decisions committed at `now` of requests made at the times given.
    pub fn count(
        &self,
        decisions: impl IntoIterator<Item = (ConcertId, DateTime<Utc>)>,
        now: DateTime<Utc>,
    ) {
        let decisions: Vec<_> = decisions.into_iter().collect();
        self.rates
            .count(decisions.iter().map(|(concert, _)| *concert));
        if let Ok(mut times) = self.times.lock() {
            for (concert, requested_at) in decisions {
                let took = (now - requested_at).num_microseconds().unwrap_or(0).max(0) as f64;
                let samples = times.since_last.entry(concert).or_default();
                if samples.len() >= MAX_SAMPLES {
                    let mut keep = false;
                    samples.retain(|_| {
                        keep = !keep;
                        keep
                    });
                }
                samples.push(took / 1000.0);
            }
        }
    }

    fn roll(&self) -> Vec<DecisionRate> {
        let rolled = self.rates.roll();
        let Ok(mut times) = self.times.lock() else {
            return rolled
                .into_iter()
                .map(|(concert, rate)| DecisionRate::new(concert, rate))
                .collect();
        };
        let measured = std::mem::take(&mut times.since_last);
        for (concert, mut samples) in measured {
            samples.sort_unstable_by(f64::total_cmp);
            times.last.insert(
                concert,
                (percentile(&samples, 0.5), percentile(&samples, 0.99)),
            );
        }
        let published: Vec<DecisionRate> = rolled
            .into_iter()
            .map(|(concert, rate)| {
                let (p50, p99) = times.last.get(&concert).copied().unzip();
                DecisionRate {
                    concert_id: concert,
                    decisions_per_sec: rate,
                    p50_ms: p50,
                    p99_ms: p99,
                }
            })
            .collect();
        times
            .last
            .retain(|concert, _| published.iter().any(|rate| rate.concert_id == *concert));
        published
    }

    /// Publishes the rates (one statement, and stale rows go).
    pub async fn publish(
        &self,
        conn: &mut MySqlConnection,
        worker: &str,
        now: DateTime<Utc>,
    ) -> Result<(), sqlx::Error> {
        let rates = self.roll();
        rates::publish_decisions(conn, worker, &rates, now).await
    }
}

/// The nearest-rank percentile of sorted samples (0 when there are none).
fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decision_times_are_published_with_the_rate_and_kept_through_quiet_seconds() {
        let rates = DecisionRates::default();
        rates.roll();
        let now = Utc::now();
        rates.count(
            (1..=100).map(|ms| (ConcertId(1), now - chrono::Duration::milliseconds(ms))),
            now,
        );
        let first = rates.roll();
        assert_eq!(first.len(), 1);
        assert_eq!(first[0].p50_ms, Some(50.0));
        assert_eq!(first[0].p99_ms, Some(99.0));
        let quiet = rates.roll();
        assert_eq!(quiet[0].p99_ms, Some(99.0), "{quiet:?}");
    }

    #[test]
    fn percentiles_by_nearest_rank() {
        assert_eq!(percentile(&[], 0.5), 0.0);
        assert_eq!(percentile(&[7.0], 0.99), 7.0);
        let hundred: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&hundred, 0.5), 50.0);
        assert_eq!(percentile(&hundred, 0.99), 99.0);
    }
}
