//! The cap per fan in the decision: a fan's orders spread over the batches
//! of four workers are decided in their line order, one worker at a time,
//! and none that would take the fan past the cap wins.

mod common;

use std::collections::HashMap;

use ticket_core::domain::{QueueId, SeatId, UserId};
use ticket_core::testing::{TestDatabase, seed};
use ticket_worker::Mode;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_fans_orders_over_four_workers_win_in_line_order_up_to_the_cap() {
    for round in 0..4u32 {
        let (db, pool) = TestDatabase::migrated().await;
        let mut conn = pool.acquire().await.unwrap();
        let seats = seed::concert(&mut conn, 1, 64).await.unwrap();
        sqlx::query("UPDATE concerts SET max_seats_per_user = 8")
            .execute(&mut *conn)
            .await
            .unwrap();
        let users = seed::users(&mut conn, &format!("r{round}u"), 5)
            .await
            .unwrap();
        // Fans 0 and 1 each place six orders of 4, interleaved with each
        // other and with one-seat requests of fans 2 to 4.
        let mut orders: Vec<(UserId, Vec<SeatId>)> = Vec::new();
        let mut next = 0;
        for i in 0..6 {
            for fan in [0, 1] {
                orders.push((users[fan], seats[next..next + 4].to_vec()));
                next += 4;
            }
            orders.push((users[2 + i % 3], vec![seats[next]]));
            next += 1;
        }
        seed::orders(&mut conn, &orders).await.unwrap();
        drop(conn);
        // Batches of one or two: each fan's orders land in many batches.
        common::drain_with_workers(&db, 4, 1 + round % 2, Mode::Batch).await;

        let rows: Vec<(QueueId, UserId, String, Option<String>)> =
            sqlx::query_as("SELECT id, user_id, status, reason FROM reservation_queue ORDER BY id")
                .fetch_all(&pool)
                .await
                .unwrap();
        let mut seen: HashMap<UserId, usize> = HashMap::new();
        for (id, user, status, reason) in rows {
            let nth = seen.entry(user).or_default();
            *nth += 1;
            let expected = if user == users[0] || user == users[1] {
                // The first two orders in line make 8; the rest are over.
                if *nth <= 2 {
                    ("SUCCESS", None)
                } else {
                    ("FAILED", Some("USER_LIMIT_REACHED"))
                }
            } else {
                ("SUCCESS", None)
            };
            assert_eq!(
                (status.as_str(), reason.as_deref()),
                expected,
                "round {round}: request {id:?}, order {nth} of {user:?}"
            );
        }
        common::assert_invariants(&pool).await;
    }
}
