//! The desk's search for a concert's orders (admin): by order number, or by
//! the buyer's nickname or e-mail address, as a fan on the phone gives
//! them; each order with its buyer, seats and state, for the refund form.

use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use ticket_core::db;
use ticket_core::domain::{ConcertId, FieldError, Permission};
use utoipa::{IntoParams, ToSchema};

use crate::concerts::state::ConcertsState;
use crate::error::{ApiError, ApiResult, Problem};
use crate::extract::{ApiPath, ApiQuery, AuthUser};
use crate::organizers::access::{On, permit_on};
use crate::reservations::view::ReservationResponse;

pub fn router() -> Router<ConcertsState> {
    Router::new().route("/api/concerts/{id}/orders", get(search))
}

/// The longest text searched for (an e-mail address's length).
const MAX_QUERY_CHARS: usize = 254;

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct OrderQuery {
    /// An order number, or part of the buyer's nickname or e-mail address
    /// (1–254 characters).
    #[param(min_length = 1, max_length = 254)]
    q: String,
}

/// What the desk searched for, trimmed and bounded.
fn searched(raw: &str) -> Result<&str, FieldError> {
    let text = raw.trim();
    let length = text.chars().count();
    if length == 0 || length > MAX_QUERY_CHARS {
        return Err(FieldError::new(
            "q",
            format!("give 1 to {MAX_QUERY_CHARS} characters: an order number, a nickname or an e-mail address"),
        )
        .with("limit", MAX_QUERY_CHARS.to_string()));
    }
    Ok(text)
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct FoundOrder {
    #[serde(flatten)]
    order: ReservationResponse,
    buyer: Buyer,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Buyer {
    nick_name: String,
    email: Option<String>,
}

/// The concert's orders matching `q`, newest first, at most 20 (admin).
#[utoipa::path(get, path = "/api/concerts/{id}/orders", tag = "reservations",
    params(("id" = u64, Path), OrderQuery),
    security(("bearer" = [])),
    responses((status = 200, body = Vec<FoundOrder>),
              (status = 400, body = Problem), (status = 401, body = Problem),
              (status = 403, body = Problem), (status = 404, body = Problem)))]
pub async fn search(
    State(state): State<ConcertsState>,
    caller: AuthUser,
    ApiPath(concert): ApiPath<ConcertId>,
    ApiQuery(query): ApiQuery<OrderQuery>,
) -> ApiResult<Json<Vec<FoundOrder>>> {
    permit_on(
        &state.pool,
        caller,
        On::Concert(concert),
        Permission::FindOrders,
    )
    .await?;
    let text = searched(&query.q)?;
    let mut conn = state.pool.acquire().await?;
    if db::concerts::find(&mut conn, concert).await?.is_none() {
        return Err(ApiError::concert_not_found());
    }
    let now = db::now(&mut conn).await?;
    let found = db::orders::search(&mut conn, concert, text, now).await?;
    Ok(Json(
        found
            .into_iter()
            .map(|f| FoundOrder {
                order: f.reservation.into(),
                buyer: Buyer {
                    nick_name: f.buyer_nickname,
                    email: f.buyer_email,
                },
            })
            .collect(),
    ))
}
