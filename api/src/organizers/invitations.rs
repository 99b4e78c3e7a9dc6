//! Invitations to a team: an owner invites an account by nickname or
//! e-mail address with a role; the invitee sees it on their page and
//! accepts or declines it within a week. Accepting makes them a member in
//! the transaction that closes the invitation, recorded as theirs.

use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::{delete, get, post};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use serde_json::json;
use ticket_core::db::invitations::{self, InvitationRow};
use ticket_core::db::{self, organizers, whole};
use ticket_core::domain::{
    EmailAddress, FieldError, InvitationId, MemberRole, NickName, OrganizerId, Permission, UserId,
};
use utoipa::ToSchema;

use super::access::{Grant, On, permit};
use super::audit::{Did, Staff, changed};
use super::state::OrganizersState;
use super::view::OrganizerResponse;
use crate::error::{ApiError, ApiResult, ErrorCode, Problem};
use crate::extract::{ApiJson, ApiPath, AuthUser};

pub fn router() -> Router<OrganizersState> {
    Router::new()
        .route(
            "/api/organizers/{id}/invitations",
            get(of_organizer).post(invite),
        )
        .route(
            "/api/organizers/{id}/invitations/{invitationId}",
            delete(revoke),
        )
        .route("/api/users/me/invitations", get(mine))
        .route("/api/invitations/{id}/accept", post(accept))
        .route("/api/invitations/{id}/decline", post(decline))
}

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct InviteRequest {
    /// The account's nickname; or its `email`, not both.
    nick_name: Option<String>,
    /// The account's e-mail address (one account only).
    email: Option<String>,
    /// OWNER, MANAGER, BOX_OFFICE, DOOR or FINANCE.
    #[schema(example = "FINANCE")]
    role: String,
    /// Limits the role to these concerts of the organizer; absent or
    /// empty: every concert.
    #[serde(default)]
    concert_ids: Vec<u64>,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct InvitationResponse {
    id: u64,
    organizer_id: u64,
    organizer_name: String,
    user_id: u64,
    nick_name: String,
    #[schema(value_type = String, example = "FINANCE")]
    role: &'static str,
    /// The concerts the role will cover; null: every one.
    concert_ids: Option<Vec<u64>>,
    /// PENDING, EXPIRED, ACCEPTED, DECLINED or REVOKED.
    status: String,
    created_at: chrono::DateTime<chrono::Utc>,
    expires_at: chrono::DateTime<chrono::Utc>,
}

impl From<InvitationRow> for InvitationResponse {
    fn from(i: InvitationRow) -> Self {
        let concerts = i.concerts();
        Self {
            id: i.id.get(),
            organizer_id: i.organizer_id.get(),
            organizer_name: i.organizer_name,
            user_id: i.user_id.get(),
            nick_name: i.nickname,
            role: i.role.as_str(),
            concert_ids: (!concerts.is_empty()).then(|| concerts.iter().map(|c| c.get()).collect()),
            status: i.status,
            created_at: i.created_at,
            expires_at: i.expires_at,
        }
    }
}

/// Who is invited: an account named by nickname or by its address.
enum Invitee {
    Nick(NickName),
    Email(EmailAddress),
}

fn invitee(req: &InviteRequest) -> ApiResult<Invitee> {
    match (&req.nick_name, &req.email) {
        (Some(nick), None) => Ok(Invitee::Nick(NickName::parse(nick)?)),
        (None, Some(email)) => Ok(Invitee::Email(EmailAddress::parse(email)?)),
        _ => Err(FieldError::new(
            "nickName",
            "name the account by nickName or by email, one of them",
        )
        .into()),
    }
}

/// Invites an account to the team with a role (MANAGE_TEAM): it becomes
/// a member when it accepts, within a week.
#[utoipa::path(post, path = "/api/organizers/{id}/invitations", tag = "organizers", security(("bearer" = [])),
    params(("id" = u64, Path)), request_body = InviteRequest,
    responses((status = 201, body = InvitationResponse), (status = 400, body = Problem), (status = 401, body = Problem),
              (status = 403, body = Problem), (status = 404, body = Problem), (status = 409, body = Problem)))]
