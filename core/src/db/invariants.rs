//! Checks that the data tells one consistent story about every seat. Used by
//! the tests after every concurrency scenario, and by operators.
//!
//! Long because it is one list of every invariant the system keeps, each a
//! counting statement with its name, read (and extended) in one place.

use chrono::{DateTime, Duration, Utc};
use sqlx::MySqlConnection;

/// One broken invariant, with how many rows break it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    pub invariant: &'static str,
    pub rows: u64,
}

/// A value a check's `?` stands for.
#[derive(Clone, Copy)]
enum Bound {
    Now,
    /// The `stale_before` of [`check`].
    Stale,
    /// The `events_kept_since` of [`check`].
    KeptSince,
}

use Bound::{KeptSince, Now, Stale};

const CHECKS: &[(&str, &str, &[Bound])] = &[
    (
        "a seat has more than one live (HELD or CONFIRMED) claim",
        "SELECT COUNT(*) FROM (SELECT seat_id FROM reservation_seats WHERE status IN ('HELD', 'CONFIRMED') \
         GROUP BY seat_id HAVING COUNT(*) > 1) d",
        &[],
    ),
    (
        "a RESERVED seat has no CONFIRMED claim",
        "SELECT COUNT(*) FROM seats s WHERE s.status = 'RESERVED' AND NOT EXISTS \
         (SELECT 1 FROM reservation_seats rs WHERE rs.live_seat_id = s.id AND rs.status = 'CONFIRMED')",
        &[],
    ),
    (
        "a seat with a CONFIRMED claim is not RESERVED",
        "SELECT COUNT(*) FROM reservation_seats rs JOIN seats s ON s.id = rs.seat_id \
         WHERE rs.status = 'CONFIRMED' AND s.status <> 'RESERVED'",
        &[],
    ),
    (
        "a seat under a running hold is not HELD",
        "SELECT COUNT(*) FROM reservation_seats rs JOIN reservations r ON r.id = rs.reservation_id \
         JOIN seats s ON s.id = rs.seat_id \
         WHERE rs.status = 'HELD' AND r.hold_expires_at > ? AND s.status <> 'HELD'",
        &[Now],
    ),
    (
        "a HELD seat has no hold, or its hold ended longer ago than a sweep takes",
        "SELECT COUNT(*) FROM seats s WHERE s.status = 'HELD' AND (s.held_until IS NULL OR s.held_until < ? \
         OR NOT EXISTS (SELECT 1 FROM reservation_seats rs WHERE rs.live_seat_id = s.id AND rs.status = 'HELD'))",
        &[Stale],
    ),
    (
        "a hold ended longer ago than a sweep takes and is still HELD",
        "SELECT COUNT(*) FROM reservations WHERE status = 'HELD' AND hold_expires_at < ?",
        &[Stale],
    ),
    (
        "a seat of a seating plan is not in the price category of its plan category's name",
        "SELECT COUNT(*) FROM seats s LEFT JOIN price_categories p \
           ON p.concert_id = s.concert_id AND p.position = s.category \
         WHERE s.plan_category IS NOT NULL AND (p.name IS NULL OR p.name <> s.plan_category)",
        &[],
    ),
    (
        "a reservation has no seats",
        "SELECT COUNT(*) FROM reservations r WHERE NOT EXISTS \
         (SELECT 1 FROM reservation_seats rs WHERE rs.reservation_id = r.id)",
        &[],
    ),
    (
        "a reservation's seat claims disagree with its status",
        "SELECT COUNT(*) FROM reservation_seats rs JOIN reservations r ON r.id = rs.reservation_id \
         WHERE rs.status <> r.status \
           AND NOT (rs.status = 'EXPIRED' AND r.status = 'HELD' AND r.hold_expires_at <= ?) \
           AND NOT (rs.status = 'CANCELLED' AND r.status = 'CONFIRMED' AND EXISTS \
                    (SELECT 1 FROM tickets t WHERE t.reservation_id = rs.reservation_id \
                        AND t.seat_id = rs.seat_id AND t.status = 'VOID'))",
        &[Now],
    ),
    (
        "a paid ticket was voided without its refund",
        "SELECT COUNT(*) FROM tickets t JOIN reservation_seats rs \
            ON rs.reservation_id = t.reservation_id AND rs.seat_id = t.seat_id \
         WHERE t.status = 'VOID' AND rs.price > 0 \
           AND EXISTS (SELECT 1 FROM payments p WHERE p.reservation_id = t.reservation_id \
                        AND p.status = 'SUCCEEDED') \
           AND NOT EXISTS (SELECT 1 FROM refund_tickets ft WHERE ft.ticket_id = t.id)",
        &[],
    ),
    (
        "a confirmed priced order has no succeeded payment of its total and currency (held first or not)",
        "SELECT COUNT(*) FROM reservations r \
         JOIN (SELECT reservation_id, SUM(price) AS total, MAX(currency) AS currency FROM reservation_seats \
                GROUP BY reservation_id HAVING SUM(price) > 0) t ON t.reservation_id = r.id \
         WHERE r.status = 'CONFIRMED' \
           AND (SELECT COUNT(*) FROM payments p WHERE p.reservation_id = r.id AND p.status = 'SUCCEEDED' \
                  AND p.amount = t.total AND p.currency = t.currency \
                  AND (p.provider = 'MANUAL' OR p.provider_payment_id = r.payment_reference)) <> 1",
        &[],
    ),
    (
        "a succeeded payment neither sold its reservation nor was refunded in full",
        "SELECT COUNT(*) FROM payments p JOIN reservations r ON r.id = p.reservation_id \
         WHERE p.status = 'SUCCEEDED' \
           AND NOT (r.status = 'CONFIRMED' AND (p.provider = 'MANUAL' OR p.provider_payment_id = r.payment_reference)) \
           AND p.amount > (SELECT COALESCE(SUM(f.amount), 0) FROM refunds f \
                            WHERE f.payment_id = p.id AND f.status <> 'FAILED')",
        &[],
    ),
    (
        "a payment's refunds give back more than it took",
        "SELECT COUNT(*) FROM payments p WHERE p.amount < (SELECT COALESCE(SUM(f.amount), 0) FROM refunds f \
           WHERE f.payment_id = p.id AND f.status <> 'FAILED')",
        &[],
    ),
    (
        "a refund pays back a ticket that is still valid, or another order's",
        "SELECT COUNT(*) FROM refund_tickets ft JOIN refunds f ON f.id = ft.refund_id \
         JOIN tickets t ON t.id = ft.ticket_id \
         WHERE t.status = 'VALID' OR t.reservation_id <> f.reservation_id",
        &[],
    ),
    (
        "a refund was refused by its provider (an operator must look)",
        "SELECT COUNT(*) FROM refunds WHERE status = 'FAILED'",
        &[],
    ),
    (
        "a cancelled concert whose refunds are done still has a valid ticket",
        "SELECT COUNT(*) FROM tickets t JOIN concerts c ON c.id = t.concert_id \
         WHERE c.cancelled_at IS NOT NULL AND t.status = 'VALID' \
           AND NOT EXISTS (SELECT 1 FROM reservations r WHERE r.concert_id = c.id AND r.status = 'CONFIRMED')",
        &[],
    ),
    (
        "a CONFIRMED seat claim has no valid ticket",
        "SELECT COUNT(*) FROM reservation_seats rs WHERE rs.status = 'CONFIRMED' AND NOT EXISTS \
         (SELECT 1 FROM tickets t WHERE t.reservation_id = rs.reservation_id AND t.seat_id = rs.seat_id \
            AND t.status = 'VALID')",
        &[],
    ),
    (
        "a valid ticket has no live seat (its claim is not CONFIRMED)",
        "SELECT COUNT(*) FROM tickets t JOIN reservation_seats rs \
            ON rs.reservation_id = t.reservation_id AND rs.seat_id = t.seat_id \
         WHERE t.status = 'VALID' AND rs.status <> 'CONFIRMED'",
        &[],
    ),
    (
        "a ticket was both admitted at the door and refunded (the show was not cancelled)",
        "SELECT COUNT(*) FROM refund_tickets ft JOIN refunds f ON f.id = ft.refund_id \
         WHERE f.status <> 'FAILED' AND f.reason <> 'CONCERT_CANCELLED' AND EXISTS \
           (SELECT 1 FROM check_ins c WHERE c.ticket_id = ft.ticket_id AND c.outcome = 'ADMITTED')",
        &[],
    ),
    (
        "a checked-in ticket's reservation was cancelled (the show was not)",
        "SELECT COUNT(*) FROM tickets t JOIN concerts c ON c.id = t.concert_id \
         WHERE t.status = 'VOID' AND t.checked_in_at IS NOT NULL AND c.cancelled_at IS NULL",
        &[],
    ),
    (
        "a ticket was admitted twice",
        "SELECT COUNT(*) FROM (SELECT ticket_id FROM check_ins WHERE outcome = 'ADMITTED' \
         GROUP BY ticket_id HAVING COUNT(*) > 1) d",
        &[],
    ),
    (
        "an offline scanner let someone in on a ticket admitted before (a conflict)",
        "SELECT COUNT(DISTINCT ticket_id) FROM check_ins WHERE outcome = 'CONFLICT'",
        &[],
    ),
    (
        "an offline scanner let someone in on a cancelled ticket",
        "SELECT COUNT(*) FROM check_ins WHERE outcome = 'VOID'",
        &[],
    ),
    (
        "a checked-in ticket has no admission recorded",
        "SELECT COUNT(*) FROM tickets t WHERE t.checked_in_at IS NOT NULL AND NOT EXISTS \
         (SELECT 1 FROM check_ins c WHERE c.ticket_id = t.id AND c.outcome = 'ADMITTED')",
        &[],
    ),
    (
        "a FAILED request has no reason",
        "SELECT COUNT(*) FROM reservation_queue WHERE status = 'FAILED' AND reason IS NULL",
        &[],
    ),
    (
        "a SUCCESS request has no reservation made by it for its user",
        "SELECT COUNT(*) FROM reservation_queue q LEFT JOIN reservations r ON r.id = q.reservation_id \
         WHERE q.status = 'SUCCESS' AND (r.id IS NULL OR r.queue_id <> q.id OR r.user_id <> q.user_id)",
        &[],
    ),
    (
        "a SUCCESS request's reservation has other seats than it asked for",
        "SELECT COUNT(*) FROM reservation_queue q WHERE q.status = 'SUCCESS' AND q.seat_id IS NOT NULL AND ( \
           (SELECT COUNT(*) FROM request_seats x WHERE x.queue_id = q.id) <> \
           (SELECT COUNT(*) FROM reservation_seats rs WHERE rs.reservation_id = q.reservation_id) \
         OR (SELECT COUNT(*) FROM request_seats x WHERE x.queue_id = q.id) <> \
           (SELECT COUNT(*) FROM reservation_seats rs JOIN request_seats x \
              ON x.queue_id = q.id AND x.seat_id = rs.seat_id WHERE rs.reservation_id = q.reservation_id))",
        &[],
    ),
    (
        "a SUCCESS request by count got another number of seats than it asked for, or (without allowSplit) \
         seats not side by side in one row",
        "SELECT COUNT(*) FROM reservation_queue q JOIN request_pools p ON p.queue_id = q.id \
           JOIN (SELECT rs.reservation_id, COUNT(*) AS seats, COUNT(DISTINCT s.row_index) AS seat_rows, \
                        MAX(s.row_position) - MIN(s.row_position) + 1 AS span \
                   FROM reservation_seats rs JOIN seats s ON s.id = rs.seat_id GROUP BY rs.reservation_id) w \
             ON w.reservation_id = q.reservation_id \
          WHERE q.status = 'SUCCESS' \
            AND (w.seats <> p.seat_count OR (p.allow_split = 0 AND p.area IS NULL AND (w.seat_rows <> 1 OR w.span <> w.seats)))",
        &[],
    ),
    (
        "a SUCCESS request for a standing area got a place of another area, or a seat",
        "SELECT COUNT(*) FROM reservation_queue q JOIN request_pools p ON p.queue_id = q.id \
           JOIN reservation_seats rs ON rs.reservation_id = q.reservation_id JOIN seats s ON s.id = rs.seat_id \
          WHERE q.status = 'SUCCESS' AND p.area IS NOT NULL AND NOT (s.area <=> p.area)",
        &[],
    ),
    (
        "a standing area has another number of places than its capacity",
        "SELECT COUNT(*) FROM standing_areas a WHERE a.capacity <> \
           (SELECT COUNT(*) FROM seats s WHERE s.concert_id = a.concert_id AND s.area = a.position)",
        &[],
    ),
    (
        "a request names a standing area's place (places are asked for by count)",
        "SELECT COUNT(*) FROM request_seats x JOIN seats s ON s.id = x.seat_id WHERE s.area IS NOT NULL",
        &[],
    ),
    (
        "an open request by count asks for a category or standing area its concert does not have",
        "SELECT COUNT(*) FROM request_pools p WHERE p.is_open = 1 AND NOT EXISTS \
           (SELECT 1 FROM price_categories c WHERE c.concert_id = p.concert_id AND c.position = p.category) \
           AND NOT EXISTS \
           (SELECT 1 FROM standing_areas a WHERE a.concert_id = p.concert_id AND a.position = p.area)",
        &[],
    ),
    (
        "an organizer with members has no owner",
        "SELECT COUNT(*) FROM organizers o WHERE \
           EXISTS (SELECT 1 FROM organizer_members m WHERE m.organizer_id = o.id) AND NOT EXISTS \
           (SELECT 1 FROM organizer_members m WHERE m.organizer_id = o.id AND m.role = 'OWNER')",
        &[],
    ),
    (
        "a member's role is limited to a concert of another organizer",
        "SELECT COUNT(*) FROM member_concerts mc JOIN concerts c ON c.id = mc.concert_id \
         WHERE c.organizer_id <> mc.organizer_id",
        &[],
    ),
    (
        "a closed desk shift expected other cash than its float and the cash taken less given back",
        "SELECT COUNT(*) FROM desk_shifts s WHERE s.closed_at IS NOT NULL AND s.expected_cash <> \
           CAST(s.float_amount AS SIGNED) \
           + COALESCE((SELECT SUM(p.amount) FROM payments p WHERE p.shift_id = s.id \
                       AND p.status = 'SUCCEEDED' AND p.desk_method = 'CASH'), 0) \
           - COALESCE((SELECT SUM(f.amount) FROM refunds f WHERE f.shift_id = s.id \
                       AND f.status = 'SUCCEEDED' AND f.desk_method = 'CASH'), 0)",
        &[],
    ),
    (
        "money was taken or given back on a desk shift after it closed, or of another concert",
        "SELECT (SELECT COUNT(*) FROM payments p JOIN desk_shifts s ON s.id = p.shift_id \
                  WHERE p.concert_id <> s.concert_id OR p.created_at > s.closed_at) \
              + (SELECT COUNT(*) FROM refunds f JOIN desk_shifts s ON s.id = f.shift_id \
                  WHERE f.concert_id <> s.concert_id OR f.created_at > s.closed_at)",
        &[],
    ),
    (
        "a desk payment was not taken by hand",
        "SELECT COUNT(*) FROM payments WHERE shift_id IS NOT NULL AND provider <> 'MANUAL'",
        &[],
    ),
    (
        "a request both names seats and asks by count",
        "SELECT COUNT(*) FROM request_pools p WHERE \
           EXISTS (SELECT 1 FROM request_seats x WHERE x.queue_id = p.queue_id)",
        &[],
    ),
    (
        "a reservation was made by more than one request",
        "SELECT COUNT(*) FROM (SELECT reservation_id FROM reservation_queue WHERE status = 'SUCCESS' \
         GROUP BY reservation_id HAVING COUNT(*) > 1) d",
        &[],
    ),
    (
        "a decided request has no decision time",
        "SELECT COUNT(*) FROM reservation_queue WHERE status IN ('SUCCESS', 'FAILED') AND decided_at IS NULL",
        &[],
    ),
    (
        "an open request has no open seats",
        "SELECT COUNT(*) FROM reservation_queue q WHERE q.status IN ('WAITING', 'PENDING', 'PROCESSING') AND NOT EXISTS \
         (SELECT 1 FROM request_seats x WHERE x.queue_id = q.id AND x.is_open = 1) AND NOT EXISTS \
         (SELECT 1 FROM request_pools p WHERE p.queue_id = q.id AND p.is_open = 1)",
        &[],
    ),
    (
        "a decided request still holds open seats",
        "SELECT COUNT(*) FROM reservation_queue q WHERE q.status IN ('SUCCESS', 'FAILED') AND (EXISTS \
         (SELECT 1 FROM request_seats x WHERE x.queue_id = q.id AND x.is_open = 1) OR EXISTS \
         (SELECT 1 FROM request_pools p WHERE p.queue_id = q.id AND p.is_open = 1))",
        &[],
    ),
    (
        "a user holds or has confirmed more seats of a concert than its maxSeatsPerUser",
        "SELECT COUNT(*) FROM (SELECT r.concert_id, r.user_id, COUNT(*) AS seats \
           FROM reservation_seats rs JOIN reservations r ON r.id = rs.reservation_id \
          WHERE rs.status = 'CONFIRMED' OR (rs.status = 'HELD' AND r.hold_expires_at > ?) \
          GROUP BY r.concert_id, r.user_id) f \
         JOIN concerts c ON c.id = f.concert_id WHERE f.seats > c.max_seats_per_user",
        &[Now],
    ),
    (
        "an access code has more requests open or won, or more seats, than it allows",
        "SELECT COUNT(*) FROM (SELECT q.access_code_id, COUNT(*) AS uses, SUM(q.seat_count) AS seats \
           FROM reservation_queue q LEFT JOIN reservations r ON r.id = q.reservation_id \
          WHERE q.access_code_id IS NOT NULL \
            AND (q.status IN ('WAITING', 'PENDING', 'PROCESSING') \
                 OR (q.status = 'SUCCESS' AND (r.status = 'CONFIRMED' \
                     OR (r.status = 'HELD' AND r.hold_expires_at > ?)))) \
          GROUP BY q.access_code_id) u \
         JOIN access_codes c ON c.id = u.access_code_id \
         WHERE u.uses > c.uses_per_code OR u.seats > c.seats_per_code",
        &[Now],
    ),
    (
        "an offer from a waiting list is not a hold of that fan's seats in that concert, as many as they waited for",
        "SELECT COUNT(*) FROM waiting_list_entries e JOIN reservations r ON r.id = e.reservation_id \
         WHERE e.status = 'OFFERED' AND (r.user_id <> e.user_id OR r.concert_id <> e.concert_id \
            OR r.source <> 'WAITING_LIST' OR r.queue_id IS NOT NULL \
            OR e.seats <> (SELECT COUNT(*) FROM reservation_seats rs WHERE rs.reservation_id = r.id))",
        &[],
    ),
    (
        "an offer from a waiting list gave a seat or place not of what the fan waited for",
        "SELECT COUNT(*) FROM waiting_list_entries e JOIN reservation_seats rs ON rs.reservation_id = e.reservation_id \
           JOIN seats s ON s.id = rs.seat_id \
         WHERE e.status = 'OFFERED' AND NOT (CASE \
             WHEN e.pool IS NULL THEN s.area IS NULL \
             WHEN e.pool < 256 THEN s.area IS NULL AND s.category <=> e.pool \
             ELSE s.area <=> e.pool - 256 END)",
        &[],
    ),
    (
        "a waiting list's entry is OFFERED without its offer, or WAITING with one",
        "SELECT COUNT(*) FROM waiting_list_entries \
         WHERE (status = 'OFFERED') <> (reservation_id IS NOT NULL)",
        &[],
    ),
    (
        "a reservation from a waiting list has no entry that was offered it",
        "SELECT COUNT(*) FROM reservations r WHERE r.source = 'WAITING_LIST' AND NOT EXISTS \
         (SELECT 1 FROM waiting_list_entries e WHERE e.reservation_id = r.id AND e.status = 'OFFERED')",
        &[],
    ),
    (
        "an access code was used by an account other than the one it is bound to",
        "SELECT COUNT(*) FROM reservation_queue q JOIN access_codes c ON c.id = q.access_code_id \
         WHERE c.user_id IS NULL OR c.user_id <> q.user_id",
        &[],
    ),
    (
        "a concert's seat_count differs from its seats",
        "SELECT COUNT(*) FROM concerts c WHERE c.seat_count <> \
         (SELECT COUNT(*) FROM seats s WHERE s.concert_id = c.id)",
        &[],
    ),
    (
        "a reservation made with a hold has no ReservationHeld event (WaitingListOffered for an offer)",
        "SELECT COUNT(*) FROM reservations r WHERE r.created_at >= ? AND r.hold_expires_at IS NOT NULL \
         AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.aggregate_id = r.id \
             AND o.event_type = IF(r.source = 'WAITING_LIST', 'WaitingListOffered', 'ReservationHeld'))",
        &[KeptSince],
    ),
    (
        "a confirmed reservation has no ReservationConfirmed event",
        "SELECT COUNT(*) FROM reservations r WHERE r.created_at >= ? AND r.confirmed_at IS NOT NULL \
         AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.event_type = 'ReservationConfirmed' AND o.aggregate_id = r.id)",
        &[KeptSince],
    ),
    (
        "an EXPIRED reservation has no ReservationExpired event",
        "SELECT COUNT(*) FROM reservations r WHERE r.created_at >= ? AND r.status = 'EXPIRED' \
         AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.event_type = 'ReservationExpired' AND o.aggregate_id = r.id)",
        &[KeptSince],
    ),
    (
        "a CANCELLED reservation has no ReservationCancelled event",
        "SELECT COUNT(*) FROM reservations r WHERE r.created_at >= ? AND r.status = 'CANCELLED' \
         AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.event_type = 'ReservationCancelled' AND o.aggregate_id = r.id)",
        &[KeptSince],
    ),
    (
        "an event could not be delivered within its retry period",
        "SELECT COUNT(*) FROM outbox WHERE failed_at IS NOT NULL",
        &[],
    ),
    (
        "a mail could not be sent (refused for good, or not accepted within its retry period)",
        "SELECT COUNT(*) FROM mails WHERE outcome = 'FAILED'",
        &[],
    ),
    (
        "a mail is about a reservation of another fan or concert",
        "SELECT COUNT(*) FROM mails m JOIN reservations r ON r.id = m.reservation_id \
         WHERE m.user_id <> r.user_id OR m.concert_id <> r.concert_id",
        &[],
    ),
    (
        "an order's confirmation was mailed for a reservation never confirmed",
        "SELECT COUNT(*) FROM mails m JOIN reservations r ON r.id = m.reservation_id \
         WHERE m.kind = 'ORDER_CONFIRMATION' AND m.outcome = 'SENT' AND r.confirmed_at IS NULL",
        &[],
    ),
    (
        "a reservation confirmed while its fan had an address has no order confirmation mail",
        "SELECT COUNT(*) FROM reservations r JOIN users u ON u.id = r.user_id \
         WHERE r.created_at >= ? AND r.confirmed_at IS NOT NULL \
           AND u.email IS NOT NULL AND u.email_changed_at <= r.confirmed_at \
           AND NOT EXISTS (SELECT 1 FROM mails m WHERE m.reservation_id = r.id \
                            AND m.kind = 'ORDER_CONFIRMATION')",
        &[KeptSince],
    ),
    (
        "a lottery request was decided before its sale opened",
        "SELECT COUNT(*) FROM reservation_queue q JOIN concerts c ON c.id = q.concert_id \
         WHERE q.line_key > 0 AND q.line_key < 4611686018427387904 AND q.decided_at < c.opens_at",
        &[],
    ),
    (
        "an open request is in a line the claims do not look in",
        "SELECT COUNT(*) FROM reservation_queue q LEFT JOIN sale_lines s ON s.concert_id = q.concert_id \
         WHERE q.status IN ('WAITING', 'PENDING', 'PROCESSING') AND (s.concert_id IS NULL OR s.in_line = 0)",
        &[],
    ),
    (
        "an opened lottery is not counted longer than a count takes after its sale opened",
        "SELECT COUNT(*) FROM sale_lines s JOIN concerts c ON c.id = s.concert_id \
         WHERE s.in_line = 1 AND s.lottery_entered > 0 AND (c.opens_at IS NULL OR c.opens_at < ?) \
           AND (s.lottery_counted IS NULL OR s.lottery_counted <> s.lottery_entered)",
        &[Stale],
    ),
    (
        "two requests of a concert have the same place in line",
        "SELECT COUNT(*) FROM (SELECT concert_id, line_rank FROM reservation_queue \
         WHERE line_rank IS NOT NULL GROUP BY concert_id, line_rank HAVING COUNT(*) > 1) d",
        &[],
    ),
    (
        "a request's place in line is beyond what its line has counted",
        "SELECT COUNT(*) FROM reservation_queue q JOIN sale_lines s ON s.concert_id = q.concert_id \
         WHERE (q.line_rank < 1099511627776 AND q.line_rank > s.presale_entered) \
            OR (q.line_rank > 2199023255552 AND q.line_rank - 2199023255552 > s.after_entered)",
        &[],
    ),
    (
        "a PROCESSING request's lease expired long ago",
        "SELECT COUNT(*) FROM reservation_queue WHERE status = 'PROCESSING' AND lease_until < ?",
        &[Stale],
    ),
];

