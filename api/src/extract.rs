//! Request extractors whose every rejection is a problem response: JSON
//! bodies, path ids, query strings and the bearer token.
//!
//! Long because every extractor's rejection is mapped in one place, where a
//! change to the problem format is made once, beside what the caller's
//! extractors read from any feature's state (`Auth`, `ClientAddresses`).

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{FromRef, FromRequest, FromRequestParts, Request};
use axum::http::header;
use axum::http::request::Parts;
use serde::de::DeserializeOwned;
use ticket_core::domain::{Role, UserId};

use crate::accounts::security::{Revocations, TokenKeys};
use crate::error::{ApiError, ErrorCode, ProblemField};

/// The most a route reads of a request body, unless it says otherwise
/// ([`with_body_limit`]).
pub const MAX_BODY_BYTES: usize = 64 * 1024;

/// What a caller's bearer token is verified with: every feature's state
/// has one (see [`with_auth!`]), so that its handlers take [`AuthUser`].
#[derive(Clone)]
pub struct Auth {
    pub tokens: Arc<TokenKeys>,
    /// Tokens voided before their expiry, followed from the database.
    pub revocations: Arc<Revocations>,
}

/// Lets the handlers of a feature whose state has an `auth` field take
/// [`AuthUser`] and [`Admin`].
#[macro_export]
macro_rules! with_auth {
    ($state:ty) => {
        impl axum::extract::FromRef<$state> for $crate::extract::Auth {
            fn from_ref(state: &$state) -> Self {
                state.auth.clone()
            }
        }
    };
}

/// Lets a feature state that holds `client_addresses` give them to
/// [`ClientAddress`] and the audit's `Staff`.
#[macro_export]
macro_rules! with_client_addresses {
    ($state:ty) => {
        impl axum::extract::FromRef<$state> for $crate::extract::ClientAddresses {
            fn from_ref(state: &$state) -> Self {
                state.client_addresses.clone()
            }
        }
    };
}

/// Where the client's address is found behind proxies, if it is.
#[derive(Clone, Default)]
pub struct ClientAddresses(pub Option<Arc<ProxyHeader>>);

/// Where the client's address is found behind proxies: each proxy appends
/// the address it received the connection from to `name` (as
/// `X-Forwarded-For` works), so the client is the entry the outermost of the
/// `trusted_proxies` appended. Entries further left are whatever the client
/// sent and are never believed: a bot would rotate them to dodge its limits.
#[derive(Debug, Clone)]
pub struct ProxyHeader {
    pub name: axum::http::HeaderName,
    pub trusted_proxies: usize,
}

impl ProxyHeader {
    pub fn client_in(&self, value: &str) -> Option<std::net::IpAddr> {
        let entries: Vec<&str> = value.split(',').map(str::trim).collect();
        // Fewer entries than proxies: the chain was shorter than configured,
        // and the leftmost entry is the nearest thing to the client.
        let index = entries.len().saturating_sub(self.trusted_proxies.max(1));
        entries.get(index)?.parse().ok()
    }
}

/// The most a route reads of a request body, when it is not the API's
/// [`MAX_BODY_BYTES`]: its 413 says which.
#[derive(Debug, Clone, Copy)]
pub struct BodyLimit(pub usize);

/// `route` reading bodies of up to `bytes`.
pub fn with_body_limit<S: Clone + Send + Sync + 'static>(
    route: axum::routing::MethodRouter<S>,
    bytes: usize,
) -> axum::routing::MethodRouter<S> {
    route
        .layer::<_, std::convert::Infallible>(axum::extract::DefaultBodyLimit::max(bytes))
        .layer::<_, std::convert::Infallible>(axum::Extension(BodyLimit(bytes)))
}

/// What serde's refusal at `path` says, as a validation error of the field
/// it is about, in words: a missing field is `title: required`, not a
/// missing field at line 1 column 136.
fn field_error_of(path: &str, inner: &serde_json::Error) -> ProblemField {
    let at = |name: &str| match path {
        "." => name.to_owned(),
        _ => format!("{path}.{name}"),
    };
    let text = inner.to_string();
    // serde_json appends where it was: of no use to whoever fills a form.
    let said = match text.rfind(" at line ") {
        Some(cut) if inner.line() > 0 => &text[..cut],
        _ => text.as_str(),
    };
    let named = |prefix: &str| {
        said.strip_prefix(prefix)
            .and_then(|rest| rest.split('`').next())
            .map(str::to_owned)
    };
    if inner.is_syntax() || inner.is_eof() {
        return ProblemField::new("body", format!("malformed JSON: {said}"));
    }
    if let Some(name) = named("missing field `") {
        return ProblemField::new(at(&name), "required");
    }
    // The path of an unknown field ends with the field itself.
    if let Some(name) = named("unknown field `") {
        return ProblemField::new(
            if path == "." { name } else { path.to_owned() },
            "is not a field of this request",
        );
    }
    ProblemField::new(
        if path == "." {
            "body".to_owned()
        } else {
            path.to_owned()
        },
        said.to_owned(),
    )
}