pub async fn invite(
    State(state): State<OrganizersState>,
    staff: Staff,
    ApiPath(id): ApiPath<OrganizerId>,
    ApiJson(req): ApiJson<InviteRequest>,
) -> ApiResult<impl IntoResponse> {
    let who = invitee(&req)?;
    let role = MemberRole::parse(&req.role)?;
    let concerts = super::routes::concert_list(&req.concert_ids)?;
    let mut conn = state.pool.acquire().await?;
    let grant = permit(
        &mut conn,
        staff.caller,
        On::Organizer(id),
        Permission::ManageTeam,
    )
    .await?;
    let invitation = whole::run(&mut conn, async |tx| {
        let user = match &who {
            Invitee::Nick(nick) => db::users::find_by_nickname(tx, nick)
                .await?
                .map(|u| u.id)
                .ok_or_else(ApiError::user_not_found)?,
            Invitee::Email(email) => match invitations::accounts_at(tx, email.as_str()).await?[..] {
                [one] => one,
                [] => return Err(ApiError::user_not_found()),
                _ => {
                    return Err(FieldError::new(
                        "email",
                        "several accounts use this address: invite by nickName",
                    )
                    .into());
                }
            },
        };
        if organizers::member(tx, id, user).await?.is_some() {
            return Err(already_member());
        }
        super::routes::ensure_own_concerts(tx, id, &concerts).await?;
        let made = invitations::insert(tx, id, user, role, &concerts, staff.caller.id).await?;
        let row = invitations::find(tx, made)
            .await?
            .ok_or_else(invitation_not_found)?;
        let after = json!({"userId": user.get(), "role": role.as_str(), "concertIds": concerts.iter().map(|c| c.get()).collect::<Vec<_>>()});
        let did = Did {
            action: "invitation.create",
            concert: None,
            target: Some(format!("invitation {made}")),
            changes: &changed(serde_json::Value::Null, after),
        };
        staff.record(tx, grant, did).await?;
        Ok::<_, ApiError>(row)
    })
    .await?;
    let location = format!("/api/organizers/{id}/invitations/{}", invitation.id);
    Ok((
        StatusCode::CREATED,
        [(header::LOCATION, location)],
        Json(InvitationResponse::from(invitation)),
    ))
}

/// The organizer's invitations, newest first, the latest 100
/// (MANAGE_TEAM).
#[utoipa::path(get, path = "/api/organizers/{id}/invitations", tag = "organizers", security(("bearer" = [])),
    params(("id" = u64, Path)),
    responses((status = 200, body = Vec<InvitationResponse>), (status = 400, body = Problem), (status = 401, body = Problem),
              (status = 403, body = Problem), (status = 404, body = Problem)))]
pub async fn of_organizer(
    State(state): State<OrganizersState>,
    caller: AuthUser,
    ApiPath(id): ApiPath<OrganizerId>,
) -> ApiResult<Json<Vec<InvitationResponse>>> {
    let mut conn = state.pool.acquire().await?;
    permit(&mut conn, caller, On::Organizer(id), Permission::ManageTeam).await?;
    let rows = invitations::of_organizer(&mut conn, id).await?;
    Ok(Json(rows.into_iter().map(Into::into).collect()))
}

/// Takes back a pending invitation (MANAGE_TEAM).
#[utoipa::path(delete, path = "/api/organizers/{id}/invitations/{invitationId}", tag = "organizers", security(("bearer" = [])),
    params(("id" = u64, Path), ("invitationId" = u64, Path)),
    responses((status = 204), (status = 400, body = Problem), (status = 401, body = Problem),
              (status = 403, body = Problem), (status = 404, body = Problem), (status = 409, body = Problem)))]
pub async fn revoke(
    State(state): State<OrganizersState>,
    staff: Staff,
    ApiPath((id, invitation)): ApiPath<(OrganizerId, InvitationId)>,
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
        invitations::lock(tx, invitation)
            .await?
            .filter(|i| i.organizer_id == id)
            .ok_or_else(invitation_not_found)?;
        if !invitations::close(tx, invitation, "REVOKED").await? {
            return Err(invitation_closed());
        }
        let did = Did {
            action: "invitation.revoke",
            concert: None,
            target: Some(format!("invitation {invitation}")),
            changes: &changed(json!({"status": "PENDING"}), json!({"status": "REVOKED"})),
        };
        staff.record(tx, grant, did).await?;
        Ok::<_, ApiError>(())
    })
    .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The caller's invitations waiting for an answer.
#[utoipa::path(get, path = "/api/users/me/invitations", tag = "organizers", security(("bearer" = [])),
    responses((status = 200, body = Vec<InvitationResponse>), (status = 401, body = Problem)))]
