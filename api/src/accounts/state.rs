//! The accounts feature's own state: what its handlers reach,
//! assembled once at startup (`crate::state`).

use std::sync::Arc;

use axum::extract::FromRef;
use sqlx::MySqlPool;

use super::security::PasswordHasher;
use crate::extract::{Auth, ClientAddresses};
use crate::middleware::limits::Limits;

/// What the accounts' handlers reach: sign-ups, logins, the caller's
/// account.
#[derive(Clone)]
pub struct AccountsState {
    pub pool: MySqlPool,
    pub auth: Auth,
    pub limits: Arc<Limits>,
    pub client_addresses: ClientAddresses,
    pub passwords: PasswordHasher,
}

crate::with_auth!(AccountsState);

impl FromRef<AccountsState> for ClientAddresses {
    fn from_ref(state: &AccountsState) -> Self {
        state.client_addresses.clone()
    }
}
