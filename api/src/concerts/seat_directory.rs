//! Which concert a seat belongs to, remembered: a seat never moves to
//! another concert and ids are never reused, so a one-seat request finds
//! its concert (which its queue row carries, for sharding by concert)
//! without a query once the seat has been asked for. Orders of several
//! seats are checked against the database every time: they also need the
//! concert's current `maxSeatsPerOrder`.
//!
//! A seat not remembered yet brings in every seat of its concert at once:
//! at a sale's opening thousands of seats are asked for in the same second,
//! and one query per seat was most of the database's work in the first
//! seconds (and the time to decision of everyone then in line).

use std::collections::HashMap;
use std::sync::RwLock;

use sqlx::MySqlPool;
use ticket_core::db;
use ticket_core::domain::{ConcertId, SeatId, SeatIds};

use crate::error::{ApiError, ApiResult, ErrorCode};

/// Entries kept before the directory starts again empty (16 bytes each).
const MAX_ENTRIES: usize = 1 << 21;

#[derive(Debug, Default)]
pub struct SeatDirectory {
    concerts: RwLock<HashMap<SeatId, ConcertId>>,
    /// Held while a concert's seats are read: the requests that missed
    /// meanwhile (for the same concert, mostly) find them remembered
    /// instead of reading them again.
    loading: tokio::sync::Mutex<()>,
}

impl SeatDirectory {
    /// The concert of the one seat; 404 when there is no such seat. A seat
    /// deleted since it was remembered is caught by the queue's foreign key.
    /// A remembered seat costs no connection (taking one from the pool and
    /// giving it back is a round trip to the database).
    pub async fn concert_of(&self, pool: &MySqlPool, seat: SeatId) -> ApiResult<ConcertId> {
        if let Some(concert) = self.remembered(seat) {
            return Ok(concert);
        }
        let _loading = self.loading.lock().await;
        if let Some(concert) = self.remembered(seat) {
            return Ok(concert);
        }
        let mut conn = pool.acquire().await?;
        let seats = db::seats::of_same_concert(&mut conn, seat).await?;
        self.remember(&seats);
        seats
            .iter()
            .find(|(s, _)| *s == seat)
            .map(|(_, concert)| *concert)
            .ok_or_else(ApiError::seat_not_found)
    }

    fn remembered(&self, seat: SeatId) -> Option<ConcertId> {
        self.read().get(&seat).copied()
    }

    /// The concert of an order's seats, checked now: every seat exists
    /// (404), all belong to one concert, and no more than its
    /// `maxSeatsPerOrder` (400).
    pub async fn concert_of_order(
        &self,
        pool: &MySqlPool,
        seats: &SeatIds,
    ) -> ApiResult<ConcertId> {
        let mut conn = pool.acquire().await?;
        let facts = db::seats::order_facts(&mut conn, seats.as_slice()).await?;
        if facts.len() < seats.len() {
            return Err(ApiError::seat_not_found());
        }
        let (_, concert, max) = facts[0];
        if facts.iter().any(|(_, c, _)| *c != concert) {
            return Err(ApiError::new(
                ErrorCode::SeatsOfSeveralConcerts,
                "seatIds must all be seats of one concert",
            ));
        }
        if seats.len() > usize::from(max) {
            return Err(ApiError::new(
                ErrorCode::TooManySeats,
                format!("this concert allows at most {max} seats per order"),
            ));
        }
        let known: Vec<(SeatId, ConcertId)> = facts.iter().map(|(s, c, _)| (*s, *c)).collect();
        self.remember(&known);
        Ok(concert)
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, HashMap<SeatId, ConcertId>> {
        self.concerts
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn remember(&self, known: &[(SeatId, ConcertId)]) {
        let mut concerts = self
            .concerts
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if concerts.len() + known.len() > MAX_ENTRIES {
            concerts.clear();
        }
        concerts.extend(known.iter().copied());
    }
}
