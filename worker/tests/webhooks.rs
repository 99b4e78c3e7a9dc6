//! The outbox relay against a real local HTTP receiver that fails first
//! attempts, is slow, and goes down for a while: every event arrives, signed,
//! in order per reservation; what cannot be delivered is given up, counted
//! and reported; a relay killed mid-delivery loses nothing.

mod common;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use common::receiver::{self, Behaviour, Receiver};
use sqlx::MySqlPool;
use ticket_core::db::outbox;
use ticket_core::domain::events::{EventKind, ReservationEvent, ReservedSeat, Subject};
use ticket_core::domain::{ConcertId, ReservationId, SeatId, UserId};
use ticket_core::secret::Secret;
use ticket_core::testing::TestDatabase;
use ticket_worker::relay::{Relay, WebhookConfig};
use tokio_util::sync::CancellationToken;

/// Three events (held, confirmed, cancelled) for each of `reservations`
/// reservations, written as the application writes them; every event's id.
async fn events(pool: &MySqlPool, reservations: u64) -> Vec<u64> {
    let kinds = [EventKind::Held, EventKind::Confirmed, EventKind::Cancelled];
    record_events(pool, 1..=reservations, &kinds).await;
    let ids: Vec<(u64,)> = sqlx::query_as("SELECT id FROM outbox ORDER BY id")
        .fetch_all(pool)
        .await
        .unwrap();
    ids.into_iter().map(|(id,)| id).collect()
}

/// Events of `kinds`, in that order, for each of the `reservations`.
async fn record_events(
    pool: &MySqlPool,
    reservations: std::ops::RangeInclusive<u64>,
    kinds: &[EventKind],
) {
    let seats = [ReservedSeat {
        seat_id: SeatId(7),
        seat_number: "A7".into(),
        price: None,
        place: Default::default(),
    }];
    let now = ticket_core::testing::now();
    let mut conn = pool.acquire().await.unwrap();
    for &kind in kinds {
        let batch: Vec<ReservationEvent> = reservations
            .clone()
            .map(|r| {
                ReservationEvent::new(
                    kind,
                    &Subject {
                        reservation_id: ReservationId(r),
                        queue_id: None,
                        user_id: UserId(1),
                        concert_id: ConcertId(1),
                        seats: &seats,
                        hold_expires_at: None,
                        payment_reference: None,
                    },
                    now,
                )
            })
            .collect();
        outbox::record(&mut conn, &batch, now).await.unwrap();
    }
}

fn config(receiver: &Receiver) -> WebhookConfig {
    let mut config = WebhookConfig::new(
        receiver.url().parse().unwrap(),
        Secret::new(receiver::SECRET),
    );
    config.timeout = Duration::from_millis(300);
    config.lease = Duration::from_secs(2);
    config.poll_interval = Duration::from_millis(20);
    config.first_backoff = Duration::from_millis(40);
    config.max_backoff = Duration::from_millis(200);
    config.give_up_after = Duration::from_secs(120);
    config
}

