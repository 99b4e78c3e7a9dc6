//! Liveness for the worker: alive means the claim loop keeps turning. A loop
//! stuck (not merely waiting for a database that is down: that still turns,
//! backing off) is what a restart can fix.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::http::StatusCode;
use axum::routing::get;

/// How long the loop may go without a turn before the worker counts as stuck:
/// well above the longest back-off (5 s) and a slow batch.
pub const STUCK_AFTER: Duration = Duration::from_secs(120);

/// Shared between the loop (which beats) and the health endpoint.
#[derive(Clone, Default)]
pub struct Heartbeat(Arc<AtomicU64>);

impl Heartbeat {
    pub fn beat(&self) {
        self.0.store(now_secs(), Ordering::Relaxed);
    }

    pub fn is_alive(&self) -> bool {
        now_secs().saturating_sub(self.0.load(Ordering::Relaxed)) < STUCK_AFTER.as_secs()
    }
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

pub fn router(heartbeat: Heartbeat) -> Router {
    Router::new().route(
        "/healthz",
        get(move || async move {
            if heartbeat.is_alive() {
                (StatusCode::OK, "ok")
            } else {
                (StatusCode::SERVICE_UNAVAILABLE, "claim loop stuck")
            }
        }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alive_after_a_beat_only() {
        let heartbeat = Heartbeat::default();
        assert!(!heartbeat.is_alive(), "never beaten");
        heartbeat.beat();
        assert!(heartbeat.is_alive());
        heartbeat
            .0
            .store(now_secs() - STUCK_AFTER.as_secs() - 1, Ordering::Relaxed);
        assert!(!heartbeat.is_alive());
    }
}
