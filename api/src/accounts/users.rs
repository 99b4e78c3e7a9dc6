//! An account's routes: sign-up, reading, changing and deleting it.
//!
//! Long because it is every route of an account with its rules (who may
//! change what, the current password, leaving with money still moving).

use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use axum::{Json, Router};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use ticket_core::db::{self, users::UserRow, whole};
use ticket_core::domain::{
    EmailAddress, FieldError, Language, NickName, Password, Role, UserId, keep,
};
use utoipa::ToSchema;

use crate::accounts::state::AccountsState;
use crate::error::{ApiError, ApiResult, ErrorCode, Problem};
use crate::extract::{ApiJson, ApiPath, AuthUser, ClientAddress};

pub fn router() -> Router<AccountsState> {
    Router::new()
        .route("/api/users", post(create))
        .route("/api/users/me", get(me))
        .route("/api/users/{id}", get(show).patch(update).delete(remove))
}

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateUserRequest {
    /// 1–50 characters after trimming; unique, case-insensitively.
    #[schema(
        min_length = 1,
        max_length = 50,
        pattern = r"^[^\x00-\x1F\x7F-\x9F]*[^\s\x00-\x1F\x7F-\x9F][^\x00-\x1F\x7F-\x9F]*$"
    )]
    nick_name: String,
    /// 8–128 characters.
    #[schema(min_length = 8, max_length = 128)]
    password: String,
    /// Where the box office mails your tickets and reminders (optional: no
    /// address, no mail). What a browser's email field accepts, with a
    /// domain like example.com; at most 254 characters.
    #[schema(
        max_length = 254,
        format = "email",
        example = "fan@example.com",
        pattern = r"^[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]{1,64}@[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)+$"
    )]
    email: Option<String>,
    /// The language of the page and of the mail sent to you: `en`
    /// (default) or `ko`.
    #[schema(example = "ko", pattern = "^(en|ko)$")]
    language: Option<String>,
}

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UpdateUserRequest {
    #[schema(
        min_length = 1,
        max_length = 50,
        pattern = r"^[^\x00-\x1F\x7F-\x9F]*[^\s\x00-\x1F\x7F-\x9F][^\x00-\x1F\x7F-\x9F]*$"
    )]
    nick_name: Option<String>,
    /// A new password. Changing it voids every token issued before (this
    /// one included when it is your own): log in again with the new one.
    #[schema(min_length = 8, max_length = 128)]
    password: Option<String>,
    /// A new address for mail, or null for no mail. Changing your own takes
    /// `currentPassword`, as a new password does.
    #[serde(default, deserialize_with = "crate::extract::present")]
    #[schema(value_type = Option<String>, max_length = 254, format = "email", nullable,
             pattern = r"^[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]{1,64}@[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)+$")]
    email: Option<Option<String>>,
    /// `en` or `ko`: the language mail is written in (no password needed).
    #[schema(example = "ko", pattern = "^(en|ko)$")]
    language: Option<String>,
    /// Your present password: required to change your own password or
    /// address, so that a stolen token alone cannot take the account (or
    /// its tickets' mail). Not needed when an admin changes someone else's.
    current_password: Option<String>,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct UserResponse {
    id: u64,
    nick_name: String,
    #[schema(example = "USER")]
    role: &'static str,
    /// Where mail goes (shown to the account itself and admins only).
    email: Option<String>,
    /// `en` or `ko`.
    #[schema(example = "en")]
    language: &'static str,
    created_at: DateTime<Utc>,
}

impl From<UserRow> for UserResponse {
    fn from(u: UserRow) -> Self {
        let language = u.language().code();
        Self {
            id: u.id.get(),
            nick_name: u.nickname,
            role: u.role.as_str(),
            language,
            email: u.email,
            created_at: u.created_at,
        }
    }
}

/// A valid sign-up.
pub struct NewUser {
    nickname: NickName,
    password: Password,
    email: Option<EmailAddress>,
    language: Language,
}

impl TryFrom<CreateUserRequest> for NewUser {
    type Error = Vec<FieldError>;

    fn try_from(req: CreateUserRequest) -> Result<Self, Self::Error> {
        let mut errors = Vec::new();
        let nickname = keep(NickName::parse(&req.nick_name), &mut errors);
        let password = keep(Password::parse(&req.password), &mut errors);
        let email = keep(
            req.email.as_deref().map(EmailAddress::parse).transpose(),
            &mut errors,
        );
        let language = keep(
            req.language
                .as_deref()
                .map(Language::parse)
                .unwrap_or(Ok(Language::default())),
            &mut errors,
        );
        match (nickname, password, email, language) {
            (Some(nickname), Some(password), Some(email), Some(language)) => Ok(Self {
                nickname,
                password,
                email,
                language,
            }),
            _ => Err(errors),
        }
    }
}

