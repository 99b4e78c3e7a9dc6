//! Retention: decided requests and delivered events go after the retention
//! period, idempotency keys after a day; open requests and undelivered
//! events stay however old; rows someone holds are skipped, never waited for.

mod common;

use common::{aged_history, scalar};

use std::time::{Duration, Instant};

use chrono::Utc;
use sqlx::Connection;
use ticket_worker::Mode;
use ticket_worker::retention::{Retention, Sweeper, Swept};

fn thirty_days_and_a_day() -> Retention {
    Retention {
        decided: Some(chrono::Duration::days(30)),
        idempotency_keys: Some(chrono::Duration::hours(24)),
        events: ticket_core::db::retention::EventsKept::UntilDelivered,
        mails: ticket_core::db::retention::EventsKept::UntilDelivered,
    }
}

#[tokio::test]
async fn what_expired_goes_and_open_requests_and_undelivered_events_stay() {
    let q = aged_history().await;
    let before = common::counts(&q.pool).await;
    let old_decided = scalar(
        &q.pool,
        "SELECT COUNT(*) FROM reservation_queue WHERE status IN ('SUCCESS', 'FAILED') \
         AND decided_at < UTC_TIMESTAMP() - INTERVAL 30 DAY",
    )
    .await;
    assert_eq!(old_decided, 1_200);

    let w = common::worker(
        &q.pool,
        "sweeper",
        ticket_worker::Mode::Batch,
        100,
        Duration::from_secs(30),
    );
    let swept = Sweeper::new(q.pool.clone(), thirty_days_and_a_day())
        .counted_in(w.metrics())
        .pass(Utc::now())
        .await
        .unwrap();
    assert_eq!(swept.requests_deleted, 1_200, "{swept:?}");
    let samples = common::scrape(&w, &q.pool).await;
    let removed = |kind| {
        ticket_core::testing::prometheus_text::value(
            &samples,
            "ticket_worker_retention_removed_total",
            &[("kind", kind)],
        )
    };
    assert_eq!(
        (
            removed("requests"),
            removed("events"),
            removed("idempotency_keys")
        ),
        (1_200.0, 300.0, 305.0)
    );
    assert_eq!(swept.events_deleted, 300, "{swept:?}");
    // Keys of rows older than a day: the 300 two-day-old decided rows and
    // the five open ones (the 1,200 went with their rows).
    assert_eq!(swept.keys_forgotten, 305, "{swept:?}");

    let after = common::counts(&q.pool).await;
    assert_eq!(
        after.get("PENDING"),
        before.get("PENDING"),
        "open requests stay"
    );
    assert_eq!(
        scalar(
            &q.pool,
            "SELECT COUNT(*) FROM reservation_queue WHERE status = 'PENDING'"
        )
        .await,
        5
    );
    assert_eq!(
        scalar(&q.pool, "SELECT COUNT(*) FROM reservation_queue").await,
        1_500 - 1_200 + 5
    );
    assert_eq!(
        scalar(
            &q.pool,
            "SELECT COUNT(*) FROM outbox WHERE published_at IS NULL"
        )
        .await,
        300,
        "undelivered events stay, however old"
    );
    assert_eq!(
        scalar(
            &q.pool,
            "SELECT COUNT(*) FROM reservation_queue WHERE idempotency_key IS NOT NULL"
        )
        .await,
        0
    );
    // Tickets are never removed: every reservation is still there.
    assert_eq!(
        scalar(&q.pool, "SELECT COUNT(*) FROM reservations").await,
        600
    );
    let mut conn = q.pool.acquire().await.unwrap();
    let violations = ticket_core::db::invariants::check(
        &mut conn,
        chrono::Duration::minutes(5),
        5,
        Some(chrono::Duration::days(30)),
    )
    .await
    .unwrap();
    assert!(violations.is_empty(), "{violations:?}");

    // A second pass finds nothing more.
    let again = Sweeper::new(q.pool.clone(), thirty_days_and_a_day())
        .pass(Utc::now())
        .await
        .unwrap();
    assert_eq!(
        (
            again.requests_deleted,
            again.keys_forgotten,
            again.events_deleted
        ),
        (0, 0, 0)
    );
}

