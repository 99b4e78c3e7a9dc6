//! `PUT /api/concerts/{id}/seating-plan` and `GET …`: a concert's seats from
//! a venue's plan in pretix's open format, and the plan read back.

use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;
use axum::{Json, Router};
use serde::Serialize;
use ticket_core::db::{self, whole};
use ticket_core::domain::seating_plan::{RawPlan, SeatingPlan};
use ticket_core::domain::{ConcertId, Permission};
use utoipa::ToSchema;

use crate::concerts::state::ConcertsState;
use crate::error::{ApiError, ApiResult, ErrorCode, Problem};
use crate::extract::{ApiJson, ApiPath, with_body_limit};
use crate::organizers::access::On;
use crate::organizers::audit::{Did, Staff, changed};
use serde_json::{Value, json};

/// The largest plan taken, as sent and as kept: the column (MEDIUMTEXT)
/// holds 16 MiB and one statement may carry 16 MiB (MariaDB's default
/// `max_allowed_packet`), so 15 MiB leaves the statement its room. A
/// 100,000-seat plan with guids like `Stalls-12-34` takes about 11 MiB.
pub const MAX_PLAN_BYTES: usize = 15 * 1024 * 1024;

pub fn router() -> Router<ConcertsState> {
    Router::new().route(
        "/api/concerts/{id}/seating-plan",
        with_body_limit(get(seating_plan).put(put_seating_plan), MAX_PLAN_BYTES),
    )
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SeatingPlanResult {
    concert_id: u64,
    name: String,
    /// The concert's seats now: the plan's.
    seat_count: u64,
}

/// Gives a concert the seats of a venue's plan (admin), while none of its
/// seats was ever requested: pretix's format (`name`, `categories`, `size`,
/// `zones` → `rows` → `seats {seat_guid, seat_number, position, category}`);
/// each plan category is the concert's price category of that name. The
/// seats are named `zone-row-seat` and ranked in plan order (zones and
/// rows as listed, front first; a row's centre first). The same plan may
/// serve every concert of its venue.
#[utoipa::path(put, path = "/api/concerts/{id}/seating-plan", tag = "concerts", security(("bearer" = [])),
    params(("id" = u64, Path)), request_body(content = Object, description = "a seating plan (pretix's seating-plan.schema.json)"),
    responses((status = 200, body = SeatingPlanResult), (status = 400, body = Problem), (status = 401, body = Problem),
              (status = 403, body = Problem), (status = 404, body = Problem), (status = 409, body = Problem),
              (status = 413, body = Problem)))]
pub async fn put_seating_plan(
    State(state): State<ConcertsState>,
    staff: Staff,
    ApiPath(id): ApiPath<ConcertId>,
    ApiJson(raw): ApiJson<RawPlan>,
) -> ApiResult<Json<SeatingPlanResult>> {
    let grant = staff
        .permit(&state.pool, On::Concert(id), Permission::EditConcerts)
        .await?;
    // Kept as given (pretix's own fields, in its order) for GET.
    let stored =
        serde_json::to_string(&raw).map_err(|e| ApiError::internal(anyhow::Error::from(e)))?;
    // Written again, numbers may take more room than they were sent in.
    if stored.len() > MAX_PLAN_BYTES {
        return Err(ApiError::new(
            ErrorCode::PayloadTooLarge,
            format!(
                "the plan takes {} bytes as kept; at most {MAX_PLAN_BYTES}",
                stored.len()
            ),
        ));
    }
    let mut conn = state.pool.acquire().await?;
    let result = whole::run(&mut conn, async |tx| {
        // Requests for the concert's seats are written under its line's
        // lock: none slips in between the check and the new seats.
        db::line::lock_line_of(tx, id).await?;
        let concert = db::concerts::lock(tx, id)
            .await?
            .ok_or_else(ApiError::concert_not_found)?;
        if concert.cancelled_at.is_some() {
            return Err(ApiError::new(
                ErrorCode::ConcertCancelled,
                "the concert is cancelled",
            ));
        }
        if db::seating_plans::seats_ever_requested(tx, id).await? {
            return Err(ApiError::new(
                ErrorCode::SeatsAlreadyRequested,
                "seats of this concert have been asked for: its seats stay as they are",
            ));
        }
        let categories = db::prices::of_concert(tx, id).await?;
        let names: Vec<&str> = categories
            .iter()
            .flat_map(|c| c.categories.iter().map(|c| c.name.as_str()))
            .collect();
        let plan = SeatingPlan::parse(raw, &names)?;
        let now = db::now(tx).await?;
        let position_of = |name: &str| {
            names
                .iter()
                .position(|n| *n == name)
                .and_then(|p| u8::try_from(p).ok())
        };
        let seat_count =
            db::seating_plans::replace(tx, id, &plan, &stored, position_of, now).await?;
        // What the plan is, not the plan: it may weigh megabytes.
        let after = json!({"name": plan.raw.name, "seatCount": seat_count});
        let did = Did {
            action: "seating_plan.replace",
            concert: Some(id),
            target: None,
            changes: &changed(Value::Null, after),
        };
        staff.record(tx, grant, did).await?;
        Ok(SeatingPlanResult {
            concert_id: id.get(),
            name: plan.raw.name,
            seat_count,
        })
    })
    .await?;
    Ok(Json(result))
}

/// The concert's seating plan as it was given (pretix's format).
#[utoipa::path(get, path = "/api/concerts/{id}/seating-plan", tag = "concerts",
    params(("id" = u64, Path)),
    responses((status = 200, description = "the plan, in pretix's seating-plan.schema.json", content_type = "application/json"),
              (status = 400, body = Problem), (status = 404, body = Problem)))]
pub async fn seating_plan(
    State(state): State<ConcertsState>,
    ApiPath(id): ApiPath<ConcertId>,
) -> ApiResult<impl IntoResponse> {
    let mut conn = state.pool.acquire().await?;
    let plan = db::seating_plans::find(&mut conn, id)
        .await?
        .ok_or_else(|| {
            ApiError::new(
                ErrorCode::SeatingPlanNotFound,
                "this concert has no seating plan (its seats are rows × seatsPerRow)",
            )
        })?;
    Ok(([(header::CONTENT_TYPE, "application/json")], plan))
}
