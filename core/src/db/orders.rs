//! The box office desk's search for a concert's orders: a fan on the phone
//! gives an order number, a nickname or an e-mail address. One concert's
//! rows only (its index), newest first, a page at most.

use chrono::{DateTime, Utc};
use sqlx::{AssertSqlSafe, MySqlConnection};

use super::Traced as _;
use super::reservations::{ReservationRow, SELECT, seats_of};
use crate::domain::{ConcertId, ReservationId};

/// At most this many orders a search.
pub const MAX_FOUND: u32 = 20;

/// An order with its buyer.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct FoundOrder {
    #[sqlx(flatten)]
    pub reservation: ReservationRow,
    pub buyer_nickname: String,
    pub buyer_email: Option<String>,
}

/// `text` for a LIKE that finds it anywhere, its wildcards taken literally.
fn containing(text: &str) -> String {
    let mut pattern = String::with_capacity(text.len() + 2);
    pattern.push('%');
    for c in text.chars() {
        if matches!(c, '\\' | '%' | '_') {
            pattern.push('\\');
        }
        pattern.push(c);
    }
    pattern.push('%');
    pattern
}

/// The concert's orders numbered `text`, or whose buyer's nickname or
/// e-mail address contains it (case as the column's collation: ignored).
pub async fn search(
    conn: &mut MySqlConnection,
    concert: ConcertId,
    text: &str,
    now: DateTime<Utc>,
) -> Result<Vec<FoundOrder>, sqlx::Error> {
    async move {
        let number: u64 = text.parse().unwrap_or(0);
        let pattern = containing(text);
        let select = SELECT.replacen(
            " FROM reservations r",
            ", u.nickname AS buyer_nickname, u.email AS buyer_email \
             FROM reservations r JOIN users u ON u.id = r.user_id",
            1,
        );
        let mut found: Vec<FoundOrder> = sqlx::query_as(AssertSqlSafe(format!(
            "{select} WHERE r.concert_id = ? \
               AND (r.id = ? OR u.nickname LIKE ? OR u.email LIKE ?) \
             ORDER BY r.id DESC LIMIT ?"
        )))
        .bind(now.naive_utc())
        .bind(concert)
        .bind(number)
        .bind(&pattern)
        .bind(&pattern)
        .bind(MAX_FOUND)
        .fetch_all(&mut *conn)
        .await?;
        let ids: Vec<ReservationId> = found.iter().map(|f| f.reservation.id).collect();
        let mut seats = seats_of(conn, &ids).await?;
        for order in &mut found {
            order.reservation.seats = seats.remove(&order.reservation.id).unwrap_or_default();
        }
        Ok(found)
    }
    .traced("SELECT", "reservations")
    .await
}

#[cfg(test)]
mod tests {
    use super::containing;

    #[test]
    fn wildcards_typed_are_found_as_typed() {
        assert_eq!(containing("kim"), "%kim%");
        assert_eq!(containing("50%_off\\"), "%50\\%\\_off\\\\%");
    }
}
