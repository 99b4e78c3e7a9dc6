//! Which concert a seat belongs to, remembered: a seat never moves to
//! another concert and ids are never reused, so a one-seat request finds
//! its concert (which its queue row carries, for sharding by concert)
//! without a query once the seat has been asked for. Orders of several
//! seats are checked against the database every time: they also need the
//! concert's current `maxSeatsPerOrder`.

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
}

impl SeatDirectory {
    /// The concert of the one seat; 404 when there is no such seat. A seat
    /// deleted since it was remembered is caught by the queue's foreign key.
    /// A remembered seat costs no connection (taking one from the pool and
    /// giving it back is a round trip to the database).
    pub async fn concert_of(&self, pool: &MySqlPool, seat: SeatId) -> ApiResult<ConcertId> {
        if let Some(&concert) = self.read().get(&seat) {
            return Ok(concert);
        }
        let mut conn = pool.acquire().await?;
        let facts = db::seats::order_facts(&mut conn, &[seat]).await?;
        let (_, concert, _) = facts
            .first()
            .ok_or_else(crate::routes::seats::seat_not_found)?;
        self.remember(&[(seat, *concert)]);
        Ok(*concert)
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
            return Err(crate::routes::seats::seat_not_found());
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