/// A JSON body, parsed strictly: the right content type, well-formed JSON,
/// right types, no unknown fields. Errors name the offending field's path.
pub struct ApiJson<T>(pub T);

/// [`ApiJson`] for a body that may be left out: no body at all (and no
/// Content-Type) reads as `T::default()`.
pub struct OptionalJson<T>(pub T);

impl<T: DeserializeOwned + Default, S: Send + Sync> FromRequest<S> for OptionalJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        if req.headers().contains_key(header::CONTENT_TYPE) {
            return ApiJson::from_request(req, state)
                .await
                .map(|ApiJson(v)| Self(v));
        }
        let bytes = Bytes::from_request(req, state).await.map_err(|_| {
            ApiError::new(
                ErrorCode::ValidationError,
                "the request body could not be read",
            )
        })?;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            Ok(Self(T::default()))
        } else {
            Err(ApiError::new(
                ErrorCode::UnsupportedMediaType,
                "send the body as Content-Type: application/json",
            ))
        }
    }
}

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for ApiJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        let is_json = req
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(';').next())
            .map(|mime| {
                let mime = mime.trim().to_ascii_lowercase();
                mime == "application/json"
                    || (mime.starts_with("application/") && mime.ends_with("+json"))
            })
            .unwrap_or(false);
        if !is_json {
            return Err(ApiError::new(
                ErrorCode::UnsupportedMediaType,
                "send the body as Content-Type: application/json",
            ));
        }
        let limit = req
            .extensions()
            .get::<BodyLimit>()
            .map_or(MAX_BODY_BYTES, |limit| limit.0);
        let bytes = Bytes::from_request(req, state).await.map_err(|rejection| {
            if rejection.status() == axum::http::StatusCode::PAYLOAD_TOO_LARGE {
                ApiError::new(
                    ErrorCode::PayloadTooLarge,
                    format!(
                        "the request body is larger than {} KiB, the most this route reads",
                        limit / 1024
                    ),
                )
            } else {
                ApiError::new(
                    ErrorCode::ValidationError,
                    "the request body could not be read",
                )
            }
        })?;
        // Every request body is an object: serde would also read a struct
        // from an array (`[null, null]`), which no client means.
        if bytes.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
            return Err(ApiError::invalid(vec![ProblemField::new(
                "body",
                "must be a JSON object",
            )]));
        }
        let mut de = serde_json::Deserializer::from_slice(&bytes);
        let value = serde_path_to_error::deserialize(&mut de).map_err(|err| {
            let path = err.path().to_string();
            let inner = err.into_inner();
            ApiError::invalid(vec![field_error_of(&path, &inner)])
        })?;
        // Trailing garbage after the JSON value is malformed input too.
        de.end().map_err(|err| {
            ApiError::invalid(vec![ProblemField::new(
                "body",
                format!("malformed JSON: {err}"),
            )])
        })?;
        Ok(Self(value))
    }
}

/// Path parameters; a non-numeric or out-of-range id is a 400, not a 404.
pub struct ApiPath<T>(pub T);

impl<T: DeserializeOwned + Send, S: Send + Sync> FromRequestParts<S> for ApiPath<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        axum::extract::Path::<T>::from_request_parts(parts, state)
            .await
            .map(|p| Self(p.0))
            .map_err(|_| {
                ApiError::invalid(vec![ProblemField::new("id", "must be a positive integer")])
            })
    }
}

/// Query-string parameters; a malformed one is a 400.
pub struct ApiQuery<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequestParts<S> for ApiQuery<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        axum::extract::Query::<T>::from_request_parts(parts, state)
            .await
            .map(|q| Self(q.0))
            .map_err(|rejection| {
                ApiError::invalid(vec![ProblemField::new("query", rejection.body_text())])
            })
    }
}

/// The caller, proven by a valid bearer token; no database call needed.
#[derive(Debug, Clone, Copy)]
pub struct AuthUser {
    pub id: UserId,
    pub role: Role,
    /// The token it was proven by (what a long-lived answer, an event
    /// stream, checks again while it lasts).
    pub token: crate::accounts::security::Principal,
}

impl AuthUser {
    pub fn is_admin(self) -> bool {
        self.role == Role::Admin
    }

    /// Users act on themselves (and what they own); admins on anyone.
    pub fn can_act_on(self, user: UserId) -> bool {
        self.id == user || self.is_admin()
    }

    pub fn ensure_can_act_on(self, user: UserId) -> Result<(), ApiError> {
        if self.can_act_on(user) {
            Ok(())
        } else {
            Err(ApiError::forbidden())
        }
    }
}

