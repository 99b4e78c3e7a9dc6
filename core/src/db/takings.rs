//! What a concert took (issue 46): its tickets sold and refunded by price
//! category, and its orders one by one, for the operator.

use chrono::{DateTime, Utc};
use sqlx::MySqlConnection;

use super::Traced as _;
use crate::domain::{ConcertId, ReservationId};

/// One category's tickets: every ticket ever issued counts as sold at the
/// price its seat was sold at; those given back (by refunds not refused)
/// count as refunded at the amount given back.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct CategoryTakings {
    /// None for a concert without prices.
    pub category: Option<String>,
    pub sold: i64,
    pub gross: u64,
    pub refunded: i64,
    pub refunded_amount: u64,
}

pub async fn by_category(
    conn: &mut MySqlConnection,
    concert: ConcertId,
) -> Result<Vec<CategoryTakings>, sqlx::Error> {
    sqlx::query_as(
        "SELECT rs.category, COUNT(*) AS sold, CAST(COALESCE(SUM(rs.price), 0) AS UNSIGNED) AS gross, \
                CAST(COALESCE(SUM(g.amount IS NOT NULL), 0) AS SIGNED) AS refunded, \
                CAST(COALESCE(SUM(g.amount), 0) AS UNSIGNED) AS refunded_amount \
           FROM tickets t \
           JOIN reservation_seats rs ON rs.reservation_id = t.reservation_id AND rs.seat_id = t.seat_id \
           LEFT JOIN (SELECT ft.ticket_id, ft.amount FROM refund_tickets ft \
                        JOIN refunds f ON f.id = ft.refund_id AND f.status <> 'FAILED' \
                       WHERE ft.concert_id = ?) g ON g.ticket_id = t.id \
          WHERE t.concert_id = ? GROUP BY rs.category",
    )
    .bind(concert)
    .bind(concert)
    .fetch_all(conn)
    .traced("SELECT", "tickets")
    .await
}

/// One sold order as the operator's export lists it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct OrderLine {
    pub reservation_id: ReservationId,
    pub nickname: String,
    /// Its seats' numbers, space-separated, in seat order.
    pub seats: String,
    pub amount: u64,
    pub currency: Option<String>,
    pub refunded: u64,
    /// STRIPE or MANUAL (none: nothing was paid).
    pub provider: Option<String>,
    pub payment_id: Option<String>,
    pub status: String,
    pub created_at: DateTime<Utc>,
    pub confirmed_at: Option<DateTime<Utc>>,
}

/// Up to `limit` of the concert's sold orders after `after`, in order.
pub async fn orders(
    conn: &mut MySqlConnection,
    concert: ConcertId,
    after: ReservationId,
    limit: u32,
) -> Result<Vec<OrderLine>, sqlx::Error> {
    sqlx::query_as(
        "SELECT r.id AS reservation_id, u.nickname, \
                GROUP_CONCAT(s.seat_number ORDER BY s.sort_key SEPARATOR ' ') AS seats, \
                CAST(COALESCE(SUM(rs.price), 0) AS UNSIGNED) AS amount, MAX(rs.currency) AS currency, \
                (SELECT CAST(COALESCE(SUM(f.amount), 0) AS UNSIGNED) FROM refunds f \
                  WHERE f.reservation_id = r.id AND f.status <> 'FAILED') AS refunded, \
                (SELECT p.provider FROM payments p WHERE p.reservation_id = r.id AND p.status = 'SUCCEEDED' \
                  ORDER BY p.attempt LIMIT 1) AS provider, \
                (SELECT COALESCE(p.provider_payment_id, r.payment_reference) FROM payments p \
                  WHERE p.reservation_id = r.id AND p.status = 'SUCCEEDED' ORDER BY p.attempt LIMIT 1) AS payment_id, \
                r.status, r.created_at, r.confirmed_at \
           FROM reservations r JOIN users u ON u.id = r.user_id \
           JOIN reservation_seats rs ON rs.reservation_id = r.id JOIN seats s ON s.id = rs.seat_id \
          WHERE r.concert_id = ? AND r.confirmed_at IS NOT NULL AND r.id > ? \
          GROUP BY r.id, u.nickname, r.status, r.created_at, r.confirmed_at, r.payment_reference \
          ORDER BY r.id LIMIT ?",
    )
    .bind(concert)
    .bind(after)
    .bind(limit)
    .fetch_all(conn)
    .traced("SELECT", "reservations")
    .await
}
