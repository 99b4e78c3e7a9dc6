use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;
use axum::{Json, Router};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use ticket_core::db::{self, tickets::TicketRow};
use ticket_core::domain::ticket_code::TicketKeys;
use ticket_core::domain::{ConcertId, FieldError, ReservationId, TicketId};
use utoipa::{IntoParams, ToSchema};

use crate::check_in::door_staff::DoorStaff;
use crate::error::{ApiError, ApiResult, ErrorCode, Problem};
use crate::extract::{ApiPath, ApiQuery, AuthUser};
use crate::organizers::access::acting_on;
use crate::reservations::view::PlaceView;
use crate::tickets::state::TicketsState;
use ticket_core::domain::Permission;

pub fn router() -> Router<TicketsState> {
    Router::new()
        .route("/api/reservations/{id}/tickets", get(of_reservation))
        .route("/api/tickets/{id}/qr.svg", get(qr))
        .route("/api/concerts/{id}/check-in/keys", get(keys))
        .route("/api/concerts/{id}/check-in/revoked", get(revoked))
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TicketResponse {
    ticket_id: u64,
    seat_id: u64,
    seat_number: String,
    /// The seat's price category when it was sold (null without prices).
    category: Option<String>,
    /// A standing place's area and entry number (the order the floor is
    /// entered in); null for a seat.
    #[schema(example = "Floor")]
    area: Option<String>,
    #[schema(example = 12)]
    entry_number: Option<u64>,
    /// Where the seat is, as the venue names it.
    place: PlaceView,
    /// The signed code a scanner reads (docs/concepts.md, "Ticket codes").
    #[schema(example = "AQ3x…")]
    code: String,
    /// The code as a QR image (SVG), for the owner or an admin.
    #[schema(example = "/api/tickets/42/qr.svg")]
    qr: String,
    /// When the ticket was admitted at the door, and where; null before.
    checked_in_at: Option<DateTime<Utc>>,
    gate: Option<String>,
}

pub fn keys_of(keys: Option<&TicketKeys>) -> ApiResult<&TicketKeys> {
    keys.ok_or_else(|| {
        ApiError::new(
            ErrorCode::TicketsUnavailable,
            "tickets are not set up on this server (TICKET_CODE_KEYS)",
        )
    })
}

impl TicketResponse {
    fn of(ticket: TicketRow, keys: &TicketKeys) -> Self {
        Self {
            ticket_id: ticket.id.get(),
            seat_id: ticket.seat_id.get(),
            code: keys.sign(&ticket.identity()),
            qr: format!("/api/tickets/{}/qr.svg", ticket.id),
            place: ticket.place.place(&ticket.seat_number).into(),
            seat_number: ticket.seat_number,
            category: ticket.category,
            area: ticket.place.area,
            entry_number: ticket.place.entry_number,
            checked_in_at: ticket.checked_in_at,
            gate: ticket.checked_in_gate,
        }
    }
}

/// The tickets of a CONFIRMED reservation, one per seat (its owner or an
/// admin); none for a reservation that is not (or no longer) confirmed.
#[utoipa::path(get, path = "/api/reservations/{id}/tickets", tag = "tickets", security(("bearer" = [])),
    params(("id" = u64, Path)),
    responses((status = 200, body = Vec<TicketResponse>), (status = 400, body = Problem), (status = 401, body = Problem),
              (status = 404, body = Problem), (status = 503, body = Problem)))]
pub async fn of_reservation(
    State(state): State<TicketsState>,
    caller: AuthUser,
    ApiPath(id): ApiPath<ReservationId>,
) -> ApiResult<Json<Vec<TicketResponse>>> {
    let keys = keys_of(state.ticket_keys.as_deref())?;
    let mut conn = state.pool.acquire().await?;
    crate::reservations::view::readable(&mut conn, caller, id).await?;
    let tickets = db::tickets::of_reservation(&mut conn, id).await?;
    Ok(Json(
        tickets
            .into_iter()
            .filter(TicketRow::is_valid)
            .map(|t| TicketResponse::of(t, keys))
            .collect(),
    ))
}

/// A ticket's code as a QR image (SVG), for its owner or an admin.
#[utoipa::path(get, path = "/api/tickets/{id}/qr.svg", tag = "tickets", security(("bearer" = [])),
    params(("id" = u64, Path)),
    responses((status = 200, content_type = "image/svg+xml", body = String), (status = 400, body = Problem),
              (status = 401, body = Problem), (status = 404, body = Problem), (status = 410, body = Problem),
              (status = 503, body = Problem)))]
pub async fn qr(
    State(state): State<TicketsState>,
    caller: AuthUser,
    ApiPath(id): ApiPath<TicketId>,
) -> ApiResult<impl IntoResponse> {
    let keys = keys_of(state.ticket_keys.as_deref())?;
    let mut conn = state.pool.acquire().await?;
    let not_found = || ApiError::new(ErrorCode::TicketNotFound, "no such ticket");
    let ticket = db::tickets::find(&mut conn, id)
        .await?
        .ok_or_else(not_found)?;
    let (owner, concert) = (ticket.user_id, ticket.concert_id);
    acting_on(
        &mut conn,
        caller,
        owner,
        concert,
        Permission::FindOrders,
        not_found,
    )
    .await?;
    if !ticket.is_valid() {
        return Err(ApiError::new(
            ErrorCode::TicketVoid,
            "the ticket was cancelled",
        ));
    }
    let svg = qr_svg(&keys.sign(&ticket.identity()));
    Ok((
        [
            (header::CONTENT_TYPE, "image/svg+xml"),
            // A ticket is a credential: kept by nobody on the way.
            (header::CACHE_CONTROL, "private, no-store"),
        ],
        svg,
    ))
}

