//! Check-in at the door, one scan online or a scanner's offline batch, and
//! the router of the whole door (scanners' credentials: `scanners.rs`).

use axum::extract::State;
use axum::routing::{delete, post};
use axum::{Json, Router};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use ticket_core::db::{self, check_ins::Scan, whole};
use ticket_core::domain::{FieldError, ScannerId, keep};
use utoipa::ToSchema;

use super::door_staff::DoorStaff;
use super::scanners::{create_scanner, list_scanners, revoke_scanner};
use super::verdict::{self, Admission};
use crate::check_in::state::CheckInState;
use crate::error::{ApiError, ApiResult, ErrorCode, Problem};
use crate::extract::{ApiJson, with_body_limit};

pub fn router() -> Router<CheckInState> {
    Router::new()
        .route(
            "/api/concerts/{id}/scanners",
            post(create_scanner).get(list_scanners),
        )
        .route(
            "/api/concerts/{id}/scanners/{scanner_id}",
            delete(revoke_scanner),
        )
        .route("/api/check-ins", post(check_in))
        .route(
            "/api/check-ins/batch",
            with_body_limit(post(check_in_batch), MAX_BATCH_BODY_BYTES),
        )
}

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CheckInRequest {
    /// The ticket's code, as read from its QR (docs/concepts.md, "Ticket codes").
    #[schema(min_length = 1, max_length = 200)]
    code: String,
    /// Where it was scanned ("North 2").
    #[schema(min_length = 1, max_length = 40)]
    gate: String,
}

/// Admits a ticket, once (door staff: the concert's scanner, or an admin):
/// 200 with the seat and the holder's nickname; 409 `ALREADY_CHECKED_IN`
/// (with when and where), 410 `TICKET_VOID`, 400 `TICKET_INVALID`.
#[utoipa::path(post, path = "/api/check-ins", tag = "check-in", security(("bearer" = [])),
    request_body = CheckInRequest,
    responses((status = 200, body = Admission), (status = 400, body = Problem), (status = 401, body = Problem),
              (status = 403, body = Problem), (status = 409, body = Problem), (status = 410, body = Problem),
              (status = 503, body = Problem)))]
pub async fn check_in(
    State(state): State<CheckInState>,
    staff: DoorStaff,
    ApiJson(req): ApiJson<CheckInRequest>,
) -> ApiResult<Json<Admission>> {
    let gate = gate_of(&req.gate)?;
    let identity = match verdict::verified(&state, staff, &req.code).await {
        Ok(identity) => identity,
        Err(refused) => {
            state
                .metrics
                .check_ins
                .with_label_values(&["TICKET_INVALID"])
                .inc();
            return Err(refused);
        }
    };
    let mut conn = state.pool.acquire().await?;
    let now = db::now(&mut conn).await?;
    let scan = Scan {
        ticket: identity.ticket,
        concert: identity.concert,
        scanner: staff.scanner(),
        scan_id: None,
        gate: &gate,
        scanned_at: now,
    };
    let admitted = whole::run(&mut conn, async |tx| {
        db::check_ins::admit(tx, &identity, &scan, now).await
    })
    .await?;
    let ticket = db::tickets::find(&mut conn, identity.ticket)
        .await?
        .ok_or_else(verdict::invalid)?;
    if admitted {
        state
            .metrics
            .check_ins
            .with_label_values(&["ADMITTED"])
            .inc();
        return Ok(Json(Admission::of(&ticket)));
    }
    let (refusal, outcome) = verdict::refusal(&ticket, &identity);
    state.metrics.check_ins.with_label_values(&[outcome]).inc();
    Err(refusal)
}

