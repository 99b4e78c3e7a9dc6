//! Writers that meet on the same seats wait for each other, never in a
//! cycle, and a decision that waited for a seat sees it as it is now: an
//! enqueued group against a confirm, a decision against requests still
//! being enqueued, a decision against a cancel. Each test holds one side's
//! locks open in a transaction and lets the other run into them.

mod common;

use std::time::Duration;

use sqlx::{Connection as _, MySqlConnection, MySqlPool};
use ticket_core::db::outbox;
use ticket_core::db::queue::{self, GroupClock, NewRequest, Outcome, TraceContext};
use ticket_core::db::{reservations, seats};
use ticket_core::domain::events::EventKind;
use ticket_core::domain::{
    Asked, ConcertId, LineKey, QueueId, ReservationId, ReservationStatus, SeatId, SeatIds, UserId,
};
use ticket_core::testing::{TestDatabase, seed};

/// A concert of one row of ten seats whose won requests are held (ten
/// minutes), and three users.
async fn hall(pool: &MySqlPool) -> (Vec<SeatId>, Vec<UserId>) {
    let mut conn = pool.acquire().await.unwrap();
    let seats = seed::concert(&mut conn, 1, 10).await.unwrap();
    common::run(pool, "UPDATE concerts SET hold_seconds = 600").await;
    let users = seed::users(&mut conn, "fan", 3).await.unwrap();
    (seats, users)
}

fn lease(token: u64) -> queue::Lease {
    queue::Lease {
        owner: format!("test-{token}"),
        token,
        until: ticket_core::testing::now() + chrono::Duration::seconds(60),
    }
}

/// Claims every PENDING request and decides them as one batch.
async fn claim_and_decide(conn: &mut MySqlConnection, token: u64) -> Vec<QueueId> {
    let claim = queue::claim(
        conn,
        &lease(token),
        100,
        5,
        false,
        ticket_core::testing::now(),
    )
    .await
    .unwrap();
    ticket_worker::decide::batch(conn, &claim.ids, token, Duration::from_millis(20))
        .await
        .unwrap();
    claim.ids
}

/// The reservation a user's order won (held).
async fn held_order(pool: &MySqlPool, user: UserId, wanted: &[SeatId]) -> ReservationId {
    let mut conn = pool.acquire().await.unwrap();
    seed::orders(&mut conn, &[(user, wanted.to_vec())])
        .await
        .unwrap();
    claim_and_decide(&mut conn, 1).await;
    let (id,): (ReservationId,) =
        sqlx::query_as("SELECT id FROM reservations WHERE user_id = ? AND status = 'HELD'")
            .bind(user)
            .fetch_one(&mut *conn)
            .await
            .unwrap();
    id
}

/// The server's id of a connection's session (its transaction's
/// `trx_mysql_thread_id`).
async fn session_id(conn: &mut MySqlConnection) -> u64 {
    let (id,): (u64,) = sqlx::query_as("SELECT CONNECTION_ID()")
        .fetch_one(conn)
        .await
        .unwrap();
    id
}

/// Waits until the session's transaction waits for a row lock (polled);
/// fails if the task running it ends first.
async fn until_waiting<T>(pool: &MySqlPool, session: u64, task: &tokio::task::JoinHandle<T>) {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let (waiting,): (i64,) = sqlx::query_as(
            "SELECT COUNT(*) FROM information_schema.INNODB_TRX \
             WHERE trx_mysql_thread_id = ? AND trx_state = 'LOCK WAIT'",
        )
        .bind(session)
        .fetch_one(pool)
        .await
        .unwrap();
        if waiting > 0 {
            return;
        }
        assert!(!task.is_finished(), "it ended without waiting for a lock");
        assert!(
            std::time::Instant::now() < deadline,
            "it never waited for a lock"
        );
        // The server refreshes INNODB_TRX for a reader only when it was
        // last filled over 0.1 s ago: polled faster, it never changes.
        tokio::time::sleep(Duration::from_millis(150)).await;
    }
}

/// A connection that gives up on a row lock after `seconds`, so that a wait
/// the test does not expect fails it instead of hanging it.
async fn impatient(pool: &MySqlPool, seconds: u32) -> sqlx::pool::PoolConnection<sqlx::MySql> {
    let mut conn = pool.acquire().await.unwrap();
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "SET SESSION innodb_lock_wait_timeout = {seconds}"
    )))
    .execute(&mut *conn)
    .await
    .unwrap();
    conn
}

