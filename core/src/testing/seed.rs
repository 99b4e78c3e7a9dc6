//! Bulk data for tests and benchmarks, written straight to the tables.

use sqlx::{MySqlConnection, QueryBuilder};

use crate::db;
use crate::domain::{ConcertDate, ConcertId, ConcertTitle, SeatId, SeatLayout, UserId, Venue};

/// `n` users named `{prefix}{i}` that cannot log in (their hash is not a
/// hash): for exercising reservations without paying for Argon2.
pub async fn users(
    conn: &mut MySqlConnection,
    prefix: &str,
    n: usize,
) -> Result<Vec<UserId>, sqlx::Error> {
    let now = db::now(&mut *conn).await?.naive_utc();
    for chunk in (0..n).collect::<Vec<_>>().chunks(5_000) {
        let mut insert = QueryBuilder::new(
            "INSERT INTO users (nickname, password_hash, role, created_at, updated_at) ",
        );
        insert.push_values(chunk, |mut row, i| {
            row.push_bind(format!("{prefix}{i}"))
                .push_bind("!")
                .push_bind("USER")
                .push_bind(now)
                .push_bind(now);
        });
        insert.build().execute(&mut *conn).await?;
    }
    let ids: Vec<(UserId,)> =
        sqlx::query_as("SELECT id FROM users WHERE nickname LIKE ? ORDER BY id")
            .bind(format!("{prefix}%"))
            .fetch_all(conn)
            .await?;
    Ok(ids.into_iter().map(|(id,)| id).collect())
}

/// A concert in 2099 with `rows` × `per_row` seats; returns the seat ids.
pub async fn concert(
    conn: &mut MySqlConnection,
    rows: u32,
    per_row: u32,
) -> Result<Vec<SeatId>, sqlx::Error> {
    let layout = SeatLayout::parse(Some(rows), Some(per_row))
        .map_err(|e| sqlx::Error::Protocol(e.to_string()))?;
    let date = ConcertDate::parse("2099-01-01T00:00:00Z", chrono::Utc::now())
        .map_err(|e| sqlx::Error::Protocol(e.to_string()))?;
    let title = ConcertTitle::parse("seeded").map_err(|e| sqlx::Error::Protocol(e.to_string()))?;
    let venue = Venue::parse("seeded").map_err(|e| sqlx::Error::Protocol(e.to_string()))?;
    let now = db::now(&mut *conn).await?;
    let billing = db::concerts::Billing {
        organizer: db::organizers::DEFAULT,
        title: &title,
        venue: &venue,
        date,
    };
    let id = db::concerts::insert_with_seats(
        &mut *conn,
        billing,
        layout,
        db::concerts::Settings::default(),
        now,
    )
    .await?;
    let seats: Vec<(SeatId,)> =
        sqlx::query_as("SELECT id FROM seats WHERE concert_id = ? ORDER BY id")
            .bind(id)
            .fetch_all(conn)
            .await?;
    Ok(seats.into_iter().map(|(id,)| id).collect())
}

/// PENDING requests, queued in the order given.
pub async fn requests(
    conn: &mut MySqlConnection,
    requests: &[(UserId, SeatId)],
) -> Result<(), sqlx::Error> {
    traced_requests(conn, requests, 1.0).await
}

/// Like [`requests`], with `sampled` (0 to 1) of the rows' trace contexts
/// marked sampled, as the API's sampler would have left them.
pub async fn traced_requests(
    conn: &mut MySqlConnection,
    requests: &[(UserId, SeatId)],
    sampled: f64,
) -> Result<(), sqlx::Error> {
    let now = db::now(&mut *conn).await?.naive_utc();
    // Each row carries a trace context of its own, as the API stores it,
    // so that the worker's tracing does its real work.
    let mut state = now.and_utc().timestamp_nanos_opt().unwrap_or(1) as u64;
    let mut random = move || super::splitmix64(&mut state) | 1;
    let concerts = concerts_of(conn, requests.iter().map(|(_, seat)| *seat)).await?;
    for chunk in requests.chunks(5_000) {
        let mut insert = QueryBuilder::new(
            "INSERT INTO reservation_queue (user_id, concert_id, seat_id, status, traceparent, created_at, updated_at) ",
        );
        insert.push_values(chunk, |mut row, (user, seat)| {
            let flags = u8::from(((random() >> 11) as f64 / (1u64 << 53) as f64) < sampled);
            let traceparent = format!(
                "00-{:016x}{:016x}-{:016x}-{flags:02x}",
                random(),
                random(),
                random()
            );
            row.push_bind(*user)
                .push_bind(
                    concerts
                        .get(seat)
                        .copied()
                        .unwrap_or(crate::domain::ConcertId(0)),
                )
                .push_bind(*seat)
                .push_bind("PENDING")
                .push_bind(traceparent)
                .push_bind(now)
                .push_bind(now);
        });
        insert.build().execute(&mut *conn).await?;
    }
    seats_of_requests(conn).await
}

