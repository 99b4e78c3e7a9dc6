//! A request's decision pushed live: Server-Sent Events with its place in
//! line while it waits and its decision at the end. The streams of an
//! instance are fed together by its line watch (a few queries a second in
//! all), never by a query per stream.

use std::convert::Infallible;
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use futures::Stream;
use serde::Serialize;
use ticket_core::domain::QueueId;
use tokio::sync::watch;
use utoipa::ToSchema;

use super::status::{LineFields, QueueStatusResponse, own_request};
use crate::accounts::security::Principal;
use crate::accounts::security::revocations::Revocations;
use crate::concerts::sale_windows::SaleWindows;
use crate::error::{ApiResult, Problem};
use crate::extract::{ApiPath, AuthUser};
use crate::reservations::line_watch::Progress;
use crate::reservations::state::ReservationsState;
use crate::reservations::stream_permits::StreamPermit;
use std::sync::Arc;

pub fn router() -> Router<ReservationsState> {
    Router::new().route("/api/reservations/status/{id}/events", get(events))
}

/// The id of the last event of a stream: a client that reconnects with it
/// has everything and is told so with 204 (EventSource stops there).
const DECISION_ID: &str = "decision";
/// Comments sent while nothing changes, so that proxies keep the stream.
const HEARTBEAT: Duration = Duration::from_secs(15);
/// How often a waiting stream checks that its token still holds: revoked
/// (log out everywhere, a password change, the account deleted) or expired,
/// the stream ends (revocations reach every instance within about a second).
const TOKEN_RECHECK: Duration = Duration::from_secs(1);

/// The data of a `position` or `waiting` event.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PositionEvent {
    queue_id: u64,
    /// WAITING, PENDING or PROCESSING.
    status: &'static str,
    position: Option<u64>,
    estimated_wait_ms: Option<u64>,
    poll_after_ms: Option<u64>,
    opens_at: Option<chrono::DateTime<chrono::Utc>>,
}

/// Server-Sent Events for one request: `waiting` (in the lottery, until
/// the opening), `position` (with its place whenever it changes), then one
/// `decision` (the body of the status poll, id `decision`) and the end.
/// Heartbeat comments every 15 s. Reconnecting with `Last-Event-ID:
/// decision` answers 204. Only its owner (or an admin) may follow it, and
/// only while the token it began with holds. A user may have a few streams
/// open on an instance (429 beyond), an instance a bounded number (503).
#[utoipa::path(get, path = "/api/reservations/status/{id}/events", tag = "reservations", security(("bearer" = [])),
    params(("id" = u64, Path, description = "queueId"),
           ("Last-Event-ID" = Option<String>, Header, description = "the id of the last event received")),
    responses((status = 200, content_type = "text/event-stream", body = String,
               description = "events `waiting` and `position` (data: PositionEvent), then `decision` (data: QueueStatusResponse)"),
              (status = 204, description = "the decision was already delivered"),
              (status = 400, body = Problem), (status = 401, body = Problem), (status = 404, body = Problem),
              (status = 429, body = Problem), (status = 503, body = Problem)))]
pub async fn events(
    State(state): State<ReservationsState>,
    caller: AuthUser,
    headers: HeaderMap,
    ApiPath(id): ApiPath<QueueId>,
) -> ApiResult<Response> {
    let mut conn = state.pool.acquire().await?;
    let (row, lottery_place) = own_request(&mut conn, caller, id).await?;
    let last = headers.get("last-event-id").and_then(|v| v.to_str().ok());
    if last == Some(DECISION_ID) {
        return Ok(StatusCode::NO_CONTENT.into_response());
    }
    if !row.is_open() {
        let seats = ticket_core::db::request_seats::shown_for(&mut conn, &[&row])
            .await?
            .remove(&row.id)
            .unwrap_or_default();
        return Ok(sse(stream(Step::Decided(decision_event(row, seats)), None)));
    }
    drop(conn);
    let permit = state.streams.open(caller.id)?;
    let line = LineFields::of(&state, &row, lottery_place).await?;
    let first = Step::Open(position_event(&row, line));
    let mut recheck = tokio::time::interval(TOKEN_RECHECK);
    recheck.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let follow = Follow {
        standing: state.line.watch(&row),
        opens_at: line.opens_at,
        sales: state.sales.clone(),
        pool: state.pool.clone(),
        row,
        token: caller.token,
        revocations: state.auth.revocations.clone(),
        recheck,
        _permit: permit,
    };
    Ok(sse(stream(first, Some(follow))))
}

fn sse(events: impl Stream<Item = Result<Event, Infallible>> + Send + 'static) -> Response {
    let mut response = Sse::new(events)
        .keep_alive(KeepAlive::new().interval(HEARTBEAT))
        .into_response();
    // Proxies that buffer responses (nginx) would hold events back.
    response.headers_mut().insert(
        "x-accel-buffering",
        axum::http::HeaderValue::from_static("no"),
    );
    response
}

