//! The mail relay against a real SMTP server (aiosmtpd, started by each
//! test): every confirmation arrives, parsed as MIME, with its tickets'
//! codes (signed, and readable from their QR images); a server that refuses
//! for a while or goes down gets every mail once it is back, none twice; a
//! recipient refused for good fails at once and is reported; two relays send
//! each mail once; a relay SIGKILLed mid-send leaves the mail to the next,
//! sent again with the same Message-ID.
//!
//! Long because each failure of the mail server is a story with a real SMTP
//! server of its own and the mails read back from it.

mod common;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::Value;
use sqlx::MySqlPool;
use ticket_core::domain::ticket_code::TicketKeys;
use ticket_core::secret::Secret;
use ticket_core::testing::prometheus_text::value;
use ticket_core::testing::smtp::{self, Behaviour, SmtpSink};
use ticket_worker::Mode;
use ticket_worker::mail::{MailConfig, MailRelay, SmtpServer};
use tokio_util::sync::CancellationToken;

const FROM: &str = "Box Office <tickets@box.example>";

fn key_line() -> String {
    TicketKeys::generate_line().unwrap()
}

/// `n` fans with addresses, each with one seat sold to them (decided by a
/// worker, concert without holds): `n` confirmations to mail.
async fn sold(n: usize) -> common::Queue {
    let q = common::queue(n as u32, n).await;
    common::run(
        &q.pool,
        "UPDATE users SET email = CONCAT(nickname, '@fans.example'), email_changed_at = NOW(6)",
    )
    .await;
    let worker = common::worker(&q.pool, "w", Mode::Batch, 1000, Duration::from_secs(30));
    while worker.process_once().await.unwrap().claimed > 0 {}
    let queued =
        "SELECT COUNT(*) FROM mails WHERE kind = 'ORDER_CONFIRMATION' AND due_at IS NOT NULL";
    assert_eq!(common::scalar(&q.pool, queued).await, n as i64);
    q
}

fn config(sink: &SmtpSink, keys: &str) -> MailConfig {
    let server = SmtpServer::new(Secret::new(sink.url()), None).unwrap();
    let mut config = MailConfig::new(
        server,
        FROM.parse().unwrap(),
        Arc::new(TicketKeys::parse(keys).unwrap()),
    );
    config.public_url = Some("https://box.example".to_owned());
    config.timeout = Duration::from_secs(5);
    config.lease = Duration::from_secs(30);
    config.poll_interval = Duration::from_millis(20);
    config.first_backoff = Duration::from_millis(50);
    config.max_backoff = Duration::from_millis(300);
    config.give_up_after = Duration::from_secs(300);
    config
}

async fn unsent(pool: &MySqlPool) -> i64 {
    common::scalar(pool, "SELECT COUNT(*) FROM mails WHERE outcome IS NULL").await
}

