use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use ticket_core::db::{self, access_codes, whole};
use ticket_core::domain::{AccessCode, AccessCodeId, CodeBatch, ConcertId, Permission};
use utoipa::ToSchema;

use crate::error::{ApiError, ApiResult, ErrorCode, Problem};
use crate::extract::{ApiJson, ApiPath, AuthUser, integral};
use crate::organizers::access::{On, permit_on};
use crate::organizers::audit::{Did, Staff, changed};
use crate::presale::state::PresaleState;
use serde_json::{Value, json};

pub fn router() -> Router<PresaleState> {
    Router::new()
        .route("/api/concerts/{id}/access-codes", get(list).post(create))
        .route("/api/concerts/{id}/access-codes/{codeId}", delete(revoke))
}

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateCodesRequest {
    /// How many codes, 1–10,000.
    #[serde(deserialize_with = "integral::required")]
    #[schema(minimum = 1, maximum = 10000)]
    count: u64,
    /// Requests one code may have open or won at a time, 1–1,000.
    #[serde(deserialize_with = "integral::required")]
    #[schema(minimum = 1, maximum = 1000)]
    uses_per_code: u64,
    /// Seats over all of a code's open and won requests, 1–1,000.
    #[serde(deserialize_with = "integral::required")]
    #[schema(minimum = 1, maximum = 1000)]
    seats_per_code: u64,
}

#[derive(Serialize, ToSchema)]
pub struct NewCode {
    id: u64,
    /// Shown this once: only its hash is kept.
    #[schema(example = "ABCD-EFGH-JKMN-PQRS")]
    code: String,
}

#[derive(Serialize, ToSchema)]
pub struct NewCodes {
    codes: Vec<NewCode>,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CodeResponse {
    id: u64,
    /// Requests with the code that are open or won (a live reservation).
    uses: u64,
    uses_left: u64,
    seats_left: u64,
    revoked: bool,
    /// The account the code is bound to (the first that used it).
    user_id: Option<u64>,
}

impl From<access_codes::CodeUsage> for CodeResponse {
    fn from(c: access_codes::CodeUsage) -> Self {
        Self {
            id: c.id.get(),
            uses: c.uses,
            uses_left: u64::from(c.uses_per_code).saturating_sub(c.uses),
            seats_left: u64::from(c.seats_per_code).saturating_sub(c.seats),
            revoked: c.revoked,
            user_id: c.user.map(|u| u.get()),
        }
    }
}

/// Makes a batch of access codes for the concert's presale (admin). The
/// codes are in the answer once (JSON, or CSV with `Accept: text/csv`);
/// only their hashes are kept.
#[utoipa::path(post, path = "/api/concerts/{id}/access-codes", tag = "presale", security(("bearer" = [])),
    params(("id" = u64, Path)), request_body = CreateCodesRequest,
    responses((status = 201, body = NewCodes, content_type = "application/json"),
              (status = 201, description = "`id,code` lines", content_type = "text/csv"),
              (status = 400, body = Problem), (status = 401, body = Problem), (status = 403, body = Problem),
              (status = 404, body = Problem)))]
