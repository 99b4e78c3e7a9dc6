//! Writing one group: the database's clock read when admission needs it,
//! the multi-row insert retried on transient conflicts, one by one when a
//! group fails for a reason in its rows.

use sqlx::MySql;
use sqlx::pool::PoolConnection;
use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use ticket_core::db::kept::KeptConnections;
use ticket_core::db::whole;
use ticket_core::db::{self, line, queue, request_seats};
use ticket_core::domain::allocation::Fan;
use ticket_core::domain::{LineKey, UserId};

use super::*;

/// What the group write says to one of its requests.
pub(super) enum Answer {
    Ready(Result<Queued, EnqueueError>),
    /// Not settled by the group: enqueue it alone.
    Alone,
}

/// Every group's `now`, distinct within the process.
static GROUP_CLOCK: queue::GroupClock = queue::GroupClock::new();

/// The latest reading of the database's clock a group made (µs).
static DATABASE_SEEN: AtomicI64 = AtomicI64::new(0);

/// When the group is written. Which requests a sale takes (and whether in
/// its lottery) is decided by the database's clock; the database is asked
/// only when a request's sale opens (or its lottery or presale starts)
/// later than the last reading: once a sale is seen open it stays open, and
/// a sale without an opening is always open. That keeps the round trip off
/// groups of sales long open.
pub(super) async fn group_time(
    tx: &mut sqlx::MySqlConnection,
    requests: &[queue::NewRequest],
) -> Result<queue::GroupTime, sqlx::Error> {
    let seen = DATABASE_SEEN.load(Ordering::Relaxed);
    let depends_on_the_clock = requests.iter().any(|r| {
        r.sale
            .lottery_begins()
            .into_iter()
            .chain(r.sale.opens_at)
            .chain(r.sale.presale_starts_at)
            .any(|at| at.timestamp_micros() >= seen)
    });
    if depends_on_the_clock {
        let read = db::now(tx).await?;
        DATABASE_SEEN.fetch_max(read.timestamp_micros(), Ordering::Relaxed);
        return Ok(queue::GroupTime {
            admitted_at: read,
            written_at: GROUP_CLOCK.after(read),
        });
    }
    Ok(queue::GroupTime {
        admitted_at: chrono::DateTime::from_timestamp_micros(seen).unwrap_or_default(),
        written_at: GROUP_CLOCK.after(chrono::Utc::now()),
    })
}

/// Group writes that deadlock are tried again: everything was rolled back.
pub(super) const GROUP_ATTEMPTS: u32 = 3;

pub(super) async fn insert_group_retrying(
    connections: &KeptConnections,
    requests: &[queue::NewRequest],
    limit: u32,
) -> Result<Vec<Answer>, sqlx::Error> {
    let mut attempt = 1;
    loop {
        let mut conn = connections.take().await?;
        let written = insert_group(&mut conn, requests, limit).await;
        if written.is_ok() {
            connections.keep(conn);
        }
        match written {
            Err(e) if db::is_retryable_at_once(&e) && attempt < GROUP_ATTEMPTS => {
                tracing::debug!(error = %e, attempt, "group insert conflicted; retrying");
                attempt += 1;
            }
            other => return other,
        }
    }
}

