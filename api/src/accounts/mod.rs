//! Accounts: signing up and in, tokens and their revocation, the users'
//! own data, and the admin account made at start-up.

pub mod auth;
pub mod bootstrap;
pub mod security;
pub mod users;

use axum::Router;

use crate::state::AppState;

pub fn router() -> Router<AppState> {
    Router::new().merge(auth::router()).merge(users::router())
}
