//! Seat availability for seat maps: every seat's state in about a byte,
//! cacheable (strong ETag, `max-age=1`, 304 to `If-None-Match`), gzipped
//! for clients that take it, served from the per-instance cache.

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use ticket_core::domain::ConcertId;

use crate::availability_cache::Snapshot;
use crate::error::{ApiResult, Problem};
use crate::extract::ApiPath;
use crate::state::AppState;

pub fn router() -> Router<AppState> {
    Router::new().route("/api/concerts/{id}/availability", get(availability))
}

/// Every seat's state: AVAILABLE, HELD or RESERVED as one letter per seat,
/// in seat id order (`seatRanges` gives the ids). At most about a second
/// old; anonymous.
#[utoipa::path(get, path = "/api/concerts/{id}/availability", tag = "concerts",
    params(("id" = u64, Path),
           ("If-None-Match" = Option<String>, Header, description = "an ETag of an earlier answer")),
    responses((status = 200, body = crate::availability_cache::AvailabilityBody,
               headers(("ETag" = String), ("Cache-Control" = String))),
              (status = 304, description = "unchanged since the ETag given"),
              (status = 400, body = Problem), (status = 404, body = Problem)))]
pub async fn availability(
    State(state): State<AppState>,
    headers: HeaderMap,
    ApiPath(id): ApiPath<ConcertId>,
) -> ApiResult<Response> {
    let snapshot = state
        .availability
        .get(&state.pool, id)
        .await?
        .ok_or_else(super::concerts::concert_not_found)?;
    let gzip = accepts_gzip(&headers) && !snapshot.gzip.is_empty();
    let etag = if gzip {
        &snapshot.gzip_etag
    } else {
        &snapshot.etag
    };
    let mut response = if unchanged(&headers, &snapshot) {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        let body = if gzip {
            snapshot.gzip.clone()
        } else {
            snapshot.json.clone()
        };
        let mut response = body.into_response();
        let out = response.headers_mut();
        out.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        if gzip {
            out.insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
        }
        response
    };
    let out = response.headers_mut();
    out.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=1"),
    );
    out.insert(header::VARY, HeaderValue::from_static("Accept-Encoding"));
    out.insert(header::ETAG, etag.clone());
    Ok(response)
}

/// Whether `If-None-Match` names the current state (in either encoding; an
/// If-None-Match comparison is weak, RFC 9110 13.1.2).
fn unchanged(headers: &HeaderMap, snapshot: &Snapshot) -> bool {
    if_none_match(headers)
        .any(|tag| tag == "*" || tag == snapshot.etag || tag == snapshot.gzip_etag)
}

/// The entity tags of `If-None-Match`, weak ones as strong.
pub(crate) fn if_none_match(headers: &HeaderMap) -> impl Iterator<Item = &str> {
    headers
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|tag| tag.trim().trim_start_matches("W/"))
}

/// Whether the client takes gzip (`Accept-Encoding`, a q of 0 refuses it).
pub(crate) fn accepts_gzip(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT_ENCODING)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|coding| {
            let mut parts = coding.split(';');
            let name = parts.next().unwrap_or("").trim();
            let refused = parts.any(|p| {
                p.trim()
                    .strip_prefix("q=")
                    .and_then(|q| q.trim().parse::<f32>().ok())
                    .is_some_and(|q| q == 0.0)
            });
            (name.eq_ignore_ascii_case("gzip") || name == "*") && !refused
        })
}
