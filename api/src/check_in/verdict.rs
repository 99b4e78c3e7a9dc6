//! What a scan means: a code verified against the keys (and the scanner's
//! concert), then the ticket's row: admitted now, admitted before, or void.

use chrono::{DateTime, Utc};
use serde::Serialize;
use sqlx::MySqlConnection;
use ticket_core::db::check_ins::{self, Outcome, Scan};
use ticket_core::db::tickets::{self, TicketRow};
use ticket_core::domain::ticket_code::TicketIdentity;
use utoipa::ToSchema;

use super::door_staff::DoorStaff;
use crate::check_in::state::CheckInState;
use crate::error::{ApiError, ApiResult, ErrorCode};

/// Who was let in, as the door is shown it.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Admission {
    ticket_id: u64,
    concert_id: u64,
    seat_id: u64,
    seat_number: String,
    category: Option<String>,
    /// The ticket holder's nickname.
    holder: String,
    checked_in_at: Option<DateTime<Utc>>,
    gate: Option<String>,
}

impl Admission {
    pub fn of(ticket: &TicketRow) -> Self {
        Self {
            ticket_id: ticket.id.get(),
            concert_id: ticket.concert_id.get(),
            seat_id: ticket.seat_id.get(),
            seat_number: ticket.seat_number.clone(),
            category: ticket.category.clone(),
            holder: ticket.holder.clone(),
            checked_in_at: ticket.checked_in_at,
            gate: ticket.checked_in_gate.clone(),
        }
    }
}

pub fn invalid() -> ApiError {
    ApiError::new(
        ErrorCode::TicketInvalid,
        "not a ticket of this concert: check the code, or send the holder to the box office",
    )
}

/// What the code says, if our keys signed it and (for a scanner) it is a
/// ticket of the scanner's concert.
pub async fn verified(
    state: &CheckInState,
    staff: DoorStaff,
    code: &str,
) -> ApiResult<TicketIdentity> {
    let keys = crate::tickets::routes::keys_of(state.ticket_keys.as_deref())?;
    let identity = keys.verify(code).map_err(|_| invalid())?;
    match staff {
        // Another concert's ticket is not one this door knows.
        DoorStaff::Scanner { concert, .. } if concert != identity.concert => Err(invalid()),
        DoorStaff::Scanner { .. } => Ok(identity),
        DoorStaff::Member(_) => {
            staff.ensure_concert(&state.pool, identity.concert).await?;
            Ok(identity)
        }
    }
}

/// Why a ticket that was not admitted now is refused, and the outcome it
/// is counted under.
pub fn refusal(ticket: &TicketRow, identity: &TicketIdentity) -> (ApiError, &'static str) {
    if !ticket.is_valid() || ticket.version != identity.version {
        let void = ApiError::new(
            ErrorCode::TicketVoid,
            "this ticket was cancelled (or reissued): do not admit",
        );
        return (void, "TICKET_VOID");
    }
    match ticket.checked_in_at {
        Some(at) => (
            ApiError::already_checked_in(at, ticket.checked_in_gate.clone()),
            "ALREADY_CHECKED_IN",
        ),
        // Valid, this version, not admitted, yet the UPDATE changed
        // nothing: the code names a seat the ticket is not for.
        None => (invalid(), "TICKET_INVALID"),
    }
}

/// Scans of one ticket by one scanner that are recorded: past them, the
/// same code scanned again (a lost scanner looping, a holder waving it
/// twice) is answered as before and adds no row.
pub const RECORDED_SCANS_PER_SCANNER: u64 = 3;

/// Records a scan a scanner admitted offline: the ticket's first admission,
/// or a conflict (admitted before), or a void ticket let in (each recorded
/// up to [`RECORDED_SCANS_PER_SCANNER`] times per scanner).
pub async fn upload(
    tx: &mut MySqlConnection,
    identity: &TicketIdentity,
    scan: &Scan<'_>,
    now: DateTime<Utc>,
) -> Result<Outcome, sqlx::Error> {
    if check_ins::admit(tx, identity, scan, now).await? {
        return Ok(Outcome::Admitted);
    }
    let outcome = match tickets::find(tx, identity.ticket).await? {
        Some(t) if t.is_valid() && t.version == identity.version && t.checked_in_at.is_some() => {
            Outcome::Conflict
        }
        _ => Outcome::Void,
    };
    let recorded = match scan.scanner {
        Some(scanner) => check_ins::lock_and_count_scans_by(tx, identity.ticket, scanner).await?,
        None => 0,
    };
    if recorded < RECORDED_SCANS_PER_SCANNER {
        check_ins::record(tx, scan, outcome, now).await?;
    }
    Ok(outcome)
}

/// A recorded outcome as a batch result says it.
pub fn status_of_outcome(outcome: &str) -> &'static str {
    match outcome {
        "ADMITTED" => "ADMITTED",
        "CONFLICT" => "ALREADY_CHECKED_IN",
        _ => "TICKET_VOID",
    }
}
