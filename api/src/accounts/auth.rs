use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::post;
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use ticket_core::db;
use ticket_core::domain::{NickName, Password};
use utoipa::ToSchema;

use crate::accounts::state::AccountsState;
use crate::error::{ApiError, ApiResult, ErrorCode, Problem};
use crate::extract::{ApiJson, AuthUser, ClientAddress};
use crate::middleware::limits::LoginKey;

pub fn router() -> Router<AccountsState> {
    Router::new()
        .route("/api/auth/login", post(login))
        .route("/api/auth/logout-all", post(logout_all))
}

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LoginRequest {
    nick_name: String,
    password: String,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LoginResponse {
    access_token: String,
    /// Always `Bearer`.
    token_type: &'static str,
    /// Seconds until the token expires.
    expires_in: u64,
}

/// Exchanges a nickname and password for a bearer token. A wrong nickname
/// and a wrong password get the same answer, in the same time.
#[utoipa::path(post, path = "/api/auth/login", tag = "auth", request_body = LoginRequest,
    responses((status = 200, body = LoginResponse), (status = 400, body = Problem),
              (status = 401, body = Problem), (status = 413, body = Problem), (status = 415, body = Problem),
              (status = 429, body = Problem)))]
pub async fn login(
    State(state): State<AccountsState>,
    client: ClientAddress,
    ApiJson(req): ApiJson<LoginRequest>,
) -> ApiResult<Json<LoginResponse>> {
    // Before any hashing: guessing passwords must not be able to buy CPU.
    state.limits.login_from(client.0)?;
    let invalid = || ApiError::new(ErrorCode::InvalidCredentials, "wrong nickname or password");
    // Inputs no account could have are refused without touching the database.
    let (Ok(nickname), Ok(_)) = (
        NickName::parse(&req.nick_name),
        Password::parse(&req.password),
    ) else {
        return Err(invalid());
    };
    let mut conn = state.pool.acquire().await?;
    let user = db::users::find_by_nickname(&mut conn, &nickname).await?;
    drop(conn);
    state.limits.password_check(
        &match &user {
            Some(user) => LoginKey::Account(user.id),
            None => LoginKey::unknown(nickname.as_str()),
        },
        client.0,
    )?;
    let hash = user.as_ref().map(|u| u.password_hash.as_str());
    if !state
        .passwords
        .verify(&req.password, hash)
        .await
        .map_err(ApiError::internal)?
    {
        return Err(invalid());
    }
    let user = user.ok_or_else(invalid)?;
    // Dated by the database's clock, which revocations are dated by too.
    let issued_at = db::now(&mut *state.pool.acquire().await?).await?;
    let issued = state.auth.tokens.issue(user.id, user.role, issued_at);
    Ok(Json(LoginResponse {
        access_token: issued.token,
        token_type: "Bearer",
        expires_in: issued.expires_in,
    }))
}

/// Voids every token of the caller issued until now, on every instance
/// (this one at once, the others within about a second); log in again to
/// get a new one.
#[utoipa::path(post, path = "/api/auth/logout-all", tag = "auth", security(("bearer" = [])),
    responses((status = 204), (status = 401, body = Problem), (status = 429, body = Problem),
              (status = 503, body = Problem)))]
pub async fn logout_all(
    State(state): State<AccountsState>,
    caller: AuthUser,
) -> ApiResult<StatusCode> {
    let mut conn = state.pool.acquire().await?;
    let now = db::now(&mut conn).await?;
    db::revocations::record(&mut conn, caller.id, now).await?;
    state.auth.revocations.apply(caller.id, now);
    Ok(StatusCode::NO_CONTENT)
}