async fn concert_of(pool: &MySqlPool, seat: SeatId) -> ConcertId {
    let mut conn = pool.acquire().await.unwrap();
    seed::concerts_of(&mut conn, std::iter::once(seat))
        .await
        .unwrap()[&seat]
}

fn request(user: UserId, concert: ConcertId, wanted: &[SeatId]) -> NewRequest {
    NewRequest {
        user,
        concert,
        asked: Asked::Seats(
            SeatIds::parse(&wanted.iter().map(|s| s.0).collect::<Vec<_>>()).unwrap(),
        ),
        sale: ticket_core::domain::SaleWindow::default(),
        draw: LineKey::AFTER_OPENING,
        max_seats_per_user: ticket_core::domain::MaxSeatsPerUser::parse(100).unwrap(),
        access_code: None,
        named: None,
        pools_version: 0,
        key: None,
        trace: TraceContext::default(),
    }
}

/// A group of an order for seats 2 and 3 and another for seat 4 meets a
/// confirm of seats 3 and 4 that holds seat 3 and then takes seat 4. The
/// group's foreign-key checks took 2, 4, then waited for 3: a cycle, and
/// one of them failed with a deadlock. Now the group takes its seats in id
/// order first, so it waits for 3 holding only 2, and the confirm goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_enqueued_group_takes_its_seats_in_id_order_so_a_confirm_never_waits_for_it() {
    let (_db, pool) = TestDatabase::migrated().await;
    let (seats, users) = hall(&pool).await;
    let concert = concert_of(&pool, seats[3]).await;

    let mut confirm = impatient(&pool, 10).await;
    let mut confirm = confirm.begin().await.unwrap();
    seats::lock_all(&mut confirm, &[seats[3]]).await.unwrap();

    let group = vec![
        request(users[1], concert, &[seats[2], seats[3]]),
        request(users[2], concert, &[seats[4]]),
    ];
    let mut writer = impatient(&pool, 10).await;
    let session = session_id(&mut writer).await;
    let enqueue = tokio::spawn(async move {
        let mut tx = writer.begin().await?;
        let time = queue::GroupTime::at(GroupClock::new().after(ticket_core::testing::now()));
        let enqueued = queue::enqueue_many(&mut tx, &group, time).await?;
        ticket_core::db::line::rank_entered(&mut tx, &enqueued.entered(&group, time)).await?;
        tx.commit().await?;
        Ok::<_, sqlx::Error>(enqueued)
    });
    until_waiting(&pool, session, &enqueue).await;

    // The confirm's second seat: the group must not hold it while it waits.
    let second = seats::lock_all(&mut confirm, &[seats[4]]).await;
    assert!(
        second.is_ok(),
        "the confirm could not take its second seat: {second:?}"
    );
    confirm.commit().await.unwrap();

    let enqueued = enqueue.await.unwrap().expect("the group is written");
    assert!(
        enqueued
            .outcomes
            .iter()
            .all(|o| matches!(o, Outcome::Queued(_))),
        "{:?}",
        enqueued.outcomes
    );
    common::assert_invariants(&pool).await;
}

