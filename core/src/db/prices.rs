//! A concert's price categories and the category of each of its seats
//! (issue 31). A claim keeps the price it was decided at: deciding writers
//! read it with [`SEAT_PRICE`] under the seat's lock and write it on the
//! claim (`reservation_seats.category, price, currency`).

use std::collections::HashMap;

use sqlx::{MySqlConnection, QueryBuilder};

use super::{Traced as _, execute_for_ids};
use crate::domain::price::{CategoryInput, PriceCategories, SeatPrice};
use crate::domain::{ConcertId, SeatId};

/// The columns `category, price, currency` of the seat `s`, as a literal
/// for `concat!`. Subqueries: inside a locking read they are plain reads
/// and lock nothing, so deciding workers do not queue on their category's
/// row.
macro_rules! seat_price_columns {
    () => {
        "(SELECT pc.name FROM price_categories pc \
           WHERE pc.concert_id = s.concert_id AND pc.position = s.category) AS category, \
         (SELECT pc.price FROM price_categories pc \
           WHERE pc.concert_id = s.concert_id AND pc.position = s.category) AS price, \
         (SELECT pc.currency FROM price_categories pc \
           WHERE pc.concert_id = s.concert_id AND pc.position = s.category) AS currency"
    };
}
pub(crate) use seat_price_columns;

/// [`seat_price_columns`] for statements built with `format!`.
pub const SEAT_PRICE: &str = seat_price_columns!();

/// A price as three nullable columns (a seat's, or a claim's).
#[derive(Debug, Clone, Default, sqlx::FromRow)]
pub struct PriceColumns {
    pub category: Option<String>,
    pub price: Option<u64>,
    pub currency: Option<String>,
}

impl PriceColumns {
    pub fn into_price(self) -> Option<SeatPrice> {
        SeatPrice::from_stored(self.category, self.price, self.currency.as_deref())
    }
}

#[derive(sqlx::FromRow)]
struct CategoryRow {
    concert_id: ConcertId,
    name: String,
    price: u64,
    currency: String,
    row_labels: String,
    colour: Option<String>,
}

/// The categories of each of `concerts` that has any.
pub async fn of_concerts(
    conn: &mut MySqlConnection,
    concerts: &[ConcertId],
) -> Result<HashMap<ConcertId, PriceCategories>, sqlx::Error> {
    let Some(list) = super::IdList::of(concerts) else {
        return Ok(HashMap::new());
    };
    let select = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT concert_id, name, price, currency, row_labels, colour FROM price_categories \
          WHERE concert_id IN ({list}) ORDER BY concert_id, position"
    )));
    let rows: Vec<CategoryRow> = super::BindIds::bind_ids(select, &list)
        .fetch_all(conn)
        .traced("SELECT", "price_categories")
        .await?;
    let mut grouped: HashMap<ConcertId, Vec<CategoryRow>> = HashMap::new();
    for row in rows {
        grouped.entry(row.concert_id).or_default().push(row);
    }
    Ok(grouped
        .into_iter()
        .filter_map(|(concert, rows)| Some((concert, from_rows(&rows)?)))
        .collect())
}

/// The concert's categories; None without any.
pub async fn of_concert(
    conn: &mut MySqlConnection,
    concert: ConcertId,
) -> Result<Option<PriceCategories>, sqlx::Error> {
    Ok(of_concerts(conn, &[concert]).await?.remove(&concert))
}

/// Stored rows were written from a parsed list, so they parse again.
fn from_rows(rows: &[CategoryRow]) -> Option<PriceCategories> {
    let labels: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            r.row_labels
                .split(',')
                .filter(|l| !l.is_empty())
                .map(str::to_owned)
                .collect()
        })
        .collect();
    let input: Vec<CategoryInput<'_>> = rows
        .iter()
        .zip(&labels)
        .map(|(r, rows)| CategoryInput {
            name: &r.name,
            price: r.price,
            currency: &r.currency,
            rows,
            colour: r.colour.as_deref(),
        })
        .collect();
    PriceCategories::parse(&input).ok()
}

/// The categories (position, name) that open requests by count or fans
/// still waiting on the list name by position: a new list must keep each
/// where it is, under its name, or they would be asked of another price.
/// Call with the concert's line locked (every writer of requests takes it).
pub async fn named_by_open_requests(
    conn: &mut MySqlConnection,
    concert: ConcertId,
) -> Result<Vec<(u8, String)>, sqlx::Error> {
    sqlx::query_as(
        "SELECT p.position, p.name FROM price_categories p WHERE p.concert_id = ? AND ( \
           EXISTS (SELECT 1 FROM request_pools r WHERE r.concert_id = p.concert_id \
                    AND r.open_pool = p.position) \
           OR EXISTS (SELECT 1 FROM waiting_list_entries e WHERE e.status = 'WAITING' \
                    AND e.concert_id = p.concert_id AND e.pool = p.position)) \
          ORDER BY p.position",
    )
    .bind(concert)
    .fetch_all(conn)
    .traced("SELECT", "price_categories")
    .await
}

