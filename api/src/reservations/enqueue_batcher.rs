//! Groups concurrent reservation requests into one INSERT and one commit.
//!
//! On ticket-open day thousands of requests arrive in the same second; one
//! transaction each spends most of the database's CPU on per-statement and
//! per-commit overhead. Requests that arrive while earlier groups are being
//! written wait together and go in the next group, so the group grows with
//! the load and stays a single request when the service is quiet. Every
//! caller is answered only after the commit that holds its row, and a bad
//! request (a second click, an unknown seat, a deleted account) is refused
//! alone while the rest of its group is written. Requests by count and
//! requests with an `Idempotency-Key` go the same way; a replay of a key
//! is answered alone, after its group.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};

use opentelemetry::Context;
use opentelemetry::trace::{SpanKind, TraceContextExt as _};
use sqlx::MySqlPool;
use ticket_core::db::kept::KeptConnections;
use ticket_core::db::{self, queue, request_pools, request_seats};
use ticket_core::domain::Asked;
use ticket_core::domain::{Admission, LineKey, MaxSeatsPerUser, QueueId, QueueStatus, SaleWindow};
use ticket_core::telemetry::spans::{Recorded, db_attributes};

use crate::error::{ApiError, ApiResult};
use tokio::sync::{Semaphore, mpsc, oneshot};

mod write;
use write::*;

/// Largest group: 11 placeholders a row stays far below the statement limit.
const MAX_GROUP: usize = 512;
/// Requests waiting for a group beyond which callers wait to be taken in.
const WAITING: usize = MAX_GROUP * 16;
/// After the database was found unreachable, groups fail at once for this
/// long instead of each waiting out a connection attempt: callers get their
/// 503 fast and do not pile up behind a dead database.
const UNAVAILABLE_GRACE: Duration = Duration::from_millis(250);

/// Why a request was not queued.
#[derive(Debug, thiserror::Error)]
pub enum EnqueueError {
    #[error(transparent)]
    Database(#[from] sqlx::Error),
    /// The user already has the most open seats (in open requests) allowed.
    #[error("too many open reservation requests")]
    TooManyOpen,
    /// The user already has an open request for one of the seats: the one
    /// in line.
    #[error("already requested")]
    Duplicate(QueueId),
    #[error("no such seat")]
    SeatNotFound,
    /// A valid token whose account was deleted since.
    #[error("no such user")]
    UserGone,
    /// The sale takes no requests yet by the database's clock.
    #[error("the sale has not opened")]
    SaleNotOpen(SaleWindow),
    /// The concert is in its presale and the request has no access code.
    #[error("an access code is required")]
    AccessCodeRequired,
    /// The request's seats would take its user past the concert's cap; the
    /// seats the user has without it.
    #[error("the user's limit for the concert is reached")]
    UserLimit(MaxSeatsPerUser, u64),
}

/// A request in line: WAITING in the lottery, else PENDING.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Queued {
    pub id: QueueId,
    pub status: QueueStatus,
}

impl Queued {
    pub fn new(id: QueueId, line: LineKey) -> Self {
        Self {
            id,
            status: QueueStatus::in_line_at(line),
        }
    }
}

impl EnqueueError {
    /// Why the sale does not take `request` at `now` (the database's clock).
    pub fn not_taken(request: &queue::NewRequest, now: chrono::DateTime<chrono::Utc>) -> Self {
        match request.admission(now) {
            Admission::CodeRequired { .. } => Self::AccessCodeRequired,
            _ => Self::SaleNotOpen(request.sale),
        }
    }

    /// What a failed single INSERT means: a duplicate is answered with the
    /// request already in line; any other constraint is named by the API's
    /// error mapping.
    pub async fn from_insert(
        conn: &mut sqlx::MySqlConnection,
        request: &queue::NewRequest,
        err: sqlx::Error,
    ) -> Self {
        let existing = match (db::violated_unique_key(&err), &request.asked) {
            (Some("uq_request_seats_open"), _) => {
                request_seats::find_open(conn, request.user, request.concert, request.seats()).await
            }
            (Some("uq_request_pools_open"), Asked::Best(ask)) => {
                request_pools::find_open(conn, request.user, request.concert, ask.pool).await
            }
            _ => Ok(None),
        };
        match existing {
            Ok(Some(existing)) => Self::Duplicate(existing),
            _ => Self::Database(err),
        }
    }
}