/// While a group's rows are still being written (its transaction open), a
/// decision locks and marks its own rows without waiting for them: its
/// locking reads and its multi-table update, planned as scans of the small
/// queue, waited for every row they read, the group's among them.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_decision_takes_its_own_rows_without_waiting_for_requests_being_enqueued() {
    let (_db, pool) = TestDatabase::migrated().await;
    let mut conn = pool.acquire().await.unwrap();
    let seats = seed::concert(&mut conn, 1, 30).await.unwrap();
    let users = seed::users(&mut conn, "fan", 24).await.unwrap();
    let orders = |users: &[UserId], seats: &[SeatId]| -> Vec<(UserId, Vec<SeatId>)> {
        users
            .iter()
            .zip(seats)
            .map(|(u, s)| (*u, vec![*s]))
            .collect()
    };
    // A short history and a batch of ten: the queue then looks cheaper to
    // scan than to read by the batch's ids.
    seed::orders(&mut conn, &orders(&users[11..], &seats[10..]))
        .await
        .unwrap();
    claim_and_decide(&mut conn, 1).await;
    let decided = seed::orders(&mut conn, &orders(&users[..10], &seats[..10]))
        .await
        .unwrap();
    common::run(&pool, "ANALYZE TABLE reservation_queue, reservations").await;
    let claim = queue::claim(
        &mut conn,
        &lease(2),
        100,
        5,
        false,
        ticket_core::testing::now(),
    )
    .await
    .unwrap();
    assert_eq!(claim.ids, decided);
    drop(conn);
    let concert = concert_of(&pool, seats[25]).await;

    let mut writer = pool.acquire().await.unwrap();
    let mut enqueuing = writer.begin().await.unwrap();
    let group = [request(users[10], concert, &[seats[25]])];
    let time = queue::GroupTime::at(GroupClock::new().after(ticket_core::testing::now()));
    let written = queue::enqueue_many(&mut enqueuing, &group, time)
        .await
        .unwrap();
    assert!(matches!(written.outcomes[..], [Outcome::Queued(_)]));
    ticket_core::db::line::rank_entered(&mut enqueuing, &written.entered(&group, time))
        .await
        .unwrap();

    let mut worker = impatient(&pool, 1).await;
    let report =
        ticket_worker::decide::batch(&mut worker, &claim.ids, 2, Duration::from_millis(20)).await;
    let report = report.expect("decided without waiting for the group being written");
    assert_eq!(report.decided.succeeded, 10);
    enqueuing.commit().await.unwrap();
    common::assert_invariants(&pool).await;
}

/// A decision that waits for a seat while a cancel frees it gives the seat
/// to the request that wants it. The decision's subqueries read a snapshot
/// taken before the wait (at the batch's first seat), which still showed
/// the cancelled hold: the request failed with SEAT_TAKEN on a free seat.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_seat_a_cancel_frees_while_a_decision_waits_for_it_goes_to_the_next_in_line() {
    let (_db, pool) = TestDatabase::migrated().await;
    let (seats, users) = hall(&pool).await;
    let held = held_order(&pool, users[0], &[seats[5]]).await;
    let mut conn = pool.acquire().await.unwrap();
    // An earlier seat in the same batch: its lock comes first, and with it
    // the statement's snapshot.
    let queued = seed::orders(
        &mut conn,
        &[(users[1], vec![seats[1]]), (users[2], vec![seats[5]])],
    )
    .await
    .unwrap();
    let claim = queue::claim(
        &mut conn,
        &lease(3),
        100,
        5,
        false,
        ticket_core::testing::now(),
    )
    .await
    .unwrap();
    assert_eq!(claim.ids, queued);

    let mut canceller = pool.acquire().await.unwrap();
    let mut cancel = canceller.begin().await.unwrap();
    let now = ticket_core::testing::now();
    let locked = reservations::lock_with_seats(&mut cancel, held)
        .await
        .unwrap()
        .expect("the held reservation");
    assert!(locked.is_live_hold(now));
    reservations::end(&mut cancel, &[held], ReservationStatus::Cancelled, now)
        .await
        .unwrap();
    assert_eq!(
        seats::free_unclaimed(&mut cancel, &[seats[5]], now)
            .await
            .unwrap(),
        1
    );
    outbox::record(
        &mut cancel,
        &[locked.event(EventKind::Cancelled, None, now)],
        now,
    )
    .await
    .unwrap();

    let ids = claim.ids.clone();
    let session = session_id(&mut conn).await;
    let decision = tokio::spawn(async move {
        ticket_worker::decide::batch(&mut conn, &ids, 3, Duration::from_millis(20)).await
    });
    until_waiting(&pool, session, &decision).await;
    cancel.commit().await.unwrap();
    let report = decision.await.unwrap().unwrap();
    assert_eq!(report.decided.succeeded, 2, "{:?}", report.decided);

    let (status, reason): (String, Option<String>) =
        sqlx::query_as("SELECT status, reason FROM reservation_queue WHERE id = ?")
            .bind(queued[1])
            .fetch_one(&pool)
            .await
            .unwrap();
    assert_eq!(
        (status.as_str(), reason),
        ("SUCCESS", None),
        "the freed seat went to the request for it"
    );
    common::assert_invariants(&pool).await;
}
