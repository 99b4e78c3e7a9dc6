//! What the box office already knows that may tell a bot's orders after a
//! sale: accounts made from one address within an hour, and accounts made
//! in a burst in the hour before the opening. Signals to look at, never a
//! verdict: a family shares an address, a fan club signs up together.

use sqlx::MySqlConnection;

use super::Traced as _;
use crate::domain::ConcertId;

/// Accounts made from one address within this long of each other.
pub const SAME_ADDRESS_WINDOW_SECONDS: u32 = 3600;
/// ... at least this many of them (the buyer included) holding orders.
pub const SAME_ADDRESS_ACCOUNTS: i64 = 3;
/// Accounts made within the same minute, at least this many...
pub const BURST_ACCOUNTS: i64 = 5;
/// ... in this long before the concert's opening.
pub const BURST_BEFORE_OPENING_SECONDS: u32 = 3600;

/// A live order (HELD or CONFIRMED) of the concert with one signal of its
/// buyer's account: how many accounts share it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct SignalRow {
    pub reservation_id: u64,
    pub status: String,
    pub user_id: u64,
    pub nickname: String,
    /// SAME_ADDRESS or SIGNUP_BURST.
    pub kind: String,
    pub accounts: i64,
}

/// The concert's live orders whose buyers share a signal, by order (at
/// most 2,000 rows).
pub async fn of_concert(
    conn: &mut MySqlConnection,
    concert: ConcertId,
) -> Result<Vec<SignalRow>, sqlx::Error> {
    sqlx::query_as(
        "SELECT * FROM ( \
           SELECT r.id AS reservation_id, r.status, u.id AS user_id, u.nickname, 'SAME_ADDRESS' AS kind, \
                  (SELECT COUNT(DISTINCT o.id) FROM users o JOIN reservations ro ON ro.user_id = o.id \
                    WHERE ro.concert_id = r.concert_id AND ro.status IN ('HELD', 'CONFIRMED') \
                      AND o.signup_address = u.signup_address \
                      AND o.created_at BETWEEN u.created_at - INTERVAL ? SECOND \
                                           AND u.created_at + INTERVAL ? SECOND) AS accounts \
             FROM reservations r JOIN users u ON u.id = r.user_id \
            WHERE r.concert_id = ? AND r.status IN ('HELD', 'CONFIRMED') AND u.signup_address IS NOT NULL \
         ) same WHERE accounts >= ? \
         UNION ALL \
         SELECT * FROM ( \
           SELECT r.id AS reservation_id, r.status, u.id AS user_id, u.nickname, 'SIGNUP_BURST' AS kind, \
                  (SELECT COUNT(*) FROM users o \
                    WHERE o.created_at >= u.created_at - INTERVAL 30 SECOND \
                      AND o.created_at < u.created_at + INTERVAL 30 SECOND) AS accounts \
             FROM reservations r JOIN users u ON u.id = r.user_id JOIN concerts c ON c.id = r.concert_id \
            WHERE r.concert_id = ? AND r.status IN ('HELD', 'CONFIRMED') AND c.opens_at IS NOT NULL \
              AND u.created_at BETWEEN c.opens_at - INTERVAL ? SECOND AND c.opens_at \
         ) burst WHERE accounts >= ? \
         ORDER BY reservation_id, kind LIMIT 2000",
    )
    .bind(SAME_ADDRESS_WINDOW_SECONDS)
    .bind(SAME_ADDRESS_WINDOW_SECONDS)
    .bind(concert)
    .bind(SAME_ADDRESS_ACCOUNTS)
    .bind(concert)
    .bind(BURST_BEFORE_OPENING_SECONDS)
    .bind(BURST_ACCOUNTS)
    .fetch_all(conn)
    .traced("SELECT", "reservations")
    .await
}
