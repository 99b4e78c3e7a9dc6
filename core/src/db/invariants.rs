//! Checks that the data tells one consistent story about every seat. Used by
//! the tests after every concurrency scenario, and by operators.

use chrono::{DateTime, Utc};
use sqlx::MySqlConnection;

/// One broken invariant, with how many rows break it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    pub invariant: &'static str,
    pub rows: u64,
}

const CHECKS: &[(&str, &str)] = &[
    (
        "a seat has more than one CONFIRMED reservation",
        "SELECT COUNT(*) FROM (SELECT seat_id FROM reservations WHERE status = 'CONFIRMED' \
         GROUP BY seat_id HAVING COUNT(*) > 1) d",
    ),
    (
        "a RESERVED seat has no CONFIRMED reservation",
        "SELECT COUNT(*) FROM seats s WHERE s.status = 'RESERVED' AND NOT EXISTS \
         (SELECT 1 FROM reservations r WHERE r.seat_id = s.id AND r.status = 'CONFIRMED')",
    ),
    (
        "a seat with a CONFIRMED reservation is not RESERVED",
        "SELECT COUNT(*) FROM reservations r JOIN seats s ON s.id = r.seat_id \
         WHERE r.status = 'CONFIRMED' AND s.status <> 'RESERVED'",
    ),
    (
        "a FAILED request has no reason",
        "SELECT COUNT(*) FROM reservation_queue WHERE status = 'FAILED' AND reason IS NULL",
    ),
    (
        "a SUCCESS request has no reservation for its user and seat",
        "SELECT COUNT(*) FROM reservation_queue q LEFT JOIN reservations r ON r.id = q.reservation_id \
         WHERE q.status = 'SUCCESS' AND (r.id IS NULL OR r.seat_id <> q.seat_id OR r.user_id <> q.user_id)",
    ),
    (
        "a reservation was made by more than one request",
        "SELECT COUNT(*) FROM (SELECT reservation_id FROM reservation_queue WHERE status = 'SUCCESS' \
         GROUP BY reservation_id HAVING COUNT(*) > 1) d",
    ),
    (
        "a decided request has no decision time",
        "SELECT COUNT(*) FROM reservation_queue WHERE status IN ('SUCCESS', 'FAILED') AND decided_at IS NULL",
    ),
    (
        "a concert's seat_count differs from its seats",
        "SELECT COUNT(*) FROM concerts c WHERE c.seat_count <> \
         (SELECT COUNT(*) FROM seats s WHERE s.concert_id = c.id)",
    ),
];

/// Every violated invariant; empty when all hold. A PROCESSING request whose
/// lease ended before `stale_before` counts as stuck; one claimed more than
/// `max_attempts` times (the workers' limit) escaped being set aside. Events
/// delivered before `events_kept_since` may have been pruned (retention), so
/// only reservations made since then must still have theirs.
pub async fn check(
    conn: &mut MySqlConnection,
    stale_before: DateTime<Utc>,
    max_attempts: u32,
    events_kept_since: DateTime<Utc>,
) -> Result<Vec<Violation>, sqlx::Error> {
    let mut violations = Vec::new();
    for (invariant, sql) in CHECKS {
        let (rows,): (i64,) = sqlx::query_as(*sql).fetch_one(&mut *conn).await?;
        note(&mut violations, invariant, rows);
    }
    let (eventless,): (i64,) = sqlx::query_as(
        "SELECT COUNT(*) FROM reservations r WHERE r.created_at >= ? AND NOT EXISTS \
         (SELECT 1 FROM outbox o WHERE o.event_type = 'ReservationSucceeded' AND o.aggregate_id = r.id)",
    )
    .bind(events_kept_since.naive_utc())
    .fetch_one(&mut *conn)
    .await?;
    note(
        &mut violations,
        "a reservation has no ReservationSucceeded event",
        eventless,
    );
    let (stuck,): (i64,) = sqlx::query_as(
        "SELECT COUNT(*) FROM reservation_queue WHERE status = 'PROCESSING' AND lease_until < ?",
    )
    .bind(stale_before.naive_utc())
    .fetch_one(&mut *conn)
    .await?;
    note(
        &mut violations,
        "a PROCESSING request's lease expired long ago",
        stuck,
    );
    let (overtried,): (i64,) =
        sqlx::query_as("SELECT COUNT(*) FROM reservation_queue WHERE attempts > ?")
            .bind(max_attempts)
            .fetch_one(&mut *conn)
            .await?;
    note(
        &mut violations,
        "a request was claimed more often than the attempt limit",
        overtried,
    );
    Ok(violations)
}

/// Records `invariant` as violated when any row breaks it.
fn note(violations: &mut Vec<Violation>, invariant: &'static str, rows: i64) {
    if rows > 0 {
        violations.push(Violation {
            invariant,
            rows: rows.unsigned_abs(),
        });
    }
}
