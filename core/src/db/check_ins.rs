//! The door (issue 31): scanners' credentials, and check-ins, online and
//! uploaded after a scanner was offline.

use chrono::{DateTime, Utc};
use sqlx::MySqlConnection;

use super::Traced as _;
use crate::domain::ticket_code::TicketIdentity;
use crate::domain::{ConcertId, ScannerId, TicketId};

/// A scanner, by the SHA-256 (hex) of its token.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ScannerRow {
    pub id: ScannerId,
    pub concert_id: ConcertId,
    pub name: String,
    pub created_at: DateTime<Utc>,
    pub revoked_at: Option<DateTime<Utc>>,
}

pub async fn create_scanner(
    conn: &mut MySqlConnection,
    concert: ConcertId,
    name: &str,
    token_hash: &str,
    now: DateTime<Utc>,
) -> Result<ScannerId, sqlx::Error> {
    let done = sqlx::query(
        "INSERT INTO scanners (concert_id, name, token_hash, created_at) VALUES (?, ?, ?, ?)",
    )
    .bind(concert)
    .bind(name)
    .bind(token_hash)
    .bind(now.naive_utc())
    .execute(conn)
    .traced("INSERT", "scanners")
    .await?;
    Ok(ScannerId(done.last_insert_id()))
}

/// The live (not revoked) scanner whose token hashes to `token_hash`.
pub async fn scanner_by_token(
    conn: &mut MySqlConnection,
    token_hash: &str,
) -> Result<Option<ScannerRow>, sqlx::Error> {
    sqlx::query_as(
        "SELECT id, concert_id, name, created_at, revoked_at FROM scanners \
          WHERE token_hash = ? AND revoked_at IS NULL",
    )
    .bind(token_hash)
    .fetch_optional(conn)
    .traced("SELECT", "scanners")
    .await
}

pub async fn scanners_of(
    conn: &mut MySqlConnection,
    concert: ConcertId,
) -> Result<Vec<ScannerRow>, sqlx::Error> {
    sqlx::query_as(
        "SELECT id, concert_id, name, created_at, revoked_at FROM scanners \
          WHERE concert_id = ? ORDER BY id",
    )
    .bind(concert)
    .fetch_all(conn)
    .traced("SELECT", "scanners")
    .await
}

/// Revokes the concert's scanner; false when there is no such live one.
pub async fn revoke_scanner(
    conn: &mut MySqlConnection,
    concert: ConcertId,
    scanner: ScannerId,
    now: DateTime<Utc>,
) -> Result<bool, sqlx::Error> {
    let done = sqlx::query(
        "UPDATE scanners SET revoked_at = ? WHERE id = ? AND concert_id = ? AND revoked_at IS NULL",
    )
    .bind(now.naive_utc())
    .bind(scanner)
    .bind(concert)
    .execute(conn)
    .traced("UPDATE", "scanners")
    .await?;
    Ok(done.rows_affected() == 1)
}

/// What a check-in row records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// This scan let the holder in, the ticket's first admission.
    Admitted,
    /// Offline, the scanner let someone in on a ticket admitted before.
    Conflict,
    /// Offline, the scanner let someone in on a cancelled ticket.
    Void,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Admitted => "ADMITTED",
            Self::Conflict => "CONFLICT",
            Self::Void => "VOID",
        }
    }
}

/// One scan to record.
#[derive(Debug, Clone, Copy)]
pub struct Scan<'a> {
    pub ticket: TicketId,
    pub concert: ConcertId,
    pub scanner: Option<ScannerId>,
    /// An offline scan's id (its scanner's); None online.
    pub scan_id: Option<&'a str>,
    pub gate: &'a str,
    /// The scanner's time of an offline scan; the database's online.
    pub scanned_at: DateTime<Utc>,
}

/// Admits the ticket once: true when this call did, having recorded the
/// admission. The conditional UPDATE is the exactly-once: of any number of
/// scans at once, one changes the row; a cancel locks the row too, so a
/// ticket is never both admitted and voided.
pub async fn admit(
    conn: &mut MySqlConnection,
    ticket: &TicketIdentity,
    scan: &Scan<'_>,
    now: DateTime<Utc>,
) -> Result<bool, sqlx::Error> {
    let done = sqlx::query(
        "UPDATE tickets SET checked_in_at = ?, checked_in_gate = ?, checked_in_by = ? \
          WHERE id = ? AND concert_id = ? AND seat_id = ? AND version = ? \
            AND status = 'VALID' AND checked_in_at IS NULL",
    )
    .bind(now.naive_utc())
    .bind(scan.gate)
    .bind(scan.scanner)
    .bind(ticket.ticket)
    .bind(ticket.concert)
    .bind(ticket.seat)
    .bind(ticket.version)
    .execute(&mut *conn)
    .traced("UPDATE", "tickets")
    .await?;
    if done.rows_affected() != 1 {
        return Ok(false);
    }
    record(conn, scan, Outcome::Admitted, now).await?;
    Ok(true)
}

