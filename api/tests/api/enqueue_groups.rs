//! Requests written together stay clean: a second click, an unknown seat or
//! a deleted account is refused alone, and the rest of the group is written.

use serde_json::json;
use ticket_core::db::queue::{self, NewRequest, Outcome, TraceContext};
use ticket_core::domain::{
    Asked, AskedPool, BestAsk, ConcertId, IdempotencyKey, LineKey, MaxSeatsPerUser, PoolName,
    QueueId, SeatId, SeatIds, UserId,
};

use crate::helpers::spawn_app;

/// The concert every test app has (the queue does not check it).
const CONCERT: ConcertId = ConcertId(1);

fn request(user: UserId, seat: SeatId) -> NewRequest {
    order(user, &[seat])
}

fn order(user: UserId, seats: &[SeatId]) -> NewRequest {
    let raw: Vec<u64> = seats.iter().map(|s| s.0).collect();
    NewRequest {
        user,
        concert: CONCERT,
        asked: Asked::Seats(SeatIds::parse(&raw).unwrap()),
        sale: ticket_core::domain::SaleWindow::default(),
        draw: LineKey::AFTER_OPENING,
        max_seats_per_user: MaxSeatsPerUser::parse(100).unwrap(),
        access_code: None,
        named: None,
        pools_version: 0,
        key: None,
        trace: TraceContext::default(),
    }
}

/// Writes `group` as the batcher does, in a transaction of its own.
async fn write_group(app: &crate::helpers::TestApp, group: &[NewRequest]) -> queue::Enqueued {
    let mut conn = app.pool.acquire().await.unwrap();
    let mut tx = sqlx::Connection::begin(&mut *conn).await.unwrap();
    let written = queue::enqueue_many(
        &mut tx,
        group,
        queue::GroupTime::at(queue::GroupClock::new().after(ticket_core::testing::now())),
    )
    .await
    .unwrap();
    tx.commit().await.unwrap();
    written
}

/// `count` of the category named `name` in `concert`, as the API read its
/// position (`pool`) before the group locked the line.
fn by_count(
    user: UserId,
    concert: ConcertId,
    pool: AskedPool,
    name: &str,
    count: u8,
) -> NewRequest {
    NewRequest {
        concert,
        asked: Asked::Best(BestAsk {
            pool,
            count,
            allow_split: false,
        }),
        named: Some(PoolName::Category(name.to_owned())),
        ..order(user, &[SeatId(1)])
    }
}

fn keyed(request: NewRequest, key: &str) -> NewRequest {
    NewRequest {
        key: Some(IdempotencyKey::parse(key).unwrap()),
        ..request
    }
}

