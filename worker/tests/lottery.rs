//! The pre-opening lottery from the workers' side: any number of workers
//! open a sale together and give every seat to the first in line; the
//! claim takes an opened lottery in its drawn order with nothing admitted,
//! and the count that places its requests is all or nothing.

mod common;

use std::time::Duration;

use chrono::Utc;
use common::assert_each_requested_seat_sold_once;
use ticket_core::db::{self, queue};
use ticket_core::domain::{ConcertId, SeatId, UserId};
use ticket_core::testing::{TestDatabase, inversions, seed, shuffle};
use ticket_worker::Mode;

/// `per_seat` requests for each of `seats` seats, shuffled, turned into
/// lottery requests (WAITING, random line keys drawn by the server's
/// seeded RAND) of a sale opening at `opens_at`.
async fn lottery(
    pool: &sqlx::MySqlPool,
    seats: u32,
    per_seat: usize,
    opens_at: chrono::DateTime<Utc>,
) -> (ConcertId, Vec<SeatId>) {
    let mut conn = pool.acquire().await.unwrap();
    let seat_ids = seed::concert(&mut conn, 1, seats).await.unwrap();
    let users = seed::users(&mut conn, "fan", seat_ids.len() * per_seat)
        .await
        .unwrap();
    let mut wanted: Vec<SeatId> = seat_ids.iter().flat_map(|&s| vec![s; per_seat]).collect();
    shuffle(&mut wanted, 15);
    let pairs: Vec<(UserId, SeatId)> = users.iter().copied().zip(wanted).collect();
    seed::requests(&mut conn, &pairs).await.unwrap();
    for sql in [
        "UPDATE reservation_queue SET status = 'WAITING', line_rank = NULL, \
         line_key = 2305843009213693952 + FLOOR(RAND(15) * 2305843009213693951)",
        "UPDATE request_seats rs JOIN reservation_queue q ON q.id = rs.queue_id SET rs.line_key = q.line_key",
        "UPDATE sale_lines SET after_entered = 0",
    ] {
        sqlx::query(sql).execute(&mut *conn).await.unwrap();
    }
    db::line::rank_unranked(&mut conn).await.unwrap();
    let (concert,): (ConcertId,) = sqlx::query_as("SELECT concert_id FROM seats WHERE id = ?")
        .bind(seat_ids[0])
        .fetch_one(&mut *conn)
        .await
        .unwrap();
    sqlx::query("UPDATE concerts SET opens_at = ? WHERE id = ?")
        .bind(opens_at.naive_utc())
        .bind(concert)
        .execute(&mut *conn)
        .await
        .unwrap();
    (concert, seat_ids)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn four_workers_open_a_sale_together_and_the_first_in_line_wins() {
    let (db, pool) = TestDatabase::migrated().await;
    let opens_at = Utc::now() + chrono::Duration::seconds(2);
    let (_, seats) = lottery(&pool, 1_000, 5, opens_at).await;
    // The workers are polling before the sale opens and open it together.
    common::drain_with_workers(&db, 4, 100, Mode::Batch).await;
    let mut conn = pool.acquire().await.unwrap();
    assert_eq!(
        inversions(&mut conn).await.unwrap(),
        0,
        "a later place took a seat first"
    );
    let (early,): (i64,) =
        sqlx::query_as("SELECT COUNT(*) FROM reservation_queue WHERE decided_at < ?")
            .bind(opens_at.naive_utc())
            .fetch_one(&mut *conn)
            .await
            .unwrap();
    assert_eq!(early, 0, "nothing is decided before the opening");
    assert_each_requested_seat_sold_once(&pool, seats.len(), seats.len() * 5).await;
    common::assert_invariants(&pool).await;
}

/// Nothing is admitted at the opening: the claim takes the lottery in its
/// drawn order at once, a worker killed while counting the lottery (for
/// positions) leaves nothing behind, and the count places every request
/// exactly where the line has it.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_opened_lottery_is_claimed_in_its_drawn_order_and_counted_once() {
    let (db, pool) = TestDatabase::migrated().await;
    let (concert, seats) = lottery(&pool, 200, 5, Utc::now() - chrono::Duration::seconds(1)).await;
    let mut conn = pool.acquire().await.unwrap();

    // A count cut short (its worker killed) leaves no trace.
    let mut tx = sqlx::Connection::begin(&mut *conn).await.unwrap();
    assert_eq!(
        db::line::count_lottery(&mut tx, concert).await.unwrap(),
        1_000
    );
    drop(tx);
    let (counted,): (Option<u64>,) =
        sqlx::query_as("SELECT lottery_counted FROM sale_lines WHERE concert_id = ?")
            .bind(concert)
            .fetch_one(&mut *conn)
            .await
            .unwrap();
    assert_eq!(counted, None);

    // Claimed as a worker would, without any opening step: the first 300
    // in the drawn order.
    let lease = queue::Lease {
        owner: "partial".into(),
        token: 7,
        until: ticket_core::testing::now() + chrono::Duration::seconds(30),
    };
    let claim = queue::claim(
        &mut conn,
        &lease,
        300,
        5,
        false,
        ticket_core::testing::now(),
    )
    .await
    .unwrap();
    assert_eq!(claim.ids.len(), 300);
    let (out_of_order,): (i64,) = sqlx::query_as(
        "SELECT COUNT(*) FROM reservation_queue p WHERE p.status = 'PROCESSING' AND EXISTS \
         (SELECT 1 FROM reservation_queue w WHERE w.status = 'WAITING' \
          AND (w.line_key, w.id) < (p.line_key, p.id))",
    )
    .fetch_one(&mut *conn)
    .await
    .unwrap();
    assert_eq!(out_of_order, 0, "a later draw was claimed first");

    // The count places each request at its rank in the drawn order.
    let mut tx = sqlx::Connection::begin(&mut *conn).await.unwrap();
    assert_eq!(
        db::line::count_lottery(&mut tx, concert).await.unwrap(),
        1_000
    );
    tx.commit().await.unwrap();
    let count = db::line::fronts(&mut conn, &[concert]).await.unwrap()[&concert]
        .lottery
        .expect("counted");
    let requests: Vec<(u64, u64, i64)> = sqlx::query_as(
        "SELECT p.id, p.line_key, (SELECT COUNT(*) FROM reservation_queue a \
           WHERE (a.line_key, a.id) < (p.line_key, p.id)) + 1 FROM reservation_queue p \
         ORDER BY p.id LIMIT 1000",
    )
    .fetch_all(&mut *conn)
    .await
    .unwrap();
    for (id, key, rank) in requests.into_iter().step_by(7) {
        let place = db::line::lottery_place(
            &mut conn,
            concert,
            count,
            ticket_core::domain::LineKey::from_stored(key),
            ticket_core::domain::QueueId(id),
        )
        .await
        .unwrap();
        assert_eq!(place, Some(rank.unsigned_abs()), "request {id}");
    }
    let report = ticket_worker::decide::batch(&mut conn, &claim.ids, 7, Duration::from_millis(20))
        .await
        .unwrap();
    assert_eq!(report.decided.deferred, 0, "{:?}", report.decided);
    drop(conn);
    // Any workers decide the rest, and the line is kept.
    common::drain_with_workers(&db, 2, 100, Mode::Batch).await;
    let mut conn = pool.acquire().await.unwrap();
    assert_eq!(inversions(&mut conn).await.unwrap(), 0);
    assert_each_requested_seat_sold_once(&pool, seats.len(), seats.len() * 5).await;
    common::assert_invariants(&pool).await;
}
