//! Rates the processes measure and publish for each other, per concert:
//! the workers' decisions per second (with how long a decision took), read
//! for waits and the operator's view, and each API instance's accepted
//! requests per second, read for the operator's view. A row not refreshed
//! for a while no longer counts; rows older than a minute go, whoever
//! wrote them (a process that stopped leaves its last rows behind).

use super::Traced as _;
use chrono::{DateTime, Utc};
use sqlx::MySqlConnection;

use crate::domain::ConcertId;

/// What one worker measured for one concert.
#[derive(Debug, Clone, Copy, PartialEq, sqlx::FromRow)]
pub struct DecisionRate {
    pub concert_id: ConcertId,
    pub decisions_per_sec: f64,
    /// Request to commit, over the decisions of the last measurement.
    pub p50_ms: Option<f64>,
    pub p99_ms: Option<f64>,
}

impl DecisionRate {
    pub fn new(concert_id: ConcertId, decisions_per_sec: f64) -> Self {
        Self {
            concert_id,
            decisions_per_sec,
            p50_ms: None,
            p99_ms: None,
        }
    }
}

const FORGET_AFTER: chrono::TimeDelta = chrono::TimeDelta::minutes(1);

/// Records what one worker measured.
pub async fn publish_decisions(
    conn: &mut MySqlConnection,
    worker: &str,
    rates: &[DecisionRate],
    now: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    async move {
        if !rates.is_empty() {
            let mut insert = sqlx::QueryBuilder::new(
                "INSERT INTO decision_rates (concert_id, worker, decisions_per_sec, \
                 decision_p50_ms, decision_p99_ms, measured_at) ",
            );
            insert.push_values(rates, |mut row, rate| {
                row.push_bind(rate.concert_id)
                    .push_bind(worker)
                    .push_bind(rate.decisions_per_sec)
                    .push_bind(rate.p50_ms)
                    .push_bind(rate.p99_ms)
                    .push_bind(now.naive_utc());
            });
            insert.push(
                " ON DUPLICATE KEY UPDATE decisions_per_sec = VALUES(decisions_per_sec), \
                 decision_p50_ms = VALUES(decision_p50_ms), \
                 decision_p99_ms = VALUES(decision_p99_ms), measured_at = VALUES(measured_at)",
            );
            insert.build().execute(&mut *conn).await?;
        }
        sqlx::query("DELETE FROM decision_rates WHERE measured_at < ?")
            .bind((now - FORGET_AFTER).naive_utc())
            .execute(conn)
            .await?;
        Ok(())
    }
    .traced("INSERT", "decision_rates")
    .await
}

/// Each concert's decisions per second, summed over the workers that
/// measured it since `since`; its decision times as the workers' p50
/// weighted by their rates and the highest p99 (exact with one worker,
/// an upper bound with several).
pub async fn decisions(
    conn: &mut MySqlConnection,
    since: DateTime<Utc>,
) -> Result<Vec<DecisionRate>, sqlx::Error> {
    sqlx::query_as(
        "SELECT concert_id, SUM(decisions_per_sec) AS decisions_per_sec, \
         SUM(decision_p50_ms * decisions_per_sec) / NULLIF(SUM(CASE WHEN decision_p50_ms \
         IS NULL THEN 0 ELSE decisions_per_sec END), 0) AS p50_ms, \
         MAX(decision_p99_ms) AS p99_ms \
         FROM decision_rates WHERE measured_at >= ? GROUP BY concert_id",
    )
    .bind(since.naive_utc())
    .fetch_all(conn)
    .traced("SELECT", "decision_rates")
    .await
}

/// Records the requests per second one API instance accepted.
pub async fn publish_requests(
    conn: &mut MySqlConnection,
    instance: &str,
    rates: &[(ConcertId, f64)],
    now: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    async move {
        if !rates.is_empty() {
            let mut insert = sqlx::QueryBuilder::new(
                "INSERT INTO request_rates (concert_id, instance, requests_per_sec, measured_at) ",
            );
            insert.push_values(rates, |mut row, (concert, rate)| {
                row.push_bind(*concert)
                    .push_bind(instance)
                    .push_bind(*rate)
                    .push_bind(now.naive_utc());
            });
            insert.push(
                " ON DUPLICATE KEY UPDATE requests_per_sec = VALUES(requests_per_sec), \
                 measured_at = VALUES(measured_at)",
            );
            insert.build().execute(&mut *conn).await?;
        }
        sqlx::query("DELETE FROM request_rates WHERE measured_at < ?")
            .bind((now - FORGET_AFTER).naive_utc())
            .execute(conn)
            .await?;
        Ok(())
    }
    .traced("INSERT", "request_rates")
    .await
}

/// Each concert's accepted requests per second, summed over the instances
/// that measured it since `since`.
pub async fn requests(
    conn: &mut MySqlConnection,
    since: DateTime<Utc>,
) -> Result<Vec<(ConcertId, f64)>, sqlx::Error> {
    sqlx::query_as(
        "SELECT concert_id, SUM(requests_per_sec) FROM request_rates \
         WHERE measured_at >= ? GROUP BY concert_id",
    )
    .bind(since.naive_utc())
    .fetch_all(conn)
    .traced("SELECT", "request_rates")
    .await
}
