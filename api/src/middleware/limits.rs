//! Request-rate limits, so that no single user or client can take the
//! service for everyone: requests per user, requests without a token per
//! client address, logins per account and per client, sign-ups per client
//! (both cost an Argon2 hash). Over a limit the
//! answer is 429 `RATE_LIMITED` with `Retry-After`.
//!
//! Limits are kept per API instance (GCRA, as a token bucket that refills
//! continuously), so N replicas allow up to N times each rate; they bound
//! abuse, they are not quotas.

use std::hash::Hash;
use std::net::IpAddr;
use std::num::NonZeroU32;
use std::time::Duration;

use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota};
use ticket_core::domain::{ScannerId, UserId};

use crate::error::ApiError;

/// Rates; 0 turns that limit off (load tests from one address).
#[derive(Debug, Clone, Copy)]
pub struct LimitSettings {
    /// Requests per second per signed-in user, with bursts of twice that.
    pub user_requests_per_sec: u32,
    /// Requests per second per client address without a valid token (every
    /// public route but the probes), with bursts of twice that.
    pub anonymous_requests_per_sec: u32,
    /// Login attempts per minute for one nickname from one client address;
    /// from all addresses together, [`ACCOUNT_WIDE_LOGINS`] times that.
    pub logins_per_minute_per_nickname: u32,
    /// Login attempts per minute from one client address.
    pub logins_per_minute_per_client: u32,
    /// Sign-ups per minute from one client address.
    pub signups_per_minute_per_client: u32,
    /// Seats in one user's open (WAITING, PENDING or PROCESSING)
    /// reservation requests.
    pub max_open_requests_per_user: u32,
    /// Event streams one user may have open on an instance (more: 429).
    pub max_streams_per_user: u32,
    /// Event streams an instance follows at once (more: 503, so that a
    /// load balancer moves the client to another instance).
    pub max_streams_per_instance: u32,
    /// Requests per second (per instance, all callers together) whose
    /// caller's `traceparent` may force tracing with its sampled flag;
    /// beyond it the caller's trace id is kept but the flag is not obeyed.
    /// `u32::MAX`: always obeyed; 0: never.
    pub caller_sampled_traces_per_sec: u32,
}

impl LimitSettings {
    /// Every limit off.
    pub const OFF: Self = Self {
        user_requests_per_sec: 0,
        anonymous_requests_per_sec: 0,
        logins_per_minute_per_nickname: 0,
        logins_per_minute_per_client: 0,
        signups_per_minute_per_client: 0,
        max_open_requests_per_user: 0,
        max_streams_per_user: 0,
        max_streams_per_instance: 0,
        caller_sampled_traces_per_sec: u32::MAX,
    };
}

/// Whose login budget an attempt spends. An existing account is keyed by
/// its id, so every spelling the database's collation takes for its
/// nickname (case, accents, surrounding spaces) shares one budget; a name
/// with no account by its trimmed, lower-cased text (nothing to protect
/// there but CPU, which the per-client budget bounds).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum LoginKey {
    Account(UserId),
    Unknown(String),
}

impl LoginKey {
    pub fn unknown(nickname: &str) -> Self {
        Self::Unknown(nickname.trim().to_lowercase())
    }
}

/// How many times one address's login budget for an account the account
/// allows from all addresses together: wrong passwords from one address
/// lock only that address out (not the owner, who logs in from another),
/// and credential stuffing from many addresses still meets a limit.
pub const ACCOUNT_WIDE_LOGINS: u32 = 10;

/// What a caller's sampled flag can do.
enum CallerSampling {
    Obeyed,
    Ignored,
    /// Obeyed as long as this budget (all callers together) allows.
    Within(governor::DefaultDirectRateLimiter),
}

/// The payment provider's signed deliveries, all together, may come this
/// many times as fast as one anonymous address's requests (Stripe sends
/// from many addresses, in rushes as a sale's payments succeed).
pub const PROVIDER_DELIVERIES_PER_ANONYMOUS: u32 = 50;

