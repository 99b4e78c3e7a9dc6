//! Which concerts the line watch reads, and when: those asked about in the
//! last seconds (a bounded number), the first question about a concert
//! read at once together with every other first asked meanwhile.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ticket_core::domain::ConcertId;

use super::board::Board;
use super::{LineWatch, RATES_EVERY, due};

/// A concert nobody asked about for this long is no longer read.
const FORGET_AFTER: Duration = Duration::from_secs(10);
/// Concerts an instance watches at most (each a line front: a few hundred
/// bytes, up to a few tens of kilobytes behind a stuck front).
const MAX_CONCERTS: usize = 4_096;

impl LineWatch {
    /// Reads a concert's line into the board now (its first question), with
    /// every other concert first asked about meanwhile: a thousand concerts
    /// asked about at once are read in a few statements, not a thousand
    /// reads one after the other.
    pub(super) async fn read_one(&self, concert: ConcertId) -> Result<(), sqlx::Error> {
        self.first_asked().insert(concert);
        let _reading = self.first_reads.lock().await;
        if self.current().lines.contains_key(&concert) {
            return Ok(());
        }
        let mut asked: Vec<ConcertId> = self.first_asked().drain().collect();
        if !asked.contains(&concert) {
            asked.push(concert);
        }
        let mut conn = self.pool.acquire().await?;
        let lines = self.fronts(&mut conn, &asked).await?;
        let mut board = self
            .board
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut next = Board {
            lines: board.lines.clone(),
            rates: board.rates.clone(),
            requests: board.requests.clone(),
        };
        for (concert, state) in lines {
            next.lines.entry(concert).or_insert(state);
        }
        *board = Arc::new(next);
        Ok(())
    }

    fn first_asked(&self) -> std::sync::MutexGuard<'_, HashSet<ConcertId>> {
        self.first_asked
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The concerts to read now (all of them, or only those with streams)
    /// and every concert still watched. Beyond [`MAX_CONCERTS`] the ones
    /// asked about longest ago are forgotten (asked again, they are read
    /// again): an instance's state stays bounded however many are viewed.
    pub(super) fn concerts_of_interest(&self, every: bool) -> (Vec<ConcertId>, Vec<ConcertId>) {
        let mut watched = self.lock();
        let streamed: std::collections::HashSet<ConcertId> =
            watched.streams.values().map(|s| s.concert).collect();
        watched
            .concerts
            .retain(|concert, at| at.elapsed() < FORGET_AFTER || streamed.contains(concert));
        if watched.concerts.len() > MAX_CONCERTS {
            let mut by_age: Vec<(Instant, ConcertId)> =
                watched.concerts.iter().map(|(c, at)| (*at, *c)).collect();
            by_age.sort_unstable();
            let over = watched.concerts.len() - MAX_CONCERTS;
            for (_, concert) in by_age.into_iter().take(over) {
                watched.concerts.remove(&concert);
            }
        }
        let all: Vec<ConcertId> = watched.concerts.keys().copied().collect();
        let now = if every {
            all.clone()
        } else {
            all.iter()
                .copied()
                .filter(|c| streamed.contains(c))
                .collect()
        };
        (now, all)
    }

    pub(super) fn rates_due(&self) -> bool {
        due(&self.rates_read_at, RATES_EVERY)
    }

    /// Keeps the concert's line read (for about ten seconds after the
    /// last ask).
    pub(crate) fn interested(&self, concert: ConcertId) {
        self.lock().concerts.insert(concert, Instant::now());
    }
}
