//! `GET /api/concerts/{id}/sales`: what a concert took, by price category
//! (JSON), or its sold orders one per line (`Accept: text/csv`).

use axum::extract::State;
use axum::http::{HeaderMap, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde::Serialize;
use ticket_core::db::{concerts, prices, takings};
use ticket_core::domain::{ConcertId, Permission, ReservationId};
use utoipa::ToSchema;

use crate::error::{ApiError, ApiResult, Problem};
use crate::extract::{ApiPath, AuthUser, wants_csv};
use crate::organizers::access::{On, permit_on};
use crate::payments::state::PaymentsState;

pub fn router() -> Router<PaymentsState> {
    Router::new().route("/api/concerts/{id}/sales", get(sales))
}

/// Orders read per statement for the CSV.
const ORDERS_PER_PAGE: u32 = 1000;

#[derive(Serialize, ToSchema, Default, Clone)]
#[serde(rename_all = "camelCase")]
pub struct Takings {
    /// The category's name (null: a concert without prices; "total").
    category: Option<String>,
    /// Tickets issued.
    sold: i64,
    /// Tickets given back.
    refunded: i64,
    /// What the tickets sold for, in the currency's minor units.
    gross: u64,
    refunded_amount: u64,
    /// `gross - refundedAmount`: what the concert keeps.
    net: u64,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SalesResponse {
    concert_id: u64,
    currency: Option<String>,
    /// In the concert's category order.
    categories: Vec<Takings>,
    total: Takings,
}

/// What the concert took (admin): tickets sold and refunded, gross,
/// refunded and net, by category and in total; with `Accept: text/csv`,
/// one line per sold order (reservation, fan, seats, amount, refunded,
/// currency, provider, payment id, status, times).
#[utoipa::path(get, path = "/api/concerts/{id}/sales", tag = "payments", security(("bearer" = [])),
    params(("id" = u64, Path)),
    responses((status = 200, body = SalesResponse),
              (status = 200, description = "one line per sold order", content_type = "text/csv"),
              (status = 401, body = Problem), (status = 403, body = Problem), (status = 404, body = Problem)))]
pub async fn sales(
    State(state): State<PaymentsState>,
    caller: AuthUser,
    ApiPath(id): ApiPath<ConcertId>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    permit_on(
        &state.pool,
        caller,
        On::Concert(id),
        Permission::ReadTakings,
    )
    .await?;
    let mut conn = state.pool.acquire().await?;
    concerts::find(&mut conn, id)
        .await?
        .ok_or_else(ApiError::concert_not_found)?;
    if wants_csv(&headers) {
        let mut csv = String::from(
            "reservation,fan,seats,amount,refunded,currency,provider,payment,status,created_at,confirmed_at\n",
        );
        let mut after = ReservationId(0);
        loop {
            let page = takings::orders(&mut conn, id, after, ORDERS_PER_PAGE).await?;
            let Some(last) = page.last() else { break };
            after = last.reservation_id;
            for o in &page {
                let fields = [
                    o.reservation_id.to_string(),
                    o.nickname.clone(),
                    o.seats.clone(),
                    o.amount.to_string(),
                    o.refunded.to_string(),
                    o.currency.clone().unwrap_or_default(),
                    o.provider.clone().unwrap_or_default(),
                    o.payment_id.clone().unwrap_or_default(),
                    o.status.clone(),
                    o.created_at.to_rfc3339(),
                    o.confirmed_at.map(|t| t.to_rfc3339()).unwrap_or_default(),
                ];
                let line: Vec<String> = fields.iter().map(|f| quoted(f)).collect();
                csv.push_str(&line.join(","));
                csv.push('\n');
            }
            if page.len() < ORDERS_PER_PAGE as usize {
                break;
            }
        }
        return Ok(([(header::CONTENT_TYPE, "text/csv; charset=utf-8")], csv).into_response());
    }
    let categories = prices::of_concert(&mut conn, id).await?;
    let mut rows = takings::by_category(&mut conn, id).await?;
    // The concert's own order of categories; any other (renamed since) after.
    let position = |name: &Option<String>| {
        name.as_deref()
            .and_then(|n| categories.as_ref().and_then(|c| c.position_of(n)))
            .unwrap_or(usize::MAX)
    };
    rows.sort_by(|a, b| {
        position(&a.category)
            .cmp(&position(&b.category))
            .then(a.category.cmp(&b.category))
    });
    let mut total = Takings {
        category: Some("total".into()),
        ..Takings::default()
    };
    let categories_out: Vec<Takings> = rows
        .into_iter()
        .map(|r| {
            let t = Takings {
                category: r.category,
                sold: r.sold,
                refunded: r.refunded,
                gross: r.gross,
                refunded_amount: r.refunded_amount,
                net: r.gross.saturating_sub(r.refunded_amount),
            };
            total.sold += t.sold;
            total.refunded += t.refunded;
            total.gross += t.gross;
            total.refunded_amount += t.refunded_amount;
            total.net += t.net;
            t
        })
        .collect();
    let currency = categories
        .as_ref()
        .and_then(|c| c.seat_price(0))
        .map(|p| p.currency.as_str().to_owned());
    Ok(Json(SalesResponse {
        concert_id: id.get(),
        currency,
        categories: categories_out,
        total,
    })
    .into_response())
}

/// A CSV field, always quoted (names may hold commas and quotes); a field
/// a spreadsheet would run as a formula is prefixed with `'`.
fn quoted(field: &str) -> String {
    let safe = if field.starts_with(['=', '+', '-', '@']) {
        format!("'{field}")
    } else {
        field.to_owned()
    };
    format!("\"{}\"", safe.replace('"', "\"\""))
}
