//! A concert's seating plan: its seats written from the plan, and the plan
//! kept as given (pretix's JSON) for whoever reads it back.

use chrono::{DateTime, Utc};
use sqlx::{MySqlConnection, QueryBuilder};

use super::Traced as _;
use crate::domain::ConcertId;
use crate::domain::seating_plan::SeatingPlan;

/// Seats per INSERT (16 values each, well under the statement's limit).
const INSERT_CHUNK: usize = 2_000;

/// Whether any seat of the concert was ever asked for or offered: its
/// seats are then part of the sale's history and stay as they are.
pub async fn seats_ever_requested(
    conn: &mut MySqlConnection,
    concert: ConcertId,
) -> Result<bool, sqlx::Error> {
    let (requested,): (bool,) = sqlx::query_as(
        "SELECT EXISTS (SELECT 1 FROM reservation_queue WHERE concert_id = ?) \
             OR EXISTS (SELECT 1 FROM reservations WHERE concert_id = ?)",
    )
    .bind(concert)
    .bind(concert)
    .fetch_one(conn)
    .traced("SELECT", "reservation_queue")
    .await?;
    Ok(requested)
}

/// Replaces the concert's seats (none ever requested; the caller holds the
/// concert's lock) with the plan's, each in the price category at the
/// position `category_of` gives its plan category, and keeps the plan.
/// The number of seats written.
pub async fn replace(
    conn: &mut MySqlConnection,
    concert: ConcertId,
    plan: &SeatingPlan,
    plan_json: &str,
    category_of: impl Fn(&str) -> Option<u8>,
    now: DateTime<Utc>,
) -> Result<u64, sqlx::Error> {
    async move {
        // Standing areas stay: their places are not the plan's.
        sqlx::query("DELETE FROM seats WHERE concert_id = ? AND area IS NULL")
            .bind(concert)
            .execute(&mut *conn)
            .await?;
        let mut written = 0;
        for chunk in plan.seats.chunks(INSERT_CHUNK) {
            let mut insert = QueryBuilder::new(
                "INSERT INTO seats (concert_id, seat_number, sort_key, status, category, row_index, \
                 row_position, seat_rank, zone, row_label, plan_label, guid, pos_x, pos_y, plan_category, \
                 created_at, updated_at) ",
            );
            insert.push_values(chunk, |mut row, seat| {
                row.push_bind(concert)
                    .push_bind(seat.number.as_str().to_owned())
                    .push_bind(seat.number.sort_key())
                    .push_bind("AVAILABLE")
                    .push_bind(category_of(&seat.category))
                    .push_bind(seat.row_index)
                    .push_bind(seat.row_position)
                    .push_bind(seat.rank)
                    .push_bind(seat.zone.as_str())
                    .push_bind(seat.row_label.as_str())
                    .push_bind(seat.label.as_str())
                    .push_bind(seat.guid.as_str())
                    .push_bind(seat.x)
                    .push_bind(seat.y)
                    .push_bind(seat.category.as_str())
                    .push_bind(now.naive_utc())
                    .push_bind(now.naive_utc());
            });
            written += insert.build().execute(&mut *conn).await?.rows_affected();
        }
        super::concerts::recount_seats(conn, concert, now).await?;
        sqlx::query(
            "REPLACE INTO seating_plans (concert_id, name, plan, seat_count, created_at) \
             VALUES (?, ?, ?, ?, ?)",
        )
        .bind(concert)
        .bind(plan.raw.name.chars().take(200).collect::<String>())
        .bind(plan_json)
        .bind(written)
        .bind(now.naive_utc())
        .execute(&mut *conn)
        .await?;
        Ok(written)
    }
    .traced("INSERT", "seats")
    .await
}

/// The concert's plan as given, if it has one.
pub async fn find(
    conn: &mut MySqlConnection,
    concert: ConcertId,
) -> Result<Option<String>, sqlx::Error> {
    let row: Option<(String,)> =
        sqlx::query_as("SELECT plan FROM seating_plans WHERE concert_id = ?")
            .bind(concert)
            .fetch_optional(conn)
            .traced("SELECT", "seating_plans")
            .await?;
    Ok(row.map(|(plan,)| plan))
}