pub struct Limits {
    max_open_requests_per_user: u32,
    /// The provider's signed webhook deliveries (all of them together).
    provider_deliveries: Option<governor::DefaultDirectRateLimiter>,
    caller_sampled: CallerSampling,
    users: Option<DefaultKeyedRateLimiter<UserId>>,
    anonymous: Option<DefaultKeyedRateLimiter<IpAddr>>,
    /// A door scanner's own budget, at the user rate.
    scanners: Option<DefaultKeyedRateLimiter<ScannerId>>,
    logins_by_nickname: Option<DefaultKeyedRateLimiter<LoginKey>>,
    logins_by_nickname_and_client: Option<DefaultKeyedRateLimiter<(LoginKey, IpAddr)>>,
    logins_by_client: Option<DefaultKeyedRateLimiter<IpAddr>>,
    signups_by_client: Option<DefaultKeyedRateLimiter<IpAddr>>,
}

fn limiter<K: Clone + Hash + Eq>(quota: Option<Quota>) -> Option<DefaultKeyedRateLimiter<K>> {
    quota.map(DefaultKeyedRateLimiter::keyed)
}

fn per_second(rate: u32) -> Option<Quota> {
    let rate = NonZeroU32::new(rate)?;
    let burst = rate.saturating_mul(NonZeroU32::MIN.saturating_add(1));
    Some(Quota::per_second(rate).allow_burst(burst))
}

fn per_minute(rate: u32) -> Option<Quota> {
    NonZeroU32::new(rate).map(Quota::per_minute)
}

impl Limits {
    pub fn new(settings: LimitSettings) -> Self {
        Self {
            max_open_requests_per_user: settings.max_open_requests_per_user,
            caller_sampled: match settings.caller_sampled_traces_per_sec {
                u32::MAX => CallerSampling::Obeyed,
                rate => NonZeroU32::new(rate).map_or(CallerSampling::Ignored, |rate| {
                    CallerSampling::Within(governor::RateLimiter::direct(Quota::per_second(rate)))
                }),
            },
            provider_deliveries: per_second(
                settings
                    .anonymous_requests_per_sec
                    .saturating_mul(PROVIDER_DELIVERIES_PER_ANONYMOUS),
            )
            .map(governor::RateLimiter::direct),
            users: limiter(per_second(settings.user_requests_per_sec)),
            anonymous: limiter(per_second(settings.anonymous_requests_per_sec)),
            scanners: limiter(per_second(settings.user_requests_per_sec)),
            logins_by_nickname: limiter(per_minute(
                settings
                    .logins_per_minute_per_nickname
                    .saturating_mul(ACCOUNT_WIDE_LOGINS),
            )),
            logins_by_nickname_and_client: limiter(per_minute(
                settings.logins_per_minute_per_nickname,
            )),
            logins_by_client: limiter(per_minute(settings.logins_per_minute_per_client)),
            signups_by_client: limiter(per_minute(settings.signups_per_minute_per_client)),
        }
    }

    /// 0: no limit.
    pub fn max_open_requests_per_user(&self) -> u32 {
        self.max_open_requests_per_user
    }

    pub fn user_request(&self, user: UserId) -> Result<(), ApiError> {
        check(self.users.as_ref(), &user, "too many requests; slow down")
    }

    /// A request of a door scanner this instance knows.
    pub fn scanner_request(&self, scanner: ScannerId) -> Result<(), ApiError> {
        check(
            self.scanners.as_ref(),
            &scanner,
            "too many requests; slow down",
        )
    }

    /// A request without a valid token, from `client`.
    pub fn anonymous_request(&self, client: IpAddr) -> Result<(), ApiError> {
        check(
            self.anonymous.as_ref(),
            &client,
            "too many requests from this address; slow down, or sign in",
        )
    }

    /// A webhook delivery whose provider's signature verified.
    pub fn provider_delivery(&self) -> Result<(), ApiError> {
        let Some(budget) = &self.provider_deliveries else {
            return Ok(());
        };
        budget.check().map_err(|not_until| {
            let wait = not_until.wait_time_from(DefaultClock::default().now());
            ApiError::rate_limited("too many deliveries; slow down", retry_after(wait))
        })
    }