/// Replaces the concert's categories and puts every seat in its row's. The
/// caller holds the concert's seat locks (taken in id order, before the
/// concert's, as a deciding worker takes them), so no decision reads a
/// price between the two.
pub async fn replace(
    conn: &mut MySqlConnection,
    concert: ConcertId,
    categories: &PriceCategories,
) -> Result<(), sqlx::Error> {
    async move {
        sqlx::query("DELETE FROM price_categories WHERE concert_id = ?")
            .bind(concert)
            .execute(&mut *conn)
            .await?;
        let mut insert = QueryBuilder::new(
            "INSERT INTO price_categories (concert_id, position, name, price, currency, row_labels, colour) ",
        );
        insert.push_values(
            categories.categories.iter().enumerate(),
            |mut row, (position, c)| {
                let labels: Vec<&str> = c.rows.iter().map(|r| r.as_str()).collect();
                row.push_bind(concert)
                    .push_bind(position as u8)
                    .push_bind(c.name.clone())
                    .push_bind(c.price.get())
                    .push_bind(categories.currency.as_str().to_owned())
                    .push_bind(labels.join(","))
                    .push_bind(c.colour.as_ref().map(|c| c.as_str().to_owned()));
            },
        );
        insert.build().execute(&mut *conn).await?;
        // A plan's seats go to the category of their plan category's name
        // (the caller made sure each is there); the others by their row.
        sqlx::query(
            "UPDATE seats s JOIN price_categories p ON p.concert_id = s.concert_id \
                AND p.name = s.plan_category \
                SET s.category = p.position WHERE s.concert_id = ? AND s.plan_category IS NOT NULL",
        )
        .bind(concert)
        .execute(&mut *conn)
        .await?;
        // The grid's seats (not a plan's, not a standing area's places),
        // read here rather than through `seats`, which reads prices.
        let seats: Vec<(SeatId, String)> = sqlx::query_as(
            "SELECT id, seat_number FROM seats \
              WHERE concert_id = ? AND plan_category IS NULL AND area IS NULL",
        )
        .bind(concert)
        .fetch_all(&mut *conn)
        .await?;
        assign(conn, categories, &seats).await?;
        // A standing area's places go to the category it names.
        super::standing_areas::assign_categories(conn, concert, categories).await
    }
    .traced("UPDATE", "price_categories")
    .await
}

/// Seats per UPDATE of their category.
const ASSIGN_CHUNK: usize = 4_096;

/// Puts each of `seats` (id, number) in its row's category.
pub async fn assign(
    conn: &mut MySqlConnection,
    categories: &PriceCategories,
    seats: &[(SeatId, String)],
) -> Result<(), sqlx::Error> {
    let mut by_position: Vec<Vec<SeatId>> = vec![Vec::new(); categories.categories.len()];
    for (id, number) in seats {
        by_position[categories.index_of_seat(number)].push(*id);
    }
    for (position, ids) in by_position.iter().enumerate() {
        for chunk in ids.chunks(ASSIGN_CHUNK) {
            execute_for_ids(conn, chunk, |list| {
                sqlx::query(sqlx::AssertSqlSafe(format!(
                    "UPDATE seats SET category = ? WHERE id IN ({list})"
                )))
                .bind(position as u8)
            })
            .await?;
        }
    }
    Ok(())
}

/// Moves one seat (locked by the caller) to the category at `position`.
pub async fn move_seat(
    conn: &mut MySqlConnection,
    seat: SeatId,
    position: usize,
) -> Result<(), sqlx::Error> {
    sqlx::query("UPDATE seats SET category = ? WHERE id = ?")
        .bind(position as u8)
        .bind(seat)
        .execute(conn)
        .traced("UPDATE", "seats")
        .await?;
    Ok(())
}

/// The plan categories the concert's seats name (none without a plan).
pub async fn plan_categories(
    conn: &mut MySqlConnection,
    concert: ConcertId,
) -> Result<Vec<String>, sqlx::Error> {
    let rows: Vec<(String,)> = sqlx::query_as(
        "SELECT DISTINCT plan_category FROM seats WHERE concert_id = ? AND plan_category IS NOT NULL",
    )
    .bind(concert)
    .fetch_all(conn)
    .traced("SELECT", "seats")
    .await?;
    Ok(rows.into_iter().map(|(name,)| name).collect())
}

/// The concert's currency (one for all its categories); None without
/// prices.
pub async fn currency_of(
    conn: &mut MySqlConnection,
    concert: ConcertId,
) -> Result<Option<String>, sqlx::Error> {
    sqlx::query_scalar(
        "SELECT currency FROM price_categories WHERE concert_id = ? ORDER BY position LIMIT 1",
    )
    .bind(concert)
    .fetch_optional(conn)
    .traced("SELECT", "price_categories")
    .await
}
