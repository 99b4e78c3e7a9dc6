//! Bounds on open event streams. A stream holds a connection and a watch
//! for as long as its request waits (a lottery request's for up to a day):
//! without a bound, one account could hold thousands and an instance run
//! out of sockets and memory. Over a user's share the answer is 429 (wait
//! for one of yours to end); over the instance's, 503 with `Retry-After`, so
//! that a load balancer sends the client to another instance.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use ticket_core::domain::UserId;

use crate::error::{ApiError, ErrorCode};

/// 0: no bound.
#[derive(Debug, Clone, Copy, Default)]
pub struct StreamBounds {
    pub per_user: u32,
    pub per_instance: u32,
}

#[derive(Debug, Default)]
struct Open {
    total: u32,
    by_user: HashMap<UserId, u32>,
}

#[derive(Debug, Default)]
pub struct StreamPermits {
    bounds: StreamBounds,
    open: Arc<Mutex<Open>>,
}

/// One open stream; dropping it (the stream ends, the client goes) gives
/// its place back.
#[derive(Debug)]
pub struct StreamPermit {
    open: Arc<Mutex<Open>>,
    user: UserId,
}

impl StreamPermits {
    pub fn new(bounds: StreamBounds) -> Self {
        Self {
            bounds,
            open: Arc::default(),
        }
    }

    /// A place for one more stream of `user`, or why there is none.
    pub fn open(&self, user: UserId) -> Result<StreamPermit, ApiError> {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        let mine = open.by_user.get(&user).copied().unwrap_or(0);
        if self.bounds.per_user > 0 && mine >= self.bounds.per_user {
            return Err(ApiError::rate_limited(
                format!(
                    "you have {mine} event streams open, the most allowed; close one or poll the status"
                ),
                5,
            ));
        }
        if self.bounds.per_instance > 0 && open.total >= self.bounds.per_instance {
            return Err(ApiError::new(
                ErrorCode::InstanceBusy,
                "this instance follows as many event streams as it may; retry (another instance may take it) or poll the status",
            ));
        }
        open.total += 1;
        *open.by_user.entry(user).or_default() += 1;
        Ok(StreamPermit {
            open: self.open.clone(),
            user,
        })
    }

    /// Streams open now.
    pub fn open_streams(&self) -> u32 {
        self.open.lock().unwrap_or_else(|e| e.into_inner()).total
    }
}

impl Drop for StreamPermit {
    fn drop(&mut self) {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        open.total = open.total.saturating_sub(1);
        if let std::collections::hash_map::Entry::Occupied(mut mine) = open.by_user.entry(self.user)
        {
            *mine.get_mut() -= 1;
            if *mine.get() == 0 {
                mine.remove();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn places_are_bounded_per_user_and_per_instance_and_come_back() {
        let permits = StreamPermits::new(StreamBounds {
            per_user: 2,
            per_instance: 3,
        });
        let a1 = permits.open(UserId(1)).unwrap();
        let _a2 = permits.open(UserId(1)).unwrap();
        assert_eq!(
            permits.open(UserId(1)).unwrap_err().code(),
            ErrorCode::RateLimited
        );
        let _b1 = permits.open(UserId(2)).unwrap();
        assert_eq!(
            permits.open(UserId(3)).unwrap_err().code(),
            ErrorCode::InstanceBusy
        );
        drop(a1);
        assert_eq!(permits.open_streams(), 2);
        let _c1 = permits.open(UserId(3)).unwrap();
        assert_eq!(
            permits.open(UserId(1)).unwrap_err().code(),
            ErrorCode::InstanceBusy
        );
    }
}
