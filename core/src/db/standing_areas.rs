//! A concert's standing areas and their places (seat rows with the area's
//! position and an entry number, see `domain::standing_area`).

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use sqlx::{MySqlConnection, QueryBuilder};

use super::{BindIds as _, IdList, Traced as _};
use crate::domain::ConcertId;
use crate::domain::price::PriceCategories;
use crate::domain::standing_area::{
    StandingArea, StandingAreas, place_number, place_sort_key, row_of_area,
};

/// Places per INSERT (10 values each).
const INSERT_CHUNK: usize = 4_000;

#[derive(sqlx::FromRow)]
struct AreaRow {
    concert_id: ConcertId,
    name: String,
    capacity: u32,
    category_name: Option<String>,
}

/// The areas of each of `concerts` that has any, in position order.
pub async fn of_concerts(
    conn: &mut MySqlConnection,
    concerts: &[ConcertId],
) -> Result<HashMap<ConcertId, StandingAreas>, sqlx::Error> {
    let Some(list) = IdList::of(concerts) else {
        return Ok(HashMap::new());
    };
    let select = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT concert_id, name, capacity, category_name FROM standing_areas \
          WHERE concert_id IN ({list}) ORDER BY concert_id, position"
    )));
    let rows: Vec<AreaRow> = select
        .bind_ids(&list)
        .fetch_all(conn)
        .traced("SELECT", "standing_areas")
        .await?;
    let mut areas: HashMap<ConcertId, StandingAreas> = HashMap::new();
    for row in rows {
        areas
            .entry(row.concert_id)
            .or_default()
            .areas
            .push(StandingArea {
                name: row.name,
                capacity: row.capacity,
                category: row.category_name,
            });
    }
    Ok(areas)
}

/// The concert's areas (none: empty).
pub async fn of_concert(
    conn: &mut MySqlConnection,
    concert: ConcertId,
) -> Result<StandingAreas, sqlx::Error> {
    Ok(of_concerts(conn, &[concert])
        .await?
        .remove(&concert)
        .unwrap_or_default())
}

/// Whether a place of the concert's areas was ever asked for or held: a
/// request by count for an area (open or decided), or a claim on a place.
/// Its areas then stay as they are.
pub async fn ever_requested(
    conn: &mut MySqlConnection,
    concert: ConcertId,
) -> Result<bool, sqlx::Error> {
    let (requested,): (bool,) = sqlx::query_as(
        "SELECT EXISTS (SELECT 1 FROM request_pools WHERE concert_id = ? AND area IS NOT NULL) \
             OR EXISTS (SELECT 1 FROM seats s JOIN reservation_seats rs ON rs.seat_id = s.id \
                        WHERE s.concert_id = ? AND s.area IS NOT NULL)",
    )
    .bind(concert)
    .bind(concert)
    .fetch_one(conn)
    .traced("SELECT", "standing_areas")
    .await?;
    Ok(requested)
}

/// Replaces the concert's areas and their places (none ever requested; the
/// caller holds the concert's lock and, when it has categories, put them in
/// place first), and counts the concert's seats again.
pub async fn replace(
    conn: &mut MySqlConnection,
    concert: ConcertId,
    areas: &StandingAreas,
    categories: Option<&PriceCategories>,
    now: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    async move {
        sqlx::query("DELETE FROM seats WHERE concert_id = ? AND area IS NOT NULL")
            .bind(concert)
            .execute(&mut *conn)
            .await?;
        sqlx::query("DELETE FROM standing_areas WHERE concert_id = ?")
            .bind(concert)
            .execute(&mut *conn)
            .await?;
        for (position, area) in areas.areas.iter().enumerate() {
            let position = u8::try_from(position).unwrap_or(u8::MAX);
            sqlx::query(
                "INSERT INTO standing_areas (concert_id, position, name, capacity, category_name) \
                 VALUES (?, ?, ?, ?, ?)",
            )
            .bind(concert)
            .bind(position)
            .bind(&area.name)
            .bind(area.capacity)
            .bind(area.category.as_deref())
            .execute(&mut *conn)
            .await?;
            let category = category_of(area, categories);
            let entries: Vec<u32> = (1..=area.capacity).collect();
            for chunk in entries.chunks(INSERT_CHUNK) {
                let mut insert = QueryBuilder::new(
                    "INSERT INTO seats (concert_id, seat_number, sort_key, status, category, area, \
                     row_index, row_position, seat_rank, created_at, updated_at) ",
                );
                insert.push_values(chunk, |mut row, &entry| {
                    let number = place_number(&area.name, entry);
                    row.push_bind(concert)
                        .push_bind(number.as_str().to_owned())
                        .push_bind(place_sort_key(position, entry))
                        .push_bind("AVAILABLE")
                        .push_bind(category)
                        .push_bind(position)
                        .push_bind(row_of_area(position))
                        .push_bind(entry - 1)
                        .push_bind(entry - 1)
                        .push_bind(now.naive_utc())
                        .push_bind(now.naive_utc());
                });
                insert.build().execute(&mut *conn).await?;
            }
        }
        super::concerts::recount_seats(conn, concert, now).await?;
        Ok(())
    }
    .traced("INSERT", "standing_areas")
    .await
}

/// Puts each area's places in its category (by name; the first without
/// one) after the concert's categories changed; the caller holds the seat
/// locks [`super::prices::replace`] needs.
pub async fn assign_categories(
    conn: &mut MySqlConnection,
    concert: ConcertId,
    categories: &PriceCategories,
) -> Result<(), sqlx::Error> {
    let areas = of_concert(conn, concert).await?;
    for (position, area) in areas.areas.iter().enumerate() {
        sqlx::query("UPDATE seats SET category = ? WHERE concert_id = ? AND area = ?")
            .bind(category_of(area, Some(categories)))
            .bind(concert)
            .bind(u8::try_from(position).unwrap_or(u8::MAX))
            .execute(&mut *conn)
            .traced("UPDATE", "seats")
            .await?;
    }
    Ok(())
}

/// The position of an area's category: the one it names, else the first;
/// none without categories.
fn category_of(area: &StandingArea, categories: Option<&PriceCategories>) -> Option<u8> {
    let categories = categories?;
    let position = match &area.category {
        Some(name) => categories.position_of(name)?,
        None => 0,
    };
    u8::try_from(position).ok()
}
