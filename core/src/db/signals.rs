//! What the alerts read from the database itself, on its clock, at scrape
//! time: how long the first in line has waited, how overdue the most
//! overdue hold is, and how full the server's connection table is. Each is
//! one index dive, whatever the length of the line.

use super::Traced as _;
use sqlx::MySqlConnection;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Signals {
    /// The oldest open (PENDING or PROCESSING) request's wait, counted from
    /// when it could first be decided (its arrival, or its sale's opening
    /// for a lottery request); 0 when nobody waits.
    pub oldest_open_request_seconds: i64,
    /// How long ago the most overdue hold still written HELD ended; 0 when
    /// none.
    pub holds_overdue_seconds: i64,
    pub server_connections: i64,
    pub server_max_connections: i64,
}

pub async fn read(conn: &mut MySqlConnection) -> Result<Signals, sqlx::Error> {
    // The first of each open status by id: the head of the line.
    let (oldest,): (i64,) = sqlx::query_as(
        "SELECT CAST(COALESCE(MAX(GREATEST(0, TIMESTAMPDIFF(SECOND, \
         GREATEST(q.created_at, COALESCE(c.opens_at, q.created_at)), NOW(6)))), 0) AS SIGNED) \
         FROM ((SELECT concert_id, created_at FROM reservation_queue \
                WHERE status = 'PENDING' ORDER BY id LIMIT 1) \
               UNION ALL (SELECT concert_id, created_at FROM reservation_queue \
                WHERE status = 'PROCESSING' ORDER BY id LIMIT 1)) q \
         JOIN concerts c ON c.id = q.concert_id",
    )
    .fetch_one(&mut *conn)
    .traced("SELECT", "reservation_queue")
    .await?;
    let (overdue,): (i64,) = sqlx::query_as(
        "SELECT CAST(COALESCE(TIMESTAMPDIFF(SECOND, MIN(hold_expires_at), NOW(6)), 0) AS SIGNED) \
         FROM reservations WHERE status = 'HELD' AND hold_expires_at < NOW(6)",
    )
    .fetch_one(&mut *conn)
    .traced("SELECT", "reservations")
    .await?;
    let (max_connections,): (i64,) = sqlx::query_as("SELECT CAST(@@max_connections AS SIGNED)")
        .fetch_one(&mut *conn)
        .traced("SELECT", "variables")
        .await?;
    let status: Vec<(String, String)> =
        sqlx::query_as("SHOW GLOBAL STATUS LIKE 'Threads_connected'")
            .fetch_all(&mut *conn)
            .traced("SHOW", "status")
            .await?;
    let connections = status
        .first()
        .and_then(|(_, value)| value.parse().ok())
        .unwrap_or(0);
    Ok(Signals {
        oldest_open_request_seconds: oldest,
        holds_overdue_seconds: overdue,
        server_connections: connections,
        server_max_connections: max_connections,
    })
}

/// One concert's seats by state, for the sale's dashboard.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SeatCounts {
    pub concert_id: u64,
    pub free: i64,
    pub held: i64,
    pub sold: i64,
}

/// Seats free, held and sold of the `limit` concerts whose sale opened
/// last and whose date has not passed: ticket-open day's concerts, not the
/// whole catalogue. Counted on `idx_seats_concert_status`, so the cost is
/// those concerts' seats, not the table's.
pub async fn seats_on_sale(
    conn: &mut MySqlConnection,
    limit: u32,
) -> Result<Vec<SeatCounts>, sqlx::Error> {
    let rows: Vec<(u64, String, i64)> = sqlx::query_as(
        "SELECT s.concert_id, s.status, CAST(COUNT(*) AS SIGNED) FROM seats s \
         JOIN (SELECT id FROM concerts WHERE concert_date > NOW(6) \
               AND (opens_at IS NULL OR opens_at <= NOW(6)) \
               ORDER BY opens_at DESC, id DESC LIMIT ?) c ON c.id = s.concert_id \
         GROUP BY s.concert_id, s.status",
    )
    .bind(limit)
    .fetch_all(&mut *conn)
    .traced("SELECT", "seats")
    .await?;
    let mut counts = std::collections::BTreeMap::<u64, SeatCounts>::new();
    for (concert_id, status, count) in rows {
        let concert = counts.entry(concert_id).or_insert(SeatCounts {
            concert_id,
            ..SeatCounts::default()
        });
        match status.as_str() {
            "AVAILABLE" => concert.free += count,
            "HELD" => concert.held += count,
            _ => concert.sold += count,
        }
    }
    Ok(counts.into_values().collect())
}
