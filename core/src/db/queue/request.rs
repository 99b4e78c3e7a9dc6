//! A request as it is written, and the clock its group is admitted by.

use chrono::{DateTime, Utc};

use crate::db::request_pools::RequestPool;
use crate::db::request_seats::RequestSeat;
use crate::domain::{
    AccessCodeId, Admission, Asked, ConcertId, IdempotencyKey, LineKey, MaxSeatsPerUser, PoolName,
    QueueId, SaleWindow, SeatId, UserId,
};

use super::*;

/// One request of a group enqueued together.
#[derive(Debug, Clone)]
pub struct NewRequest {
    pub user: UserId,
    pub concert: ConcertId,
    /// Seats it names, or the best of a category or area.
    pub asked: Asked,
    /// The category or area a request by count named: resolved again to
    /// its position where it is written, under the concert's line lock
    /// (`asked` has the position as the API read it).
    pub named: Option<PoolName>,
    /// Its concert's pools version `asked` was resolved at (see
    /// `line::lock_lines`): where it is no more, `named` is read again.
    pub pools_version: u32,
    /// The client's `Idempotency-Key`: a second request with it finds the
    /// first (see `find_by_idempotency_key`).
    pub key: Option<IdempotencyKey>,
    /// Its concert's sale, which decides by the database's clock, when the
    /// request is written, whether it is too early, in the lottery, or
    /// behind everyone already in line.
    pub sale: SaleWindow,
    /// Its key in the line if it arrives inside the lottery window.
    pub draw: LineKey,
    /// Its concert's cap per fan, as the API last read it (the decision
    /// reads it again).
    pub max_seats_per_user: MaxSeatsPerUser,
    /// The presale code it was taken with (checked and locked by the
    /// caller's transaction); written alone (`enqueue`), never in a group.
    pub access_code: Option<AccessCodeId>,
    pub trace: TraceContext,
}

impl NewRequest {
    pub fn fan(&self) -> crate::domain::allocation::Fan {
        crate::domain::allocation::Fan {
            concert: self.concert,
            user: self.user,
        }
    }

    /// The seats it names (none when it asks for the best).
    pub fn seats(&self) -> &[SeatId] {
        self.asked.seats()
    }

    /// How many seats it takes when it wins.
    pub fn seat_count(&self) -> u8 {
        self.asked.count()
    }

    /// The first seat it names (0 for a request by count).
    pub(super) fn first_seat(&self) -> SeatId {
        self.seats().first().copied().unwrap_or(SeatId(0))
    }

    /// What tells its row from the rest of its group's: its user, concert
    /// and first seat (none for a request by count, of which a group
    /// writes one a fan and concert at most).
    pub(super) fn row_key(&self) -> RowKey {
        (self.user, self.concert, self.seats().first().copied())
    }

    /// What its sale does with it at `now` (the database's clock).
    pub fn admission(&self, now: DateTime<Utc>) -> Admission {
        match self.access_code {
            Some(_) => self.sale.admission_with_code(now),
            None => self.sale.admission(now),
        }
    }

    /// Its key in the concert's line when written at `now` (the database's
    /// clock), or `None` when its sale does not take it (yet, or without a
    /// code).
    pub fn line_at(&self, now: DateTime<Utc>) -> Option<LineKey> {
        match self.admission(now) {
            Admission::NotYet { .. } | Admission::CodeRequired { .. } => None,
            Admission::Lottery { .. } => Some(self.draw),
            Admission::Presale => Some(LineKey::PRESALE),
            Admission::Open => Some(LineKey::AFTER_OPENING),
        }
    }

    pub(super) fn seat_rows(&self, queue_id: QueueId, line: LineKey) -> Vec<RequestSeat> {
        self.seats()
            .iter()
            .map(|&seat| RequestSeat {
                queue_id,
                seat,
                user: self.user,
                concert: self.concert,
                line,
            })
            .collect()
    }

    pub(super) fn pool_row(&self, queue_id: QueueId, line: LineKey) -> Option<RequestPool> {
        match self.asked {
            Asked::Best(ask) => Some(RequestPool {
                queue_id,
                user: self.user,
                concert: self.concert,
                ask,
                line,
            }),
            Asked::Seats(_) => None,
        }
    }
}

/// A group's row by its user, concert and first seat.
pub(super) type RowKey = (UserId, ConcertId, Option<SeatId>);

/// Hands out each group's `now`: the database's clock as the group read
/// it, but never the same value twice in this process, so that a group can
/// tell its own rows from older ones by their `created_at`.
#[derive(Debug)]
pub struct GroupClock {
    last_micros: std::sync::atomic::AtomicI64,
}

impl Default for GroupClock {
    fn default() -> Self {
        Self::new()
    }
}

impl GroupClock {
    pub const fn new() -> Self {
        Self {
            last_micros: std::sync::atomic::AtomicI64::new(0),
        }
    }

    /// `read` (the database's clock), or a microsecond after the last time
    /// handed out when that is later.
    pub fn after(&self, read: DateTime<Utc>) -> DateTime<Utc> {
        use std::sync::atomic::Ordering;
        let wall = read.timestamp_micros();
        let mut last = self.last_micros.load(Ordering::Relaxed);
        loop {
            let next = wall.max(last + 1);
            match self.last_micros.compare_exchange_weak(
                last,
                next,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return DateTime::from_timestamp_micros(next).unwrap_or(read),
                Err(seen) => last = seen,
            }
        }
    }
}

/// The times a group is written at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupTime {
    /// A reading of the database's clock at least as late as every opening
    /// and lottery start the group's admissions depend on: which requests
    /// the sale takes yet, and whether in the lottery, is decided by it.
    pub admitted_at: DateTime<Utc>,
    /// The rows' `created_at`, distinct per group (see [`GroupClock`]): a
    /// record of the arrival, which no deadline is compared against.
    pub written_at: DateTime<Utc>,
}

impl GroupTime {
    /// Both at `at` (the database's clock, read for the group).
    pub fn at(at: DateTime<Utc>) -> Self {
        Self {
            admitted_at: at,
            written_at: at,
        }
    }
}