pub async fn create(
    State(state): State<PresaleState>,
    staff: Staff,
    ApiPath(concert): ApiPath<ConcertId>,
    headers: HeaderMap,
    ApiJson(req): ApiJson<CreateCodesRequest>,
) -> ApiResult<Response> {
    let grant = staff
        .permit(
            &state.pool,
            On::Concert(concert),
            Permission::ManageAccessCodes,
        )
        .await?;
    let batch = CodeBatch::parse(req.count, req.uses_per_code, req.seats_per_code)?;
    let codes = (0..batch.count)
        .map(|_| AccessCode::generate())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| ApiError::internal(anyhow::anyhow!("no randomness for access codes: {e}")))?;
    let hashes: Vec<[u8; 32]> = codes.iter().map(AccessCode::hash).collect();
    let mut conn = state.pool.acquire().await?;
    let ids = whole::run(&mut conn, async |tx| {
        if db::concerts::lock(tx, concert).await?.is_none() {
            return Err(ApiError::concert_not_found());
        }
        let now = db::now(tx).await?;
        let ids = access_codes::insert_many(tx, concert, batch, &hashes, now).await?;
        // The codes themselves never: only what they are good for.
        let after = json!({"count": batch.count, "usesPerCode": batch.uses_per_code,
                           "seatsPerCode": batch.seats_per_code});
        let did = Did {
            action: "access_codes.create",
            concert: Some(concert),
            target: None,
            changes: &changed(Value::Null, after),
        };
        staff.record(tx, grant, did).await?;
        Ok::<_, ApiError>(ids)
    })
    .await?;
    let made: Vec<NewCode> = ids
        .iter()
        .zip(&codes)
        .map(|(id, code)| NewCode {
            id: id.get(),
            code: code.shown(),
        })
        .collect();
    if crate::extract::wants_csv(&headers) {
        let mut csv = String::from("id,code\n");
        for code in &made {
            csv.push_str(&format!("{},{}\n", code.id, code.code));
        }
        return Ok((
            StatusCode::CREATED,
            [(header::CONTENT_TYPE, "text/csv; charset=utf-8")],
            csv,
        )
            .into_response());
    }
    Ok((StatusCode::CREATED, Json(NewCodes { codes: made })).into_response())
}

/// The concert's access codes with what each has taken (admin); never the
/// codes themselves.
#[utoipa::path(get, path = "/api/concerts/{id}/access-codes", tag = "presale", security(("bearer" = [])),
    params(("id" = u64, Path)),
    responses((status = 200, body = Vec<CodeResponse>), (status = 400, body = Problem), (status = 401, body = Problem),
              (status = 403, body = Problem), (status = 404, body = Problem)))]
pub async fn list(
    State(state): State<PresaleState>,
    caller: AuthUser,
    ApiPath(concert): ApiPath<ConcertId>,
) -> ApiResult<Json<Vec<CodeResponse>>> {
    permit_on(
        &state.pool,
        caller,
        On::Concert(concert),
        Permission::ManageAccessCodes,
    )
    .await?;
    let mut conn = state.pool.acquire().await?;
    if db::concerts::find(&mut conn, concert).await?.is_none() {
        return Err(ApiError::concert_not_found());
    }
    let now = db::now(&mut conn).await?;
    let codes = access_codes::list(&mut conn, concert, now).await?;
    Ok(Json(codes.into_iter().map(Into::into).collect()))
}

/// Revokes one access code (admin): no new request may use it; requests
/// already taken with it stay in line.
#[utoipa::path(delete, path = "/api/concerts/{id}/access-codes/{codeId}", tag = "presale", security(("bearer" = [])),
    params(("id" = u64, Path), ("codeId" = u64, Path)),
    responses((status = 204), (status = 400, body = Problem), (status = 401, body = Problem),
              (status = 403, body = Problem), (status = 404, body = Problem)))]
pub async fn revoke(
    State(state): State<PresaleState>,
    staff: Staff,
    ApiPath((concert, code)): ApiPath<(ConcertId, AccessCodeId)>,
) -> ApiResult<StatusCode> {
    let grant = staff
        .permit(
            &state.pool,
            On::Concert(concert),
            Permission::ManageAccessCodes,
        )
        .await?;
    let mut conn = state.pool.acquire().await?;
    whole::run(&mut conn, async |tx| {
        let now = db::now(tx).await?;
        if !access_codes::revoke(tx, concert, code, now).await? {
            return Err(ApiError::new(
                ErrorCode::AccessCodeNotFound,
                "the concert has no such access code",
            ));
        }
        let did = Did {
            action: "access_code.revoke",
            concert: Some(concert),
            target: Some(format!("access code {code}")),
            changes: &changed(json!({"revoked": false}), json!({"revoked": true})),
        };
        staff.record(tx, grant, did).await
    })
    .await?;
    Ok(StatusCode::NO_CONTENT)
}