pub async fn mine(
    State(state): State<OrganizersState>,
    caller: AuthUser,
) -> ApiResult<Json<Vec<InvitationResponse>>> {
    let mut conn = state.pool.acquire().await?;
    let rows = invitations::pending_for(&mut conn, caller.id).await?;
    Ok(Json(rows.into_iter().map(Into::into).collect()))
}

/// Accepts an invitation (its invitee): a member with its role from now.
#[utoipa::path(post, path = "/api/invitations/{id}/accept", tag = "organizers", security(("bearer" = [])),
    params(("id" = u64, Path)),
    responses((status = 200, body = OrganizerResponse), (status = 400, body = Problem), (status = 401, body = Problem),
              (status = 404, body = Problem), (status = 409, body = Problem)))]
pub async fn accept(
    State(state): State<OrganizersState>,
    staff: Staff,
    ApiPath(id): ApiPath<InvitationId>,
) -> ApiResult<Json<OrganizerResponse>> {
    let caller = staff.caller;
    let mut conn = state.pool.acquire().await?;
    let organizer = whole::run(&mut conn, async |tx| {
        let invitation = own(tx, caller.id, id).await?;
        let organizer = invitation.organizer_id;
        if !invitations::close(tx, id, "ACCEPTED").await? {
            return Err(invitation_closed());
        }
        // Whoever changes the team locks its owners first, as here.
        organizers::lock_owners(tx, organizer).await?;
        if organizers::member(tx, organizer, caller.id)
            .await?
            .is_some()
        {
            return Err(already_member());
        }
        // A concert that left the organizer since is no longer covered.
        let concerts = invitation.concerts();
        let kept = organizers::count_own_concerts(tx, organizer, &concerts).await?;
        if kept != concerts.len() {
            return Err(invitation_closed());
        }
        let now = db::now(tx).await?;
        organizers::set_member(tx, organizer, caller.id, invitation.role, &concerts, now).await?;
        let grant = Grant {
            user: caller.id,
            organizer,
            role: Some(invitation.role),
        };
        let did = Did {
            action: "invitation.accept",
            concert: None,
            target: Some(format!("invitation {id}")),
            changes: &changed(
                serde_json::Value::Null,
                json!({"userId": caller.id.get(), "role": invitation.role.as_str()}),
            ),
        };
        staff.record(tx, grant, did).await?;
        organizers::find(tx, organizer, caller.id)
            .await?
            .ok_or_else(ApiError::organizer_not_found)
    })
    .await?;
    Ok(Json(
        super::routes::seen_by(&mut conn, caller, organizer).await?,
    ))
}

/// Declines an invitation (its invitee).
#[utoipa::path(post, path = "/api/invitations/{id}/decline", tag = "organizers", security(("bearer" = [])),
    params(("id" = u64, Path)),
    responses((status = 204), (status = 400, body = Problem), (status = 401, body = Problem),
              (status = 404, body = Problem), (status = 409, body = Problem)))]
pub async fn decline(
    State(state): State<OrganizersState>,
    caller: AuthUser,
    ApiPath(id): ApiPath<InvitationId>,
) -> ApiResult<StatusCode> {
    let mut conn = state.pool.acquire().await?;
    whole::run(&mut conn, async |tx| {
        own(tx, caller.id, id).await?;
        if !invitations::close(tx, id, "DECLINED").await? {
            return Err(invitation_closed());
        }
        Ok::<_, ApiError>(())
    })
    .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Locks the caller's own invitation; anyone else's does not exist.
async fn own(
    tx: &mut sqlx::MySqlConnection,
    caller: UserId,
    id: InvitationId,
) -> ApiResult<InvitationRow> {
    invitations::lock(tx, id)
        .await?
        .filter(|i| i.user_id == caller)
        .ok_or_else(invitation_not_found)
}

fn invitation_not_found() -> ApiError {
    ApiError::new(ErrorCode::InvitationNotFound, "no such invitation")
}

fn invitation_closed() -> ApiError {
    ApiError::new(
        ErrorCode::InvitationClosed,
        "the invitation was answered, taken back, or has lapsed",
    )
}

fn already_member() -> ApiError {
    ApiError::new(
        ErrorCode::AlreadyMember,
        "the account is a member of this organizer already: change its role instead",
    )
}
