//! Configuration both binaries share: how to reach the database.

use std::time::Duration;

use clap::Args;
use sqlx::mysql::{MySqlConnectOptions, MySqlPool, MySqlPoolOptions};

#[derive(Debug, Clone, Args)]
pub struct DatabaseArgs {
    /// MySQL 8.0+ / MariaDB 10.6+ URL, e.g. mysql://user:pass@host:3306/ticket
    #[arg(long, env = "DATABASE_URL", hide_env_values = true)]
    pub database_url: String,

    /// Most connections this process keeps open to the database.
    #[arg(long, env = "TICKET_DB_MAX_CONNECTIONS", default_value_t = 32)]
    pub db_max_connections: u32,

    /// How long a request waits for a free connection before giving up (ms).
    #[arg(long, env = "TICKET_DB_ACQUIRE_TIMEOUT_MS", default_value_t = 3_000)]
    pub db_acquire_timeout_ms: u64,
}

impl DatabaseArgs {
    pub fn connect_options(&self) -> Result<MySqlConnectOptions, sqlx::Error> {
        Ok(crate::db::tune(self.database_url.parse()?))
    }

    /// A pool that connects on first use, so a process can start (and report
    /// itself not ready) while the database is still coming up.
    pub fn lazy_pool(&self) -> Result<MySqlPool, sqlx::Error> {
        Ok(MySqlPoolOptions::new()
            .max_connections(self.db_max_connections)
            .acquire_timeout(Duration::from_millis(self.db_acquire_timeout_ms))
            .after_connect(|conn, _meta| Box::pin(crate::db::prepare_session(conn)))
            .connect_lazy_with(self.connect_options()?))
    }
}