/// Requests by count and keyed requests share a group with exact ones:
/// each pool named again under the line lock (the operator moved VIP
/// first meanwhile), a second click answered with the first request, and
/// what the group cannot settle (a second pool of one fan, a name no longer
/// the concert's, a key met twice) left to be written alone.
#[tokio::test]
async fn a_group_writes_requests_by_count_and_keyed_ones_beside_exact_seats() {
    let app = spawn_app().await;
    let concert = app
        .concert(json!({
            "rows": 2, "seatsPerRow": 4, "maxSeatsPerUser": 10,
            "categories": [
                {"name": "Standard", "price": 0, "currency": "EUR"},
                {"name": "VIP", "price": 0, "currency": "EUR", "rows": ["A"]},
            ],
        }))
        .await;
    let concert = ConcertId(concert["id"].as_u64().unwrap());
    let seats: Vec<SeatId> = app.seat_ids(16).await.into_iter().map(SeatId).collect();
    let (alice, alice_token) = app.user("alice").await;
    let (alice, bob, gone) = (
        UserId(alice),
        UserId(app.user("bob").await.0),
        UserId(app.user("gone").await.0),
    );
    sqlx::query("DELETE FROM users WHERE id = ?")
        .bind(gone)
        .execute(&app.pool)
        .await
        .unwrap();
    // The operator put VIP first, after the API had read VIP as the second.
    let moved = app
        .patch(
            &format!("/api/concerts/{}", concert.get()),
            Some(&app.admin_token),
            json!({"categories": [
                {"name": "VIP", "price": 0, "currency": "EUR", "rows": ["A"]},
                {"name": "Standard", "price": 0, "currency": "EUR"},
            ]}),
        )
        .await;
    moved.assert_status(200);
    let earlier = app
        .post(
            "/api/reservations",
            Some(&alice_token),
            json!({"concertId": concert.get(), "category": "Standard", "count": 2}),
        )
        .await;
    let earlier = QueueId(earlier.assert_status(201)["queueId"].as_u64().unwrap());
    let (vip_before, standard_before) = (AskedPool::Category(1), AskedPool::Category(0));
    let in_concert = |r: NewRequest| NewRequest { concert, ..r };
    let group = [
        by_count(alice, concert, standard_before, "Standard", 2), // clicked again
        by_count(bob, concert, vip_before, "vip", 2),
        by_count(bob, concert, standard_before, "Standard", 1), // bob's second pool
        by_count(gone, concert, vip_before, "VIP", 1),
        by_count(alice, concert, vip_before, "Balcony", 1), // no longer a category
        in_concert(request(bob, seats[8])),
        keyed(in_concert(request(alice, seats[9])), "k-1"),
        keyed(in_concert(request(alice, seats[10])), "k-1"), // the key again
    ];
    let written = write_group(&app, &group).await;
    let o = &written.outcomes;
    let (Outcome::Queued(bobs_vip), Outcome::Queued(bobs_seat), Outcome::Queued(alices_keyed)) =
        (o[1], o[5], o[6])
    else {
        panic!("{o:?}")
    };
    assert_eq!(
        o,
        &[
            Outcome::Duplicate(earlier),
            Outcome::Queued(bobs_vip),
            Outcome::Unsettled,
            Outcome::UserNotFound,
            Outcome::Unsettled,
            Outcome::Queued(bobs_seat),
            Outcome::Queued(alices_keyed),
            Outcome::Unsettled,
        ]
    );
    let fan = |user| ticket_core::domain::allocation::Fan { concert, user };
    assert_eq!(
        written.fan_seats.get(&fan(bob)),
        Some(&3),
        "2 by count, 1 seat"
    );
    assert_eq!(
        written.fan_seats.get(&fan(alice)),
        Some(&3),
        "2 by count, 1 seat"
    );
    let pools: Vec<(QueueId, u64, Option<u8>, u8)> = sqlx::query_as(
        "SELECT queue_id, user_id, category, seat_count FROM request_pools ORDER BY queue_id",
    )
    .fetch_all(&app.pool)
    .await
    .unwrap();
    assert_eq!(
        pools,
        [
            (earlier, alice.get(), Some(1), 2),
            (bobs_vip, bob.get(), Some(0), 2)
        ],
        "bob's VIP as it is now named"
    );
    let (key,): (Option<String>,) =
        sqlx::query_as("SELECT idempotency_key FROM reservation_queue WHERE id = ?")
            .bind(alices_keyed)
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(key.as_deref(), Some("k-1"));
    assert_eq!(app.count("reservation_queue").await, 4);
}

