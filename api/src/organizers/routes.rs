use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::{get, put};
use axum::{Json, Router};
use serde::Deserialize;
use ticket_core::db::{self, organizers, whole};
use ticket_core::domain::{
    ConcertId, FieldError, MemberRole, OrganizerId, OrganizerName, OrganizerSlug, Permission,
    UserId, keep,
};
use utoipa::ToSchema;

use super::access::{Grant, On, permit};
use super::audit::{Did, Staff, changed, seen};
use super::state::OrganizersState;
use super::view::{MemberResponse, OrganizerResponse};
use crate::error::{ApiError, ApiResult, ErrorCode, Problem};
use crate::extract::{ApiJson, ApiPath, AuthUser};
use serde_json::{Value, json};

pub fn router() -> Router<OrganizersState> {
    Router::new()
        .route("/api/organizers", get(list).post(create))
        .route("/api/organizers/{id}", get(show).patch(update))
        .route("/api/organizers/{id}/members", get(members))
        .route("/api/organizers/{id}/audit", get(super::trail::audit))
        .route(
            "/api/organizers/{id}/members/{userId}",
            put(set_member).delete(remove_member),
        )
        .merge(super::invitations::router())
}

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateOrganizerRequest {
    /// 1–100 characters.
    #[schema(example = "Seoul Live")]
    name: String,
    /// 2–50 lower-case letters, digits and hyphens; unique.
    #[schema(example = "seoul-live")]
    slug: String,
}

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UpdateOrganizerRequest {
    name: Option<String>,
    slug: Option<String>,
    /// The most a BOX_OFFICE member may give back in one refund, in the
    /// concert currency's minor units (0 to 10^12); null: no limit.
    #[serde(default, deserialize_with = "crate::extract::present")]
    #[schema(nullable, minimum = 0, maximum = 1_000_000_000_000_u64)]
    desk_refund_limit: Option<Option<u64>>,
}

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SetMemberRequest {
    /// OWNER, MANAGER, BOX_OFFICE, DOOR or FINANCE.
    #[schema(example = "DOOR")]
    role: String,
    /// Limits the role to these concerts of the organizer; absent or
    /// empty: every concert.
    #[serde(default)]
    concert_ids: Vec<u64>,
}

/// Creates an organizer (the platform's admin). It has no members until
/// the admin gives it an owner.
#[utoipa::path(post, path = "/api/organizers", tag = "organizers", security(("bearer" = [])),
    request_body = CreateOrganizerRequest,
    responses((status = 201, body = OrganizerResponse), (status = 400, body = Problem), (status = 401, body = Problem),
              (status = 403, body = Problem), (status = 409, body = Problem)))]
pub async fn create(
    State(state): State<OrganizersState>,
    staff: Staff,
    ApiJson(req): ApiJson<CreateOrganizerRequest>,
) -> ApiResult<impl IntoResponse> {
    let caller = staff.caller;
    if !caller.is_admin() {
        return Err(ApiError::new(
            ErrorCode::Forbidden,
            "organizers are made by the platform's admin",
        ));
    }
    let mut errors = Vec::new();
    let name = keep(OrganizerName::parse(&req.name), &mut errors);
    let slug = keep(OrganizerSlug::parse(&req.slug), &mut errors);
    let (Some(name), Some(slug)) = (name, slug) else {
        return Err(errors.into());
    };
    let mut conn = state.pool.acquire().await?;
    let organizer = whole::run(&mut conn, async |tx| {
        let now = db::now(tx).await?;
        let id = organizers::insert(tx, &name, &slug, now).await?;
        let made = organizers::find(tx, id, caller.id)
            .await?
            .ok_or_else(ApiError::organizer_not_found)?;
        let grant = Grant {
            user: caller.id,
            organizer: id,
            role: None,
        };
        let after = json!({"name": made.name, "slug": made.slug});
        let did = Did {
            action: "organizer.create",
            concert: None,
            target: None,
            changes: &changed(Value::Null, after),
        };
        staff.record(tx, grant, did).await?;
        Ok::<_, ApiError>(made)
    })
    .await?;
    let location = format!("/api/organizers/{}", organizer.id);
    Ok((
        StatusCode::CREATED,
        [(header::LOCATION, location)],
        Json(OrganizerResponse::of(organizer, caller.is_admin(), &[])),
    ))
}

/// The organizers the caller is a member of, with their role in each
/// (every organizer for the platform's admin).
#[utoipa::path(get, path = "/api/organizers", tag = "organizers", security(("bearer" = [])),
    responses((status = 200, body = Vec<OrganizerResponse>), (status = 401, body = Problem)))]
pub async fn list(
    State(state): State<OrganizersState>,
    caller: AuthUser,
) -> ApiResult<Json<Vec<OrganizerResponse>>> {
    let mut conn = state.pool.acquire().await?;
    let rows = organizers::of_user(&mut conn, caller.id, caller.is_admin()).await?;
    let covered = organizers::covered_by(&mut conn, caller.id).await?;
    let seen = |o| OrganizerResponse::of(o, caller.is_admin(), &covered);
    Ok(Json(rows.into_iter().map(seen).collect()))
}