/// The answer a refused request gets.
impl From<EnqueueError> for ApiError {
    fn from(e: EnqueueError) -> Self {
        match e {
            EnqueueError::TooManyOpen => ApiError::rate_limited(
                "you have too many open reservation requests; wait for their decisions",
                1,
            ),
            EnqueueError::Duplicate(existing) => ApiError::duplicate_request(existing),
            EnqueueError::SeatNotFound => ApiError::seat_not_found(),
            EnqueueError::UserGone => ApiError::account_gone(),
            EnqueueError::SaleNotOpen(sale) => ApiError::sale_not_open(sale),
            EnqueueError::UserLimit(cap, taken) => ApiError::user_limit_reached(cap, taken),
            EnqueueError::AccessCodeRequired => ApiError::access_code_required(),
            EnqueueError::Database(e) => e.into(),
        }
    }
}

/// The request in line and whether it was there before (a replay of its
/// `Idempotency-Key`), or why not.
type Reply = oneshot::Sender<ApiResult<(Queued, bool)>>;

/// A request waiting for its group, with the trace it belongs to.
struct Job {
    request: queue::NewRequest,
    trace: Context,
    reply: Reply,
}

#[derive(Clone)]
pub struct EnqueueBatcher {
    sender: mpsc::Sender<Job>,
}

impl EnqueueBatcher {
    /// Starts the task that forms and writes groups on the current runtime.
    /// With `max_open_per_user` above 0, a user's request that would take
    /// the seats in their open (PENDING or PROCESSING) requests beyond that
    /// many is refused. Groups written at the
    /// same time count separately, so a user may exceed it slightly.
    ///
    /// `writers` groups are written at the same time, each on a connection
    /// of its own. Fewer writers make larger groups: less database work per
    /// request, and more of the database left to the deciding workers (see
    /// `TICKET_ENQUEUE_WRITERS`).
    pub fn start(pool: MySqlPool, max_open_per_user: u32, writers: usize) -> Self {
        let (sender, receiver) = mpsc::channel(WAITING);
        tokio::spawn(dispatch(pool, receiver, max_open_per_user, writers.max(1)));
        Self { sender }
    }

    /// Enqueues the request; resolves once it is committed (or failed), with
    /// whether it replays a request written before with its key. The INSERT
    /// and commit it shared with its group appear as a span under `trace`.
    pub async fn enqueue(
        &self,
        request: queue::NewRequest,
        trace: Context,
    ) -> ApiResult<(Queued, bool)> {
        let (reply, answer) = oneshot::channel();
        self.sender
            .send(Job {
                request,
                trace,
                reply,
            })
            .await
            .map_err(|_| ApiError::from(sqlx::Error::PoolClosed))?;
        answer
            .await
            .map_err(|_| ApiError::from(sqlx::Error::PoolClosed))?
    }
}

/// When the database was last found unreachable (ms since the batcher
/// started; 0: never).
struct Outage {
    epoch: Instant,
    last_ms: AtomicU64,
}

impl Outage {
    fn elapsed_ms(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis())
            .unwrap_or(u64::MAX)
            .max(1)
    }

    fn record(&self) {
        self.last_ms.store(self.elapsed_ms(), Ordering::Relaxed);
    }

    fn recent(&self) -> bool {
        let last = self.last_ms.load(Ordering::Relaxed);
        last != 0 && self.elapsed_ms().saturating_sub(last) < UNAVAILABLE_GRACE.as_millis() as u64
    }
}

async fn dispatch(
    pool: MySqlPool,
    mut receiver: mpsc::Receiver<Job>,
    max_open_per_user: u32,
    writers: usize,
) {
    let connections = Arc::new(KeptConnections::new(pool, writers));
    let writers = Arc::new(Semaphore::new(writers));
    let outage = Arc::new(Outage {
        epoch: Instant::now(),
        last_ms: AtomicU64::new(0),
    });
    loop {
        // Wait for a free writer first: meanwhile the next group gathers.
        let Ok(permit) = writers.clone().acquire_owned().await else {
            return;
        };
        let Some(first) = receiver.recv().await else {
            return;
        };
        let size = group_size(1 + receiver.len());
        let mut group = Vec::with_capacity(size);
        group.push(first);
        while group.len() < size {
            match receiver.try_recv() {
                Ok(job) => group.push(job),
                Err(_) => break,
            }
        }
        let connections = connections.clone();
        let outage = outage.clone();
        tokio::spawn(async move {
            write_group(&connections, group, &outage, max_open_per_user).await;
            drop(permit);
        });
    }
}

