//! Claiming requests for a decision: the first due in line, under a lease
//! (or a lock held for the decision), and handing back those not decided.

use chrono::{DateTime, Utc};
use sqlx::{AssertSqlSafe, MySqlConnection};

use crate::db::{IdList, Traced as _, execute_for_ids};
use crate::domain::{
    AskedPool, BestAsk, ConcertId, FailureReason, HoldDuration, LineKey, MaxSeatsPerUser, QueueId,
    SeatId, UserId,
};

use super::*;

mod due;
use due::first_due;

/// Who holds claimed rows, and until when.
#[derive(Debug, Clone)]
pub struct Lease {
    pub owner: String,
    /// Fences every later write: a worker whose rows were re-claimed by
    /// another (after its lease ran out) no longer matches and changes nothing.
    pub token: u64,
    pub until: DateTime<Utc>,
}

/// What a claim took.
#[derive(Debug, Default)]
pub struct ClaimedRows {
    /// In id order.
    pub ids: Vec<QueueId>,
    /// How many of them were PROCESSING under a lease that had run out.
    pub reclaimed: usize,
    /// Rows whose lease ran out once more after their last allowed attempt
    /// (their worker died or stalled each time): set aside as FAILED with
    /// PROCESSING_FAILED instead of being claimed again.
    pub dead_lettered: Vec<QueueId>,
    /// The search for expired leases filled the claim: look again next time.
    pub more_expired: bool,
}

/// Claims up to `limit` rows: first rows whose lease ran out (their worker
/// died or stalled), then the first PENDING ones in line that are due
/// (WAITING ones wait for their sale to open); rows another
/// transaction holds are skipped, not waited for. Run in its own short
/// transaction and commit at once: the lease, not the lock, keeps the rows
/// ours afterwards. An expired row already claimed `max_attempts` times is
/// not claimed again but ends FAILED (PROCESSING_FAILED).
///
/// Looking for expired leases walks the PROCESSING entries of the status
/// index, delete-marked ones included until InnoDB purges them: on a busy
/// queue that costs milliseconds, so callers look only now and then
/// (`look_for_expired`), as leases run out in seconds, not milliseconds.
pub async fn claim(
    conn: &mut MySqlConnection,
    lease: &Lease,
    limit: u32,
    max_attempts: u32,
    look_for_expired: bool,
    now: DateTime<Utc>,
) -> Result<ClaimedRows, sqlx::Error> {
    async move {
        let expired: Vec<(QueueId, u32)> = if !look_for_expired {
            Vec::new()
        } else {
            sqlx::query_as(
            "SELECT id, attempts FROM reservation_queue WHERE status = 'PROCESSING' AND lease_until < ? \
             ORDER BY line_key, id LIMIT ? FOR UPDATE SKIP LOCKED",
        )
        .bind(now.naive_utc())
        .bind(limit)
        .fetch_all(&mut *conn)
        .await?
        };
        let more_expired = expired.len() >= limit as usize;
        let (spent, expired): (Vec<_>, Vec<_>) = expired
            .into_iter()
            .partition(|(_, attempts)| *attempts >= max_attempts);
        let dead_lettered: Vec<QueueId> = spent.into_iter().map(|(id, _)| id).collect();
        // Their old lease is gone; the locks just taken keep them ours.
        fail(conn, &dead_lettered, Fence::Expired, FailureReason::ProcessingFailed, now).await?;
        let room = limit.saturating_sub(u32::try_from(expired.len()).unwrap_or(limit));
        let pending = if room == 0 {
            Vec::new()
        } else {
            first_due(conn, room).await?
        };
        let reclaimed = expired.len();
        let mut ids: Vec<QueueId> = expired
            .into_iter()
            .map(|(id, _)| id)
            .chain(pending)
            .collect();
        ids.sort_unstable();
        let Some(list) = IdList::of(&ids) else {
            return Ok(ClaimedRows {
                dead_lettered,
                more_expired,
                ..ClaimedRows::default()
            });
        };
        let update = sqlx::query(AssertSqlSafe(format!(
            "UPDATE reservation_queue SET status = 'PROCESSING', lease_owner = ?, lease_token = ?, \
             lease_until = ?, attempts = attempts + 1, retry_at = NULL, updated_at = ? WHERE id IN ({list})"
        )))
        .bind(&lease.owner)
        .bind(lease.token)
        .bind(lease.until.naive_utc())
        .bind(now.naive_utc());
        update
            .bind_ids(&list)
            .execute(&mut *conn)
            .await?;
        Ok(ClaimedRows {
            ids,
            reclaimed,
            dead_lettered,
            more_expired,
        })
    }
    .traced("UPDATE", "reservation_queue")
    .await
}

/// Locks up to `limit` of the first PENDING rows in line that are due, for
/// a decision in the same transaction ([`Fence::InTransaction`]): no lease and no
/// PROCESSING status are written, so a claim costs one statement, not an
/// UPDATE of every row's status index entry and a commit of its own. In id
/// order.
pub async fn lock_pending(
    conn: &mut MySqlConnection,
    limit: u32,
) -> Result<Vec<QueueId>, sqlx::Error> {
    let mut ids = first_due(conn, limit)
        .traced("SELECT", "reservation_queue")
        .await?;
    ids.sort_unstable();
    Ok(ids)
}