async fn until_every_mail_ended(pool: &MySqlPool, within: Duration) {
    let deadline = Instant::now() + within;
    while unsent(pool).await > 0 {
        assert!(
            Instant::now() < deadline,
            "{} mails unsent",
            unsent(pool).await
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Relays running until stopped.
fn start(relays: Vec<MailRelay>) -> (CancellationToken, Vec<tokio::task::JoinHandle<()>>) {
    let shutdown = CancellationToken::new();
    let tasks = relays
        .into_iter()
        .map(|relay| tokio::spawn(relay.run(shutdown.clone())))
        .collect();
    (shutdown, tasks)
}

async fn stop((shutdown, tasks): (CancellationToken, Vec<tokio::task::JoinHandle<()>>)) {
    shutdown.cancel();
    for task in tasks {
        task.await.unwrap();
    }
}

/// Each arrived message by its Message-ID, asserting that none came twice.
fn once_each(messages: &[Value]) -> HashMap<String, &Value> {
    let mut by_id = HashMap::new();
    for message in messages {
        let id = message["messageId"].as_str().unwrap().to_owned();
        assert!(
            by_id.insert(id.clone(), message).is_none(),
            "{id} arrived twice"
        );
    }
    by_id
}

/// A confirmation as a mail reader sees it: well-formed MIME, from the box
/// office to the fan, with one signed code and one readable QR image per
/// ticket, the HTML showing each image by its Content-ID.
async fn assert_is_a_confirmation_with_its_tickets(
    pool: &MySqlPool,
    message: &Value,
    keys: &TicketKeys,
) {
    assert_eq!(message["contentType"], "multipart/alternative");
    let defects: Vec<&Value> = std::iter::once(&message["defects"])
        .chain(
            message["parts"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| &p["defects"]),
        )
        .filter(|d| !d.as_array().unwrap().is_empty())
        .collect();
    assert!(defects.is_empty(), "MIME defects: {defects:?}");
    assert_eq!(message["from"], FROM);
    assert_eq!(message["mailFrom"], "tickets@box.example");
    let id = message["messageId"].as_str().unwrap();
    let reservation: u64 = id
        .strip_prefix("<reservation-")
        .and_then(|rest| rest.strip_suffix(".order-confirmation@box.example>"))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("Message-ID {id}"));
    let (nickname, email): (String, String) = sqlx::query_as(
        "SELECT u.nickname, u.email FROM reservations r JOIN users u ON u.id = r.user_id WHERE r.id = ?",
    )
    .bind(reservation)
    .fetch_one(pool)
    .await
    .unwrap();
    assert_eq!(message["rcptTos"], serde_json::json!([email]));
    assert_eq!(message["to"], format!("{nickname} <{email}>"));
    assert_eq!(message["subject"], "Your tickets for seeded");
    let tickets: Vec<(u64, u64, u64)> = sqlx::query_as(
        "SELECT id, concert_id, seat_id FROM tickets WHERE reservation_id = ? AND status = 'VALID'",
    )
    .bind(reservation)
    .fetch_all(pool)
    .await
    .unwrap();
    assert!(!tickets.is_empty());
    let text = smtp::parts(message, "text/plain")[0]["text"]
        .as_str()
        .unwrap();
    let html = smtp::parts(message, "text/html")[0]["text"]
        .as_str()
        .unwrap();
    assert!(text.contains(&format!("Hello {nickname},")), "{text}");
    assert!(text.contains("https://box.example/#/me/tickets"), "{text}");
    let images = smtp::parts(message, "image/png");
    assert_eq!(images.len(), tickets.len());
    for (ticket, concert, seat) in tickets {
        let cid = format!("ticket-{ticket}@box.example");
        let image = images
            .iter()
            .find(|i| i["contentId"] == format!("<{cid}>"))
            .unwrap_or_else(|| panic!("no image {cid}"));
        assert_eq!(image["disposition"], "inline");
        assert!(html.contains(&format!("src=\"cid:{cid}\"")), "{html}");
        let png = base64::engine::general_purpose::STANDARD
            .decode(image["base64"].as_str().unwrap())
            .unwrap();
        let code = smtp::qr_text(&png);
        let identity = keys.verify(&code).unwrap();
        assert_eq!(
            (
                identity.ticket.get(),
                identity.concert.get(),
                identity.seat.get()
            ),
            (ticket, concert, seat)
        );
        assert!(text.contains(&code), "the code is written out too");
    }
}

async fn assert_invariants_hold(pool: &MySqlPool) {
    let mut conn = pool.acquire().await.unwrap();
    let violations =
        ticket_core::db::invariants::check(&mut conn, chrono::Duration::minutes(5), 5, None)
            .await
            .unwrap();
    assert!(violations.is_empty(), "{violations:?}");
}

#[tokio::test]
async fn every_confirmation_arrives_once_while_the_server_refuses_then_goes_down_and_comes_back() {
    let q = sold(40).await;
    let keys = key_line();
    let mut sink = SmtpSink::start(Behaviour {
        fail_first: 5,
        ..Behaviour::default()
    })
    .await;
    let running = start(vec![
        MailRelay::new(q.pool.clone(), config(&sink, &keys)).unwrap(),
    ]);
    // Some through (after the first five were refused), then the server goes.
    sink.wait_for(10, Duration::from_secs(60)).await;
    sink.down();
    let tried_while_down = "SELECT COUNT(*) FROM mails WHERE outcome IS NULL AND attempts > 0 \
                            AND last_error IS NOT NULL";
    let deadline = Instant::now() + Duration::from_secs(30);
    while common::scalar(&q.pool, tried_while_down).await == 0 || unsent(&q.pool).await == 0 {
        assert!(
            Instant::now() < deadline,
            "no mail was tried while the server was down"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(unsent(&q.pool).await > 0);
    sink.up().await;
    until_every_mail_ended(&q.pool, Duration::from_secs(60)).await;
    stop(running).await;

    let messages = sink.messages();
    let by_id = once_each(&messages);
    assert_eq!(by_id.len(), 40, "every mail arrived, none twice");
    let keys = TicketKeys::parse(&keys).unwrap();
    for message in by_id.values() {
        assert_is_a_confirmation_with_its_tickets(&q.pool, message, &keys).await;
    }
    let sent =
        "SELECT COUNT(*) FROM mails WHERE outcome = 'SENT' AND recipient LIKE '%@fans.example'";
    assert_eq!(common::scalar(&q.pool, sent).await, 40);
    let retried = "SELECT COUNT(*) FROM mails WHERE attempts > 1";
    assert!(
        common::scalar(&q.pool, retried).await >= 5,
        "the refused ones were retried"
    );
    assert_invariants_hold(&q.pool).await;
}

#[tokio::test]
async fn a_recipient_refused_for_good_fails_at_once_is_counted_and_reported() {
    let q = sold(6).await;
    let refused: (String,) = sqlx::query_as("SELECT email FROM users ORDER BY id LIMIT 1")
        .fetch_one(&q.pool)
        .await
        .unwrap();
    let sink = SmtpSink::start(Behaviour {
        reject: vec![refused.0.clone()],
        ..Behaviour::default()
    })
    .await;
    let worker = common::worker(&q.pool, "w", Mode::Batch, 10, Duration::from_secs(30));
    let relay = MailRelay::new(q.pool.clone(), config(&sink, &key_line()))
        .unwrap()
        .counted_in(worker.metrics());
    let round = relay.send_once().await.unwrap();
    assert_eq!((round.sent, round.failed, round.retried), (5, 1, 0));
    assert_eq!(sink.messages().len(), 5);
    let (attempts, error): (u32, String) = sqlx::query_as(
        "SELECT attempts, last_error FROM mails WHERE outcome = 'FAILED' AND recipient IS NULL",
    )
    .fetch_one(&q.pool)
    .await
    .unwrap();
    assert_eq!(attempts, 1, "not retried");
    assert!(error.contains("550"), "{error}");
    let metrics = common::scrape(&worker, &q.pool).await;
    assert_eq!(
        value(
            &metrics,
            "ticket_mail_deliveries_total",
            &[("outcome", "failed")]
        ),
        1.0
    );
    assert_eq!(
        value(
            &metrics,
            "ticket_mail_deliveries_total",
            &[("outcome", "sent")]
        ),
        5.0
    );
    assert_eq!(value(&metrics, "ticket_mails", &[("state", "failed")]), 1.0);
    assert_eq!(value(&metrics, "ticket_mails", &[("state", "unsent")]), 0.0);
    let mut conn = q.pool.acquire().await.unwrap();
    let violations =
        ticket_core::db::invariants::check(&mut conn, chrono::Duration::minutes(5), 5, None)
            .await
            .unwrap();
    assert_eq!(violations.len(), 1, "{violations:?}");
    assert!(
        violations[0]
            .invariant
            .starts_with("a mail could not be sent")
    );
    // Nothing left to send: another round claims nothing.
    assert_eq!(relay.send_once().await.unwrap().claimed, 0);
}

#[tokio::test]
async fn two_relays_send_each_mail_once() {
    let q = sold(60).await;
    let keys = key_line();
    let sink = SmtpSink::start(Behaviour {
        delay: Duration::from_millis(20),
        ..Behaviour::default()
    })
    .await;
    let relays = (0..2)
        .map(|_| {
            let mut config = config(&sink, &keys);
            config.batch = 4;
            MailRelay::new(q.pool.clone(), config).unwrap()
        })
        .collect();
    let running = start(relays);
    until_every_mail_ended(&q.pool, Duration::from_secs(60)).await;
    stop(running).await;
    assert_eq!(once_each(&sink.messages()).len(), 60);
    let attempts = "SELECT COUNT(*) FROM mails WHERE attempts <> 1 OR outcome <> 'SENT'";
    assert_eq!(common::scalar(&q.pool, attempts).await, 0);
}

#[tokio::test]
async fn a_mail_with_nothing_left_to_say_is_skipped_and_an_address_removed_gets_none() {
    let q = sold(3).await;
    let sink = SmtpSink::start(Behaviour::default()).await;
    // One order cancelled before its mail went, one fan's address removed.
    let ids: Vec<(u64, u64)> = sqlx::query_as("SELECT id, user_id FROM reservations ORDER BY id")
        .fetch_all(&q.pool)
        .await
        .unwrap();
    common::run(
        &q.pool,
        &format!(
            "UPDATE reservations SET status = 'CANCELLED' WHERE id = {}",
            ids[0].0
        ),
    )
    .await;
    common::run(
        &q.pool,
        &format!(
            "UPDATE reservation_seats SET status = 'CANCELLED' WHERE reservation_id = {}",
            ids[0].0
        ),
    )
    .await;
    common::run(
        &q.pool,
        &format!(
            "UPDATE tickets SET status = 'VOID', voided_at = NOW(6) WHERE reservation_id = {}",
            ids[0].0
        ),
    )
    .await;
    common::run(
        &q.pool,
        &format!(
            "UPDATE users SET email = NULL, email_changed_at = NOW(6) WHERE id = {}",
            ids[1].1
        ),
    )
    .await;
    let relay = MailRelay::new(q.pool.clone(), config(&sink, &key_line())).unwrap();
    let round = relay.send_once().await.unwrap();
    assert_eq!((round.sent, round.skipped), (1, 2));
    let messages = sink.messages();
    assert_eq!(messages.len(), 1);
    assert_eq!(
        messages[0]["messageId"],
        format!("<reservation-{}.order-confirmation@box.example>", ids[2].0)
    );
}

#[tokio::test]
async fn a_relay_killed_mid_send_leaves_the_mail_to_the_next_which_sends_it_with_the_same_message_id()
 {
    let q = sold(8).await;
    let keys = key_line();
    // The server takes its time over each message: the relay is killed while
    // the first one waits for its answer.
    let sink = SmtpSink::start(Behaviour {
        delay: Duration::from_millis(300),
        ..Behaviour::default()
    })
    .await;
    let url = sink.url();
    let env = [
        ("TICKET_SMTP_URL", url.as_str()),
        ("TICKET_MAIL_FROM", FROM),
        ("TICKET_CODE_KEYS", keys.as_str()),
        // A lease of ten timeouts: 5 s.
        ("TICKET_MAIL_TIMEOUT_MS", "500"),
        ("TICKET_MAIL_CONNECTIONS", "1"),
    ];
    let (mut first, _lines) = common::process::spawn_worker(&q.db.url(), &env);
    let deadline = Instant::now() + Duration::from_secs(30);
    while sink.receiving().is_empty() {
        assert!(Instant::now() < deadline, "the relay never sent");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    common::process::signal(&first, "-KILL");
    first.wait().unwrap();
    let interrupted = sink.receiving()[0].clone();
    assert!(unsent(&q.pool).await > 0, "killed before the end");

    let (mut second, _lines) = common::process::spawn_worker(&q.db.url(), &env);
    until_every_mail_ended(&q.pool, Duration::from_secs(60)).await;
    common::process::signal(&second, "-TERM");
    assert!(common::process::wait_for_exit(&mut second).success());

    // Every mail arrived; the one cut off may have arrived twice (the server
    // took it as its sender died), and then as the same message.
    let messages = sink.messages();
    let mut arrivals: HashMap<String, usize> = HashMap::new();
    for message in &messages {
        *arrivals
            .entry(message["messageId"].as_str().unwrap().to_owned())
            .or_default() += 1;
    }
    assert_eq!(arrivals.len(), 8, "{arrivals:?}");
    for (id, n) in &arrivals {
        assert!(*n == 1 || *id == interrupted, "{id} arrived {n} times");
    }
    let sent = "SELECT COUNT(*) FROM mails WHERE outcome = 'SENT'";
    assert_eq!(common::scalar(&q.pool, sent).await, 8);
    // What the dead relay had claimed waited for its lease, then went again.
    let resent = "SELECT COUNT(*) FROM mails WHERE attempts = 2";
    assert!(common::scalar(&q.pool, resent).await >= 1);
    assert_invariants_hold(&q.pool).await;
}
