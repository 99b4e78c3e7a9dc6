//! Accounts: signing up and in, tokens and their revocation, the users'
//! own data, and the admin account made at start-up.

pub mod auth;
pub mod bootstrap;
pub mod security;
pub mod state;
pub mod users;

use axum::Router;

use crate::accounts::state::AccountsState;

pub fn router() -> Router<AccountsState> {
    Router::new().merge(auth::router()).merge(users::router())
}
