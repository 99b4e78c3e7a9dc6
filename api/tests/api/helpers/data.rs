//! Making the data a test needs through the API or the database: users, concerts, seats, requests.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::Barrier;

use super::*;

/// A concert of one row of `n` seats with these settings; (id, seat ids).
pub async fn concert_with(app: &TestApp, n: u32, settings: Value) -> (u64, Vec<u64>) {
    let mut extra = json!({"rows": 1, "seatsPerRow": n});
    if let (Some(extra), Some(settings)) = (extra.as_object_mut(), settings.as_object()) {
        extra.extend(settings.clone());
    }
    app.concert_and_seats(extra).await
}

/// Orders `seats` (one request, all or nothing).
pub async fn order(app: &TestApp, token: &str, seats: &[u64]) -> Reply {
    app.post("/api/reservations", Some(token), json!({"seatIds": seats}))
        .await
}

/// Orders `seats` and has a worker decide it; the order must win. Returns
/// the reservation id.
pub async fn won(app: &TestApp, token: &str, seats: &[u64]) -> u64 {
    let queued = order(app, token, seats).await.assert_status(201)["queueId"]
        .as_u64()
        .unwrap();
    app.drain().await;
    let status = app.queue_status(token, queued).await;
    assert_eq!(status["status"], "SUCCESS", "{status}");
    status["reservationId"].as_u64().unwrap()
}

impl TestApp {
    /// Signs up a user; returns (id, token).
    pub async fn user(&self, nick: &str) -> (u64, String) {
        let reply = self
            .post(
                "/api/users",
                None,
                json!({"nickName": nick, "password": "password123"}),
            )
            .await;
        let id = reply.assert_status(201)["id"].as_u64().expect("no id");
        (id, self.login(nick, "password123").await)
    }

    /// The admin's account says `language` ("en", "ko"): the page speaks
    /// it once the admin signs in (the browser tests').
    #[allow(dead_code)]
    pub async fn admin_speaks(&self, language: &str) {
        let admin = self.get("/api/users/me", Some(&self.admin_token)).await;
        let admin = admin.assert_status(200)["id"].as_u64().expect("no id");
        self.patch(
            &format!("/api/users/{admin}"),
            Some(&self.admin_token),
            json!({"language": language}),
        )
        .await
        .assert_status(200);
    }

    /// Creates a concert (as admin) with the given extra fields; returns its JSON.
    pub async fn concert(&self, extra: Value) -> Value {
        let mut body = json!({"title": "IU Live", "venue": "Olympic Hall", "concertDate": "2099-05-01T19:00:00+09:00"});
        if let (Some(body), Some(extra)) = (body.as_object_mut(), extra.as_object()) {
            body.extend(extra.clone());
        }
        let reply = self
            .post("/api/concerts", Some(&self.admin_token), body)
            .await;
        reply.assert_status(201).clone()
    }

    pub async fn seats(&self, concert: u64) -> Vec<Value> {
        let reply = self
            .get(&format!("/api/concerts/{concert}/seats"), None)
            .await;
        reply
            .assert_status(200)
            .as_array()
            .expect("seats must be an array")
            .clone()
    }