/// One organizer, to its members (and the platform's admin).
#[utoipa::path(get, path = "/api/organizers/{id}", tag = "organizers", security(("bearer" = [])),
    params(("id" = u64, Path)),
    responses((status = 200, body = OrganizerResponse), (status = 400, body = Problem), (status = 401, body = Problem),
              (status = 404, body = Problem)))]
pub async fn show(
    State(state): State<OrganizersState>,
    caller: AuthUser,
    ApiPath(id): ApiPath<OrganizerId>,
) -> ApiResult<Json<OrganizerResponse>> {
    let mut conn = state.pool.acquire().await?;
    let found = organizers::find(&mut conn, id, caller.id)
        .await?
        .filter(|o| o.role.is_some() || caller.is_admin())
        .ok_or_else(ApiError::organizer_not_found)?;
    Ok(Json(seen_by(&mut conn, caller, found).await?))
}

/// An organizer as `caller` sees it, with what they may do there.
pub(super) async fn seen_by(
    conn: &mut sqlx::MySqlConnection,
    caller: AuthUser,
    organizer: organizers::OrganizerRow,
) -> ApiResult<OrganizerResponse> {
    let covered = organizers::covered_by(conn, caller.id).await?;
    Ok(OrganizerResponse::of(
        organizer,
        caller.is_admin(),
        &covered,
    ))
}

/// Renames an organizer or changes its slug (MANAGE_TEAM).
#[utoipa::path(patch, path = "/api/organizers/{id}", tag = "organizers", security(("bearer" = [])),
    params(("id" = u64, Path)), request_body = UpdateOrganizerRequest,
    responses((status = 200, body = OrganizerResponse), (status = 400, body = Problem), (status = 401, body = Problem),
              (status = 403, body = Problem), (status = 404, body = Problem), (status = 409, body = Problem)))]
pub async fn update(
    State(state): State<OrganizersState>,
    staff: Staff,
    ApiPath(id): ApiPath<OrganizerId>,
    ApiJson(req): ApiJson<UpdateOrganizerRequest>,
) -> ApiResult<Json<OrganizerResponse>> {
    let (name, slug) = named(req.name.as_deref(), req.slug.as_deref())?;
    if req
        .desk_refund_limit
        .flatten()
        .is_some_and(|l| l > MAX_DESK_REFUND_LIMIT)
    {
        return Err(FieldError::new("deskRefundLimit", "must be at most 10^12").into());
    }
    let change = organizers::Change {
        name: name.as_ref(),
        slug: slug.as_ref(),
        desk_refund_limit: req.desk_refund_limit,
    };
    let mut conn = state.pool.acquire().await?;
    let caller = staff.caller;
    let grant = permit(&mut conn, caller, On::Organizer(id), Permission::ManageTeam).await?;
    let organizer = whole::run(&mut conn, async |tx| {
        let shown = |o: &organizers::OrganizerRow| {
            json!({"name": o.name, "slug": o.slug, "deskRefundLimit": o.desk_refund_limit})
        };
        let before = organizers::find(tx, id, caller.id)
            .await?
            .ok_or_else(ApiError::organizer_not_found)?;
        let now = db::now(tx).await?;
        organizers::update(tx, id, &change, now).await?;
        let after = organizers::find(tx, id, caller.id)
            .await?
            .ok_or_else(ApiError::organizer_not_found)?;
        let did = Did {
            action: "organizer.change",
            concert: None,
            target: None,
            changes: &changed(shown(&before), shown(&after)),
        };
        staff.record(tx, grant, did).await?;
        Ok::<_, ApiError>(after)
    })
    .await?;
    Ok(Json(seen_by(&mut conn, caller, organizer).await?))
}

/// The organizer's members and their roles (MANAGE_TEAM).
#[utoipa::path(get, path = "/api/organizers/{id}/members", tag = "organizers", security(("bearer" = [])),
    params(("id" = u64, Path)),
    responses((status = 200, body = Vec<MemberResponse>), (status = 400, body = Problem), (status = 401, body = Problem),
              (status = 403, body = Problem), (status = 404, body = Problem)))]
pub async fn members(
    State(state): State<OrganizersState>,
    caller: AuthUser,
    ApiPath(id): ApiPath<OrganizerId>,
) -> ApiResult<Json<Vec<MemberResponse>>> {
    let mut conn = state.pool.acquire().await?;
    permit(&mut conn, caller, On::Organizer(id), Permission::ManageTeam).await?;
    let rows = organizers::members(&mut conn, id).await?;
    Ok(Json(rows.into_iter().map(Into::into).collect()))
}

/// Gives an account a role on the organizer, or changes a member's
/// (MANAGE_TEAM); with `concertIds`, only on those of its concerts. The
/// organizer always keeps an owner.
#[utoipa::path(put, path = "/api/organizers/{id}/members/{userId}", tag = "organizers", security(("bearer" = [])),
    params(("id" = u64, Path), ("userId" = u64, Path)), request_body = SetMemberRequest,
    responses((status = 204), (status = 400, body = Problem), (status = 401, body = Problem),
              (status = 403, body = Problem), (status = 404, body = Problem), (status = 409, body = Problem)))]
