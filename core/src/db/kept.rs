//! Connections kept between uses on the hot paths. Handing a connection
//! back to the pool costs a round trip each time (sqlx pings a connection
//! it takes back), once per enqueue group, per claim and per decision. A
//! connection whose use failed is not kept: it goes back to the pool, whose
//! ping discards it if it is broken.

use std::sync::Mutex;

use sqlx::pool::PoolConnection;
use sqlx::{MySql, MySqlPool};

pub struct KeptConnections {
    pool: MySqlPool,
    idle: Mutex<Vec<PoolConnection<MySql>>>,
    most: usize,
}

impl KeptConnections {
    /// Keeps up to `most` idle connections of `pool`.
    pub fn new(pool: MySqlPool, most: usize) -> Self {
        Self {
            pool,
            idle: Mutex::new(Vec::with_capacity(most)),
            most,
        }
    }

    /// A kept connection, or a new one from the pool.
    pub async fn take(&self) -> Result<PoolConnection<MySql>, sqlx::Error> {
        let kept = self.idle.lock().ok().and_then(|mut idle| idle.pop());
        match kept {
            Some(conn) => Ok(conn),
            None => self.pool.acquire().await,
        }
    }

    /// Keeps a connection whose use succeeded, unless enough are kept.
    pub fn keep(&self, conn: PoolConnection<MySql>) {
        if let Ok(mut idle) = self.idle.lock()
            && idle.len() < self.most
        {
            idle.push(conn);
        }
    }

    pub fn pool(&self) -> &MySqlPool {
        &self.pool
    }
}
