//! What the line watch tells: a request's place, a stream's progress, a
//! sale's state, and the board of lines they are read from.

use std::collections::HashMap;

use ticket_core::db::line::LineState;
use ticket_core::db::queue::QueueRow;
use ticket_core::db::rates::DecisionRate;
use ticket_core::domain::{ConcertId, LineKey, LineRank, SeatId};

/// A request's place in line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Place {
    /// 1: next to be decided, among the concert's open requests.
    pub position: u64,
    /// The position over the workers' measured decision rate; None while
    /// nothing has been measured for the concert.
    pub estimated_wait_ms: Option<u64>,
    /// When to ask again: about a second near the front, up to ten at the
    /// back (as NetFUNNEL does).
    pub poll_after_ms: u64,
}

impl Place {
    pub(super) fn new(position: u64, decisions_per_sec: Option<f64>) -> Self {
        let estimated_wait_ms = decisions_per_sec
            .filter(|rate| *rate > 0.0)
            .map(|rate| (position as f64 / rate * 1000.0).round() as u64);
        let hint = estimated_wait_ms.map_or(position.saturating_mul(5), |wait| wait / 4);
        Self {
            position,
            estimated_wait_ms,
            poll_after_ms: hint.clamp(1_000, 10_000),
        }
    }
}

/// What a stream is told.
#[derive(Debug, Clone, PartialEq)]
pub enum Progress {
    /// Still open; its place once a read has seen it.
    Open(Option<Place>),
    /// Decided: the row, with its seats.
    Decided(Box<QueueRow>, Vec<SeatId>),
    /// This instance is stopping: reconnect elsewhere.
    Closed,
}

/// A concert's sale as this instance last read it, for the operator.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SaleNow {
    /// Open requests (waiting for the opening, pending, being decided).
    pub line_length: u64,
    /// Summed over the API instances.
    pub requests_per_sec: f64,
    /// Summed over the workers, with their decision times.
    pub decisions: Option<DecisionRate>,
}

#[derive(Debug, Default)]
pub(super) struct Board {
    /// Each concert's line.
    pub(super) lines: HashMap<ConcertId, LineState>,
    pub(super) rates: HashMap<ConcertId, DecisionRate>,
    pub(super) requests: HashMap<ConcertId, f64>,
}

impl Board {
    pub(super) fn place(&self, concert: ConcertId, rank: LineRank, key: LineKey) -> Option<Place> {
        let line = self.lines.get(&concert)?;
        let rate = self.rates.get(&concert).map(|r| r.decisions_per_sec);
        Some(Place::new(line.front.position(rank, key), rate))
    }

    pub(super) fn has_passed(&self, concert: ConcertId, rank: LineRank, key: LineKey) -> bool {
        self.lines
            .get(&concert)
            .is_some_and(|line| line.front.has_passed(rank, key))
    }
}
