//! The line fronts an API instance reads every tick: many concerts cost a
//! few statements together, not a few each, and each front stays exact
//! (a request decided out of turn is not counted ahead of the others).

use ticket_core::db::{self, queue::QueueRow};
use ticket_core::domain::{ConcertId, QueueId, QueueStatus, UserId};
use ticket_core::testing::{TestDatabase, seed};

const CONCERTS: usize = 40;

async fn statements_so_far(conn: &mut sqlx::MySqlConnection) -> u64 {
    let (_, n): (String, String) = sqlx::query_as("SHOW SESSION STATUS LIKE 'Questions'")
        .fetch_one(&mut *conn)
        .await
        .unwrap();
    n.parse().unwrap()
}

#[tokio::test]
async fn forty_concerts_fronts_are_read_in_a_few_statements_and_stay_exact() {
    let (_db, pool) = TestDatabase::migrated().await;
    let mut conn = pool.acquire().await.unwrap();
    let users = seed::users(&mut conn, "fan", 3).await.unwrap();
    let mut concerts = Vec::new();
    for _ in 0..CONCERTS {
        let seats = seed::concert(&mut conn, 1, 3).await.unwrap();
        let pairs: Vec<(UserId, _)> = users.iter().copied().zip(seats).collect();
        seed::requests(&mut conn, &pairs).await.unwrap();
        let (concert,): (ConcertId,) = sqlx::query_as("SELECT concert_id FROM seats WHERE id = ?")
            .bind(pairs[0].1)
            .fetch_one(&mut *conn)
            .await
            .unwrap();
        concerts.push(concert);
    }
    // In every concert the second of three is decided out of turn (as a
    // second worker may, while the first still holds the first).
    sqlx::query(
        "UPDATE reservation_queue q JOIN \
           (SELECT concert_id, MIN(id) + 1 AS second FROM reservation_queue GROUP BY concert_id) s \
           ON q.id = s.second \
         SET q.status = 'FAILED', q.reason = 'SEAT_TAKEN', q.decided_at = UTC_TIMESTAMP(6)",
    )
    .execute(&mut *conn)
    .await
    .unwrap();

    let before = statements_so_far(&mut conn).await;
    let lines = db::line::fronts(&mut conn, &concerts).await.unwrap();
    // The count's own SHOW is one of them.
    let statements = statements_so_far(&mut conn).await - before - 1;
    assert!(
        statements <= 5,
        "{statements} statements for {CONCERTS} concerts"
    );

    let ids: Vec<(QueueId,)> = sqlx::query_as("SELECT id FROM reservation_queue ORDER BY id")
        .fetch_all(&mut *conn)
        .await
        .unwrap();
    let mut rows: Vec<QueueRow> = Vec::new();
    for (id,) in ids {
        rows.push(db::queue::find(&mut conn, id).await.unwrap().unwrap());
    }
    for concert in &concerts {
        let line = &lines[concert].front;
        let of: Vec<&QueueRow> = rows.iter().filter(|r| r.concert_id == *concert).collect();
        assert_eq!(of.len(), 3);
        assert_eq!(of[1].status, QueueStatus::Failed);
        let place = |row: &QueueRow| line.position(row.line_rank.unwrap(), row.line_key);
        assert_eq!(place(of[0]), 1, "concert {concert:?}");
        assert_eq!(place(of[2]), 2, "the one decided out of turn is not ahead");
        assert_eq!(line.length(), 2);
    }
}