async fn undelivered(pool: &MySqlPool) -> i64 {
    let (n,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM outbox WHERE published_at IS NULL")
        .fetch_one(pool)
        .await
        .unwrap();
    n
}

async fn wait_until_delivered(pool: &MySqlPool, within: Duration) {
    let deadline = Instant::now() + within;
    while undelivered(pool).await > 0 {
        assert!(
            Instant::now() < deadline,
            "{} events undelivered",
            undelivered(pool).await
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Every event was accepted at least once; per reservation, the first
/// acceptance of each event came in event order.
fn assert_all_arrived_in_order(receiver: &Receiver, ids: &[u64]) {
    let accepted = receiver.accepted();
    let mut first: Vec<u64> = Vec::new();
    for a in &accepted {
        if !first.contains(&a.event_id) {
            first.push(a.event_id);
        }
    }
    let mut expected = ids.to_vec();
    let mut got = first.clone();
    expected.sort_unstable();
    got.sort_unstable();
    assert_eq!(got, expected, "every event arrived");
    let mut by_reservation: HashMap<u64, Vec<u64>> = HashMap::new();
    for id in &first {
        let reservation = accepted
            .iter()
            .find(|a| a.event_id == *id)
            .unwrap()
            .reservation_id;
        by_reservation.entry(reservation).or_default().push(*id);
    }
    for (reservation, order) in by_reservation {
        let mut sorted = order.clone();
        sorted.sort_unstable();
        assert_eq!(
            order, sorted,
            "reservation {reservation}'s events out of order"
        );
    }
    assert_eq!(receiver.bad_signatures(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_event_arrives_signed_and_in_order_through_failures_slowness_and_an_outage() {
    let (_db, pool) = TestDatabase::migrated().await;
    let ids = events(&pool, 40).await;
    let receiver = Receiver::start(Behaviour {
        fail_first: 2,
        slow_every: Some(7),
        slow_for: Duration::from_millis(600),
        always_fail: false,
        refuse_type: None,
    })
    .await;
    let shutdown = CancellationToken::new();
    // Two relays share the outbox.
    let relays: Vec<_> = (0..2)
        .map(|_| {
            let relay = Relay::new(pool.clone(), config(&receiver)).unwrap();
            tokio::spawn(relay.run(shutdown.clone()))
        })
        .collect();
    // Down for a second once deliveries are under way.
    let deadline = Instant::now() + Duration::from_secs(20);
    while receiver.accepted().len() < 20 {
        assert!(Instant::now() < deadline, "nothing was delivered");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    receiver.down();
    tokio::time::sleep(Duration::from_secs(1)).await;
    let during = receiver.requests();
    receiver.up().await;

    wait_until_delivered(&pool, Duration::from_secs(60)).await;
    shutdown.cancel();
    for r in relays {
        r.await.unwrap();
    }
    assert_all_arrived_in_order(&receiver, &ids);
    assert!(
        during < receiver.requests(),
        "deliveries resumed after the outage"
    );
    let (fewest,): (u32,) = sqlx::query_as("SELECT MIN(attempts) FROM outbox")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert!(fewest >= 3, "each event failed twice first ({fewest})");
    let (failed, errors): (i64, i64) =
        sqlx::query_as("SELECT COUNT(failed_at), COUNT(last_error) FROM outbox")
            .fetch_one(&pool)
            .await
            .unwrap();
    assert_eq!((failed, errors), (0, 0));
}

#[tokio::test]
async fn an_event_undeliverable_for_its_retry_period_is_given_up_counted_and_reported() {
    let (_db, pool) = TestDatabase::migrated().await;
    events(&pool, 2).await;
    let receiver = Receiver::start(Behaviour {
        always_fail: true,
        ..Behaviour::default()
    })
    .await;
    let mut config = config(&receiver);
    config.give_up_after = Duration::from_millis(800);
    let metrics = ticket_worker::WorkerMetrics::new();
    let relay = Relay::new(pool.clone(), config)
        .unwrap()
        .counted_in(metrics.clone());
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        relay.deliver_once().await.unwrap();
        let (failed,): (i64,) =
            sqlx::query_as("SELECT COUNT(*) FROM outbox WHERE failed_at IS NOT NULL")
                .fetch_one(&pool)
                .await
                .unwrap();
        // The first event of each reservation is given up; the next ones
        // follow it (in order, once the one before is settled).
        if failed == 6 {
            break;
        }
        assert!(Instant::now() < deadline, "{failed} given up");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let text = metrics.render(&pool).await;
    assert!(
        text.contains("ticket_webhook_deliveries_total{outcome=\"failed\"} 6"),
        "{text}"
    );
    assert!(
        text.contains("ticket_outbox_events{state=\"failed\"} 6"),
        "{text}"
    );
    let (error,): (String,) = sqlx::query_as("SELECT last_error FROM outbox LIMIT 1")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert!(error.contains("500"), "{error}");
    let mut conn = pool.acquire().await.unwrap();
    let violations =
        ticket_core::db::invariants::check(&mut conn, chrono::Duration::zero(), 5, None)
            .await
            .unwrap();
    let reported: Vec<_> = violations.iter().map(|v| (v.invariant, v.rows)).collect();
    assert_eq!(
        reported,
        [("an event could not be delivered within its retry period", 6)]
    );
}

/// The real worker, SIGKILLed while its deliveries are in flight: what it
/// had claimed is taken over once its leases run out, and every event
/// arrives (at least once, in order per reservation).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_killed_mid_delivery_loses_no_event() {
    let (db, pool) = TestDatabase::migrated().await;
    let ids = events(&pool, 30).await;
    let receiver = Receiver::start(Behaviour {
        slow_every: Some(1),
        slow_for: Duration::from_millis(300),
        ..Behaviour::default()
    })
    .await;
    let url = receiver.url();
    let env = [
        ("TICKET_WEBHOOK_URL", url.as_str()),
        ("TICKET_WEBHOOK_SECRET", receiver::SECRET),
        ("TICKET_WEBHOOK_TIMEOUT_MS", "1000"),
    ];
    let (mut first, _lines) = common::process::spawn_worker(&db.url(), &env);
    let deadline = Instant::now() + Duration::from_secs(30);
    // Some delivered, and some on their way (the receiver holds each 300 ms).
    while receiver.accepted().len() < 10
        || receiver.requests() as usize <= receiver.accepted().len()
    {
        assert!(Instant::now() < deadline, "the relay never delivered");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    common::process::signal(&first, "-KILL");
    first.wait().unwrap();
    assert!(undelivered(&pool).await > 0, "killed before the end");

    let (mut second, _lines) = common::process::spawn_worker(&db.url(), &env);
    wait_until_delivered(&pool, Duration::from_secs(60)).await;
    common::process::signal(&second, "-TERM");
    assert!(common::process::wait_for_exit(&mut second).success());
    assert_all_arrived_in_order(&receiver, &ids);
}

#[tokio::test]
async fn a_reservation_whose_event_keeps_failing_holds_back_only_its_own_later_events() {
    let (_db, pool) = TestDatabase::migrated().await;
    // 40 reservations held and confirmed: the receiver refuses every
    // ReservationHeld, so each one's ReservationConfirmed waits behind it.
    record_events(&pool, 1..=40, &[EventKind::Held, EventKind::Confirmed]).await;
    let receiver = Receiver::start(Behaviour {
        refuse_type: Some("ReservationHeld"),
        ..Behaviour::default()
    })
    .await;
    let shutdown = CancellationToken::new();
    let relay = Relay::new(pool.clone(), config(&receiver)).unwrap();
    let running = tokio::spawn(relay.run(shutdown.clone()));
    // Every refused event has been tried (and is in its backoff) before the
    // new reservations come.
    let deadline = Instant::now() + Duration::from_secs(10);
    while receiver.requests() < 40 {
        assert!(
            Instant::now() < deadline,
            "the refused events were not tried"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Five new reservations (of a concert without holds: confirmed at once).
    record_events(&pool, 41..=45, &[EventKind::Confirmed]).await;
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let arrived = receiver
            .accepted()
            .iter()
            .filter(|a| a.reservation_id > 40)
            .count();
        if arrived == 5 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{arrived} of the 5 new reservations' events arrived within 5 s"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        receiver.accepted().iter().all(|a| a.reservation_id > 40),
        "no event of a reservation whose first event is refused went out"
    );
    shutdown.cancel();
    running.await.unwrap();
}

#[tokio::test]
async fn an_offer_from_a_waiting_list_is_announced_like_any_event() {
    let (_db, pool) = TestDatabase::migrated().await;
    record_events(&pool, 1..=3, &[EventKind::Offered, EventKind::Confirmed]).await;
    let receiver = Receiver::start(Behaviour::default()).await;
    let shutdown = CancellationToken::new();
    let relay = Relay::new(pool.clone(), config(&receiver)).unwrap();
    let running = tokio::spawn(relay.run(shutdown.clone()));
    wait_until_delivered(&pool, Duration::from_secs(10)).await;
    shutdown.cancel();
    running.await.unwrap();
    let accepted = receiver.accepted();
    for reservation in 1..=3 {
        let types: Vec<&str> = accepted
            .iter()
            .filter(|a| a.reservation_id == reservation)
            .map(|a| a.event_type.as_str())
            .collect();
        assert_eq!(types, ["WaitingListOffered", "ReservationConfirmed"]);
    }
    assert_eq!(receiver.bad_signatures(), 0);
}