/// How many of the `waiting` requests the next group takes: the largest
/// power of two (up to `MAX_GROUP`), so that the INSERT has at most ten
/// shapes, each prepared once per connection and kept in its statement
/// cache. The rest wait for the next free writer, in parallel, rather than
/// behind this group's commit (a group of 7 is 4, 2 and 1 on three writers,
/// not three commits in a row on one), and grow with what arrives meanwhile.
fn group_size(waiting: usize) -> usize {
    let waiting = waiting.clamp(1, MAX_GROUP);
    1 << waiting.ilog2()
}

async fn write_group(
    connections: &KeptConnections,
    group: Vec<Job>,
    outage: &Arc<Outage>,
    limit: u32,
) {
    if outage.recent() {
        return refuse_all(group);
    }
    let requests: Vec<queue::NewRequest> = group.iter().map(|job| job.request.clone()).collect();
    let started = SystemTime::now();
    let pool = connections.pool();
    match insert_group_retrying(connections, &requests, limit).await {
        Ok(answers) => {
            let size = group.len();
            let mut alone = Vec::new();
            for (job, answer) in group.into_iter().zip(answers) {
                match answer {
                    Answer::Ready(result) => {
                        record_insert(&job.trace, started, size);
                        let answer = result.map(|queued| (queued, false));
                        let _ = job.reply.send(answer.map_err(ApiError::from));
                    }
                    Answer::Alone => alone.push(job),
                }
            }
            one_by_one(pool, alone, outage, limit).await;
        }
        // The database is gone: every request gets its 503 now, rather
        // than each trying again alone.
        Err(e) if db::is_unavailable(&e) => {
            tracing::warn!(error = %e, size = group.len(), "database unavailable; refusing the group");
            outage.record();
            refuse_all(group);
        }
        // Rows the group needs are locked past the lock-wait timeout: alone,
        // each would wait as long again.
        Err(e) if db::is_transient_conflict(&e) => {
            tracing::warn!(error = %e, size = group.len(), "group insert kept conflicting; refusing the group");
            refuse_all(group);
        }
        Err(e) => {
            tracing::warn!(error = %e, size = group.len(), "group insert failed; inserting one by one");
            one_by_one(pool, group, outage, limit).await;
        }
    }
}

/// Each request alone, so each gets its own answer: only for what a group
/// could not settle (a replay among them). Awaited inside the writer's
/// permit: that wait is what lets the next group gather.
async fn one_by_one(pool: &MySqlPool, jobs: Vec<Job>, outage: &Arc<Outage>, limit: u32) {
    let mut singles = tokio::task::JoinSet::new();
    for job in jobs {
        let pool = pool.clone();
        let outage = outage.clone();
        singles.spawn(async move {
            let started = SystemTime::now();
            let result = super::alone::place(&pool, limit, job.request, None).await;
            if matches!(&result, Err(e) if e.is_database_unreachable()) {
                outage.record();
            }
            record_insert(&job.trace, started, 1);
            let _ = job.reply.send(result);
        });
    }
    while singles.join_next().await.is_some() {}
}

/// Answers every request of the group "database unavailable" (a 503).
fn refuse_all(group: Vec<Job>) {
    for job in group {
        let _ = job.reply.send(Err(sqlx::Error::PoolTimedOut.into()));
    }
}

/// The request's share of a group write, as a span of its own trace.
fn record_insert(trace: &Context, started: SystemTime, group_size: usize) {
    if !trace.span().span_context().is_sampled() {
        return;
    }
    Recorded::new(
        "INSERT reservation_queue",
        SpanKind::Client,
        started,
        SystemTime::now(),
    )
    .attributes(db_attributes("INSERT", "reservation_queue"))
    .attribute(opentelemetry::KeyValue::new(
        "db.operation.batch.size",
        i64::try_from(group_size).unwrap_or(i64::MAX),
    ))
    .record(trace);
}

#[cfg(test)]
mod tests;
