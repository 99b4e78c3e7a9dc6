//! Scanners' credentials for a concert's door, made, listed and revoked by
//! an admin; the token is shown once, at creation.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use ticket_core::db;
use ticket_core::domain::{ConcertId, Permission, ScannerId};
use utoipa::ToSchema;

use super::known_scanners::{TOKEN_PREFIX, token_hash};
use crate::check_in::state::CheckInState;
use crate::error::{ApiError, ApiResult, ErrorCode, Problem};
use crate::extract::{ApiJson, ApiPath, AuthUser};
use crate::organizers::access::{On, permit_on};
use crate::organizers::audit::{Did, Staff, changed};
use serde_json::{Value, json};
use ticket_core::db::whole;

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateScannerRequest {
    /// What the door staff call it ("Gate 3, left").
    #[schema(min_length = 1, max_length = 80)]
    name: String,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ScannerResponse {
    scanner_id: u64,
    concert_id: u64,
    name: String,
    created_at: DateTime<Utc>,
    revoked_at: Option<DateTime<Utc>>,
    /// Shown once, at creation: a bearer token that can only check in to
    /// this concert and read its keys and revoked list.
    #[serde(skip_serializing_if = "Option::is_none")]
    token: Option<String>,
    /// Shown once, at creation: the concert and the token in one text
    /// (`ticket-door:1:{concertId}:{token}`) that a door page takes in
    /// one go, typed, pasted or read by its camera.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(example = "ticket-door:1:7:scn_…")]
    pairing_code: Option<String>,
    /// Shown once, at creation: `pairingCode` as a QR symbol (SVG), for
    /// the door device's camera.
    #[serde(skip_serializing_if = "Option::is_none")]
    pairing_qr: Option<String>,
}

/// What a door page reads to work for `concert` with `token`.
pub fn pairing_code(concert: ConcertId, token: &str) -> String {
    format!("ticket-door:1:{concert}:{token}")
}

impl From<db::check_ins::ScannerRow> for ScannerResponse {
    fn from(s: db::check_ins::ScannerRow) -> Self {
        Self {
            scanner_id: s.id.get(),
            concert_id: s.concert_id.get(),
            name: s.name,
            created_at: s.created_at,
            revoked_at: s.revoked_at,
            token: None,
            pairing_code: None,
            pairing_qr: None,
        }
    }
}

/// Makes a scanner's credentials for the concert's door (admin): the token
/// is shown once.
#[utoipa::path(post, path = "/api/concerts/{id}/scanners", tag = "check-in", security(("bearer" = [])),
    params(("id" = u64, Path)), request_body = CreateScannerRequest,
    responses((status = 201, body = ScannerResponse), (status = 400, body = Problem), (status = 401, body = Problem),
              (status = 403, body = Problem), (status = 404, body = Problem)))]
pub async fn create_scanner(
    State(state): State<CheckInState>,
    staff: Staff,
    ApiPath(concert): ApiPath<ConcertId>,
    ApiJson(req): ApiJson<CreateScannerRequest>,
) -> ApiResult<impl IntoResponse> {
    let grant = staff
        .permit(
            &state.pool,
            On::Concert(concert),
            Permission::ManageScanners,
        )
        .await?;
    let name = ticket_core::domain::parse_text("name", &req.name, 80)?;
    let mut seed = [0u8; 32];
    getrandom::getrandom(&mut seed).map_err(|e| ApiError::internal(anyhow::anyhow!("{e}")))?;
    let token = format!("{TOKEN_PREFIX}{}", URL_SAFE_NO_PAD.encode(seed));
    let mut conn = state.pool.acquire().await?;
    db::concerts::find(&mut conn, concert)
        .await?
        .ok_or_else(ApiError::concert_not_found)?;
    let (id, now) = whole::run(&mut conn, async |tx| {
        let now = db::now(tx).await?;
        let id =
            db::check_ins::create_scanner(tx, concert, &name, &token_hash(&token), now).await?;
        let did = Did {
            action: "scanner.create",
            concert: Some(concert),
            target: Some(format!("scanner {id}")),
            changes: &changed(Value::Null, json!({"name": name})),
        };
        staff.record(tx, grant, did).await?;
        Ok::<_, ApiError>((id, now))
    })
    .await?;
    let pairing = pairing_code(concert, &token);
    Ok((
        StatusCode::CREATED,
        Json(ScannerResponse {
            scanner_id: id.get(),
            concert_id: concert.get(),
            name,
            created_at: now,
            revoked_at: None,
            pairing_qr: Some(crate::tickets::routes::qr_svg(&pairing)),
            pairing_code: Some(pairing),
            token: Some(token),
        }),
    ))
}

/// The concert's scanners, revoked ones included (admin); never a token.
#[utoipa::path(get, path = "/api/concerts/{id}/scanners", tag = "check-in", security(("bearer" = [])),
    params(("id" = u64, Path)),
    responses((status = 200, body = Vec<ScannerResponse>), (status = 400, body = Problem), (status = 401, body = Problem),
              (status = 403, body = Problem)))]
pub async fn list_scanners(
    State(state): State<CheckInState>,
    caller: AuthUser,
    ApiPath(concert): ApiPath<ConcertId>,
) -> ApiResult<Json<Vec<ScannerResponse>>> {
    permit_on(
        &state.pool,
        caller,
        On::Concert(concert),
        Permission::ManageScanners,
    )
    .await?;
    let mut conn = state.pool.acquire().await?;
    let scanners = db::check_ins::scanners_of(&mut conn, concert).await?;
    Ok(Json(scanners.into_iter().map(Into::into).collect()))
}

/// Revokes a scanner (admin): its token stops working at once.
#[utoipa::path(delete, path = "/api/concerts/{id}/scanners/{scannerId}", tag = "check-in", security(("bearer" = [])),
    params(("id" = u64, Path), ("scannerId" = u64, Path)),
    responses((status = 204), (status = 400, body = Problem), (status = 401, body = Problem), (status = 403, body = Problem),
              (status = 404, body = Problem)))]
pub async fn revoke_scanner(
    State(state): State<CheckInState>,
    staff: Staff,
    ApiPath((concert, scanner)): ApiPath<(ConcertId, ScannerId)>,
) -> ApiResult<StatusCode> {
    let grant = staff
        .permit(
            &state.pool,
            On::Concert(concert),
            Permission::ManageScanners,
        )
        .await?;
    let mut conn = state.pool.acquire().await?;
    whole::run(&mut conn, async |tx| {
        let now = db::now(tx).await?;
        if !db::check_ins::revoke_scanner(tx, concert, scanner, now).await? {
            return Err(ApiError::new(
                ErrorCode::ScannerNotFound,
                "no such live scanner for this concert",
            ));
        }
        let did = Did {
            action: "scanner.revoke",
            concert: Some(concert),
            target: Some(format!("scanner {scanner}")),
            changes: &changed(json!({"revoked": false}), json!({"revoked": true})),
        };
        staff.record(tx, grant, did).await
    })
    .await?;
    Ok(StatusCode::NO_CONTENT)
}