#[tokio::test]
async fn a_group_refuses_its_bad_requests_alone_and_writes_the_rest() {
    let app = spawn_app().await;
    let seats: Vec<SeatId> = app.seat_ids(4).await.into_iter().map(SeatId).collect();
    let mut conn = app.pool.acquire().await.unwrap();
    let users = ticket_core::testing::seed::users(&mut conn, "g", 3)
        .await
        .unwrap();
    let (alice, bob, gone) = (users[0], users[1], users[2]);
    sqlx::query("DELETE FROM users WHERE id = ?")
        .bind(gone)
        .execute(&mut *conn)
        .await
        .unwrap();
    let mut tx = sqlx::Connection::begin(&mut *conn).await.unwrap();
    let earlier = queue::enqueue_many(
        &mut tx,
        &[request(alice, seats[0])],
        queue::GroupTime::at(ticket_core::testing::now()),
    )
    .await
    .unwrap();
    let Outcome::Queued(earlier) = earlier.outcomes[0] else {
        panic!("{earlier:?}")
    };
    tx.commit().await.unwrap();

    let group = [
        request(alice, seats[0]), // clicked again
        request(bob, seats[1]),
        request(bob, seats[1]),          // twice in the same group
        request(alice, SeatId(999_999)), // no such seat
        request(gone, seats[2]),         // deleted since its token was issued
        request(alice, seats[3]),
    ];
    let written = write_group(&app, &group).await;
    let o = &written.outcomes;
    let (Outcome::Queued(bobs), Outcome::Queued(alices)) = (o[1], o[5]) else {
        panic!("{o:?}")
    };
    assert_eq!(
        o,
        &[
            Outcome::Duplicate(earlier),
            Outcome::Queued(bobs),
            Outcome::Duplicate(bobs),
            Outcome::SeatNotFound,
            Outcome::UserNotFound,
            Outcome::Queued(alices),
        ]
    );
    let fan = |user| ticket_core::domain::allocation::Fan {
        concert: CONCERT,
        user,
    };
    assert_eq!(written.fan_seats.get(&fan(alice)), Some(&2));
    assert_eq!(written.fan_seats.get(&fan(bob)), Some(&1));
    let rows: Vec<(QueueId, UserId, SeatId)> =
        sqlx::query_as("SELECT id, user_id, seat_id FROM reservation_queue ORDER BY id")
            .fetch_all(&app.pool)
            .await
            .unwrap();
    let mut expected = vec![
        (earlier, alice, seats[0]),
        (bobs, bob, seats[1]),
        (alices, alice, seats[3]),
    ];
    expected.sort();
    assert_eq!(rows, expected, "exactly the good requests were written");
}

#[tokio::test]
async fn a_second_click_is_told_where_the_first_request_is() {
    let app = spawn_app().await;
    let (_, token) = app.user("alice").await;
    let seat = app.seat_ids(1).await[0];
    let first = app.reserve(&token, seat).await;
    let queue_id = first.assert_status(201)["queueId"].as_u64().unwrap();
    for again in [
        app.reserve(&token, seat).await,
        // The keyed path finds the same request.
        crate::helpers::TestApp::reply(
            app.client
                .post(format!("{}/api/reservations", app.base))
                .bearer_auth(&token)
                .header("Idempotency-Key", "another-key")
                .json(&json!({"seatId": seat}))
                .send()
                .await
                .unwrap(),
        )
        .await,
    ] {
        let problem = again.assert_problem(409, "QUEUE_DUPLICATED");
        assert_eq!(problem["queueId"], queue_id);
        assert_eq!(
            again.headers.get("location").unwrap(),
            &format!("/api/reservations/status/{queue_id}")
        );
    }
    assert_eq!(app.count("reservation_queue").await, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_deleted_account_in_a_burst_is_refused_alone() {
    let app = spawn_app().await;
    let users = app.many_users("fan", 60).await;
    let seats = app.seat_ids(60).await;
    let (gone, _) = users[7];
    sqlx::query("DELETE FROM users WHERE id = ?")
        .bind(gone)
        .execute(&app.pool)
        .await
        .unwrap();
    let requests: Vec<(String, u64)> = users
        .iter()
        .zip(&seats)
        .map(|((_, token), &seat)| (token.clone(), seat))
        .collect();
    let replies = app.reserve_all_at_once(requests).await;
    for (i, reply) in replies.iter().enumerate() {
        if i == 7 {
            reply.assert_problem(401, "UNAUTHORIZED");
        } else {
            reply.assert_status(201);
        }
    }
    assert_eq!(app.count("reservation_queue").await, 59);
}