/// Whether any row's lease has run out (its worker died or stalled): the
/// PROCESSING entries of the status index are few, so this is cheap, and a
/// worker that decides rows without leases looks now and then.
pub async fn any_lease_expired(conn: &mut MySqlConnection) -> Result<bool, sqlx::Error> {
    let row: Option<(i64,)> = sqlx::query_as(
        "SELECT 1 FROM reservation_queue WHERE status = 'PROCESSING' \
         AND lease_until < UTC_TIMESTAMP(6) LIMIT 1",
    )
    .fetch_optional(conn)
    .traced("SELECT", "reservation_queue")
    .await?;
    Ok(row.is_some())
}

/// Hands rows back to the queue as PENDING, not to be claimed before
/// `retry_at`. A deferred row (an earlier request for its seat was still
/// open elsewhere) gets its attempt back; a row whose attempt failed keeps
/// it counted; a row claimed without a lease ([`Fence::InTransaction`]) never had
/// one counted.
pub async fn hand_back(
    conn: &mut MySqlConnection,
    ids: &[QueueId],
    fence: Fence,
    retry_at: DateTime<Utc>,
    attempt: Attempt,
    now: DateTime<Utc>,
) -> Result<u64, sqlx::Error> {
    let attempts = match (fence, attempt) {
        (Fence::InTransaction, _) | (_, Attempt::Counted) => "attempts",
        (_, Attempt::Refunded) => "IF(attempts > 0, attempts - 1, 0)",
    };
    execute_for_ids(conn, ids, |list| {
        let update = sqlx::query(AssertSqlSafe(format!(
            "UPDATE reservation_queue SET status = 'PENDING', lease_owner = NULL, lease_token = NULL, \
                 lease_until = NULL, attempts = {attempts}, retry_at = ?, updated_at = ? \
             WHERE {} AND id IN ({list})",
            fence.condition(""),
        )))
        .bind(retry_at.naive_utc())
        .bind(now.naive_utc());
        fence.bind_token(update)
    })
    .traced("UPDATE", "reservation_queue")
    .await
}

/// Whether a handed-back row's attempt counts toward its limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Attempt {
    /// Nothing went wrong (the row was deferred): the claim does not count.
    Refunded,
    /// The attempt failed.
    Counted,
}

/// How often the row was claimed, while it is PROCESSING under this lease.
pub async fn attempts(
    conn: &mut MySqlConnection,
    id: QueueId,
    token: u64,
) -> Result<Option<u32>, sqlx::Error> {
    let row: Option<(u32,)> = sqlx::query_as(
        "SELECT attempts FROM reservation_queue \
         WHERE id = ? AND status = 'PROCESSING' AND lease_token = ?",
    )
    .bind(id)
    .bind(token)
    .fetch_optional(conn)
    .traced("SELECT", "reservation_queue")
    .await?;
    Ok(row.map(|(n,)| n))
}

/// A claimed request, as the decision needs it.
#[derive(Debug, Clone)]
pub struct LeasedRow {
    pub id: QueueId,
    pub user_id: UserId,
    pub concert_id: ConcertId,
    /// In id order; empty for a request by count, and for a row written
    /// without its seats (see [`enqueue_many`]).
    pub seats: Vec<SeatId>,
    /// What a request by count asks for.
    pub best: Option<BestAsk>,
    /// The concert's hold, as it is set now.
    pub hold: HoldDuration,
    /// When the request may be decided, as the concert is set now: its
    /// sale's opening, or for a presale request the presale's start.
    pub opens_at: Option<DateTime<Utc>>,
    /// The concert's cap per fan, as it is set now.
    pub max_seats_per_user: MaxSeatsPerUser,
    /// The concert was cancelled: the request fails, whatever its seats.
    pub concert_cancelled: bool,
    pub line: LineKey,
    pub traceparent: Option<String>,
    pub tracestate: Option<String>,
    pub created_at: DateTime<Utc>,
}

#[derive(sqlx::FromRow)]
struct LeasedSeat {
    id: QueueId,
    user_id: UserId,
    concert_id: ConcertId,
    seat_id: Option<SeatId>,
    category: Option<u8>,
    area: Option<u8>,
    seat_count: Option<u8>,
    allow_split: Option<bool>,
    /// 1 for a request with an access code (a presale request).
    presale: i64,
    line_key: LineKey,
    traceparent: Option<String>,
    tracestate: Option<String>,
    created_at: DateTime<Utc>,
}

