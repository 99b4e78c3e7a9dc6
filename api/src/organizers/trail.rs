//! Reading the audit trail: an organizer's entries, newest first, filtered
//! by concert, person, action and time, as JSON or CSV.

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, header};
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use ticket_core::db::audit::{self, EntryRow, Filter};
use ticket_core::domain::{ConcertId, FieldError, OrganizerId, PageRequest, Permission, UserId};
use utoipa::{IntoParams, ToSchema};

use super::access::{On, permit_on};
use super::state::OrganizersState;
use crate::error::{ApiResult, Problem};
use crate::extract::{ApiPath, ApiQuery, AuthUser, wants_csv};

#[derive(Deserialize, IntoParams)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct AuditQuery {
    concert_id: Option<u64>,
    user_id: Option<u64>,
    /// Such as `concert.change`, `member.set`, `concert.cancel`.
    action: Option<String>,
    /// RFC 3339; entries at or after it.
    from: Option<String>,
    /// RFC 3339; entries before it.
    to: Option<String>,
    /// Zero-based page number.
    page: Option<u32>,
    /// Entries per page, 1–100 (default 20).
    size: Option<u32>,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AuditEntry {
    id: u64,
    /// The database's clock when the change committed.
    at: DateTime<Utc>,
    concert_id: Option<u64>,
    user_id: u64,
    /// The person's name now (null once their account is gone).
    nick_name: Option<String>,
    /// Their role then, or ADMIN.
    role: String,
    action: String,
    target: Option<String>,
    /// `{before, after}`: the fields the change touched.
    #[schema(value_type = Object)]
    changes: serde_json::Value,
    request_id: Option<String>,
    client_address: Option<String>,
}

impl From<EntryRow> for AuditEntry {
    fn from(e: EntryRow) -> Self {
        Self {
            id: e.id,
            at: e.at,
            concert_id: e.concert_id.map(ConcertId::get),
            user_id: e.user_id.get(),
            nick_name: e.nickname,
            role: e.role,
            action: e.action,
            target: e.target,
            changes: serde_json::from_str(&e.changes).unwrap_or(serde_json::Value::Null),
            request_id: e.request_id,
            client_address: e.client_address,
        }
    }
}

/// Who did what at the organizer (READ_AUDIT), newest first; CSV with
/// `Accept: text/csv`.
#[utoipa::path(get, path = "/api/organizers/{id}/audit", tag = "organizers", security(("bearer" = [])),
    params(("id" = u64, Path), AuditQuery),
    responses((status = 200, body = Vec<AuditEntry>, content_type = "application/json"),
              (status = 200, description = "the same as CSV", content_type = "text/csv"),
              (status = 400, body = Problem), (status = 401, body = Problem),
              (status = 403, body = Problem), (status = 404, body = Problem)))]
pub async fn audit(
    State(state): State<OrganizersState>,
    caller: AuthUser,
    ApiPath(id): ApiPath<OrganizerId>,
    ApiQuery(q): ApiQuery<AuditQuery>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    permit_on(
        &state.pool,
        caller,
        On::Organizer(id),
        Permission::ReadAudit,
    )
    .await?;
    let page = PageRequest::parse(q.page, q.size)?;
    let time = |field: &'static str, raw: Option<&str>| {
        raw.map(|raw| {
            DateTime::parse_from_rfc3339(raw)
                .map(|t| t.with_timezone(&Utc))
                .map_err(|_| FieldError::new(field, "must be an RFC 3339 time"))
        })
        .transpose()
    };
    let filter = Filter {
        concert: q.concert_id.map(ConcertId),
        user: q.user_id.map(UserId),
        action: q.action.filter(|a| !a.is_empty()),
        from: time("from", q.from.as_deref())?,
        to: time("to", q.to.as_deref())?,
    };
    let mut conn = state.pool.acquire().await?;
    let rows = audit::list(&mut conn, id, &filter, page.offset(), page.size).await?;
    let entries: Vec<AuditEntry> = rows.into_iter().map(Into::into).collect();
    if wants_csv(&headers) {
        return Ok((
            [(header::CONTENT_TYPE, "text/csv; charset=utf-8")],
            csv(&entries),
        )
            .into_response());
    }
    Ok(Json(entries).into_response())
}

/// The entries as CSV, one line each, fields quoted where they need it.
fn csv(entries: &[AuditEntry]) -> String {
    let quoted = |field: &str| {
        if field.contains([',', '"', '\n', '\r']) {
            format!("\"{}\"", field.replace('"', "\"\""))
        } else {
            field.to_owned()
        }
    };
    let mut out = String::from(
        "id,at,concert,user,nickname,role,action,target,changes,request_id,client_address\n",
    );
    for e in entries {
        let fields = [
            e.id.to_string(),
            e.at.to_rfc3339(),
            e.concert_id.map(|c| c.to_string()).unwrap_or_default(),
            e.user_id.to_string(),
            e.nick_name.clone().unwrap_or_default(),
            e.role.clone(),
            e.action.clone(),
            e.target.clone().unwrap_or_default(),
            e.changes.to_string(),
            e.request_id.clone().unwrap_or_default(),
            e.client_address.clone().unwrap_or_default(),
        ];
        let line: Vec<String> = fields.iter().map(|f| quoted(f)).collect();
        out.push_str(&line.join(","));
        out.push('\n');
    }
    out
}
