//! Tokens voided before they expire (password change, account deletion,
//! "log out everywhere"), checked on every authenticated request from
//! memory. The instance that records a revocation applies it at once; every
//! other instance reads the new rows each [`REFRESH_EVERY`], so a revoked
//! token stops working everywhere within about that time.

use std::collections::HashMap;
use std::sync::RwLock;
use std::time::Duration;

#[cfg(test)]
use chrono::SubsecRound as _;
use chrono::{DateTime, Utc};
use sqlx::MySqlPool;
use ticket_core::db;
use ticket_core::domain::UserId;

/// How often each instance reads new revocations (the bound for
/// other instances is 2 s).
pub const REFRESH_EVERY: Duration = Duration::from_secs(1);

/// Rows are read again for this long after they were recorded: a
/// transaction may commit a while after its `recorded_at`, and a row first
/// seen late is still applied.
const LATE_COMMIT_MARGIN: chrono::Duration = chrono::Duration::seconds(60);

/// Rows deleted per refresh once no live token can be older than them.
const PRUNE_BATCH: u32 = 500;

pub struct Revocations {
    /// User → tokens issued before this (µs since the epoch) are void.
    before: RwLock<HashMap<UserId, i64>>,
    /// Tokens live this long: older revocations void nothing.
    token_ttl: chrono::Duration,
    /// The database clock of the last read (None: never read).
    last_read: tokio::sync::Mutex<Option<DateTime<Utc>>>,
}

impl Revocations {
    pub fn new(token_ttl: Duration) -> Self {
        Self {
            before: RwLock::default(),
            token_ttl: chrono::Duration::from_std(token_ttl)
                .unwrap_or(chrono::Duration::days(3650)),
            last_read: tokio::sync::Mutex::new(None),
        }
    }

    /// Whether a token of `user` issued at `issued_at_us` was revoked.
    pub fn is_revoked(&self, user: UserId, issued_at_us: i64) -> bool {
        // A poisoned lock only means a writer panicked mid-insert of one
        // entry; the map is still usable.
        let before = self.before.read().unwrap_or_else(|e| e.into_inner());
        before.get(&user).is_some_and(|&at| issued_at_us < at)
    }

    /// Applies a revocation this instance just committed.
    pub fn apply(&self, user: UserId, before: DateTime<Utc>) {
        let mut map = self.before.write().unwrap_or_else(|e| e.into_inner());
        let at = map.entry(user).or_insert(i64::MIN);
        *at = (*at).max(before.timestamp_micros());
    }

    /// Reads the revocations recorded since the last read (the last token
    /// lifetime on the first one), forgets those that void nothing any more,
    /// and deletes a few such rows.
    pub async fn refresh(&self, pool: &MySqlPool) -> Result<(), sqlx::Error> {
        let mut last_read = self.last_read.lock().await;
        let mut conn = pool.acquire().await?;
        let now = db::now(&mut conn).await?;
        let oldest_live = older(now, self.token_ttl + LATE_COMMIT_MARGIN);
        let since = match *last_read {
            Some(at) => older(at, LATE_COMMIT_MARGIN),
            None => oldest_live,
        };
        let rows = db::revocations::recorded_since(&mut conn, since).await?;
        for (user, before) in rows {
            self.apply(user, before);
        }
        let expired = older(Utc::now(), self.token_ttl).timestamp_micros();
        self.before
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|_, at| *at > expired);
        db::revocations::prune(&mut conn, oldest_live, PRUNE_BATCH).await?;
        *last_read = Some(now);
        Ok(())
    }

    /// Refreshes every [`REFRESH_EVERY`] until dropped; a failed read is
    /// logged and tried again on the next tick.
    pub async fn follow(self: std::sync::Arc<Self>, pool: MySqlPool) {
        let mut every = tokio::time::interval(REFRESH_EVERY);
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut failures: u32 = 0;
        loop {
            every.tick().await;
            match self.refresh(&pool).await {
                Ok(()) if failures > 0 => {
                    tracing::info!(failures, "token revocations read again");
                    failures = 0;
                }
                Ok(()) => {}
                Err(e) => {
                    // Once, then once a minute: the database being away is
                    // logged by every request that needs it anyway.
                    if failures.is_multiple_of(60) {
                        tracing::warn!(error = %e, failures, "could not read token revocations; revocations recorded elsewhere meanwhile wait");
                    }
                    failures = failures.saturating_add(1);
                }
            }
        }
    }
}

/// `at` minus `by`, or the epoch (what the database can store).
fn older(at: DateTime<Utc>, by: chrono::Duration) -> DateTime<Utc> {
    at.checked_sub_signed(by)
        .unwrap_or(DateTime::<Utc>::UNIX_EPOCH)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_issued_before_a_revocation_are_void_and_later_ones_valid() {
        let revocations = Revocations::new(Duration::from_secs(3600));
        let at = Utc::now().trunc_subsecs(6);
        let us = at.timestamp_micros();
        assert!(!revocations.is_revoked(UserId(1), us - 1));
        revocations.apply(UserId(1), at);
        // To the microsecond: a login and a revocation can share a millisecond.
        assert!(revocations.is_revoked(UserId(1), us - 1));
        assert!(!revocations.is_revoked(UserId(1), us));
        assert!(!revocations.is_revoked(UserId(2), us - 1), "per user");
        // An older revocation read late does not undo a newer one.
        revocations.apply(UserId(1), at - chrono::Duration::seconds(10));
        assert!(revocations.is_revoked(UserId(1), us - 1));
    }
}
