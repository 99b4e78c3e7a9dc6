//! Where open requests stand in their concert's line, for every status poll
//! and event stream of this instance, from one read of the lines' fronts
//! per tick (a few index dives per concert, whatever the line's length): a
//! request's position is its rank, fixed when its place was fixed, against
//! the front (`domain::line_position`). A stream's request that the front
//! has passed is looked up with the others passed in the same tick (one query,
//! whatever the number of streams). A few queries per second per instance
//! in all, and memory that grows with the concerts watched, not their lines.
//!
//! What it tells is in `board.rs`, how it learns ranks and counts lotteries
//! in `places.rs`, which concerts it reads and when in `interest.rs`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use prometheus::{IntCounter, IntGauge};
use sqlx::MySqlPool;
use ticket_core::db::rates;
use ticket_core::db::{self, line, queue::QueueRow, request_seats};
use ticket_core::domain::{ConcertId, LineKey, LinePart, LineRank, QueueId};
use tokio::sync::{Notify, watch};

mod board;
mod interest;
mod places;
use board::Board;
pub use board::{Place, Progress, SaleNow};

/// Between reads while streams are open: a decision reaches its stream
/// within about this long after its commit.
const STREAM_TICK: Duration = Duration::from_millis(120);
/// Between reads while only polls ask: positions are this fresh.
const POLL_TICK: Duration = Duration::from_secs(1);
/// How often the workers' decision rates are read.
const RATES_EVERY: Duration = Duration::from_secs(1);
/// Rates older than this are not counted (their worker stopped).
const RATES_FRESH_FOR: chrono::TimeDelta = chrono::TimeDelta::seconds(5);
/// Ids looked up per statement (placeholders stay far below 65,535).
const LOOKUP_CHUNK: usize = 8_192;
/// Every stream's request is looked up this often, whatever the front says:
/// a backstop for a request that left the line another way.
const LOOK_UP_ALL_EVERY: Duration = Duration::from_secs(5);

struct Stream {
    concert: ConcertId,
    key: LineKey,
    /// None until its request has one (a lottery's, once counted).
    rank: Option<LineRank>,
    sender: watch::Sender<Progress>,
    /// When to tell it its place again: after its own `pollAfterMs`, as a
    /// poller would ask (a place changes with every decision ahead, and
    /// telling ten thousand streams every tick would cost more than it
    /// tells them). Its decision goes out at once, whenever it comes.
    next_place_at: Instant,
}

#[derive(Default)]
struct Watched {
    /// Concerts asked about, and when last.
    concerts: HashMap<ConcertId, Instant>,
    streams: HashMap<QueueId, Stream>,
}

pub struct LineWatch {
    pool: MySqlPool,
    board: RwLock<Arc<Board>>,
    watched: Mutex<Watched>,
    wake: Notify,
    closed: AtomicBool,
    rates_read_at: Mutex<Option<Instant>>,
    all_looked_up_at: Mutex<Option<Instant>>,
    all_read_at: Mutex<Option<Instant>>,
    lottery_places: Mutex<HashMap<QueueId, LineRank>>,
    /// Held while a concert's first question reads its line: the questions
    /// asked meanwhile wait for that read rather than each making its own.
    first_reads: tokio::sync::Mutex<()>,
    /// Concerts first asked about, waiting for the next first read.
    first_asked: Mutex<std::collections::HashSet<ConcertId>>,
    queries: IntCounter,
    open_streams: IntGauge,
}

impl LineWatch {
    pub fn new(pool: MySqlPool, queries: IntCounter, open_streams: IntGauge) -> Self {
        Self {
            pool,
            board: RwLock::default(),
            watched: Mutex::default(),
            wake: Notify::new(),
            closed: AtomicBool::new(false),
            rates_read_at: Mutex::new(None),
            all_looked_up_at: Mutex::new(None),
            all_read_at: Mutex::new(None),
            lottery_places: Mutex::default(),
            first_reads: tokio::sync::Mutex::new(()),
            first_asked: Mutex::default(),
            queries,
            open_streams,
        }
    }

