use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};
use ticket_core::db;
use ticket_core::domain::{ConcertId, ProofOfWork};

use super::CHALLENGE_LIFETIME;
use crate::error::{ApiError, ApiResult, Problem};
use crate::extract::{ApiPath, AuthUser};
use crate::proof_of_work::state::ProofOfWorkState;

pub fn router() -> Router<ProofOfWorkState> {
    Router::new().route("/api/concerts/{id}/challenge", get(challenge))
}

/// A proof-of-work challenge for the caller's next request for the concert
/// (ALTCHA PoW v2: `{parameters, signature}`), good for a minute and one
/// request; solve it and send the solution, base64 JSON
/// `{challenge, solution}` as ALTCHA's widget makes it, in the
/// `Proof-Of-Work` header of `POST /api/reservations`.
#[utoipa::path(get, path = "/api/concerts/{id}/challenge", tag = "reservations", security(("bearer" = [])),
    params(("id" = u64, Path)),
    responses((status = 200, description = "an ALTCHA PoW v2 challenge", body = serde_json::Value),
              (status = 400, body = Problem), (status = 401, body = Problem), (status = 404, body = Problem)))]
pub async fn challenge(
    State(state): State<ProofOfWorkState>,
    caller: AuthUser,
    ApiPath(concert): ApiPath<ConcertId>,
) -> ApiResult<Json<altcha::Challenge>> {
    let mut conn = state.pool.acquire().await?;
    let Some(row) = db::concerts::find(&mut conn, concert).await? else {
        return Err(ApiError::concert_not_found());
    };
    let now = db::now(&mut conn).await?;
    let level = ProofOfWork::from_stored(row.proof_of_work);
    let challenge = state
        .challenges
        .issue(caller.id, concert, level, now + CHALLENGE_LIFETIME)?;
    Ok(Json(challenge))
}
