//! The waiting list feature's own state: what its handlers reach,
//! assembled once at startup (`crate::state`).

use std::sync::Arc;

use sqlx::MySqlPool;

use crate::extract::Auth;

/// What the waiting list's handlers reach.
#[derive(Clone)]
pub struct WaitingListState {
    pub pool: MySqlPool,
    pub auth: Auth,
    /// When each concert's sale opens, its cap and pools.
    pub sales: Arc<crate::concerts::sale_windows::SaleWindows>,
    /// Proof-of-work challenges, paid with a join.
    pub challenges: Arc<crate::proof_of_work::Challenges>,
}

crate::with_auth!(WaitingListState);