    /// Where an open request stands, as of the last read (at most about a
    /// second old). The first question about a concert on this instance
    /// reads its line at once. None for a lottery request before its
    /// lottery is counted (a moment after the opening). `lottery_place`:
    /// its place in its lottery if read with the row (then it costs no
    /// query here).
    pub async fn place(
        &self,
        row: &QueueRow,
        lottery_place: Option<u64>,
    ) -> Result<Option<Place>, sqlx::Error> {
        self.interested(row.concert_id);
        if !self.current().lines.contains_key(&row.concert_id) {
            self.read_one(row.concert_id).await?;
        }
        // A place read with the row counts once this instance's line knows
        // the lottery is counted too (its front is then on the same count).
        let counted = self
            .current()
            .lines
            .get(&row.concert_id)
            .is_some_and(|line| line.lottery.is_some());
        let known = row.line_rank.or_else(|| {
            lottery_place
                .filter(|_| counted)
                .map(|place| LineRank::new(LinePart::Lottery, place))
        });
        let Some(rank) = self
            .rank_of(row.id, row.concert_id, row.line_key, known)
            .await?
        else {
            return Ok(None);
        };
        Ok(self.current().place(row.concert_id, rank, row.line_key))
    }

    /// The concert's line and rates as of the last read (the first
    /// question reads its line at once).
    pub async fn sale(&self, concert: ConcertId) -> Result<SaleNow, sqlx::Error> {
        self.interested(concert);
        if !self.current().lines.contains_key(&concert) {
            self.read_one(concert).await?;
        }
        let board = self.current();
        Ok(SaleNow {
            line_length: board
                .lines
                .get(&concert)
                .map_or(0, |line| line.front.length()),
            requests_per_sec: board.requests.get(&concert).copied().unwrap_or(0.0),
            decisions: board.rates.get(&concert).copied(),
        })
    }

    /// Follows an open request until it is decided.
    pub fn watch(&self, row: &QueueRow) -> watch::Receiver<Progress> {
        let rank = row.line_rank;
        let now = rank.and_then(|rank| self.current().place(row.concert_id, rank, row.line_key));
        let mut watched = self.lock();
        watched.concerts.insert(row.concert_id, Instant::now());
        let receiver = match watched.streams.get(&row.id) {
            Some(stream) => stream.sender.subscribe(),
            None => {
                let (sender, receiver) = watch::channel(Progress::Open(now));
                watched.streams.insert(
                    row.id,
                    Stream {
                        concert: row.concert_id,
                        key: row.line_key,
                        rank,
                        sender,
                        next_place_at: Instant::now(),
                    },
                );
                receiver
            }
        };
        self.open_streams.set(watched.streams.len() as i64);
        drop(watched);
        if now.is_none() {
            self.wake.notify_one();
        }
        receiver
    }

    /// Reads the lines until [`close`](Self::close); a failed read is
    /// logged and tried again at the next tick.
    pub async fn follow(self: Arc<Self>) {
        while !self.closed.load(Ordering::Relaxed) {
            let tick = if self.lock().streams.is_empty() {
                POLL_TICK
            } else {
                STREAM_TICK
            };
            tokio::select! {
                () = self.wake.notified() => {}
                () = tokio::time::sleep(tick) => {}
            }
            if let Err(e) = self.read().await {
                tracing::warn!(error = %e, "reading the lines failed; trying again");
            }
        }
    }

    /// Ends every stream (the server is stopping; their clients reconnect).
    pub fn close(&self) {
        self.closed.store(true, Ordering::Relaxed);
        let mut watched = self.lock();
        for (_, stream) in watched.streams.drain() {
            stream.sender.send_replace(Progress::Closed);
        }
        self.open_streams.set(0);
        self.wake.notify_one();
    }