#[tokio::test]
async fn rows_held_by_others_are_skipped_not_waited_for() {
    let q = aged_history().await;
    // Another transaction holds the oldest decided row (a cancel, say).
    let mut holder = q.pool.acquire().await.unwrap();
    let mut held = holder.begin().await.unwrap();
    let (oldest,): (u64,) = sqlx::query_as("SELECT MIN(id) FROM reservation_queue")
        .fetch_one(&mut *held)
        .await
        .unwrap();
    sqlx::query("SELECT id FROM reservation_queue WHERE id = ? FOR UPDATE")
        .bind(oldest)
        .execute(&mut *held)
        .await
        .unwrap();

    // Batch after batch, without the pauses of a pass: a statement that
    // waited for the held row would take the lock-wait timeout (5 s).
    let mut sweeper = Sweeper::new(q.pool.clone(), thirty_days_and_a_day());
    let started = Instant::now();
    let mut swept = Swept::default();
    loop {
        let batch = sweeper.sweep_once(Utc::now()).await.unwrap();
        swept += batch;
        if !batch.more {
            break;
        }
    }
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(swept.requests_deleted, 1_199);
    assert_eq!(
        scalar(
            &q.pool,
            &format!("SELECT COUNT(*) FROM reservation_queue WHERE id = {oldest}")
        )
        .await,
        1
    );
    held.rollback().await.unwrap();
    // The next pass starts from the beginning again and takes it.
    let swept = Sweeper::new(q.pool.clone(), thirty_days_and_a_day())
        .pass(Utc::now())
        .await
        .unwrap();
    assert_eq!(swept.requests_deleted, 1);
}

#[tokio::test]
async fn the_sweeper_runs_beside_deciding_workers_without_losing_a_request() {
    // New requests arrive and are decided while the sweeper removes old
    // ones: every new request gets its decision, and only old rows go.
    let q = aged_history().await;
    let mut conn = q.pool.acquire().await.unwrap();
    let users = ticket_core::testing::seed::users(&mut conn, "new", 400)
        .await
        .unwrap();
    let seats: Vec<(u64,)> = sqlx::query_as("SELECT id FROM seats ORDER BY id DESC LIMIT 400")
        .fetch_all(&mut *conn)
        .await
        .unwrap();
    let pairs: Vec<_> = users
        .iter()
        .zip(&seats)
        .map(|(u, (s,))| (*u, ticket_core::domain::SeatId(*s)))
        .collect();
    ticket_core::testing::seed::requests(&mut conn, &pairs)
        .await
        .unwrap();
    drop(conn);
    let sweeping = tokio::spawn({
        let pool = q.pool.clone();
        async move {
            Sweeper::new(pool, thirty_days_and_a_day())
                .pass(Utc::now())
                .await
                .unwrap()
        }
    });
    common::drain_with_workers(&q.db, 2, 50, Mode::Batch).await;
    let swept = sweeping.await.unwrap();
    assert_eq!(swept.requests_deleted, 1_200);
    assert_eq!(
        scalar(&q.pool, "SELECT COUNT(*) FROM reservation_queue WHERE created_at > UTC_TIMESTAMP() - INTERVAL 1 HOUR").await,
        400,
        "every new request is still there"
    );
    assert_eq!(
        scalar(&q.pool, "SELECT COUNT(*) FROM reservation_queue WHERE status IN ('PENDING', 'PROCESSING') AND created_at > UTC_TIMESTAMP() - INTERVAL 1 HOUR").await,
        0,
        "and decided"
    );
}

/// Without a webhook nobody will ever receive the events: they go after the
/// retention period whether delivered or not. With one, an undelivered
/// event stays until it is delivered or given up.
#[tokio::test]
async fn undelivered_events_stay_only_while_someone_will_receive_them() {
    let q = aged_history().await;
    // A hundred more events as old, never delivered.
    common::run(
        &q.pool,
        "UPDATE outbox SET created_at = created_at - INTERVAL 40 DAY \
         WHERE published_at IS NULL ORDER BY id LIMIT 100",
    )
    .await;
    let kept_until_delivered = Sweeper::new(q.pool.clone(), thirty_days_and_a_day())
        .pass(Utc::now())
        .await
        .unwrap();
    assert_eq!(kept_until_delivered.events_deleted, 300);
    let for_the_retention_only = Retention {
        events: ticket_core::db::retention::EventsKept::ForTheRetentionOnly,
        ..thirty_days_and_a_day()
    };
    let swept = Sweeper::new(q.pool.clone(), for_the_retention_only)
        .pass(Utc::now())
        .await
        .unwrap();
    assert_eq!(swept.events_deleted, 100, "the old undelivered ones go too");
    assert_eq!(
        scalar(
            &q.pool,
            "SELECT COUNT(*) FROM outbox WHERE created_at < UTC_TIMESTAMP() - INTERVAL 30 DAY"
        )
        .await,
        0
    );
}