/// Every violated invariant; empty when all hold. A PROCESSING request whose
/// lease ended more than `stuck_after` ago counts as stuck, and so does a
/// hold that ended that long ago but is still HELD (the sweep is not
/// running); one claimed more than `max_attempts` times (the workers'
/// limit) escaped being set aside. Events of reservations made more than
/// `events_kept_for` ago may have been pruned (retention; `None`: events
/// are kept), so only younger ones must have theirs. Ages are measured on
/// the database's clock, as every deadline is.
pub async fn check(
    conn: &mut MySqlConnection,
    stuck_after: Duration,
    max_attempts: u32,
    events_kept_for: Option<Duration>,
) -> Result<Vec<Violation>, sqlx::Error> {
    let now = crate::db::now(&mut *conn).await?;
    let stale_before = now - stuck_after;
    let events_kept_since = events_kept_for
        .and_then(|kept| now.checked_sub_signed(kept))
        .unwrap_or(DateTime::<Utc>::UNIX_EPOCH);
    let mut violations = Vec::new();
    for (invariant, sql, binds) in CHECKS {
        let mut query = sqlx::query_as(*sql);
        for bound in *binds {
            let at = match bound {
                Now => now,
                Stale => stale_before,
                KeptSince => events_kept_since,
            };
            query = query.bind(at.naive_utc());
        }
        let (rows,): (i64,) = query.fetch_one(&mut *conn).await?;
        note(&mut violations, invariant, rows);
    }
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