/// A valid change to an account; absent fields stay as they are.
pub struct UserChanges {
    nickname: Option<NickName>,
    password: Option<Password>,
    /// `Some(None)`: remove the address.
    email: Option<Option<EmailAddress>>,
    language: Option<Language>,
    current_password: Option<String>,
}

impl UserChanges {
    /// Whether the change takes the account's present password when it is
    /// the caller's own.
    fn needs_current_password(&self) -> bool {
        self.password.is_some() || self.email.is_some()
    }
}

impl TryFrom<UpdateUserRequest> for UserChanges {
    type Error = Vec<FieldError>;

    fn try_from(req: UpdateUserRequest) -> Result<Self, Self::Error> {
        let mut errors = Vec::new();
        let nickname = keep(
            req.nick_name.as_deref().map(NickName::parse).transpose(),
            &mut errors,
        );
        let password = keep(
            req.password.as_deref().map(Password::parse).transpose(),
            &mut errors,
        );
        let email = keep(
            req.email
                .map(|email| email.as_deref().map(EmailAddress::parse).transpose())
                .transpose(),
            &mut errors,
        );
        let language = keep(
            req.language.as_deref().map(Language::parse).transpose(),
            &mut errors,
        );
        match (nickname, password, email, language) {
            (Some(nickname), Some(password), Some(email), Some(language)) => Ok(Self {
                nickname,
                password,
                email,
                language,
                current_password: req.current_password,
            }),
            _ => Err(errors),
        }
    }
}

/// Signs up a new user (open to anyone).
#[utoipa::path(post, path = "/api/users", tag = "users", request_body = CreateUserRequest,
    responses((status = 201, body = UserResponse), (status = 400, body = Problem), (status = 409, body = Problem),
              (status = 413, body = Problem), (status = 415, body = Problem), (status = 429, body = Problem)))]
pub async fn create(
    State(state): State<AccountsState>,
    client: ClientAddress,
    ApiJson(req): ApiJson<CreateUserRequest>,
) -> ApiResult<impl IntoResponse> {
    let new = NewUser::try_from(req)?;
    state.limits.signup(client.0)?;
    let hash = state
        .passwords
        .hash(new.password.expose())
        .await
        .map_err(ApiError::internal)?;
    let mut conn = state.pool.acquire().await?;
    let id = db::whole::run(&mut conn, async |tx| {
        let now = db::now(tx).await?;
        let id = db::users::insert(
            tx,
            &new.nickname,
            &hash,
            Role::User,
            new.email.as_ref(),
            new.language,
            now,
        )
        .await?;
        // Where the account was made from: a signal when orders are
        // reviewed after a sale (many accounts from one address at once).
        db::users::note_signup_address(tx, id, &client.0.to_string()).await?;
        Ok::<_, ApiError>(id)
    })
    .await?;
    let user = load(&mut conn, id).await?;
    let location = format!("/api/users/{id}");
    Ok((
        StatusCode::CREATED,
        [(header::LOCATION, location)],
        Json(UserResponse::from(user)),
    ))
}

/// The caller's own account.
#[utoipa::path(get, path = "/api/users/me", tag = "users", security(("bearer" = [])),
    responses((status = 200, body = UserResponse), (status = 401, body = Problem), (status = 404, body = Problem)))]
pub async fn me(
    State(state): State<AccountsState>,
    caller: AuthUser,
) -> ApiResult<Json<UserResponse>> {
    let mut conn = state.pool.acquire().await?;
    Ok(Json(load(&mut conn, caller.id).await?.into()))
}

/// One user: yourself, or anyone if you are an admin.
#[utoipa::path(get, path = "/api/users/{id}", tag = "users", security(("bearer" = [])), params(("id" = u64, Path)),
    responses((status = 200, body = UserResponse), (status = 400, body = Problem), (status = 401, body = Problem),
              (status = 403, body = Problem), (status = 404, body = Problem)))]
pub async fn show(
    State(state): State<AccountsState>,
    caller: AuthUser,
    ApiPath(id): ApiPath<UserId>,
) -> ApiResult<Json<UserResponse>> {
    caller.ensure_can_act_on(id)?;
    let mut conn = state.pool.acquire().await?;
    Ok(Json(load(&mut conn, id).await?.into()))
}

/// Changes a nickname, password, mail address and/or language: yours, or anyone's if
/// you are an admin. Changing your own password or address takes
/// `currentPassword` (missing: 400
/// `VALIDATION_ERROR`; wrong: 401 `INVALID_CREDENTIALS`, with the login's
/// attempt budget). A new password voids every token issued before it.
#[utoipa::path(patch, path = "/api/users/{id}", tag = "users", security(("bearer" = [])), params(("id" = u64, Path)),
    request_body = UpdateUserRequest,
    responses((status = 200, body = UserResponse), (status = 400, body = Problem), (status = 401, body = Problem),
              (status = 403, body = Problem), (status = 404, body = Problem), (status = 409, body = Problem),
              (status = 429, body = Problem)))]