fn gate_of(raw: &str) -> Result<String, FieldError> {
    ticket_core::domain::parse_text("gate", raw, 40)
}

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BatchRequest {
    /// 1–1,000 scans a scanner made offline and admitted, in any order.
    scans: Vec<OfflineScan>,
}

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OfflineScan {
    /// The scanner's own id of the scan (1–64 characters): an upload sent
    /// again records it once and answers it the same.
    #[schema(min_length = 1, max_length = 64)]
    scan_id: String,
    code: String,
    #[schema(min_length = 1, max_length = 40)]
    gate: String,
    /// When the scanner admitted the holder (its own clock, RFC 3339).
    #[schema(format = DateTime)]
    scanned_at: String,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BatchResponse {
    /// One per scan, in the order sent.
    results: Vec<ScanResult>,
    /// Tickets of this upload that were let in more than once, once each.
    conflicts: Vec<Conflict>,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ScanResult {
    scan_id: String,
    /// ADMITTED (the ticket's first admission), ALREADY_CHECKED_IN (a
    /// conflict: someone went in on it before), TICKET_VOID (cancelled),
    /// TICKET_INVALID (not a code of this concert: nothing recorded).
    #[schema(example = "ADMITTED")]
    status: &'static str,
    ticket_id: Option<u64>,
    /// True when this scan was recorded by an earlier upload.
    replayed: bool,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Conflict {
    ticket_id: u64,
    /// Its admission and its latest other scans (10 at most), in the order
    /// recorded.
    scans: Vec<ConflictScan>,
    /// Every scan recorded of the ticket, shown or not.
    scans_recorded: u64,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConflictScan {
    scanner_id: Option<u64>,
    scan_id: Option<String>,
    gate: String,
    /// ADMITTED, CONFLICT or VOID.
    outcome: String,
    scanned_at: DateTime<Utc>,
}

/// Scans per upload.
const MAX_BATCH: usize = 1_000;
/// What the batch route reads: a full batch is ~220 KB (codes of ~150
/// characters), more than every other route's 64 KiB.
pub const MAX_BATCH_BODY_BYTES: usize = 512 * 1024;
/// Scans of a conflicting ticket shown besides its admission.
const CONFLICT_SCANS_SHOWN: u32 = 10;

/// Uploads the scans a scanner made offline (a scanner, or an admin): each
/// is recorded once by its `scanId`; a ticket admitted before is recorded as
/// a conflict (two people went in on it) and reported once with its
/// admission and latest scans. The body may be up to 512 KiB.
#[utoipa::path(post, path = "/api/check-ins/batch", tag = "check-in", security(("bearer" = [])),
    request_body = BatchRequest,
    responses((status = 200, body = BatchResponse), (status = 400, body = Problem), (status = 401, body = Problem),
              (status = 403, body = Problem), (status = 413, body = Problem, description = "Body larger than 512 KiB"),
              (status = 503, body = Problem)))]
pub async fn check_in_batch(
    State(state): State<CheckInState>,
    staff: DoorStaff,
    ApiJson(req): ApiJson<BatchRequest>,
) -> ApiResult<Json<BatchResponse>> {
    let scans = parse_batch(&req.scans)?;
    let Some(scanner) = staff.scanner() else {
        return Err(ApiError::new(
            ErrorCode::Forbidden,
            "offline scans are uploaded by the scanner that made them",
        ));
    };
    let mut conn = state.pool.acquire().await?;
    let mut results = Vec::with_capacity(scans.len());
    let mut conflicted = Vec::new();
    for (raw, (gate, scanned_at)) in req.scans.iter().zip(scans) {
        let mut result = ScanResult {
            scan_id: raw.scan_id.clone(),
            status: "TICKET_INVALID",
            ticket_id: None,
            replayed: false,
        };
        if let Some(before) = db::check_ins::recorded(&mut conn, scanner, &raw.scan_id).await? {
            result.ticket_id = Some(before.ticket_id.get());
            result.status = verdict::status_of_outcome(&before.outcome);
            result.replayed = true;
            results.push(result);
            continue;
        }
        let Ok(identity) = verdict::verified(&state, staff, &raw.code).await else {
            results.push(result);
            continue;
        };
        result.ticket_id = Some(identity.ticket.get());
        let scan = Scan {
            ticket: identity.ticket,
            concert: identity.concert,
            scanner: Some(scanner),
            scan_id: Some(&raw.scan_id),
            gate: &gate,
            scanned_at,
        };
        let outcome = whole::run(&mut conn, async |tx| {
            let now = db::now(tx).await?;
            verdict::upload(tx, &identity, &scan, now).await
        })
        .await?;
        result.status = verdict::status_of_outcome(outcome.as_str());
        state
            .metrics
            .check_ins
            .with_label_values(&[outcome.as_str()])
            .inc();
        if outcome == db::check_ins::Outcome::Conflict {
            conflicted.push(identity.ticket);
        }
        results.push(result);
    }
    // Once per ticket, however many of its scans the batch had.
    conflicted.sort_unstable();
    conflicted.dedup();
    let mut conflicts = Vec::with_capacity(conflicted.len());
    for ticket in conflicted {
        let (scans, scans_recorded) =
            db::check_ins::scans_of(&mut conn, ticket, CONFLICT_SCANS_SHOWN).await?;
        conflicts.push(Conflict {
            ticket_id: ticket.get(),
            scans_recorded,
            scans: scans
                .into_iter()
                .map(|s| ConflictScan {
                    scanner_id: s.scanner_id.map(ScannerId::get),
                    scan_id: s.scan_id,
                    gate: s.gate,
                    outcome: s.outcome,
                    scanned_at: s.scanned_at,
                })
                .collect(),
        });
    }
    Ok(Json(BatchResponse { results, conflicts }))
}

/// Every scan's gate and time, or every invalid field at once.
fn parse_batch(scans: &[OfflineScan]) -> Result<Vec<(String, DateTime<Utc>)>, Vec<FieldError>> {
    let mut errors = Vec::new();
    if scans.is_empty() || scans.len() > MAX_BATCH {
        errors.push(FieldError::new(
            "scans",
            format!("must hold 1 to {MAX_BATCH} scans"),
        ));
    }
    let mut parsed = Vec::with_capacity(scans.len());
    for scan in scans {
        let id_ok = !scan.scan_id.trim().is_empty()
            && scan.scan_id.len() <= 64
            && !scan.scan_id.chars().any(char::is_control);
        if !id_ok {
            errors.push(FieldError::new(
                "scans[].scanId",
                "must be 1 to 64 characters",
            ));
        }
        let gate = keep(gate_of(&scan.gate), &mut errors);
        let at = keep(
            DateTime::parse_from_rfc3339(&scan.scanned_at)
                .map(|t| t.with_timezone(&Utc))
                .map_err(|_| FieldError::new("scans[].scannedAt", "must be an RFC 3339 time")),
            &mut errors,
        );
        if let (Some(gate), Some(at)) = (gate, at) {
            parsed.push((gate, at));
        }
    }
    if errors.is_empty() {
        Ok(parsed)
    } else {
        Err(errors)
    }
}