/// A code as a QR symbol (medium error correction, a quiet zone), in SVG.
pub fn qr_svg(code: &str) -> String {
    match qrcode::QrCode::with_error_correction_level(code.as_bytes(), qrcode::EcLevel::M) {
        Ok(symbol) => symbol
            .render::<qrcode::render::svg::Color<'_>>()
            .min_dimensions(240, 240)
            .quiet_zone(true)
            .build(),
        // A 130-character code always fits (a version 40 symbol holds 2,331
        // bytes at level M); an empty image rather than a panic.
        Err(_) => String::from("<svg xmlns=\"http://www.w3.org/2000/svg\"/>"),
    }
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct KeysResponse {
    keys: Vec<PublicKey>,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PublicKey {
    /// Bytes 1–4 of a code, in hex: which key signed it.
    #[schema(example = "1a2b3c4d")]
    kid: String,
    #[schema(example = "EdDSA")]
    alg: &'static str,
    /// The raw 32-byte Ed25519 public key, base64url without padding.
    public_key: String,
}

/// The public keys the concert's ticket codes are signed with (the first
/// signs new codes; the others still verify). Public: a scanner needs no
/// secret to verify a code offline.
#[utoipa::path(get, path = "/api/concerts/{id}/check-in/keys", tag = "tickets", params(("id" = u64, Path)),
    responses((status = 200, body = KeysResponse), (status = 400, body = Problem), (status = 404, body = Problem),
              (status = 503, body = Problem)))]
pub async fn keys(
    State(state): State<TicketsState>,
    ApiPath(concert): ApiPath<ConcertId>,
) -> ApiResult<impl IntoResponse> {
    let keys = keys_of(state.ticket_keys.as_deref())?;
    let mut conn = state.pool.acquire().await?;
    db::concerts::find(&mut conn, concert)
        .await?
        .ok_or_else(ApiError::concert_not_found)?;
    let body = KeysResponse {
        keys: keys
            .public_keys()
            .into_iter()
            .map(|(kid, public_key)| PublicKey {
                kid,
                alg: "EdDSA",
                public_key,
            })
            .collect(),
    };
    Ok(([(header::CACHE_CONTROL, "public, max-age=300")], Json(body)))
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct RevokedQuery {
    /// RFC 3339: only tickets voided after this (the last answer's
    /// `asOf`); absent: all.
    #[param(value_type = Option<String>, format = DateTime)]
    since: Option<String>,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RevokedResponse {
    /// Tickets voided after `since` (cancelled reservations): refuse their
    /// codes.
    revoked: Vec<u64>,
    /// Ask next with `since` = this: a minute behind the server's clock, so
    /// that a cancel committed a moment late is read again, not missed (the
    /// same ids may come twice).
    as_of: DateTime<Utc>,
}

/// Voided tickets read per answer; a scanner asks again from `asOf`.
const REVOKED_PAGE: u32 = 10_000;
/// How far `asOf` stays behind, so that a void committed late is read.
const REVOKED_OVERLAP: chrono::TimeDelta = chrono::TimeDelta::seconds(60);

/// The concert's tickets voided since a time, for scanners (the concert's
/// scanners, or an admin).
#[utoipa::path(get, path = "/api/concerts/{id}/check-in/revoked", tag = "tickets", security(("bearer" = [])),
    params(("id" = u64, Path), RevokedQuery),
    responses((status = 200, body = RevokedResponse), (status = 400, body = Problem), (status = 401, body = Problem),
              (status = 403, body = Problem), (status = 404, body = Problem)))]
pub async fn revoked(
    State(state): State<TicketsState>,
    staff: DoorStaff,
    ApiPath(concert): ApiPath<ConcertId>,
    ApiQuery(query): ApiQuery<RevokedQuery>,
) -> ApiResult<Json<RevokedResponse>> {
    staff.ensure_concert(&state.pool, concert).await?;
    let since = match query.since.as_deref() {
        Some(raw) => DateTime::parse_from_rfc3339(raw)
            .map(|t| t.with_timezone(&Utc))
            .map_err(|_| FieldError::new("since", "must be an RFC 3339 time"))?,
        None => DateTime::<Utc>::UNIX_EPOCH,
    };
    let mut conn = state.pool.acquire().await?;
    db::concerts::find(&mut conn, concert)
        .await?
        .ok_or_else(ApiError::concert_not_found)?;
    let now = db::now(&mut conn).await?;
    let voided = db::tickets::voided_since(&mut conn, concert, since, REVOKED_PAGE).await?;
    let as_of = match voided.last() {
        // More to read: on from the last one read (its time again, so
        // that tickets voided at that same instant are not skipped).
        Some((_, at)) if voided.len() == REVOKED_PAGE as usize => *at,
        _ => (now - REVOKED_OVERLAP).max(since),
    };
    Ok(Json(RevokedResponse {
        revoked: voided.iter().map(|(id, _)| id.get()).collect(),
        as_of,
    }))
}