pub async fn update(
    State(state): State<AccountsState>,
    caller: AuthUser,
    client: ClientAddress,
    ApiPath(id): ApiPath<UserId>,
    ApiJson(req): ApiJson<UpdateUserRequest>,
) -> ApiResult<Json<UserResponse>> {
    caller.ensure_can_act_on(id)?;
    let changes = UserChanges::try_from(req)?;
    if changes.needs_current_password() && caller.id == id {
        confirm_current_password(&state, id, client, changes.current_password.as_deref()).await?;
    }
    let hash = match &changes.password {
        Some(p) => Some(
            state
                .passwords
                .hash(p.expose())
                .await
                .map_err(ApiError::internal)?,
        ),
        None => None,
    };
    let mut conn = state.pool.acquire().await?;
    let (user, now) = whole::run(&mut conn, async |tx| {
        if !db::users::lock(tx, id).await? {
            return Err(ApiError::user_not_found());
        }
        let now = db::now(tx).await?;
        db::users::update(
            tx,
            id,
            changes.nickname.as_ref(),
            hash.as_deref(),
            changes.language,
            now,
        )
        .await?;
        if let Some(email) = &changes.email {
            db::users::set_email(tx, id, email.as_ref(), now).await?;
        }
        if hash.is_some() {
            db::revocations::record(tx, id, now).await?;
        }
        let user = load(tx, id).await?;
        Ok::<_, ApiError>((user, now))
    })
    .await?;
    if hash.is_some() {
        state.auth.revocations.apply(id, now);
    }
    Ok(Json(user.into()))
}

/// The account's present password, as a login checks it (same budget).
async fn confirm_current_password(
    state: &AccountsState,
    id: UserId,
    client: ClientAddress,
    current: Option<&str>,
) -> ApiResult<()> {
    let Some(current) = current else {
        return Err(ApiError::invalid(vec![crate::error::ProblemField::new(
            "currentPassword",
            "required to change your own password or address",
        )]));
    };
    state
        .limits
        .password_check(&crate::middleware::limits::LoginKey::Account(id), client.0)?;
    let mut conn = state.pool.acquire().await?;
    let user = load(&mut conn, id).await?;
    drop(conn);
    let matches = state
        .passwords
        .verify(current, Some(&user.password_hash))
        .await
        .map_err(ApiError::internal)?;
    if matches {
        Ok(())
    } else {
        Err(ApiError::new(
            ErrorCode::InvalidCredentials,
            "the current password is wrong",
        ))
    }
}

/// Deletes an account that holds no ticket, has no request in the queue
/// and no money on its way; one that ever paid is anonymised instead, its
/// payments and refunds kept for the books.
#[utoipa::path(delete, path = "/api/users/{id}", tag = "users", security(("bearer" = [])), params(("id" = u64, Path)),
    responses((status = 204), (status = 400, body = Problem), (status = 401, body = Problem),
              (status = 403, body = Problem), (status = 404, body = Problem), (status = 409, body = Problem)))]
pub async fn remove(
    State(state): State<AccountsState>,
    caller: AuthUser,
    ApiPath(id): ApiPath<UserId>,
) -> ApiResult<StatusCode> {
    caller.ensure_can_act_on(id)?;
    let mut conn = state.pool.acquire().await?;
    let now = whole::run(&mut conn, async |tx| {
        if !db::users::lock(tx, id).await? {
            return Err(ApiError::user_not_found());
        }
        if db::users::holds_tickets_or_requests(tx, id).await? {
            return Err(ApiError::new(
                ErrorCode::UserDeleteForbidden,
                "the user holds confirmed reservations or pending requests; cancel them first",
            ));
        }
        if let Some(pending) = db::users::money_in_flight(tx, id).await? {
            return Err(ApiError::new(
                ErrorCode::MoneyInFlight,
                match pending {
                    db::users::MoneyInFlight::Payment => {
                        "a payment of this account is not settled yet (the provider may still take it); \
                         try again once it is paid or cancelled"
                    }
                    db::users::MoneyInFlight::Refund => {
                        "a refund to this account is not made yet; try again once it is"
                    }
                },
            ));
        }
        if db::organizers::solely_owned_by(tx, id).await?.is_some() {
            return Err(ApiError::new(
                ErrorCode::LastOwner,
                "this account is the only owner of an organizer: make another member its owner first",
            ));
        }
        let now = db::now(tx).await?;
        db::users::delete_with_history(tx, id, now).await?;
        db::revocations::record(tx, id, now).await?;
        Ok::<_, ApiError>(now)
    })
    .await?;
    state.auth.revocations.apply(id, now);
    Ok(StatusCode::NO_CONTENT)
}

async fn load(conn: &mut db::Conn, id: UserId) -> ApiResult<UserRow> {
    db::users::find(conn, id)
        .await?
        .ok_or_else(ApiError::user_not_found)
}
