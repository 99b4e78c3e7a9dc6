//! Requests written alone, each in a transaction of its own: presale
//! requests with an access code (the code's row is locked while what it has
//! taken is counted, so that two instances cannot both spend its last use),
//! and what the enqueue batcher's group could not settle (a replay of an
//! `Idempotency-Key`, a pool renamed meanwhile, a group that failed).

use ticket_core::db::whole::Whole;
use ticket_core::db::{self, access_codes, queue, request_pools, request_seats};
use ticket_core::domain::{AccessCode, AccessCodeId, Asked, ConcertId, IdempotencyKey, UserId};

use super::best::pool_under_line_lock;
use super::enqueue_batcher::{EnqueueError, Queued};
use crate::error::{ApiError, ApiResult, ErrorCode};

/// Writes `request` alone; `(queued, replayed)`. A request whose key was
/// written before is answered as the first time. A `code` counts only while
/// the presale runs by the database's clock; then it must be valid and have
/// a use and the seats left. A user may have `limit` seats in open requests
/// (0: any).
pub(super) async fn place(
    pool: &sqlx::MySqlPool,
    limit: u32,
    mut request: queue::NewRequest,
    code: Option<AccessCode>,
) -> ApiResult<(Queued, bool)> {
    let mut conn = pool.acquire().await?;
    let key = request.key.clone();
    if let Some(key) = &key
        && let Some(replayed) = replay(&mut conn, request.user, &request.asked, key).await?
    {
        return Ok((replayed, true));
    }
    let mut attempt = 1;
    loop {
        let mut tx = Whole::begin(&mut conn).await?;
        let written = write(&mut tx, &mut request, code.as_ref(), limit).await;
        // A deadlock rolled everything back: the write is tried again.
        let again = attempt < ATTEMPTS
            && match &written {
                Ok(Err(e)) => db::is_retryable_at_once(e),
                Err(refused) => refused.is_transient_conflict(),
                Ok(Ok(_)) => false,
            };
        match written {
            Ok(Ok(queued)) => {
                tx.commit().await?;
                return Ok((queued, false));
            }
            _ if again => {
                tx.rollback().await?;
                attempt += 1;
            }
            Ok(Err(e)) => {
                tx.rollback().await?;
                // The same key at the same time (the server may name either
                // key it broke): answer as the first, if it was the same request.
                if let Some(key) = &key
                    && db::violated_unique_key(&e).is_some()
                    && let Some(replayed) =
                        replay(&mut conn, request.user, &request.asked, key).await?
                {
                    return Ok((replayed, true));
                }
                return Err(EnqueueError::from_insert(&mut conn, &request, e)
                    .await
                    .into());
            }
            Err(refused) => {
                tx.rollback().await?;
                return Err(refused);
            }
        }
    }
}

/// Tries of a request's write that deadlocked (as the batcher's groups).
const ATTEMPTS: u32 = 3;

/// The request's write in `tx`: its id and place in line, the insert's own
/// error (a key or seat it broke, told apart by the caller once `tx` has
/// rolled back), or why it is refused (then `tx` must roll back).
async fn write(
    tx: &mut sqlx::MySqlConnection,
    request: &mut queue::NewRequest,
    code: Option<&AccessCode>,
    limit: u32,
) -> ApiResult<Result<Queued, sqlx::Error>> {
    let user = request.user;
    if limit > 0 {
        // One such request of a user at a time, counted after its own
        // write: concurrent ones cannot all pass a count taken before.
        db::users::lock(tx, user).await?;
    }
    let now = db::now(tx).await?;
    if let Some(code) = code
        && request.sale.in_presale(now)
    {
        let seats = u64::from(request.seat_count());
        request.access_code =
            Some(take_code(tx, request.concert, request.user, seats, code, now).await?);
    }
    if let (Asked::Best(ask), Some(named)) = (&mut request.asked, &request.named) {
        ask.pool = pool_under_line_lock(tx, request.concert, named).await?;
    }
    let Some(line) = request.line_at(now) else {
        return Err(EnqueueError::not_taken(request, now).into());
    };
    let id = match queue::enqueue(tx, request, line, now).await {
        Ok(id) => id,
        Err(e) => return Ok(Err(e)),
    };
    // Counted with its own write, rolled back if it is too many.
    let fans = db::fans::seats_of(tx, &[user]).await?;
    let seats = fans.get(&request.fan()).copied().unwrap_or(0);
    if seats > u64::from(request.max_seats_per_user.get()) {
        let without = seats.saturating_sub(u64::from(request.seat_count()));
        return Err(ApiError::user_limit_reached(
            request.max_seats_per_user,
            without,
        ));
    }
    if limit > 0 {
        let open = request_seats::open_counts(tx, &[user]).await?;
        if open.get(&user).copied().unwrap_or(0) > u64::from(limit) {
            // Rolled back: a replay of this key is refused the same way
            // while the user is at the limit.
            return Err(EnqueueError::TooManyOpen.into());
        }
    }
    Ok(Ok(Queued::new(id, line)))
}

/// The request `user` wrote before with `key`, if it asked the same; 409
/// IDEMPOTENCY_KEY_REUSED when the key named other seats.
pub(super) async fn replay(
    conn: &mut sqlx::MySqlConnection,
    user: UserId,
    asked: &Asked,
    key: &IdempotencyKey,
) -> ApiResult<Option<Queued>> {
    let Some(original) = queue::find_by_idempotency_key(conn, user, key).await? else {
        return Ok(None);
    };
    let same = match asked {
        Asked::Seats(seats) => {
            let named = request_seats::of_requests(conn, &[original.id]).await?;
            named.get(&original.id).map(Vec::as_slice) == Some(seats.as_slice())
        }
        Asked::Best(ask) => {
            let asked = request_pools::of_requests(conn, &[original.id]).await?;
            asked.get(&original.id) == Some(ask)
        }
    };
    if !same {
        return Err(ApiError::new(
            ErrorCode::IdempotencyKeyReused,
            "this Idempotency-Key was used for a different request",
        ));
    }
    Ok(Some(Queued::new(original.id, original.line_key)))
}

/// Locks the concert's code and takes a use of it for `user` asking for
/// `seats`: binds it to the first account that uses it, and refuses it
/// when revoked, another account's, or out of uses or seats.
pub(crate) async fn take_code(
    tx: &mut sqlx::MySqlConnection,
    concert: ConcertId,
    user: UserId,
    seats: u64,
    code: &AccessCode,
    now: chrono::DateTime<chrono::Utc>,
) -> ApiResult<AccessCodeId> {
    let Some(found) = access_codes::lock(tx, concert, &code.hash(), now).await? else {
        return Err(ApiError::access_code_invalid());
    };
    if found.revoked {
        return Err(ApiError::access_code_invalid());
    }
    if found.user.is_some_and(|owner| owner != user) {
        return Err(ApiError::access_code_used(
            "this access code has been used by another account",
        ));
    }
    if found.uses >= u64::from(found.uses_per_code) {
        return Err(ApiError::access_code_used(format!(
            "this access code has been used {} times, all it may be",
            found.uses
        )));
    }
    if found.seats + seats > u64::from(found.seats_per_code) {
        return Err(ApiError::access_code_used(format!(
            "this access code has {} of its {} seats left",
            u64::from(found.seats_per_code).saturating_sub(found.seats),
            found.seats_per_code
        )));
    }
    if found.user.is_none() {
        access_codes::bind(tx, found.id, user).await?;
    }
    Ok(found.id)
}