enum Step {
    Open(Event),
    Decided(Event),
    End,
}

/// What a stream keeps while it waits: no more than it needs, for there may
/// be tens of thousands of them.
struct Follow {
    standing: watch::Receiver<Progress>,
    /// While in the lottery: the opening, as last read (an operator may
    /// move it).
    opens_at: Option<chrono::DateTime<chrono::Utc>>,
    sales: Arc<SaleWindows>,
    pool: sqlx::MySqlPool,
    row: ticket_core::db::queue::QueueRow,
    /// The token the stream began with, checked every [`TOKEN_RECHECK`].
    token: Principal,
    revocations: Arc<Revocations>,
    recheck: tokio::time::Interval,
    /// Its place among the instance's bounded streams, given back at the end.
    _permit: StreamPermit,
}

impl Follow {
    /// The next change of the request's standing, or of its sale's opening
    /// while it waits for it (the opening passed or was moved); `None` when
    /// the stream should end first (its token was revoked or expired, or
    /// the line watch stopped).
    async fn next_standing(&mut self) -> Option<Progress> {
        loop {
            tokio::select! {
                changed = self.standing.changed() => {
                    changed.ok()?;
                    return Some(self.standing.borrow_and_update().clone());
                }
                _ = self.recheck.tick() => {
                    let revoked = self
                        .revocations
                        .is_revoked(self.token.user, self.token.issued_at_us);
                    if revoked || self.token.expires_at <= chrono::Utc::now().timestamp() {
                        return None;
                    }
                    if self.opening_changed().await {
                        return Some(self.standing.borrow_and_update().clone());
                    }
                }
            }
        }
    }
}

impl Follow {
    /// Whether the sale this lottery request waits for has opened, or its
    /// opening moved, since the last look (read from the instance's sale
    /// windows, about a second old; a failed read changes nothing).
    async fn opening_changed(&mut self) -> bool {
        if self.opens_at.is_none() {
            return false;
        }
        let Ok(sale) = self.sales.of(&self.pool, self.row.concert_id).await else {
            return false;
        };
        let now = chrono::Utc::now();
        let opens_at = sale.opens_at.filter(|at| *at > now);
        let changed = opens_at != self.opens_at;
        self.opens_at = opens_at;
        changed
    }
}

/// The first event, then one per change of the request's standing, until
/// its decision (or this instance stops: the client reconnects elsewhere).
fn stream(first: Step, follow: Option<Follow>) -> impl Stream<Item = Result<Event, Infallible>> {
    futures::stream::unfold((Some(first), follow), |(pending, mut follow)| async move {
        if let Some(step) = pending {
            return match step {
                Step::Open(event) => Some((Ok(event), (None, follow))),
                Step::Decided(event) => Some((Ok(event), (Some(Step::End), None))),
                Step::End => None,
            };
        }
        let f = follow.as_mut()?;
        let standing = f.next_standing().await?;
        match standing {
            Progress::Open(place) => {
                let now = chrono::Utc::now();
                let line = match f.opens_at.filter(|at| *at > now) {
                    Some(opens_at) => LineFields::until_opening(opens_at, now),
                    None => LineFields::placed(place),
                };
                Some((Ok(position_event(&f.row, line)), (None, follow)))
            }
            Progress::Decided(row, seats) => {
                let event = decision_event(*row, seats);
                Some((Ok(event), (Some(Step::End), None)))
            }
            Progress::Closed => None,
        }
    })
}

fn position_event(row: &ticket_core::db::queue::QueueRow, line: LineFields) -> Event {
    let waiting = line.opens_at.is_some();
    let data = PositionEvent {
        queue_id: row.id.get(),
        status: line.status_of(row),
        position: line.place.map(|p| p.position),
        estimated_wait_ms: line.place.and_then(|p| p.estimated_wait_ms),
        poll_after_ms: line.poll_after_ms,
        opens_at: line.opens_at,
    };
    let event = Event::default().event(if waiting { "waiting" } else { "position" });
    let event = match line.poll_after_ms {
        Some(ms) => event.retry(Duration::from_millis(ms)),
        None => event,
    };
    json_data(event, &data)
}

fn decision_event(
    row: ticket_core::db::queue::QueueRow,
    seats: Vec<ticket_core::domain::SeatId>,
) -> Event {
    let seat_ids = seats.iter().map(|s| s.get()).collect();
    let body = QueueStatusResponse::of(row, seat_ids, LineFields::default());
    json_data(Event::default().event("decision").id(DECISION_ID), &body)
}

fn json_data(event: Event, data: &impl Serialize) -> Event {
    match event.json_data(data) {
        Ok(event) => event,
        // Our own types always serialize; an empty event is the fallback.
        Err(_) => Event::default().comment("unserializable event"),
    }
}
