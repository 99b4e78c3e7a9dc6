//! The pre-opening lottery from the workers' side: any number of workers
//! open a sale together and give every seat to the first in line, and an
//! opening cut short (a worker killed between its statements) lets nobody
//! overtake a lottery request still WAITING.

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
        "UPDATE reservation_queue SET status = 'WAITING', line_key = FLOOR(RAND(15) * 4611686018427387903)",
        "UPDATE request_seats rs JOIN reservation_queue q ON q.id = rs.queue_id SET rs.line_key = q.line_key",
    ] {
        sqlx::query(sql).execute(&mut *conn).await.unwrap();
    }
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

/// A worker killed after letting in the first part of a lottery leaves the
/// rest WAITING: the PENDING part is claimed and decided, and none of it
/// takes a seat that a WAITING request is ahead for (the lottery is let in
/// in its drawn order, ranked as it goes).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_opening_cut_short_lets_nobody_overtake_the_requests_still_waiting() {
    let (db, pool) = TestDatabase::migrated().await;
    let (concert, seats) = lottery(&pool, 200, 5, Utc::now() - chrono::Duration::seconds(1)).await;
    let mut conn = pool.acquire().await.unwrap();
    let mut tx = sqlx::Connection::begin(&mut *conn).await.unwrap();
    let admitted = db::line::admit_waiting(&mut tx, concert, 300, ticket_core::testing::now())
        .await
        .unwrap();
    tx.commit().await.unwrap();
    assert_eq!(admitted, 300);
    let (misranked,): (i64,) = sqlx::query_as(
        "SELECT COUNT(*) FROM reservation_queue p WHERE p.status = 'PENDING' AND (p.line_rank IS NULL \
         OR (SELECT COUNT(*) FROM reservation_queue a WHERE a.status = 'PENDING' \
             AND (a.line_key, a.id) < (p.line_key, p.id)) + 1 + (1 << 40) <> p.line_rank \
         OR EXISTS (SELECT 1 FROM reservation_queue w WHERE w.status = 'WAITING' \
                    AND (w.line_key, w.id) < (p.line_key, p.id)))",
    )
    .fetch_one(&mut *conn)
    .await
    .unwrap();
    assert_eq!(
        misranked, 0,
        "the first 300 in the drawn order, ranked 1..=300"
    );
    // Claimed and decided as a worker would, without the opening step.
    let lease = queue::Lease {
        owner: "partial".into(),
        token: 7,
        until: ticket_core::testing::now() + chrono::Duration::seconds(30),
    };
    let claim = queue::claim(
        &mut conn,
        &lease,
        1_000,
        5,
        false,
        ticket_core::testing::now(),
    )
    .await
    .unwrap();
    assert_eq!(claim.ids.len(), 300);
    let report = ticket_worker::decide::batch(&mut conn, &claim.ids, 7, Duration::from_millis(20))
        .await
        .unwrap();
    assert_eq!(report.decided.deferred, 0, "{:?}", report.decided);
    let (overtaken,): (i64,) = sqlx::query_as(
        "SELECT COUNT(*) FROM reservation_queue w WHERE w.status = 'SUCCESS' AND EXISTS \
         (SELECT 1 FROM reservation_queue e WHERE e.seat_id = w.seat_id AND e.status = 'WAITING' \
          AND e.line_key < w.line_key)",
    )
    .fetch_one(&mut *conn)
    .await
    .unwrap();
    assert_eq!(
        overtaken, 0,
        "a PENDING request went before a WAITING one ahead of it"
    );
    drop(conn);
    // Any worker lets in the rest, and the line is kept.
    common::drain_with_workers(&db, 2, 100, Mode::Batch).await;
    let mut conn = pool.acquire().await.unwrap();
    assert_eq!(inversions(&mut conn).await.unwrap(), 0);
    assert_each_requested_seat_sold_once(&pool, seats.len(), seats.len() * 5).await;
    common::assert_invariants(&pool).await;
}