/// Locks the rows of `ids` that are still ours (`fence`), with their seats,
/// in line order. Rows missing from the answer were lost
/// (re-claimed by another worker, or already decided) and must not be
/// touched. The concerts' settings are read once a concert, after the
/// locks, not locked (a concert's row is every decision's, and a changed
/// setting applies from the next decision) and not per row (a thousand
/// rows of one concert would read its row three thousand times).
pub async fn lock_leased(
    conn: &mut MySqlConnection,
    ids: &[QueueId],
    fence: Fence,
) -> Result<Vec<LeasedRow>, sqlx::Error> {
    let Some(list) = IdList::of(ids) else {
        return Ok(Vec::new());
    };
    let select = sqlx::query_as(AssertSqlSafe(format!(
        "SELECT q.id, q.user_id, q.concert_id, rs.seat_id, rp.category, rp.area, rp.seat_count, rp.allow_split, CAST(q.access_code_id IS NOT NULL AS SIGNED) AS presale, \
                q.line_key, q.traceparent, q.tracestate, q.created_at \
         FROM reservation_queue q FORCE INDEX (PRIMARY) LEFT JOIN request_seats rs ON rs.queue_id = q.id \
              LEFT JOIN request_pools rp ON rp.queue_id = q.id \
         WHERE {} AND q.id IN ({list}) \
         ORDER BY q.line_key, q.id, rs.seat_id FOR UPDATE",
        fence.condition("q."),
    )));
    let seats: Vec<LeasedSeat> = fence
        .bind_token(select)
        .bind_ids(&list)
        .fetch_all(&mut *conn)
        .traced("SELECT", "reservation_queue")
        .await?;
    let mut concert_ids: Vec<ConcertId> = seats.iter().map(|s| s.concert_id).collect();
    concert_ids.sort_unstable();
    concert_ids.dedup();
    let terms = terms_of(conn, &concert_ids).await?;
    let mut rows: Vec<LeasedRow> = Vec::with_capacity(ids.len());
    for seat in seats {
        let concert = terms.get(&seat.concert_id);
        match rows.last_mut() {
            Some(row) if row.id == seat.id => row.seats.extend(seat.seat_id),
            _ => rows.push(LeasedRow {
                id: seat.id,
                user_id: seat.user_id,
                concert_id: seat.concert_id,
                seats: seat.seat_id.into_iter().collect(),
                best: seat
                    .category
                    .map(AskedPool::Category)
                    .or(seat.area.map(AskedPool::Area))
                    .zip(seat.seat_count)
                    .map(|(pool, count)| BestAsk {
                        pool,
                        count,
                        allow_split: seat.allow_split.unwrap_or(false),
                    }),
                hold: concert.map(|c| c.hold).unwrap_or_default(),
                opens_at: concert.and_then(|c| c.opens_at(seat.presale != 0)),
                max_seats_per_user: concert
                    .map_or(MaxSeatsPerUser::from_stored(MaxSeatsPerUser::MOST), |c| {
                        c.max_seats_per_user
                    }),
                concert_cancelled: concert.is_some_and(|c| c.cancelled),
                line: seat.line_key,
                traceparent: seat.traceparent,
                tracestate: seat.tracestate,
                created_at: seat.created_at,
            }),
        }
    }
    Ok(rows)
}

/// What a decision needs of a concert's settings, as they are set now.
struct Terms {
    hold: HoldDuration,
    opens_at: Option<DateTime<Utc>>,
    presale_starts_at: Option<DateTime<Utc>>,
    max_seats_per_user: MaxSeatsPerUser,
    cancelled: bool,
}

impl Terms {
    /// When a request may be decided: the sale's opening, or for a presale
    /// request the presale's start.
    fn opens_at(&self, presale: bool) -> Option<DateTime<Utc>> {
        if presale {
            self.presale_starts_at.or(self.opens_at)
        } else {
            self.opens_at
        }
    }
}

/// The settings of `concerts` (sorted, distinct), read, not locked.
async fn terms_of(
    conn: &mut MySqlConnection,
    concerts: &[ConcertId],
) -> Result<std::collections::HashMap<ConcertId, Terms>, sqlx::Error> {
    let Some(list) = IdList::of(concerts) else {
        return Ok(std::collections::HashMap::new());
    };
    let select = sqlx::query_as(AssertSqlSafe(format!(
        "SELECT id, hold_seconds, opens_at, presale_starts_at, max_seats_per_user, \
                cancelled_at IS NOT NULL AS cancelled \
           FROM concerts WHERE id IN ({list})"
    )));
    #[allow(clippy::type_complexity)]
    let rows: Vec<(
        ConcertId,
        u32,
        Option<DateTime<Utc>>,
        Option<DateTime<Utc>>,
        u8,
        bool,
    )> = select
        .bind_ids(&list)
        .fetch_all(conn)
        .traced("SELECT", "concerts")
        .await?;
    Ok(rows
        .into_iter()
        .map(|(id, hold, opens_at, presale_starts_at, cap, cancelled)| {
            let terms = Terms {
                hold: HoldDuration::parse(hold.into()).unwrap_or_default(),
                opens_at,
                presale_starts_at,
                max_seats_per_user: MaxSeatsPerUser::from_stored(cap),
                cancelled,
            };
            (id, terms)
        })
        .collect())
}