/// Writes the group in one transaction. A duplicate, an unknown seat or a
/// deleted user is refused alone, inside the group's own statements; a
/// request that would take its fan past the concert's cap is withdrawn, and
/// so is one whose user would have more than `limit` open seats (0: no
/// limit). The open seats come with the INSERT's read-back; the fans'
/// seats take one more statement, counted after the group's own write.
pub(super) async fn insert_group(
    conn: &mut PoolConnection<MySql>,
    requests: &[queue::NewRequest],
    limit: u32,
) -> Result<Vec<Answer>, sqlx::Error> {
    whole::run(conn, async |tx| {
        let time = group_time(tx, requests).await?;
        let mut written = queue::enqueue_many(tx, requests, time).await?;
        let mut entered = written.entered(requests, time);
        let mut answers: Vec<Answer> = written
            .outcomes
            .iter()
            .zip(requests)
            .map(|(outcome, request)| match *outcome {
                queue::Outcome::Queued(id) => Answer::Ready(Ok(Queued::new(
                    id,
                    request
                        .line_at(time.admitted_at)
                        .unwrap_or(LineKey::AFTER_OPENING),
                ))),
                queue::Outcome::SaleNotOpen => {
                    Answer::Ready(Err(EnqueueError::not_taken(request, time.admitted_at)))
                }
                queue::Outcome::Duplicate(id) => Answer::Ready(Err(EnqueueError::Duplicate(id))),
                queue::Outcome::SeatNotFound => Answer::Ready(Err(EnqueueError::SeatNotFound)),
                queue::Outcome::UserNotFound => Answer::Ready(Err(EnqueueError::UserGone)),
                queue::Outcome::Unsettled => Answer::Alone,
            })
            .collect();
        let fan_seats = std::mem::take(&mut written.fan_seats);
        withdraw_over_cap(tx, requests, fan_seats, &mut answers).await?;
        if limit > 0 {
            // Counted in this transaction, after the group's own write and
            // withdrawals: no user keeps more than `limit` open, so the read is
            // as short as the limit.
            let mut users: Vec<UserId> = requests.iter().map(|r| r.user).collect();
            users.sort_unstable();
            users.dedup();
            let open_seats_per_user = request_seats::open_counts(tx, &users).await?;
            let mut excess: HashMap<_, u64> = open_seats_per_user
                .iter()
                .filter(|(_, open)| **open > u64::from(limit))
                .map(|(user, open)| (*user, open - u64::from(limit)))
                .collect();
            if !excess.is_empty() {
                // The group's newest requests of each such user go back.
                let mut withdrawn = Vec::new();
                for (i, request) in requests.iter().enumerate().rev() {
                    if let Some(over) = excess.get_mut(&request.user)
                        && *over > 0
                        && let queue::Outcome::Queued(id) = written.outcomes[i]
                        && matches!(answers[i], Answer::Ready(Ok(_)))
                    {
                        *over = over.saturating_sub(u64::from(request.seat_count()));
                        withdrawn.push(id);
                        answers[i] = Answer::Ready(Err(EnqueueError::TooManyOpen));
                    }
                }
                queue::withdraw(tx, &withdrawn).await?;
            }
        }
        let kept: std::collections::HashSet<_> = answers
            .iter()
            .filter_map(|answer| match answer {
                Answer::Ready(Ok(queued)) => Some(queued.id),
                _ => None,
            })
            .collect();
        entered.retain(|e| kept.contains(&e.id));
        line::rank_entered(tx, &entered).await?;
        Ok(answers)
    })
    .await
}

/// Withdraws the group's requests that take their fan past the concert's
/// cap (`seats`: each fan's, counted after the group's write), the newest
/// first, and answers them USER_LIMIT_REACHED.
async fn withdraw_over_cap(
    tx: &mut sqlx::MySqlConnection,
    requests: &[queue::NewRequest],
    mut seats: HashMap<Fan, u64>,
    answers: &mut [Answer],
) -> Result<(), sqlx::Error> {
    let mut withdrawn = Vec::new();
    for (i, request) in requests.iter().enumerate().rev() {
        let cap = request.max_seats_per_user;
        if let Answer::Ready(Ok(queued)) = &answers[i]
            && let Some(count) = seats.get_mut(&request.fan())
            && *count > u64::from(cap.get())
        {
            *count = count.saturating_sub(u64::from(request.seat_count()));
            withdrawn.push(queued.id);
            answers[i] = Answer::Ready(Err(EnqueueError::UserLimit(cap, *count)));
        }
    }
    queue::withdraw(tx, &withdrawn).await?;
    Ok(())
}