#[tokio::test]
async fn spent_challenges_are_forgotten_a_minute_after_their_end() {
    let (_db, pool) = ticket_core::testing::TestDatabase::migrated().await;
    let (concert, _) = common::seeded_concert(&pool, 1).await;
    let mut conn = pool.acquire().await.unwrap();
    // Ended two minutes ago, ended just now, and live.
    for (id, ends_in_seconds) in [(1u8, -120i64), (2, -5), (3, 30)] {
        sqlx::query(
            "INSERT INTO spent_challenges (concert_id, challenge, expires_at) \
             VALUES (?, ?, UTC_TIMESTAMP(6) + INTERVAL ? SECOND)",
        )
        .bind(concert)
        .bind([id; 32].as_slice())
        .bind(ends_in_seconds)
        .execute(&mut *conn)
        .await
        .unwrap();
    }
    drop(conn);
    let mut sweeper = Sweeper::new(pool.clone(), thirty_days_and_a_day());
    let swept = sweeper.sweep_once(Utc::now()).await.unwrap();
    assert_eq!(swept.challenges_forgotten, 1);
    assert_eq!(
        scalar(&pool, "SELECT COUNT(*) FROM spent_challenges").await,
        2
    );
}

/// With decisions and idempotency keys kept for ever (TICKET_RETENTION_DAYS=0,
/// TICKET_IDEMPOTENCY_KEY_HOURS=0) the sweeper still runs: spent challenges
/// past their end and the entries of fans who left a waiting list a day
/// ago go; a fan still waiting and one who left an hour ago stay.
#[tokio::test]
async fn what_ends_for_good_goes_even_when_decisions_are_kept_for_ever() {
    let (_db, pool) = ticket_core::testing::TestDatabase::migrated().await;
    let (concert, _) = common::seeded_concert(&pool, 1).await;
    common::open_waiting_list(&pool, concert).await;
    let mut conn = pool.acquire().await.unwrap();
    let fans = ticket_core::testing::seed::users(&mut conn, "fan", 3)
        .await
        .unwrap();
    sqlx::query(
        "INSERT INTO spent_challenges (concert_id, challenge, expires_at) \
         VALUES (?, ?, UTC_TIMESTAMP(6) - INTERVAL 2 MINUTE)",
    )
    .bind(concert)
    .bind([7u8; 32].as_slice())
    .execute(&mut *conn)
    .await
    .unwrap();
    // Left two days ago, left an hour ago, still waiting.
    for (fan, status, ended_hours_ago) in [
        (fans[0], "LEFT", Some(48)),
        (fans[1], "LEFT", Some(1)),
        (fans[2], "WAITING", None),
    ] {
        sqlx::query(
            "INSERT INTO waiting_list_entries (concert_id, user_id, seats, status, created_at, ended_at) \
             VALUES (?, ?, 1, ?, UTC_TIMESTAMP(6) - INTERVAL 3 DAY, \
                     UTC_TIMESTAMP(6) - INTERVAL ? HOUR)",
        )
        .bind(concert)
        .bind(fan)
        .bind(status)
        .bind(ended_hours_ago)
        .execute(&mut *conn)
        .await
        .unwrap();
    }
    drop(conn);
    let kept_for_ever = Retention {
        decided: None,
        idempotency_keys: None,
        events: ticket_core::db::retention::EventsKept::UntilDelivered,
        mails: ticket_core::db::retention::EventsKept::UntilDelivered,
    };
    let shutdown = tokio_util::sync::CancellationToken::new();
    let running = tokio::spawn(Sweeper::new(pool.clone(), kept_for_ever).run(shutdown.clone()));
    let deadline = Instant::now() + Duration::from_secs(20);
    let remaining = || async {
        (
            scalar(&pool, "SELECT COUNT(*) FROM spent_challenges").await,
            scalar(&pool, "SELECT COUNT(*) FROM waiting_list_entries").await,
        )
    };
    while remaining().await != (0, 2) {
        assert!(
            !running.is_finished(),
            "the sweeper stopped with nothing kept but decisions"
        );
        assert!(Instant::now() < deadline, "left {:?}", remaining().await);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    shutdown.cancel();
    running.await.unwrap();
    assert_eq!(
        scalar(
            &pool,
            "SELECT COUNT(*) FROM waiting_list_entries WHERE status = 'LEFT' AND ended_at < UTC_TIMESTAMP(6) - INTERVAL 1 DAY"
        )
        .await,
        0
    );
}
