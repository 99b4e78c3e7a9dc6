//! Positions and waits in status polls, and decisions pushed live over
//! Server-Sent Events, read by a real HTTP client from the real server.
//!
//! Long because the polls and the streams are read by a real client through
//! whole decisions, with the stream's parser beside them.

use std::time::Duration;

use serde_json::{Value, json};
use ticket_worker::Mode;
use tokio_util::sync::CancellationToken;

use crate::helpers::{TestApp, spawn_app};

/// One event of a stream.
#[derive(Debug, Clone, Default)]
struct Sse {
    event: String,
    id: Option<String>,
    retry: Option<u64>,
    data: Value,
}

/// A Server-Sent Events client over a streaming response.
struct EventStream {
    response: reqwest::Response,
    buffer: String,
}

impl EventStream {
    async fn open(
        app: &TestApp,
        token: &str,
        queue_id: u64,
        last_id: Option<&str>,
    ) -> reqwest::Response {
        let mut request = app
            .client
            .get(format!(
                "{}/api/reservations/status/{queue_id}/events",
                app.base
            ))
            .bearer_auth(token)
            .header("accept", "text/event-stream");
        if let Some(id) = last_id {
            request = request.header("last-event-id", id);
        }
        request.send().await.expect("the stream request failed")
    }

    async fn follow(app: &TestApp, token: &str, queue_id: u64) -> Self {
        let response = Self::open(app, token, queue_id, None).await;
        assert_eq!(response.status(), 200);
        assert_eq!(response.headers()["content-type"], "text/event-stream");
        Self {
            response,
            buffer: String::new(),
        }
    }

