//! Offers never starve: every list with a free seat and a fan waiting gets
//! its offer whatever the number of lists, and fans who cannot take the
//! seats (waiting for more than are free, at their cap) hold back nobody
//! behind them.

mod common;

use std::time::{Duration, Instant};

use common::scalar;
use sqlx::MySqlPool;
use ticket_core::domain::{SeatId, UserId};
use ticket_core::testing::{TestDatabase, seed};
use ticket_worker::waiting_list::Offers;

/// A concert of `seats` seats, all sold but the first `free`; its id and
/// seats.
async fn concert(pool: &MySqlPool, seats: u32, free: usize) -> (u64, Vec<SeatId>) {
    let (concert, ids) = common::seeded_concert(pool, seats).await;
    for seat in &ids[free..] {
        sqlx::query("UPDATE seats SET status = 'RESERVED' WHERE id = ?")
            .bind(seat)
            .execute(pool)
            .await
            .unwrap();
    }
    common::open_waiting_list(pool, concert).await;
    (concert.get(), ids)
}

/// `fans` join `concert`'s list in this order, each waiting for `seats`.
async fn waiting(pool: &MySqlPool, concert: u64, fans: &[UserId], seats: u8) {
    let mut insert = sqlx::QueryBuilder::new(
        "INSERT INTO waiting_list_entries (concert_id, user_id, seats, created_at) ",
    );
    insert.push_values(fans, |mut row, fan| {
        row.push_bind(concert)
            .push_bind(*fan)
            .push_bind(seats)
            .push("UTC_TIMESTAMP(6)");
    });
    insert.build().execute(pool).await.unwrap();
}

async fn status_of(pool: &MySqlPool, concert: u64, fan: UserId) -> String {
    sqlx::query_scalar(
        "SELECT status FROM waiting_list_entries WHERE concert_id = ? AND user_id = ?",
    )
    .bind(concert)
    .bind(fan)
    .fetch_one(pool)
    .await
    .unwrap()
}

/// 300 sold-out concerts with fans waiting: a seat freed in the newest is
/// offered within 5 s (a pass once looked at the 100 oldest lists only).
#[tokio::test]
async fn a_seat_freed_in_the_newest_of_300_lists_is_offered_within_five_seconds() {
    let (_db, pool) = TestDatabase::migrated().await;
    let fans = {
        let mut conn = pool.acquire().await.unwrap();
        seed::users(&mut conn, "fan", 300).await.unwrap()
    };
    let mut concerts = Vec::new();
    for fan in &fans {
        let (concert, seats) = concert(&pool, 1, 0).await;
        waiting(&pool, concert, &[*fan], 1).await;
        concerts.push((concert, seats[0], *fan));
    }
    let &(newest, seat, fan) = concerts.last().unwrap();
    let shutdown = tokio_util::sync::CancellationToken::new();
    let offering = tokio::spawn(Offers::new(pool.clone()).run(shutdown.clone()));
    // Passes run over the lists with nothing free meanwhile.
    let freed = Instant::now();
    sqlx::query("UPDATE seats SET status = 'AVAILABLE' WHERE id = ?")
        .bind(seat)
        .execute(&pool)
        .await
        .unwrap();
    while status_of(&pool, newest, fan).await != "OFFERED" {
        assert!(
            freed.elapsed() < Duration::from_secs(5),
            "the newest list's seat was not offered in 5 s"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    shutdown.cancel();
    offering.await.unwrap();
    assert_eq!(
        scalar(
            &pool,
            "SELECT COUNT(*) FROM waiting_list_entries WHERE status = 'OFFERED'"
        )
        .await,
        1
    );
}

/// 600 fans ahead who cannot take the one free seat (300 waiting for two,
/// 300 at the cap of one with a request open) do not keep it from the fan
/// behind them who can.
#[tokio::test]
async fn six_hundred_fans_who_cannot_take_a_seat_hold_back_nobody() {
    let (_db, pool) = TestDatabase::migrated().await;
    let fans = {
        let mut conn = pool.acquire().await.unwrap();
        seed::users(&mut conn, "fan", 601).await.unwrap()
    };
    let (concert, seats) = concert(&pool, 2, 1).await;
    sqlx::query("UPDATE concerts SET max_seats_per_user = 1 WHERE id = ?")
        .bind(concert)
        .execute(&pool)
        .await
        .unwrap();
    let (for_two, capped) = fans[..600].split_at(300);
    waiting(&pool, concert, for_two, 2).await;
    waiting(&pool, concert, capped, 1).await;
    let behind = fans[600];
    waiting(&pool, concert, &[behind], 1).await;
    // The capped fans each have a request open for the sold seat.
    let mut conn = pool.acquire().await.unwrap();
    let open: Vec<(UserId, SeatId)> = capped.iter().map(|fan| (*fan, seats[1])).collect();
    seed::requests(&mut conn, &open).await.unwrap();
    drop(conn);

    let made = Offers::new(pool.clone()).offer_once().await.unwrap();
    assert_eq!(made.len(), 1, "{made:?}");
    assert_eq!(made[0].fan, behind);
    assert_eq!(made[0].seats, vec![seats[0]]);
    assert_eq!(status_of(&pool, concert, behind).await, "OFFERED");
}