pub async fn set_member(
    State(state): State<OrganizersState>,
    staff: Staff,
    ApiPath((id, user)): ApiPath<(OrganizerId, UserId)>,
    ApiJson(req): ApiJson<SetMemberRequest>,
) -> ApiResult<StatusCode> {
    let role = MemberRole::parse(&req.role)?;
    let concerts = concert_list(&req.concert_ids)?;
    let mut conn = state.pool.acquire().await?;
    let grant = permit(
        &mut conn,
        staff.caller,
        On::Organizer(id),
        Permission::ManageTeam,
    )
    .await?;
    whole::run(&mut conn, async |tx| {
        if db::users::find(tx, user).await?.is_none() {
            return Err(ApiError::user_not_found());
        }
        ensure_own_concerts(tx, id, &concerts).await?;
        // An organizer without an owner gets one first: it is never run
        // by members nobody can manage but the platform's admin.
        let owners = organizers::lock_owners(tx, id).await?;
        if role != MemberRole::Owner && (owners.is_empty() || owners == [user]) {
            return Err(last_owner());
        }
        let before = organizers::member(tx, id, user).await?;
        let now = db::now(tx).await?;
        organizers::set_member(tx, id, user, role, &concerts, now).await?;
        let after = organizers::member(tx, id, user).await?;
        let did = Did {
            action: "member.set",
            concert: None,
            target: Some(format!("user {user}")),
            changes: &changed(member_seen(before), member_seen(after)),
        };
        staff.record(tx, grant, did).await?;
        Ok::<_, ApiError>(())
    })
    .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Removes a member from the organizer (MANAGE_TEAM); never its last owner.
#[utoipa::path(delete, path = "/api/organizers/{id}/members/{userId}", tag = "organizers", security(("bearer" = [])),
    params(("id" = u64, Path), ("userId" = u64, Path)),
    responses((status = 204), (status = 400, body = Problem), (status = 401, body = Problem),
              (status = 403, body = Problem), (status = 404, body = Problem), (status = 409, body = Problem)))]
pub async fn remove_member(
    State(state): State<OrganizersState>,
    staff: Staff,
    ApiPath((id, user)): ApiPath<(OrganizerId, UserId)>,
) -> ApiResult<StatusCode> {
    let mut conn = state.pool.acquire().await?;
    let grant = permit(
        &mut conn,
        staff.caller,
        On::Organizer(id),
        Permission::ManageTeam,
    )
    .await?;
    whole::run(&mut conn, async |tx| {
        if organizers::lock_owners(tx, id).await? == [user] {
            return Err(last_owner());
        }
        let before = organizers::member(tx, id, user).await?;
        if !organizers::remove_member(tx, id, user).await? {
            return Err(ApiError::user_not_found());
        }
        let did = Did {
            action: "member.remove",
            concert: None,
            target: Some(format!("user {user}")),
            changes: &changed(member_seen(before), Value::Null),
        };
        staff.record(tx, grant, did).await?;
        Ok::<_, ApiError>(())
    })
    .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The name and slug given, parsed; every bad one said at once.
/// The concerts a role is limited to, as sent: each once, at most 1,000.
pub(super) fn concert_list(ids: &[u64]) -> ApiResult<Vec<ConcertId>> {
    let mut concerts: Vec<ConcertId> = ids.iter().copied().map(ConcertId).collect();
    concerts.sort_unstable();
    concerts.dedup();
    if concerts.len() > 1000 {
        return Err(FieldError::new("concertIds", "must name at most 1000 concerts").into());
    }
    Ok(concerts)
}

/// Refuses a role limited to concerts of another organizer.
pub(super) async fn ensure_own_concerts(
    tx: &mut sqlx::MySqlConnection,
    organizer: OrganizerId,
    concerts: &[ConcertId],
) -> ApiResult<()> {
    if organizers::count_own_concerts(tx, organizer, concerts).await? == concerts.len() {
        Ok(())
    } else {
        Err(FieldError::new("concertIds", "must name concerts of this organizer").into())
    }
}

const MAX_DESK_REFUND_LIMIT: u64 = 1_000_000_000_000;

fn named(
    name: Option<&str>,
    slug: Option<&str>,
) -> ApiResult<(Option<OrganizerName>, Option<OrganizerSlug>)> {
    let mut errors = Vec::new();
    let name = keep(name.map(OrganizerName::parse).transpose(), &mut errors).flatten();
    let slug = keep(slug.map(OrganizerSlug::parse).transpose(), &mut errors).flatten();
    if errors.is_empty() {
        Ok((name, slug))
    } else {
        Err(errors.into())
    }
}

/// A member as their audit entries show them.
fn member_seen(member: Option<organizers::MemberRow>) -> Value {
    member.map_or(Value::Null, |m| seen(&MemberResponse::from(m)))
}

fn last_owner() -> ApiError {
    ApiError::new(
        ErrorCode::LastOwner,
        "an organizer keeps at least one owner: make another member its owner first",
    )
}
