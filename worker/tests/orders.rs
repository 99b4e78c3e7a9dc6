//! Orders of several seats decided by several workers at once: all or
//! nothing, and in queue order, exactly as one clerk taking the requests one
//! by one would have decided them.

mod common;

use std::collections::{BTreeSet, HashMap, HashSet};

use ticket_core::domain::{QueueId, SeatId, UserId};
use ticket_core::testing::{TestDatabase, seed, shuffle};
use ticket_worker::Mode;

/// What deciding the orders one at a time, in queue order, gives: the
/// orders that win.
fn one_by_one(orders: &[(QueueId, Vec<SeatId>)]) -> BTreeSet<QueueId> {
    let mut taken = HashSet::new();
    let mut won = BTreeSet::new();
    for (id, seats) in orders {
        if seats.iter().all(|s| !taken.contains(s)) {
            taken.extend(seats.iter().copied());
            won.insert(*id);
        }
    }
    won
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn four_workers_decide_overlapping_orders_as_one_clerk_in_line_would() {
    let (db, pool) = TestDatabase::migrated().await;
    let mut conn = pool.acquire().await.unwrap();
    let seats = seed::concert(&mut conn, 5, 100).await.unwrap();
    let users = seed::users(&mut conn, "fan", 2_000).await.unwrap();
    // Orders of 1 to 4 neighbouring seats, from anywhere in the hall, in
    // a shuffled order: most seats are wanted by several orders, and most
    // orders that lose do so on one seat of several.
    let mut starts: Vec<usize> = (0..2_000).map(|i| (i * 7) % (seats.len() - 4)).collect();
    shuffle(&mut starts, 14);
    let wanted: Vec<(UserId, Vec<SeatId>)> = users
        .iter()
        .zip(&starts)
        .enumerate()
        .map(|(i, (user, &start))| (*user, seats[start..start + 1 + i % 4].to_vec()))
        .collect();
    let ids = seed::orders(&mut conn, &wanted).await.unwrap();
    drop(conn);
    let orders: Vec<(QueueId, Vec<SeatId>)> = ids
        .iter()
        .copied()
        .zip(wanted.iter().map(|(_, s)| s.clone()))
        .collect();
    let expected = one_by_one(&orders);

    common::drain_with_workers(&db, 4, 100, Mode::Batch).await;
    let rows: Vec<(QueueId, String, Option<String>, Option<u64>)> = sqlx::query_as(
        "SELECT id, status, reason, reservation_id FROM reservation_queue ORDER BY id",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    let won: BTreeSet<QueueId> = rows
        .iter()
        .filter(|(_, status, ..)| status == "SUCCESS")
        .map(|(id, ..)| *id)
        .collect();
    assert!(
        rows.iter()
            .all(|(_, s, r, _)| s == "SUCCESS" || r.as_deref() == Some("SEAT_TAKEN")),
        "every order was decided, and a lost one lost a seat"
    );
    let differing: Vec<_> = expected.symmetric_difference(&won).collect();
    println!(
        "{} of {} orders won; {} decided otherwise than in line",
        won.len(),
        orders.len(),
        differing.len()
    );
    assert!(differing.is_empty(), "differ from the line: {differing:?}");
    assert!(won.len() > 100 && won.len() < 1_900, "a contested sale");

    // Each winner holds every seat it asked for, and only those.
    let claims: Vec<(u64, SeatId)> = sqlx::query_as(
        "SELECT q.id, rs.seat_id FROM reservation_queue q \
         JOIN reservation_seats rs ON rs.reservation_id = q.reservation_id ORDER BY q.id, rs.seat_id",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    let mut held: HashMap<u64, Vec<SeatId>> = HashMap::new();
    for (id, seat) in claims {
        held.entry(id).or_default().push(seat);
    }
    for (id, seats) in &orders {
        if won.contains(id) {
            assert_eq!(held.get(&id.0), Some(seats), "order {id}");
        }
    }
    ticket_core::testing::assert_invariants(&pool).await;
    let (max_attempts,): (u32,) = sqlx::query_as("SELECT MAX(attempts) FROM reservation_queue")
        .fetch_one(&pool)
        .await
        .unwrap();
    // Claimed and decided in one transaction, a row counts no attempt.
    assert_eq!(max_attempts, 0, "waiting in line costs no attempt");
}
