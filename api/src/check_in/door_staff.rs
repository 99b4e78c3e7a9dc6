//! Who may check people in: a scanner of the concert (its own bearer
//! token, made by its organizer's staff, good for check-ins and the revoked
//! list of that concert only), or a member whose role gives CHECK_IN on the
//! concert's organizer (or the platform's admin).

use axum::extract::{FromRef, FromRequestParts};
use axum::http::request::Parts;
use ticket_core::db;
use ticket_core::domain::{ConcertId, Permission, ScannerId};

use crate::error::{ApiError, ErrorCode};
use crate::extract::{Auth, AuthUser, bearer};
use crate::organizers::access::{On, permit_on};

use super::known_scanners::{TOKEN_PREFIX, token_hash};

#[derive(Debug, Clone, Copy)]
pub enum DoorStaff {
    Scanner {
        id: ScannerId,
        concert: ConcertId,
    },
    /// A person logged in: an organizer's member or the platform's admin.
    Member(AuthUser),
}

impl DoorStaff {
    /// A scanner works the door of its own concert only; a member, the
    /// doors their role gives CHECK_IN on.
    pub async fn ensure_concert(
        self,
        pool: &sqlx::MySqlPool,
        concert: ConcertId,
    ) -> Result<(), ApiError> {
        match self {
            Self::Scanner { concert: own, .. } if own != concert => Err(ApiError::new(
                ErrorCode::Forbidden,
                "this scanner works another concert's door",
            )),
            Self::Scanner { .. } => Ok(()),
            Self::Member(user) => {
                permit_on(pool, user, On::Concert(concert), Permission::CheckIn).await?;
                Ok(())
            }
        }
    }

    pub fn scanner(self) -> Option<ScannerId> {
        match self {
            Self::Scanner { id, .. } => Some(id),
            Self::Member(_) => None,
        }
    }
}

/// What tells a scanner by its token: the scanners' table, and those this
/// instance has seen (their requests' rate budget). A feature whose routes
/// take [`DoorStaff`] has it in its state.
#[derive(Clone)]
pub struct Scanners {
    pub pool: sqlx::MySqlPool,
    pub known: std::sync::Arc<super::known_scanners::KnownScanners>,
}

impl<S: Send + Sync> FromRequestParts<S> for DoorStaff
where
    Auth: FromRef<S>,
    Scanners: FromRef<S>,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        if let Some(token) = bearer(&parts.headers).filter(|t| t.starts_with(TOKEN_PREFIX)) {
            let scanners = Scanners::from_ref(state);
            // Read every time: a revoked scanner stops at once.
            let hash = token_hash(token);
            let mut conn = scanners.pool.acquire().await?;
            let scanner = db::check_ins::scanner_by_token(&mut conn, &hash)
                .await?
                .ok_or_else(|| {
                    ApiError::new(
                        ErrorCode::Unauthorized,
                        "the scanner token is unknown or was revoked",
                    )
                })?;
            scanners.known.remember(hash, scanner.id);
            return Ok(Self::Scanner {
                id: scanner.id,
                concert: scanner.concert_id,
            });
        }
        let user = AuthUser::from_request_parts(parts, state).await?;
        // A fan is refused before the body is read, as before organizers.
        let mut conn = Scanners::from_ref(state).pool.acquire().await?;
        if user.is_admin() || db::organizers::is_member(&mut conn, user.id).await? {
            Ok(Self::Member(user))
        } else {
            Err(ApiError::forbidden())
        }
    }
}
