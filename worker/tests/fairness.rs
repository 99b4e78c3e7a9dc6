//! First come, first served with any number of workers: for every seat the
//! SUCCESS is its earliest request, even when the requests for one seat are
//! spread over the batches of workers deciding at the same time.

mod common;

use common::assert_each_requested_seat_sold_once;
use ticket_core::domain::{SeatId, UserId};
use ticket_core::testing::{TestDatabase, inversions, seed, shuffle};
use ticket_worker::Mode;

/// Claimed and decided in one transaction each (the default).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn four_workers_give_every_seat_to_its_earliest_request() {
    earliest_wins_with_four(Mode::Batch).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn four_workers_claiming_under_leases_give_every_seat_to_its_earliest_request() {
    earliest_wins_with_four(Mode::LeasedBatch).await;
}

async fn earliest_wins_with_four(mode: Mode) {
    let (db, pool) = TestDatabase::migrated().await;
    let mut conn = pool.acquire().await.unwrap();
    let seats = seed::concert(&mut conn, 10, 100).await.unwrap();
    let users = seed::users(&mut conn, "fan", 5_000).await.unwrap();
    // Five requests per seat, in a shuffled order: every batch holds
    // requests for seats whose earlier requests are in other batches.
    let mut wanted: Vec<SeatId> = seats.iter().flat_map(|&s| [s; 5]).collect();
    shuffle(&mut wanted, 12);
    let pairs: Vec<(UserId, SeatId)> = users.iter().copied().zip(wanted).collect();
    seed::requests(&mut conn, &pairs).await.unwrap();
    drop(conn);

    let decided = common::drain_with_workers(&db, 4, 100, mode).await;
    let inverted = inversions(&mut pool.acquire().await.unwrap())
        .await
        .unwrap();
    println!("inversions: {inverted} of 1000 seats");
    assert_eq!(inverted, 0, "a later request took a seat first");
    assert_each_requested_seat_sold_once(&pool, 1_000, 5_000).await;
    let (max_attempts,): (u32,) = sqlx::query_as("SELECT MAX(attempts) FROM reservation_queue")
        .fetch_one(&pool)
        .await
        .unwrap();
    // A lease counts the claim that decided; one transaction counts none.
    let claims = u32::from(mode == Mode::LeasedBatch);
    assert_eq!(
        max_attempts, claims,
        "waiting behind an earlier request costs no attempt"
    );
    assert_eq!(decided.iter().sum::<u64>(), 5_000);
    assert!(
        decided.iter().filter(|&&n| n > 0).count() > 1,
        "the work was shared: {decided:?}"
    );
}
