//! Configuration both binaries share: how to reach the database.

use std::time::Duration;

use anyhow::Context;
use clap::Args;
use sqlx::mysql::{MySqlConnectOptions, MySqlPool};

use crate::secret::{self, Secret};

#[derive(Debug, Clone, Args)]
pub struct DatabaseArgs {
    /// Most connections this process keeps open to the database.
    #[arg(long, env = "TICKET_DB_MAX_CONNECTIONS", default_value_t = 32)]
    pub db_max_connections: u32,

    /// How long a request waits for a free connection before giving up (ms).
    #[arg(long, env = "TICKET_DB_ACQUIRE_TIMEOUT_MS", default_value_t = 3_000)]
    pub db_acquire_timeout_ms: u64,
}

impl DatabaseArgs {
    /// `DATABASE_URL` (or `DATABASE_URL_FILE`): it carries the password.
    pub fn database_url(&self) -> anyhow::Result<Secret> {
        Ok(secret::required("DATABASE_URL")?)
    }

    pub fn connect_options(&self) -> anyhow::Result<MySqlConnectOptions> {
        let url = self.database_url()?;
        // The parse error never quotes the URL, so the password stays out of logs.
        let options = url
            .expose()
            .parse()
            .context("DATABASE_URL is not a MySQL URL")?;
        Ok(crate::db::tune(options))
    }

    /// A pool that connects on first use, so a process can start (and report
    /// itself not ready) while the database is still coming up.
    pub fn lazy_pool(&self) -> anyhow::Result<MySqlPool> {
        Ok(crate::db::pool_options()
            .max_connections(self.db_max_connections)
            .acquire_timeout(Duration::from_millis(self.db_acquire_timeout_ms))
            .connect_lazy_with(self.connect_options()?))
    }
}
