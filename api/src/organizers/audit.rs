//! What staff do is recorded: the caller with where their request came
//! from ([`Staff`]), and one entry per write, in its transaction
//! ([`Staff::record`]), holding only the fields the write changed.

use axum::extract::{FromRef, FromRequestParts};
use axum::http::request::Parts;
use opentelemetry::trace::TraceContextExt as _;
use serde::Serialize;
use serde_json::{Map, Value, json};
use sqlx::MySqlConnection;
use ticket_core::db::audit::{self, NewEntry};
use ticket_core::domain::ConcertId;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

use super::access::Grant;
use crate::error::{ApiError, ApiResult};
use crate::extract::{Auth, AuthUser, ClientAddress, ClientAddresses};

/// The request id a caller (or the proxy in front) may send.
const REQUEST_ID: &str = "x-request-id";

/// A logged-in caller of an operator route, with what their audit entries
/// say about the request: its id and the client's address.
#[derive(Debug, Clone)]
pub struct Staff {
    pub caller: AuthUser,
    request_id: Option<String>,
    address: std::net::IpAddr,
}

impl<S: Send + Sync> FromRequestParts<S> for Staff
where
    Auth: FromRef<S>,
    ClientAddresses: FromRef<S>,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        let caller = AuthUser::from_request_parts(parts, state).await?;
        let address = ClientAddress::of(
            &parts.headers,
            &parts.extensions,
            &ClientAddresses::from_ref(state),
        )
        .0;
        Ok(Self {
            caller,
            request_id: request_id(&parts.headers),
            address,
        })
    }
}

/// The `X-Request-Id` sent (up to 64 visible characters), else the trace's
/// id when the request is traced.
fn request_id(headers: &axum::http::HeaderMap) -> Option<String> {
    let sent = headers
        .get(REQUEST_ID)
        .and_then(|v| v.to_str().ok())
        .filter(|id| !id.is_empty() && id.len() <= 64 && id.bytes().all(|b| b.is_ascii_graphic()));
    if let Some(id) = sent {
        return Some(id.to_owned());
    }
    let context = tracing::Span::current().context();
    let span = context.span();
    let trace = span.span_context();
    trace.is_valid().then(|| trace.trace_id().to_string())
}

/// What an entry says the write did.
pub struct Did<'a> {
    pub action: &'static str,
    pub concert: Option<ConcertId>,
    pub target: Option<String>,
    pub changes: &'a Value,
}

impl Staff {
    /// [`super::access::permit_on`] for this caller: what their entries
    /// record them as.
    pub async fn permit(
        &self,
        pool: &sqlx::MySqlPool,
        on: super::access::On,
        needs: ticket_core::domain::Permission,
    ) -> ApiResult<Grant> {
        super::access::permit_on(pool, self.caller, on, needs).await
    }

    /// Appends the entry of a write `grant` let through, in the write's
    /// transaction `tx`.
    pub async fn record(
        &self,
        tx: &mut MySqlConnection,
        grant: Grant,
        did: Did<'_>,
    ) -> ApiResult<()> {
        let entry = NewEntry {
            organizer: grant.organizer,
            concert: did.concert,
            user: grant.user,
            role: grant.role.map_or("ADMIN", |r| r.as_str()),
            action: did.action,
            target: did.target,
            changes: did.changes,
            request_id: self.request_id.as_deref(),
            client_address: Some(self.address.to_string()),
        };
        audit::record(tx, &entry).await?;
        Ok(())
    }
}

/// A thing as an entry shows it (one that cannot be shown is recorded as
/// null rather than failing the write it describes).
pub fn seen(thing: &impl Serialize) -> Value {
    serde_json::to_value(thing).unwrap_or(Value::Null)
}

/// The fields that differ between two views of a thing: `{before, after}`
/// with only those (a created thing has no before, a removed one no after).
pub fn changed(before: Value, after: Value) -> Value {
    match (&before, &after) {
        (Value::Object(b), Value::Object(a)) => {
            let (mut was, mut is) = (Map::new(), Map::new());
            for key in b.keys().chain(a.keys()) {
                // When it changed is the entry's own time.
                let bookkeeping = key == "updatedAt";
                if !bookkeeping && b.get(key) != a.get(key) && !was.contains_key(key) {
                    was.insert(key.clone(), b.get(key).cloned().unwrap_or(Value::Null));
                    is.insert(key.clone(), a.get(key).cloned().unwrap_or(Value::Null));
                }
            }
            json!({"before": was, "after": is})
        }
        _ => json!({"before": before, "after": after}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_what_changed_is_kept() {
        let before = json!({"title": "A", "venue": "Hall", "seats": 3});
        let after = json!({"title": "B", "venue": "Hall", "seats": 3, "new": 1});
        assert_eq!(
            changed(before, after),
            json!({"before": {"title": "A", "new": null}, "after": {"title": "B", "new": 1}})
        );
        assert_eq!(
            changed(Value::Null, json!({"name": "Gate"})),
            json!({"before": null, "after": {"name": "Gate"}})
        );
    }
}