/// Records a scan (an offline one that was not the first admission).
/// False when this scanner's scan of that id is recorded already.
pub async fn record(
    conn: &mut MySqlConnection,
    scan: &Scan<'_>,
    outcome: Outcome,
    now: DateTime<Utc>,
) -> Result<bool, sqlx::Error> {
    let done = sqlx::query(
        "INSERT INTO check_ins (concert_id, ticket_id, scanner_id, scan_id, gate, outcome, scanned_at, recorded_at) \
         VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
    )
    .bind(scan.concert)
    .bind(scan.ticket)
    .bind(scan.scanner)
    .bind(scan.scan_id)
    .bind(scan.gate)
    .bind(outcome.as_str())
    .bind(scan.scanned_at.naive_utc())
    .bind(now.naive_utc())
    .execute(conn)
    .traced("INSERT", "check_ins")
    .await;
    match done {
        Ok(_) => Ok(true),
        Err(e) if super::violated_unique_key(&e) == Some("uq_check_ins_scan") => Ok(false),
        Err(e) => Err(e),
    }
}

/// Locks the ticket's row and counts the scans `scanner` has recorded of
/// it: two uploads of one scanner at once count one after the other.
pub async fn lock_and_count_scans_by(
    conn: &mut MySqlConnection,
    ticket: TicketId,
    scanner: ScannerId,
) -> Result<u64, sqlx::Error> {
    async move {
        sqlx::query("SELECT id FROM tickets WHERE id = ? FOR UPDATE")
            .bind(ticket)
            .execute(&mut *conn)
            .await?;
        let (n,): (i64,) =
            sqlx::query_as("SELECT COUNT(*) FROM check_ins WHERE ticket_id = ? AND scanner_id = ?")
                .bind(ticket)
                .bind(scanner)
                .fetch_one(&mut *conn)
                .await?;
        Ok(u64::try_from(n).unwrap_or_default())
    }
    .traced("SELECT", "check_ins")
    .await
}

/// A recorded scan, as a conflict report shows it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct RecordedScan {
    pub ticket_id: TicketId,
    pub scanner_id: Option<ScannerId>,
    pub scan_id: Option<String>,
    pub gate: String,
    pub outcome: String,
    pub scanned_at: DateTime<Utc>,
}

/// This scanner's recorded scan of that id, if any (an upload again).
pub async fn recorded(
    conn: &mut MySqlConnection,
    scanner: ScannerId,
    scan_id: &str,
) -> Result<Option<RecordedScan>, sqlx::Error> {
    sqlx::query_as(
        "SELECT ticket_id, scanner_id, scan_id, gate, outcome, scanned_at FROM check_ins \
          WHERE scanner_id = ? AND scan_id = ?",
    )
    .bind(scanner)
    .bind(scan_id)
    .fetch_optional(conn)
    .traced("SELECT", "check_ins")
    .await
}

/// What a conflict report shows of a ticket: its admission and its
/// `latest` other scans, in the order recorded, and how many it has.
pub async fn scans_of(
    conn: &mut MySqlConnection,
    ticket: TicketId,
    latest: u32,
) -> Result<(Vec<RecordedScan>, u64), sqlx::Error> {
    async move {
        let scans = sqlx::query_as(
            "SELECT ticket_id, scanner_id, scan_id, gate, outcome, scanned_at FROM ( \
               (SELECT id, ticket_id, scanner_id, scan_id, gate, outcome, scanned_at FROM check_ins \
                 WHERE ticket_id = ? AND outcome = 'ADMITTED' ORDER BY id LIMIT 1) \
               UNION ALL \
               (SELECT id, ticket_id, scanner_id, scan_id, gate, outcome, scanned_at FROM check_ins \
                 WHERE ticket_id = ? AND outcome <> 'ADMITTED' ORDER BY id DESC LIMIT ?) \
             ) AS shown ORDER BY id",
        )
        .bind(ticket)
        .bind(ticket)
        .bind(latest)
        .fetch_all(&mut *conn)
        .await?;
        let (total,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM check_ins WHERE ticket_id = ?")
            .bind(ticket)
            .fetch_one(&mut *conn)
            .await?;
        Ok((scans, u64::try_from(total).unwrap_or_default()))
    }
    .traced("SELECT", "check_ins")
    .await
}

/// Locks the reservation's tickets and says whether one was admitted: a
/// ticket used at the door is not cancelled.
pub async fn any_admitted(
    conn: &mut MySqlConnection,
    reservation: crate::domain::ReservationId,
) -> Result<bool, sqlx::Error> {
    let rows: Vec<(Option<DateTime<Utc>>,)> = sqlx::query_as(
        "SELECT checked_in_at FROM tickets WHERE reservation_id = ? ORDER BY seat_id FOR UPDATE",
    )
    .bind(reservation)
    .fetch_all(conn)
    .traced("SELECT", "tickets")
    .await?;
    Ok(rows.iter().any(|(at,)| at.is_some()))
}
