//! The operator's on-sale view of one concert: its line, the requests and
//! decisions per second, how long decisions take, and its seats, from what
//! the processes already measure (the line watch's reads of the lines' fronts
//! and of the published rates, the availability snapshot): watching a sale
//! adds no query per viewer.

use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};
use chrono::{DateTime, Utc};
use serde::Serialize;
use ticket_core::domain::{ConcertId, Permission};
use utoipa::ToSchema;

use crate::concerts::availability_cache::SeatCounts;
use crate::concerts::state::ConcertsState;
use crate::error::{ApiError, ApiResult, Problem};
use crate::extract::{ApiPath, AuthUser};
use crate::organizers::access::{On, permit_on};

pub fn router() -> Router<ConcertsState> {
    Router::new().route("/api/concerts/{id}/sale", get(sale))
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SaleBody {
    concert_id: u64,
    measured_at: DateTime<Utc>,
    /// Open requests: waiting for the opening, pending or being decided,
    /// counted from the line's front as this instance last read it (about a
    /// second old at most; the first ask reads it at once).
    line_length: Option<u64>,
    /// Requests accepted per second, over the last few seconds, summed
    /// over the API instances.
    requests_per_sec: f64,
    /// Decisions per second, summed over the workers.
    decisions_per_sec: f64,
    /// Request to decision, over the workers' last second of decisions
    /// (with several workers: their p50 weighted by rate, the highest
    /// p99). Null until something has been decided lately.
    decision_ms: Option<DecisionTimes>,
    seats: SeatCounts,
}

#[derive(Serialize, ToSchema)]
pub struct DecisionTimes {
    p50: f64,
    p99: f64,
}

/// The concert's sale now (admin). About a second old at most.
#[utoipa::path(get, path = "/api/concerts/{id}/sale", tag = "concerts",
    params(("id" = u64, Path)),
    security(("bearer" = [])),
    responses((status = 200, body = SaleBody),
              (status = 400, body = Problem), (status = 401, body = Problem),
              (status = 403, body = Problem), (status = 404, body = Problem)))]
pub async fn sale(
    State(state): State<ConcertsState>,
    caller: AuthUser,
    ApiPath(id): ApiPath<ConcertId>,
) -> ApiResult<Json<SaleBody>> {
    permit_on(&state.pool, caller, On::Concert(id), Permission::ViewSale).await?;
    let snapshot = state
        .availability
        .get(&state.pool, id)
        .await?
        .ok_or_else(ApiError::concert_not_found)?;
    let now = Some(state.line.sale(id).await?);
    let decisions = now.and_then(|n| n.decisions);
    Ok(Json(SaleBody {
        concert_id: id.get(),
        measured_at: chrono::Utc::now(),
        line_length: now.map(|n| n.line_length),
        requests_per_sec: now.map_or(0.0, |n| n.requests_per_sec),
        decisions_per_sec: decisions.map_or(0.0, |d| d.decisions_per_sec),
        decision_ms: decisions.and_then(|d| {
            Some(DecisionTimes {
                p50: d.p50_ms?,
                p99: d.p99_ms?,
            })
        }),
        seats: snapshot.counts,
    }))
}