/// PENDING orders of one or more seats each (ids sorted, distinct),
/// queued in the order given; returns their queue ids.
pub async fn orders(
    conn: &mut MySqlConnection,
    orders: &[(UserId, Vec<SeatId>)],
) -> Result<Vec<crate::domain::QueueId>, sqlx::Error> {
    let concerts = concerts_of(conn, orders.iter().flat_map(|(_, s)| s.iter().copied())).await?;
    let now = db::now(&mut *conn).await?.naive_utc();
    let mut ids = Vec::with_capacity(orders.len());
    for chunk in orders.chunks(2_000) {
        let mut insert = QueryBuilder::new(
            "INSERT INTO reservation_queue (user_id, concert_id, seat_id, seat_count, status, created_at, updated_at) ",
        );
        insert.push_values(chunk, |mut row, (user, seats)| {
            row.push_bind(*user)
                .push_bind(
                    concerts
                        .get(&seats[0])
                        .copied()
                        .unwrap_or(crate::domain::ConcertId(0)),
                )
                .push_bind(seats[0])
                .push_bind(seats.len() as u8)
                .push_bind("PENDING")
                .push_bind(now)
                .push_bind(now);
        });
        let first = insert.build().execute(&mut *conn).await?.last_insert_id();
        // One writer: the rows got consecutive ids, in the order given.
        let written: Vec<(crate::domain::QueueId, UserId)> = sqlx::query_as(
            "SELECT id, user_id FROM reservation_queue WHERE id >= ? ORDER BY id LIMIT ?",
        )
        .bind(first)
        .bind(chunk.len() as u64)
        .fetch_all(&mut *conn)
        .await?;
        let mut seats = QueryBuilder::new(
            "INSERT INTO request_seats (queue_id, seat_id, user_id, concert_id, is_open) ",
        );
        let rows: Vec<_> = written
            .iter()
            .zip(chunk)
            .flat_map(|((id, user), (_, wanted))| {
                wanted.iter().map(move |seat| (*id, *seat, *user))
            })
            .collect();
        seats.push_values(&rows, |mut row, (id, seat, user)| {
            row.push_bind(*id)
                .push_bind(*seat)
                .push_bind(*user)
                .push_bind(
                    concerts
                        .get(seat)
                        .copied()
                        .unwrap_or(crate::domain::ConcertId(0)),
                )
                .push_bind(1_i8);
        });
        seats.build().execute(&mut *conn).await?;
        ids.extend(written.into_iter().map(|(id, _)| id));
    }
    db::line::rank_unranked(conn).await?;
    Ok(ids)
}

/// Puts every seat of `concert` in one free price category, "Stalls" (its
/// position 0), as best-available requests need.
pub async fn one_category(
    conn: &mut MySqlConnection,
    concert: ConcertId,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO price_categories (concert_id, position, name, price, currency, row_labels) \
         VALUES (?, 0, 'Stalls', 0, 'EUR', '')",
    )
    .bind(concert)
    .execute(&mut *conn)
    .await?;
    sqlx::query("UPDATE seats SET category = 0 WHERE concert_id = ?")
        .bind(concert)
        .execute(&mut *conn)
        .await?;
    Ok(())
}

/// Gives `concert` a standing area "Floor" of `capacity` places, in its
/// first price category (if it has any), as the API's create does.
pub async fn floor(
    conn: &mut MySqlConnection,
    concert: ConcertId,
    capacity: u64,
) -> Result<(), sqlx::Error> {
    use crate::domain::standing_area::{AreaInput, StandingAreas};
    let input = [AreaInput {
        name: "Floor",
        capacity,
        category: None,
    }];
    let areas = StandingAreas::parse(&input).map_err(|e| sqlx::Error::Protocol(e.to_string()))?;
    let categories = db::prices::of_concert(&mut *conn, concert).await?;
    let now = db::now(&mut *conn).await?;
    db::standing_areas::replace(conn, concert, &areas, categories.as_ref(), now).await
}