    /// The next event (comments skipped); None when the server ended the
    /// stream. Fails after 30 s of silence.
    async fn next(&mut self) -> Option<Sse> {
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                let mut event = Sse {
                    event: "message".into(),
                    ..Sse::default()
                };
                let mut data = String::new();
                for line in block.lines() {
                    if let Some(v) = line.strip_prefix("event:") {
                        event.event = v.trim().into();
                    } else if let Some(v) = line.strip_prefix("data:") {
                        data.push_str(v.trim());
                    } else if let Some(v) = line.strip_prefix("id:") {
                        event.id = Some(v.trim().into());
                    } else if let Some(v) = line.strip_prefix("retry:") {
                        event.retry = v.trim().parse().ok();
                    }
                }
                if data.is_empty() {
                    continue; // a heartbeat comment
                }
                event.data = serde_json::from_str(&data).expect("event data is JSON");
                return Some(event);
            }
            let chunk = tokio::time::timeout(Duration::from_secs(30), self.response.chunk())
                .await
                .expect("the stream fell silent")
                .expect("the stream broke");
            match chunk {
                Some(bytes) => self.buffer.push_str(&String::from_utf8_lossy(&bytes)),
                None => return None,
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_stream_tells_the_place_then_the_decision_and_ends() {
    let app = spawn_app().await;
    let seats = app.seat_ids(2).await;
    let (_, first) = app.user("first").await;
    let (_, second) = app.user("second").await;
    let (_, stranger) = app.user("stranger").await;
    let a = app.reserve(&first, seats[0]).await.assert_status(201)["queueId"]
        .as_u64()
        .unwrap();
    let b = app.reserve(&second, seats[0]).await.assert_status(201)["queueId"]
        .as_u64()
        .unwrap();

    // Someone else's request is not found; without a token, 401.
    assert_eq!(
        EventStream::open(&app, &stranger, b, None).await.status(),
        404
    );
    let anonymous = app
        .get(&format!("/api/reservations/status/{b}/events"), None)
        .await;
    anonymous.assert_problem(401, "UNAUTHORIZED");

    let mut stream = EventStream::follow(&app, &second, b).await;
    let mut event = stream.next().await.expect("a first event");
    assert_eq!(event.event, "position");
    assert_eq!(event.data["queueId"], b);
    while event.data["position"].is_null() {
        event = stream
            .next()
            .await
            .expect("the place once the line is read");
    }
    assert_eq!(event.data["position"], 2, "one request is ahead: {event:?}");
    assert!(event.retry.is_some_and(|ms| (1_000..=10_000).contains(&ms)));

    app.drain().await;
    let decision = loop {
        let event = stream.next().await.expect("the decision");
        if event.event == "decision" {
            break event;
        }
    };
    assert_eq!(decision.id.as_deref(), Some("decision"));
    assert_eq!(decision.data["status"], "FAILED");
    assert_eq!(decision.data["reason"], "SEAT_TAKEN");
    assert_eq!(decision.data["seatIds"], json!([seats[0]]));
    assert!(
        stream.next().await.is_none(),
        "the stream ends after the decision"
    );

    // Reconnecting after the decision: told there is nothing more.
    let again = EventStream::open(&app, &second, b, Some("decision")).await;
    assert_eq!(again.status(), 204);
    // A stream for a decided request gives the decision at once.
    let mut decided = EventStream::follow(&app, &first, a).await;
    let event = decided.next().await.expect("the decision");
    assert_eq!(
        (event.event.as_str(), &event.data["status"]),
        ("decision", &json!("SUCCESS"))
    );
    assert!(decided.next().await.is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_lottery_request_waits_for_the_opening() {
    let app = spawn_app().await;
    let opens_at = chrono::Utc::now() + chrono::Duration::hours(1);
    let (_, seats) = app
        .concert_and_seats(
            json!({"rows": 1, "seatsPerRow": 1, "opensAt": opens_at.to_rfc3339(),
                                  "lotteryWindowSeconds": 7200}),
        )
        .await;
    let (_, token) = app.user("early").await;
    let id = app.reserve(&token, seats[0]).await.assert_status(201)["queueId"]
        .as_u64()
        .unwrap();
    let status = app.queue_status(&token, id).await;
    assert_eq!(status["status"], "WAITING");
    assert_eq!(
        status["position"],
        Value::Null,
        "the draw is taken at the opening"
    );
    assert_eq!(status["pollAfterMs"], 10_000);
    assert!(status["opensAt"].is_string());
    let mut stream = EventStream::follow(&app, &token, id).await;
    let event = stream.next().await.expect("an event");
    assert_eq!(event.event, "waiting");
    assert_eq!(event.data["status"], "WAITING");
    assert_eq!(event.data["opensAt"], status["opensAt"]);
}

/// Polls show the place among the concert's open requests, and once the
/// workers have measured their pace, the wait.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_poll_shows_the_place_and_the_wait() {
    let app = spawn_app().await;
    let seats = app.seat_ids(1).await;
    let users = app.many_users("p", 60).await;
    let mut ids = Vec::new();
    for (_, token) in &users {
        let reply = app.reserve(token, seats[0]).await;
        ids.push(reply.assert_status(201)["queueId"].as_u64().unwrap());
    }
    let (_, last_token) = users.last().unwrap();
    let last = *ids.last().unwrap();
    let place = until_poll(&app, last_token, last, |s| !s["position"].is_null()).await;
    assert_eq!(place["position"], 60);
    assert_eq!(
        place["estimatedWaitMs"],
        Value::Null,
        "nothing measured yet"
    );

    // A worker decides part of the line, then publishes what it measured.
    let worker = app.worker("w", Mode::Batch, 10, Duration::from_secs(30));
    for _ in 0..2 {
        worker.process_once().await.unwrap();
    }
    // A rate is a count over time: the worker publishes once a second.
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    worker.process_once().await.unwrap();
    let waited = until_poll(&app, last_token, last, |s| {
        s["position"] == 30 && s["estimatedWaitMs"].as_u64().is_some()
    })
    .await;
    assert!(
        waited["pollAfterMs"]
            .as_u64()
            .is_some_and(|ms| (1_000..=10_000).contains(&ms))
    );
    let decided = until_poll(&app, &users[0].1, ids[0], |s| s["status"] != "PENDING").await;
    assert_eq!(decided["position"], Value::Null);
    assert_eq!(decided["pollAfterMs"], Value::Null);
}

/// Two workers out of step: one still deciding the first batch while the
/// other has committed the next. The requests decided out of turn are not
/// counted as ahead of anyone, and the front moves once the first commits.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn positions_stay_exact_while_two_workers_decide_out_of_step() {
    let app = spawn_app().await;
    let seats = app.seat_ids(40).await;
    let users = app.many_users("o", 40).await;
    let mut ids = Vec::new();
    for ((_, token), seat) in users.iter().zip(&seats) {
        let reply = app.reserve(token, *seat).await;
        ids.push(reply.assert_status(201)["queueId"].as_u64().unwrap());
    }
    let poll = |i: usize| until_poll(&app, &users[i].1, ids[i], |_| true);
    assert_eq!(poll(39).await["position"], 40, "everyone is ahead");

    // One worker holds the first ten in its decision's transaction ...
    let first = ticket_worker::decide::claim(&app.pool, 10)
        .await
        .unwrap()
        .expect("the first batch");
    let first_ids: Vec<u64> = first.ids().iter().map(|id| id.get()).collect();
    assert_eq!(first_ids, ids[..10]);
    // ... while another decides the next ten.
    let other = app.worker("other", Mode::Batch, 10, Duration::from_secs(30));
    assert_eq!(other.process_once().await.unwrap().claimed, 10);
    let decided = until_poll(&app, &users[14].1, ids[14], |s| s["status"] != "PENDING").await;
    assert_eq!(decided["status"], "SUCCESS", "decided out of turn");

    // Ahead of the last: the ten still being decided and 21..=39.
    let last = until_poll(&app, &users[39].1, ids[39], |s| s["position"] != 40).await;
    assert_eq!(last["position"], 30, "{last}");
    let middle = poll(24).await;
    assert_eq!(middle["position"], 15, "10 held, 21..=24: {middle}");
    let front = poll(0).await;
    assert_eq!(front["position"], 1, "{front}");

    ticket_worker::decide::decide_claimed(first, Duration::from_millis(100))
        .await
        .unwrap();
    let last = until_poll(&app, &users[39].1, ids[39], |s| s["position"] != 30).await;
    assert_eq!(last["position"], 20, "{last}");
    assert_eq!(poll(20).await["position"], 1);
}

async fn until_poll(app: &TestApp, token: &str, id: u64, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let status = app.queue_status(token, id).await;
        if done(&status) {
            return status;
        }
        assert!(tokio::time::Instant::now() < deadline, "never: {status}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Many streams on one instance while workers decide their requests: each
/// gets its decision, and the instance follows them all with a bounded
/// number of queries, not one per stream.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn many_streams_are_fed_by_a_few_queries() {
    const STREAMS: usize = 300;
    let app = spawn_app().await;
    let seats = app.seat_ids(100).await;
    let users = app.many_users("s", STREAMS).await;
    let requests: Vec<(String, u64)> = users
        .iter()
        .enumerate()
        .map(|(i, (_, token))| (token.clone(), seats[i % seats.len()]))
        .collect();
    let replies = app.reserve_all_at_once(requests).await;
    let ids: Vec<u64> = replies
        .iter()
        .map(|r| r.assert_status(201)["queueId"].as_u64().unwrap())
        .collect();
    let mut streams = Vec::new();
    for ((_, token), id) in users.iter().zip(&ids) {
        streams.push(EventStream::follow(&app, token, *id).await);
    }
    let queries_before = app.metric("ticket_api_line_queries_total").await;
    let started = std::time::Instant::now();
    let shutdown = CancellationToken::new();
    let worker = app.worker("w", Mode::Batch, 20, Duration::from_secs(30));
    let running = tokio::spawn({
        let shutdown = shutdown.clone();
        async move { worker.run(shutdown).await }
    });
    let decisions = futures::future::join_all(streams.into_iter().map(|mut stream| async move {
        loop {
            match stream.next().await {
                Some(event) if event.event == "decision" => return event.data["status"].clone(),
                Some(_) => {}
                None => panic!("a stream ended without its decision"),
            }
        }
    }))
    .await;
    let elapsed = started.elapsed().as_secs_f64();
    shutdown.cancel();
    running.await.unwrap();
    let won = decisions.iter().filter(|s| **s == "SUCCESS").count();
    assert_eq!(won, 100, "one per seat");
    assert_eq!(decisions.len() - won, STREAMS - 100);
    let queries = app.metric("ticket_api_line_queries_total").await - queries_before;
    println!("{STREAMS} streams decided in {elapsed:.2} s with {queries} queries");
    // About 7 reads a second while streams are open (and the lookups of
    // those that left the line): far fewer than one per stream.
    assert!(
        queries <= 15.0 * elapsed + 5.0 && queries < STREAMS as f64,
        "{queries} queries in {elapsed:.2} s"
    );
    assert_eq!(app.metric("ticket_api_status_streams").await, 0.0);
}

/// A request nobody decides (no worker runs here): its stream stays open.
async fn waiting_request(app: &TestApp, token: &str, seat: u64) -> u64 {
    app.reserve(token, seat).await.assert_status(201)["queueId"]
        .as_u64()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn open_streams_are_bounded_per_user_and_per_instance() {
    let app =
        crate::helpers::spawn_app_with_limits(ticket_api::middleware::limits::LimitSettings {
            max_streams_per_user: 2,
            max_streams_per_instance: 3,
            ..ticket_api::middleware::limits::LimitSettings::OFF
        })
        .await;
    let seats = app.seat_ids(4).await;
    let (_, alice) = app.user("alice").await;
    let (_, bob) = app.user("bob").await;
    let mine = waiting_request(&app, &alice, seats[0]).await;
    let bobs = waiting_request(&app, &bob, seats[1]).await;
    let first = EventStream::follow(&app, &alice, mine).await;
    let _second = EventStream::follow(&app, &alice, mine).await;
    let third = EventStream::open(&app, &alice, mine, None).await;
    assert_eq!(third.status(), 429, "a user's share is two");
    assert!(third.headers().contains_key("retry-after"));
    let _bobs = EventStream::follow(&app, &bob, bobs).await;
    let (_, carol) = app.user("carol").await;
    let carols = waiting_request(&app, &carol, seats[2]).await;
    let busy = EventStream::open(&app, &carol, carols, None).await;
    assert_eq!(busy.status(), 503, "the instance follows three at most");
    assert_eq!(busy.headers()["retry-after"], "1");
    let body: Value = busy.json().await.unwrap();
    assert_eq!(body["code"], "INSTANCE_BUSY");
    // A stream that ends gives its place back.
    drop(first);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        let again = EventStream::open(&app, &carol, carols, None).await;
        if again.status() == 200 {
            break;
        }
        assert_eq!(again.status(), 503);
        assert!(
            tokio::time::Instant::now() < deadline,
            "the place never came back"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_stream_ends_soon_after_its_token_is_revoked() {
    let app = spawn_app().await;
    let seats = app.seat_ids(1).await;
    let (_, token) = app.user("leaver").await;
    let id = waiting_request(&app, &token, seats[0]).await;
    let mut stream = EventStream::follow(&app, &token, id).await;
    assert_eq!(stream.next().await.expect("its place").event, "position");
    app.post("/api/auth/logout-all", Some(&token), json!({}))
        .await
        .assert_status(204);
    let revoked = tokio::time::Instant::now();
    let ended = tokio::time::timeout(Duration::from_secs(5), async {
        while stream.next().await.is_some() {}
    })
    .await;
    assert!(ended.is_ok(), "the stream outlived its token by 5 s");
    assert!(
        revoked.elapsed() < Duration::from_secs(3),
        "{:?}",
        revoked.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn after_the_opening_the_poll_and_the_stream_report_the_same_status() {
    let app = spawn_app().await;
    let opens_at = chrono::Utc::now() + chrono::Duration::milliseconds(1_500);
    let (_, seats) = app
        .concert_and_seats(
            json!({"rows": 1, "seatsPerRow": 1, "opensAt": opens_at.to_rfc3339(),
                                   "lotteryWindowSeconds": 60}),
        )
        .await;
    let (_, token) = app.user("early").await;
    let id = waiting_request(&app, &token, seats[0]).await;
    assert_eq!(app.queue_status(&token, id).await["status"], "WAITING");
    // The sale opens; no worker has admitted the lottery yet (none runs),
    // so the row is still WAITING in the table.
    let polled = until_poll(&app, &token, id, |s| s["opensAt"].is_null()).await;
    let mut stream = EventStream::follow(&app, &token, id).await;
    let event = stream.next().await.expect("an event");
    assert_eq!(event.event, "position");
    assert_eq!(polled["status"], "PENDING", "{polled}");
    assert_eq!(event.data["status"], polled["status"]);
}

/// After the opening, each lottery request's poll has its place in the
/// drawn order at once (read with its row from its bucket, no worker
/// running): the positions are 1 to N in the order of the drawn keys.
#[tokio::test]
async fn after_the_opening_a_lottery_poll_has_its_drawn_place() {
    const FANS: usize = 12;
    let app = spawn_app().await;
    let opens_at = chrono::Utc::now() + chrono::Duration::milliseconds(1_500);
    let (_, seats) = app
        .concert_and_seats(
            json!({"rows": 1, "seatsPerRow": FANS, "opensAt": opens_at.to_rfc3339(),
                                  "lotteryWindowSeconds": 60}),
        )
        .await;
    let users = app.many_users("drawn", FANS).await;
    let mut requests = Vec::new();
    for ((_, token), seat) in users.iter().zip(&seats) {
        requests.push((token.clone(), waiting_request(&app, token, *seat).await));
    }
    let mut placed = Vec::new();
    for (token, id) in &requests {
        let polled = until_poll(&app, token, *id, |s| s["position"].is_u64()).await;
        assert_eq!(polled["status"], "PENDING", "{polled}");
        placed.push((polled["position"].as_u64().unwrap(), *id));
    }
    placed.sort_unstable();
    let drawn: Vec<(u64,)> =
        sqlx::query_as("SELECT id FROM reservation_queue ORDER BY line_key, id")
            .fetch_all(&app.pool)
            .await
            .unwrap();
    let positions: Vec<u64> = placed.iter().map(|(p, _)| *p).collect();
    assert_eq!(positions, (1..=FANS as u64).collect::<Vec<_>>());
    let in_place_order: Vec<u64> = placed.iter().map(|(_, id)| *id).collect();
    let in_drawn_order: Vec<u64> = drawn.iter().map(|(id,)| *id).collect();
    assert_eq!(in_place_order, in_drawn_order, "places follow the draw");
}