    /// Waits until the concert's detail shows these (available, held,
    /// reserved) counts: they come from a snapshot at most about a second
    /// old. Panics with the last counts after five seconds.
    pub async fn seat_counts_become(&self, concert: u64, expected: (u64, u64, u64)) {
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        loop {
            let detail = self.get(&format!("/api/concerts/{concert}"), None).await;
            let body = detail.assert_status(200);
            let counts = ["availableSeats", "heldSeats", "reservedSeats"]
                .map(|field| body[field].as_u64().expect("a count"));
            if (counts[0], counts[1], counts[2]) == expected {
                return;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "counts {counts:?}, expected {expected:?}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// A new concert with the given extra fields: its id and its seat ids,
    /// in order.
    pub async fn concert_and_seats(&self, extra: Value) -> (u64, Vec<u64>) {
        let id = self.concert(extra).await["id"]
            .as_u64()
            .expect("no concert id");
        let seats = self
            .seats(id)
            .await
            .iter()
            .map(|s| s["id"].as_u64().expect("no seat id"))
            .collect();
        (id, seats)
    }

    /// The seat ids, in order, of a new concert with one row of `n` seats
    /// and the highest cap per fan (for tests in which one user takes many).
    pub async fn seat_ids(&self, n: u32) -> Vec<u64> {
        self.concert_and_seats(json!({"rows": 1, "seatsPerRow": n, "maxSeatsPerUser": 100}))
            .await
            .1
    }

    /// Books a seat directly in the database, as a sale without holds
    /// leaves it: the seat RESERVED, a CONFIRMED reservation claiming it
    /// (made by no request) and its ReservationConfirmed event.
    pub async fn book_directly(&self, user: u64, seat: u64) {
        let now = ticket_core::testing::now().naive_utc();
        let mut tx = self.pool.begin().await.unwrap();
        let taken = sqlx::query(
            "UPDATE seats SET status = 'RESERVED' WHERE id = ? AND status = 'AVAILABLE'",
        )
        .bind(seat)
        .execute(&mut *tx)
        .await
        .unwrap();
        assert_eq!(taken.rows_affected(), 1, "seat {seat} was not available");
        let made = sqlx::query(
            "INSERT INTO reservations (user_id, concert_id, seat_id, status, confirmed_at, created_at, updated_at) \
             SELECT ?, concert_id, id, 'CONFIRMED', ?, ?, ? FROM seats WHERE id = ?",
        )
        .bind(user)
        .bind(now)
        .bind(now)
        .bind(now)
        .bind(seat)
        .execute(&mut *tx)
        .await
        .unwrap();
        let id = made.last_insert_id();
        sqlx::query(
            "INSERT INTO reservation_seats (reservation_id, seat_id, concert_id, status) \
             SELECT ?, id, concert_id, 'CONFIRMED' FROM seats WHERE id = ?",
        )
        .bind(id)
        .bind(seat)
        .execute(&mut *tx)
        .await
        .unwrap();
        ticket_core::db::tickets::issue_for(
            &mut tx,
            &[ticket_core::domain::ReservationId(id)],
            ticket_core::testing::now(),
        )
        .await
        .unwrap();
        sqlx::query(
            "INSERT INTO outbox (event_type, aggregate_id, payload, created_at) \
             VALUES ('ReservationConfirmed', ?, '{}', ?)",
        )
        .bind(id)
        .bind(now)
        .execute(&mut *tx)
        .await
        .unwrap();
        tx.commit().await.unwrap();
    }

    pub async fn count(&self, table: &str) -> i64 {
        let (n,): (i64,) =
            sqlx::query_as(sqlx::AssertSqlSafe(format!("SELECT COUNT(*) FROM {table}")))
                .fetch_one(&self.pool)
                .await
                .unwrap();
        n
    }

    /// `n` users inserted directly (no password hashing) with tokens minted
    /// by the server's keys: for tests about reservations, not sign-up.
    pub async fn many_users(&self, prefix: &str, n: usize) -> Vec<(u64, String)> {
        let mut conn = self.pool.acquire().await.unwrap();
        let ids = ticket_core::testing::seed::users(&mut conn, prefix, n)
            .await
            .unwrap();
        let keys = token_keys(Duration::from_secs(3600));
        ids.into_iter()
            .map(|id| {
                (
                    id.get(),
                    keys.issue(id, ticket_core::domain::Role::User, chrono::Utc::now())
                        .token,
                )
            })
            .collect()
    }

    /// Sends every (token, seat) request at the same moment; returns the replies in order.
    pub async fn reserve_all_at_once(&self, requests: Vec<(String, u64)>) -> Vec<Reply> {
        let bodies = requests
            .into_iter()
            .map(|(token, seat)| (token, json!({"seatId": seat})))
            .collect();
        self.request_all_at_once(bodies).await
    }

    /// A new user per body, every request sent at the same moment, then
    /// decided by `workers` workers racing: `(queue id, token, body)` of
    /// each, in line order.
    pub async fn race(&self, bodies: Vec<Value>, workers: usize) -> Vec<(u64, String, Value)> {
        let users = self.many_users("racer", bodies.len()).await;
        let sent = users
            .iter()
            .zip(&bodies)
            .map(|((_, token), body)| (token.clone(), body.clone()))
            .collect();
        let replies = self.request_all_at_once(sent).await;
        let mut requests = Vec::new();
        for ((reply, body), (_, token)) in replies.iter().zip(bodies).zip(&users) {
            let id = reply.assert_status(201)["queueId"].as_u64().unwrap();
            requests.push((id, token.clone(), body));
        }
        self.run_workers_until_drained(workers).await;
        self.assert_invariants().await;
        requests.sort_by_key(|(id, ..)| *id);
        requests
    }

    /// Sends every `(token, body)` reservation request at the same moment;
    /// the replies in the order given.
    pub async fn request_all_at_once(&self, requests: Vec<(String, Value)>) -> Vec<Reply> {
        let built = requests
            .into_iter()
            .map(|(token, body)| {
                self.client
                    .post(format!("{}/api/reservations", self.base))
                    .bearer_auth(token)
                    .json(&body)
            })
            .collect();
        send_all_at_once(built).await
    }

    /// As many new users as `seats`, each asking for one of them, all at
    /// once; every request is accepted.
    pub async fn one_seat_each(&self, prefix: &str, seats: &[u64]) {
        let users = self.many_users(prefix, seats.len()).await;
        let requests = users
            .iter()
            .zip(seats)
            .map(|((_, token), seat)| (token.clone(), *seat))
            .collect();
        for reply in self.reserve_all_at_once(requests).await {
            reply.assert_status(201);
        }
    }

    pub async fn reserve(&self, token: &str, seat: u64) -> Reply {
        self.post("/api/reservations", Some(token), json!({"seatId": seat}))
            .await
    }

    /// Queues a request for `seat` as part of the caller's trace; returns its queue id.
    pub async fn reserve_traced(&self, token: &str, seat: u64, traceparent: &str) -> u64 {
        let response = self
            .client
            .post(format!("{}/api/reservations", self.base))
            .bearer_auth(token)
            .header("traceparent", traceparent)
            .json(&json!({"seatId": seat}))
            .send()
            .await
            .unwrap();
        let reply = TestApp::reply(response).await;
        reply.assert_status(201)["queueId"].as_u64().unwrap()
    }

    pub async fn queue_status(&self, token: &str, queue_id: u64) -> Value {
        let reply = self
            .get(&format!("/api/reservations/status/{queue_id}"), Some(token))
            .await;
        reply.assert_status(200).clone()
    }

    /// `count` presale access codes for `concert` (as admin), each good for
    /// `uses` requests and `seats` seats; (id, code) of each.
    pub async fn access_codes(
        &self,
        concert: u64,
        count: u32,
        uses: u32,
        seats: u32,
    ) -> Vec<(u64, String)> {
        let reply = self
            .post(
                &format!("/api/concerts/{concert}/access-codes"),
                Some(&self.admin_token),
                json!({"count": count, "usesPerCode": uses, "seatsPerCode": seats}),
            )
            .await;
        reply.assert_status(201)["codes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                (
                    c["id"].as_u64().unwrap(),
                    c["code"].as_str().unwrap().to_owned(),
                )
            })
            .collect()
    }

    /// Puts `user` on `concert`'s list for one seat straight in the table,
    /// as no request could today (a fan who joined under other rules).
    pub async fn waiting_directly(&self, concert: u64, user: u64) {
        sqlx::query(
            "INSERT INTO waiting_list_entries (concert_id, user_id, seats, created_at) \
             VALUES (?, ?, 1, UTC_TIMESTAMP(6))",
        )
        .bind(concert)
        .bind(user)
        .execute(&self.pool)
        .await
        .unwrap();
    }

    /// Fails the test on any violated invariant of seats, reservations and queue.
    pub async fn assert_invariants(&self) {
        ticket_core::testing::assert_invariants(&self.pool).await;
    }

    /// How many queue rows have each status.
    pub async fn queue_counts(&self) -> std::collections::HashMap<String, i64> {
        let rows: Vec<(String, i64)> =
            sqlx::query_as("SELECT status, COUNT(*) FROM reservation_queue GROUP BY status")
                .fetch_all(&self.pool)
                .await
                .unwrap();
        rows.into_iter().collect()
    }
}

/// Sends every request at the same moment (to any instances); the replies
/// in the order given.
pub async fn send_all_at_once(requests: Vec<reqwest::RequestBuilder>) -> Vec<Reply> {
    let barrier = Arc::new(Barrier::new(requests.len()));
    let tasks: Vec<_> = requests
        .into_iter()
        .map(|request| {
            let barrier = barrier.clone();
            tokio::spawn(async move {
                barrier.wait().await;
                TestApp::reply(request.send().await.unwrap()).await
            })
        })
        .collect();
    let mut replies = Vec::new();
    for task in tasks {
        replies.push(task.await.unwrap());
    }
    replies
}