/// Makes every seat of `concert` a place of one standing area, "Floor"
/// (its position 0; no price), entry numbers in id order.
pub async fn one_area(conn: &mut MySqlConnection, concert: ConcertId) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO standing_areas (concert_id, position, name, capacity, category_name) \
         SELECT concert_id, 0, 'Floor', COUNT(*), NULL FROM seats WHERE concert_id = ? GROUP BY concert_id",
    )
    .bind(concert)
    .execute(&mut *conn)
    .await?;
    sqlx::query(
        "UPDATE seats s JOIN (SELECT MIN(id) AS first FROM seats WHERE concert_id = ?) f \
            SET s.area = 0, s.category = NULL, s.row_index = ?, \
                s.row_position = s.id - f.first, s.seat_rank = s.id - f.first \
          WHERE s.concert_id = ?",
    )
    .bind(concert)
    .bind(crate::domain::standing_area::row_of_area(0))
    .bind(concert)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// PENDING requests by count, each for `count` places of `concert`'s
/// `pool` (category 0 side by side, see [`one_category`], or area 0, see
/// [`one_area`]), queued in the order given.
pub async fn best_requests(
    conn: &mut MySqlConnection,
    concert: ConcertId,
    users: &[UserId],
    count: u8,
    pool: crate::domain::AskedPool,
) -> Result<(), sqlx::Error> {
    let now = db::now(&mut *conn).await?.naive_utc();
    for chunk in users.chunks(5_000) {
        let mut insert = QueryBuilder::new(
            "INSERT INTO reservation_queue (user_id, concert_id, seat_id, seat_count, status, created_at, updated_at) ",
        );
        insert.push_values(chunk, |mut row, user| {
            row.push_bind(*user)
                .push_bind(concert)
                .push_bind(None::<SeatId>)
                .push_bind(count)
                .push_bind("PENDING")
                .push_bind(now)
                .push_bind(now);
        });
        let first = insert.build().execute(&mut *conn).await?.last_insert_id();
        // One writer: the rows got consecutive ids, in the order given.
        sqlx::query(
            "INSERT INTO request_pools (queue_id, user_id, concert_id, category, area, seat_count, line_key, is_open) \
             SELECT id, user_id, concert_id, ?, ?, seat_count, line_key, 1 FROM reservation_queue \
              WHERE id >= ? ORDER BY id LIMIT ?",
        )
        .bind(pool.category())
        .bind(pool.area())
        .bind(first)
        .bind(chunk.len() as u64)
        .execute(&mut *conn)
        .await?;
    }
    db::line::rank_unranked(conn).await?;
    Ok(())
}

/// The concert of each seat.
pub async fn concerts_of(
    conn: &mut MySqlConnection,
    seats: impl Iterator<Item = SeatId>,
) -> Result<std::collections::HashMap<SeatId, crate::domain::ConcertId>, sqlx::Error> {
    let mut seats: Vec<SeatId> = seats.collect();
    seats.sort_unstable();
    seats.dedup();
    let mut concerts = std::collections::HashMap::with_capacity(seats.len());
    for chunk in seats.chunks(1_000) {
        for (seat, concert, _) in db::seats::order_facts(&mut *conn, chunk).await? {
            concerts.insert(seat, concert);
        }
    }
    Ok(concerts)
}

/// Gives every queue row written straight to the table (with its
/// `seat_id` and `concert_id`) and not yet given its seats the one seat
/// it names, open while the row is, and open rows their ranks in line, as
/// the API's enqueue writes them.
pub async fn seats_of_requests(conn: &mut MySqlConnection) -> Result<(), sqlx::Error> {
    db::line::rank_unranked(&mut *conn).await?;
    sqlx::query(
        "INSERT INTO request_seats (queue_id, seat_id, user_id, concert_id, is_open) \
         SELECT q.id, q.seat_id, q.user_id, q.concert_id, IF(q.status IN ('PENDING', 'PROCESSING'), 1, 0) \
         FROM reservation_queue q WHERE NOT EXISTS (SELECT 1 FROM request_seats x WHERE x.queue_id = q.id)",
    )
    .execute(conn)
    .await?;
    Ok(())
}