impl<S: Send + Sync> FromRequestParts<S> for AuthUser
where
    Auth: FromRef<S>,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        // Verified (and its budget spent) on the way in
        // (routes::limit_every_caller); without it, the token is missing or
        // invalid, and what follows says which.
        let verified = parts
            .extensions
            .get::<crate::accounts::security::Principal>()
            .copied();
        let principal = match verified {
            Some(principal) => principal,
            None => unverified(parts, &Auth::from_ref(state))?,
        };
        Ok(Self {
            id: principal.user,
            role: principal.role,
            token: principal,
        })
    }
}

/// The caller of a request whose token was not verified on the way in.
fn unverified(
    parts: &Parts,
    auth: &Auth,
) -> Result<crate::accounts::security::Principal, ApiError> {
    let unauthorized = |detail| ApiError::new(ErrorCode::Unauthorized, detail);
    let header = parts
        .headers
        .get(header::AUTHORIZATION)
        .ok_or_else(|| unauthorized("an Authorization: Bearer token is required"))?;
    let token = header
        .to_str()
        .ok()
        .and_then(|h| h.strip_prefix("Bearer "))
        .ok_or_else(|| unauthorized("the Authorization header must be 'Bearer <token>'"))?;
    signed_in(auth, token).map_err(unauthorized)
}

/// Who a bearer token speaks for, if it is valid and not revoked; else why
/// not.
pub fn signed_in(
    auth: &Auth,
    token: &str,
) -> Result<crate::accounts::security::Principal, &'static str> {
    let principal = auth
        .tokens
        .verify(token.trim(), chrono::Utc::now())
        .map_err(|e| e.describe())?;
    if auth
        .revocations
        .is_revoked(principal.user, principal.issued_at_us)
    {
        return Err(
            "the token was revoked (password changed, account deleted or logged out everywhere); log in again",
        );
    }
    Ok(principal)
}

/// The bearer token of a request, if it has one.
pub fn bearer(headers: &axum::http::HeaderMap) -> Option<&str> {
    headers
        .get(header::AUTHORIZATION)?
        .to_str()
        .ok()?
        .strip_prefix("Bearer ")
}

/// A caller with the admin role; anyone else gets 403.
#[derive(Debug, Clone, Copy)]
pub struct Admin(pub AuthUser);

impl<S: Send + Sync> FromRequestParts<S> for Admin
where
    Auth: FromRef<S>,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        let user = AuthUser::from_request_parts(parts, state).await?;
        if user.is_admin() {
            Ok(Self(user))
        } else {
            Err(ApiError::new(
                ErrorCode::Forbidden,
                "this action requires an admin",
            ))
        }
    }
}

/// The client's address: from the configured proxy header when there is
/// one, else the connection's peer.
#[derive(Debug, Clone, Copy)]
pub struct ClientAddress(pub std::net::IpAddr);

impl ClientAddress {
    /// From a request's headers and extensions (also for middleware).
    pub fn of(
        headers: &axum::http::HeaderMap,
        extensions: &axum::http::Extensions,
        addresses: &ClientAddresses,
    ) -> Self {
        let forwarded = addresses
            .0
            .as_deref()
            .and_then(|proxy| proxy.client_in(headers.get(&proxy.name)?.to_str().ok()?));
        let peer = || {
            extensions
                .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
                .map(|info| info.0.ip())
        };
        Self(
            forwarded
                .or_else(peer)
                .unwrap_or(std::net::IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED)),
        )
    }
}

impl<S: Send + Sync> FromRequestParts<S> for ClientAddress
where
    ClientAddresses: FromRef<S>,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        let addresses = ClientAddresses::from_ref(state);
        Ok(Self::of(&parts.headers, &parts.extensions, &addresses))
    }
}

pub mod integral;

/// A field that may be given as null (`Some(None)`), unlike an absent one
/// (`None`, with `#[serde(default)]`).
pub fn present<'de, D: serde::Deserializer<'de>, T: serde::Deserialize<'de>>(
    d: D,
) -> Result<Option<Option<T>>, D::Error> {
    <Option<T> as serde::Deserialize>::deserialize(d).map(Some)
}

/// A page of a list: the query of every listing route.
#[derive(serde::Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct PageQuery {
    /// Zero-based page number.
    #[param(maximum = 10000)]
    pub page: Option<u32>,
    /// Items per page, 1–100 (default 20).
    #[param(minimum = 1, maximum = 100)]
    pub size: Option<u32>,
}

#[cfg(test)]
mod tests;

/// Whether the client asked for CSV (`Accept: text/csv`) rather than JSON.
pub fn wants_csv(headers: &axum::http::HeaderMap) -> bool {
    headers
        .get(axum::http::header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|accept| accept.contains("text/csv"))
}
