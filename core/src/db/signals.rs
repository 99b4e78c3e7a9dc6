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