    /// Whether a caller's sampled flag may force this request's trace: an
    /// outsider sending `sampled` on every request would otherwise make the
    /// instance trace everything, which costs a fifth of the enqueue path.
    pub fn caller_may_force_tracing(&self) -> bool {
        match &self.caller_sampled {
            CallerSampling::Obeyed => true,
            CallerSampling::Ignored => false,
            CallerSampling::Within(budget) => budget.check().is_ok(),
        }
    }

    /// A login attempt from `client`, before anything else is looked at.
    pub fn login_from(&self, client: IpAddr) -> Result<(), ApiError> {
        check(
            self.logins_by_client.as_ref(),
            &client,
            "too many login attempts from this address",
        )
    }

    /// A password check against one account (or a name without one) from
    /// `client`: a login, or the current password of a password change.
    /// The address's own budget for the account first, so that attempts it
    /// refuses spend nothing of the account-wide one.
    pub fn password_check(&self, key: &LoginKey, client: IpAddr) -> Result<(), ApiError> {
        check(
            self.logins_by_nickname_and_client.as_ref(),
            &(key.clone(), client),
            "too many login attempts for this nickname from this address",
        )?;
        check(
            self.logins_by_nickname.as_ref(),
            key,
            "too many login attempts for this nickname",
        )
    }

    pub fn signup(&self, client: IpAddr) -> Result<(), ApiError> {
        check(
            self.signups_by_client.as_ref(),
            &client,
            "too many sign-ups from this address",
        )
    }

    /// Forgets keys whose budget is full again, so that memory follows the
    /// active users, not every user ever seen.
    pub fn forget_idle(&self) {
        for limiter in [
            &self.logins_by_client,
            &self.signups_by_client,
            &self.anonymous,
        ]
        .into_iter()
        .flatten()
        {
            limiter.retain_recent();
        }
        if let Some(users) = &self.users {
            users.retain_recent();
        }
        if let Some(nicknames) = &self.logins_by_nickname {
            nicknames.retain_recent();
        }
        if let Some(nicknames) = &self.logins_by_nickname_and_client {
            nicknames.retain_recent();
        }
    }
}

fn check<K: Clone + Hash + Eq>(
    limiter: Option<&DefaultKeyedRateLimiter<K>>,
    key: &K,
    detail: &'static str,
) -> Result<(), ApiError> {
    let Some(limiter) = limiter else {
        return Ok(());
    };
    limiter.check_key(key).map_err(|not_until| {
        let wait = not_until.wait_time_from(DefaultClock::default().now());
        ApiError::rate_limited(detail, retry_after(wait))
    })
}

/// Whole seconds to wait, at least one.
fn retry_after(wait: Duration) -> u64 {
    (wait.as_secs() + u64::from(wait.subsec_nanos() > 0)).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_rounds_up_to_whole_seconds() {
        assert_eq!(retry_after(Duration::ZERO), 1);
        assert_eq!(retry_after(Duration::from_millis(1)), 1);
        assert_eq!(retry_after(Duration::from_secs(1)), 1);
        assert_eq!(retry_after(Duration::from_millis(1500)), 2);
        assert_eq!(retry_after(Duration::from_secs(6)), 6);
    }

    #[test]
    fn a_user_gets_a_burst_of_twice_the_rate_then_waits() {
        let limits = Limits::new(LimitSettings {
            user_requests_per_sec: 5,
            ..LimitSettings::OFF
        });
        let (alice, bob) = (UserId(1), UserId(2));
        for _ in 0..10 {
            assert!(limits.user_request(alice).is_ok());
        }
        assert!(limits.user_request(alice).is_err());
        assert!(limits.user_request(bob).is_ok(), "budgets are per user");
        assert!(Limits::new(LimitSettings::OFF).user_request(alice).is_ok());
    }
}
