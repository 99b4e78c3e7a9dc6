//! What the API's integration tests share, by what it helps with.

use std::time::Duration;

use sqlx::mysql::MySqlPool;
use ticket_core::testing::TestDatabase;

mod data;
mod http;
mod paying;
mod processes;
mod spawn;
mod team;
mod workers;

// Each test binary (api, browser, tracing) uses a part of these.
#[allow(unused_imports)]
pub use data::{concert_with, order, send_all_at_once, won};
#[allow(unused_imports)]
pub use http::*;
#[allow(unused_imports)]
pub use paying::{bought, deliver_event, paying_app};
#[allow(unused_imports)]
pub use processes::*;
#[allow(unused_imports)]
pub use spawn::*;
#[allow(unused_imports)]
pub use team::{ROLES, Team, organizer, set_role};
#[allow(unused_imports)]
pub use workers::racing_offers;

pub const SECRET: &[u8] = b"test-secret-that-is-at-least-32-bytes-long";
pub const ADMIN_NICK: &str = "admin";
pub const ADMIN_PASSWORD: &str = "admin-password";
/// Short, so that the slow-client test need not wait long; the test client
/// drops idle connections well before the server would.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(3);
/// As in production; `a_slow_request_body_is_cut_off_with_408` sets its own.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

pub struct TestApp {
    pub base: String,
    pub client: reqwest::Client,
    /// A pool on the test's own database, for arranging and checking state.
    pub pool: MySqlPool,
    pub admin_token: String,
    /// Held only so the database is dropped with the app.
    _db: Option<TestDatabase>,
}