    async fn read(&self) -> Result<(), sqlx::Error> {
        // Concerts with streams are read every tick; those only polled, at
        // the polls' pace: a thousand concerts polled cost no more reads a
        // second because one of them has a stream.
        let every = due(&self.all_read_at, POLL_TICK);
        let (concerts, watched) = self.concerts_of_interest(every);
        if concerts.is_empty() {
            return Ok(());
        }
        let mut conn = self.pool.acquire().await?;
        let mut lines = self.fronts(&mut conn, &concerts).await?;
        let previous = self.current();
        for concert in watched {
            if let Some(line) = previous.lines.get(&concert) {
                lines.entry(concert).or_insert_with(|| line.clone());
            }
        }
        let (rates, requests) = if self.rates_due() {
            self.queries.inc_by(2);
            let since = db::now(&mut conn).await? - RATES_FRESH_FOR;
            let decisions = rates::decisions(&mut conn, since).await?;
            let requests = rates::requests(&mut conn, since).await?;
            (
                decisions.into_iter().map(|r| (r.concert_id, r)).collect(),
                requests.into_iter().collect(),
            )
        } else {
            (previous.rates.clone(), previous.requests.clone())
        };
        let board = Arc::new(Board {
            lines,
            rates,
            requests,
        });
        *self
            .board
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = board.clone();

        let unranked = self.unranked();
        let (lottery, others): (Vec<_>, Vec<_>) = unranked
            .into_iter()
            .partition(|(_, _, key)| LinePart::of(*key) == LinePart::Lottery);
        let mut ranked = Vec::new();
        for (id, concert, key) in lottery {
            if let Some(rank) = self.rank_of(id, concert, key, None).await? {
                ranked.push((id, rank));
            }
        }
        let others: Vec<QueueId> = others.into_iter().map(|(id, _, _)| id).collect();
        if !others.is_empty() {
            self.queries.inc();
            ranked.extend(line::ranks_of(&mut conn, &others).await?);
        }
        if !ranked.is_empty() {
            let mut watched = self.lock();
            for (id, rank) in ranked {
                if let Some(stream) = watched.streams.get_mut(&id) {
                    stream.rank = Some(rank);
                }
            }
        }
        let all = due(&self.all_looked_up_at, LOOK_UP_ALL_EVERY);
        let left = self.tell_streams(&board, all);
        for chunk in left.chunks(LOOKUP_CHUNK) {
            self.queries.inc();
            let decided = db::queue::decided_among(&mut conn, chunk).await?;
            // A one-seat request's seat is on its row: no query for it.
            if decided
                .iter()
                .any(|row| row.seat_count > 1 || row.seat_id.is_none())
            {
                self.queries.inc();
            }
            let rows: Vec<&db::queue::QueueRow> = decided.iter().collect();
            let mut seats = request_seats::shown_for(&mut conn, &rows).await?;
            let mut watched = self.lock();
            for row in decided {
                let seats = seats.remove(&row.id).unwrap_or_default();
                if let Some(stream) = watched.streams.remove(&row.id) {
                    stream
                        .sender
                        .send_replace(Progress::Decided(Box::new(row), seats));
                }
            }
            self.open_streams.set(watched.streams.len() as i64);
        }
        Ok(())
    }

    /// Streams whose request has no rank yet (a lottery's, until its
    /// lottery is counted).
    fn unranked(&self) -> Vec<(QueueId, ConcertId, LineKey)> {
        self.lock()
            .streams
            .iter()
            .filter(|(_, stream)| stream.rank.is_none())
            .map(|(id, stream)| (*id, stream.concert, stream.key))
            .collect()
    }

    /// Gives each stream still in line its place; returns those to be looked
    /// up (the front has passed them, they have no rank yet, or `all`).
    /// Streams nobody listens to go.
    fn tell_streams(&self, board: &Board, all: bool) -> Vec<QueueId> {
        let now = Instant::now();
        let mut watched = self.lock();
        watched
            .streams
            .retain(|_, stream| stream.sender.receiver_count() > 0);
        self.open_streams.set(watched.streams.len() as i64);
        let mut left = Vec::new();
        for (id, stream) in &mut watched.streams {
            let Some(rank) = stream.rank else {
                // A lottery's, before it is counted: nothing is decided
                // before the opening, so the backstop's pace will do.
                if all {
                    left.push(*id);
                }
                continue;
            };
            let passed = board.has_passed(stream.concert, rank, stream.key);
            if passed || all {
                left.push(*id);
            }
            if passed {
                continue;
            }
            if now < stream.next_place_at {
                continue;
            }
            let place = board.place(stream.concert, rank, stream.key);
            // Spread by up to half again, so that streams opened together
            // are not all told in the same tick ever after.
            let after = Duration::from_millis(place.map_or(1_000, |p| p.poll_after_ms));
            stream.next_place_at = now + after.mul_f64(1.0 + (id.get() % 64) as f64 / 128.0);
            let told = Progress::Open(place);
            stream.sender.send_if_modified(|standing| {
                let changed = *standing != told;
                if changed {
                    *standing = told.clone();
                }
                changed
            });
        }
        left
    }

    fn current(&self) -> Arc<Board> {
        self.board
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Watched> {
        self.watched
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Whether `period` has passed since `last` (then it starts again).
fn due(last: &Mutex<Option<Instant>>, period: Duration) -> bool {
    let Ok(mut last) = last.lock() else {
        return true;
    };
    let due = last.is_none_or(|at| at.elapsed() >= period);
    if due {
        *last = Some(Instant::now());
    }
    due
}

#[cfg(test)]
mod tests;
