//! The storm (issue 57): a seeded random mix of what fans, operators, the
//! door, the workers and the payment provider do, against the real stack
//! (the API, two `ticket-worker` processes killed and restarted now and
//! then, the workers' passes run by the storm itself, MariaDB, localstripe
//! and its webhooks), with `ticket-api check` read at random points and at
//! the end, and a money ledger from every side (see [`ledger`]).
//!
//! `TICKET_STORM_SEED` replays a seed (each run prints its own);
//! `TICKET_STORM_OPERATIONS` sets the length (`scripts/bench.sh storm` runs
//! a long one). Operations run a round of several at once, so a seed gives
//! the same operations and the scheduler their interleaving. Reservation
//! requests (by seat, by category, by area) go through the enqueue's group
//! writes, a third with an `Idempotency-Key`, some sent twice (issue 59).
//! The first organizer's staff work beside them (issue 60): a clerk's desk
//! shifts (places asked of the line, paid in cash or by card, the drawer
//! counted at the close), finance voiding orders, the owner changing a
//! member's role.
//!
//! Long because the storm is one story: its moves, its faults and its
//! ledger read together.

use std::collections::{BTreeSet, HashMap};
use std::sync::Mutex;
use std::time::Duration;

use serde_json::{Value, json};
use ticket_core::payments::stripe::StripeClient;
use ticket_core::testing::localstripe::{self, LocalStripe};
use ticket_core::testing::smtp::{Behaviour, SmtpSink};
use ticket_worker::cancellation::Cancellations;
use ticket_worker::holds::HoldSweeper;
use ticket_worker::payments::Money;
use ticket_worker::waiting_list::Offers;

use crate::helpers::*;

/// SplitMix64: a seed gives the same operations in the same order.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    fn pick<T: Clone>(&mut self, items: &[T]) -> Option<T> {
        (!items.is_empty()).then(|| items[self.below(items.len())].clone())
    }

    fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }
}

/// What one operation is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Op {
    ReserveSeats,
    ReserveBest,
    ReserveStanding,
    Decide,
    Pay,
    ConfirmAtDesk,
    Cancel,
    RefundOrder,
    RefundTicket,
    CheckIn,
    CheckInOffline,
    JoinWaitingList,
    Offer,
    DeleteAccount,
    Reprice,
    EndHold,
    Sweep,
    MoneyPass,
    ProviderDown,
    ReplayWebhook,
    KillWorkerMidStep,
    KillWorkerProcess,
    RecordCashBack,
    FanRefund,
    RefundAtTheDoor,
    DropHold,
    ReorderCategories,
    CancelShow,
    DeskSale,
    DeskClose,
    VoidOrder,
    RoleChange,
    Check,
}

/// Operations by weight: fans' most, the workers' often, faults now and then.
const MIX: &[(Op, usize)] = &[
    (Op::ReserveSeats, 14),
    (Op::ReserveBest, 6),
    (Op::ReserveStanding, 6),
    (Op::Decide, 10),
    (Op::Pay, 12),
    (Op::ConfirmAtDesk, 3),
    (Op::Cancel, 5),
    (Op::RefundOrder, 3),
    (Op::RefundTicket, 3),
    (Op::CheckIn, 6),
    (Op::CheckInOffline, 2),
    (Op::JoinWaitingList, 3),
    (Op::Offer, 3),
    (Op::DeleteAccount, 2),
    (Op::Reprice, 1),
    (Op::EndHold, 4),
    (Op::Sweep, 3),
    (Op::MoneyPass, 6),
    (Op::ProviderDown, 1),
    (Op::ReplayWebhook, 4),
    (Op::KillWorkerMidStep, 2),
    (Op::KillWorkerProcess, 1),
    (Op::RecordCashBack, 2),
    (Op::FanRefund, 3),
    (Op::RefundAtTheDoor, 2),
    (Op::DropHold, 1),
    (Op::ReorderCategories, 1),
    (Op::DeskSale, 4),
    (Op::DeskClose, 1),
    (Op::VoidOrder, 1),
    (Op::RoleChange, 1),
    (Op::Check, 1),
];

fn choose(rng: &mut Rng) -> Op {
    let total: usize = MIX.iter().map(|(_, w)| w).sum();
    let mut at = rng.below(total);
    for (op, weight) in MIX {
        if at < *weight {
            return *op;
        }
        at -= weight;
    }
    Op::Check
}

/// The stage: concerts, fans, scanners.
struct Stage {
    /// A seated, priced concert (two categories, a waiting list).
    seated: u64,
    seated_seats: Vec<u64>,
    /// A priced concert with a standing floor, whose fans' refunds closed
    /// long ago.
    standing: u64,
    /// A free concert without holds (the original flow), cancelled late.
    free: u64,
    free_seats: Vec<u64>,
    /// Each concert's door scanner's token.
    scanners: HashMap<u64, String>,
    /// (user id, token) of the fans.
    fans: Vec<(u64, String)>,
    /// The refunds of orders paid by hand whose money the storm, as the
    /// cashier, gave back and recorded.
    cash_given: Mutex<BTreeSet<u64>>,
    /// The requests by category the line took: (queue id, category).
    asked: Mutex<Vec<(u64, String)>>,
    /// Two `ticket-worker` processes deciding, sweeping, offering and
    /// paying back beside the storm's own passes.
    workers: Mutex<Vec<Running>>,
    /// Where the workers' mail goes (the fans have addresses).
    smtp: SmtpSink,
    /// The first organizer's staff (it owns the storm's concerts): a
    /// clerk at the desk, finance voiding orders, and a member whose role
    /// the owner keeps changing.
    clerk: String,
    finance: String,
    spare: u64,
    database_url: String,
    stripe_base: String,
}

impl Stage {
    /// A `ticket-worker` process on the storm's database, provider and
    /// mail server.
    fn start_worker(&self) -> Running {
        start_worker(&self.database_url, &self.stripe_base, &self.smtp.url())
    }
}

fn start_worker(database_url: &str, stripe_base: &str, smtp_url: &str) -> Running {
    Running(
        executable("ticket-worker", database_url)
            .env("TICKET_WORKER_HEALTH_ADDR", "127.0.0.1:0")
            .env("TICKET_STRIPE_SECRET_KEY", localstripe::SECRET_KEY)
            .env("TICKET_STRIPE_API_BASE", stripe_base)
            .env("TICKET_SMTP_URL", smtp_url)
            .env("TICKET_MAIL_FROM", "Tickets <tickets@example.com>")
            .env("TICKET_CODE_KEYS", TICKET_KEY)
            .env("RUST_LOG", "error")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    )
}

const CATEGORIES: &str = r#"[{"name": "Standard", "price": 6900, "currency": "EUR"},
    {"name": "VIP", "price": 12900, "currency": "EUR", "rows": ["A"]}]"#;

async fn stage(app: &TestApp, stripe: &LocalStripe, fans: usize) -> Stage {
    let categories: Value = serde_json::from_str(CATEGORIES).unwrap();
    let (seated, seated_seats) = app
        .concert_and_seats(json!({"rows": 8, "seatsPerRow": 12, "holdSeconds": 600,
            "maxSeatsPerOrder": 2, "maxSeatsPerUser": 6, "waitingListOfferSeconds": 600,
            "refundableUntil": "2099-04-01T00:00:00Z", "categories": categories}))
        .await;
    let standing = app
        .concert(json!({"rows": 1, "seatsPerRow": 4, "holdSeconds": 600,
            "maxSeatsPerOrder": 2, "maxSeatsPerUser": 6, "refundableUntil": "2020-01-01T00:00:00Z",
            "categories": [{"name": "Floor", "price": 4500, "currency": "EUR"}],
            "areas": [{"name": "Floor", "capacity": 120, "category": "Floor"}]}))
        .await["id"]
        .as_u64()
        .unwrap();
    let (free, free_seats) = app
        .concert_and_seats(json!({"rows": 2, "seatsPerRow": 10,
            "maxSeatsPerOrder": 2, "maxSeatsPerUser": 6}))
        .await;
    let mut scanners = HashMap::new();
    for concert in [seated, standing, free] {
        let made = app
            .post(
                &format!("/api/concerts/{concert}/scanners"),
                Some(&app.admin_token),
                json!({"name": "Door"}),
            )
            .await;
        scanners.insert(
            concert,
            made.assert_status(201)["token"]
                .as_str()
                .unwrap()
                .to_owned(),
        );
    }
    let fans = app.many_users("storm", fans).await;
    sqlx::query("UPDATE users SET email = CONCAT(nickname, '@mail.example') WHERE role = 'USER'")
        .execute(&app.pool)
        .await
        .unwrap();
    let smtp = SmtpSink::start(Behaviour::default()).await;
    let mut staff = Vec::new();
    for (nick, role) in [
        ("clerk", "BOX_OFFICE"),
        ("books", "FINANCE"),
        ("spare", "DOOR"),
    ] {
        let (id, token) = app.user(nick).await;
        set_role(app, &app.admin_token, 1, id, json!({"role": role}))
            .await
            .assert_status(204);
        staff.push((id, token));
    }
    app.patch(
        "/api/organizers/1",
        Some(&app.admin_token),
        json!({"deskRefundLimit": 15000}),
    )
    .await
    .assert_status(200);
    Stage {
        clerk: staff[0].1.clone(),
        finance: staff[1].1.clone(),
        spare: staff[2].0,
        seated,
        seated_seats,
        standing,
        free,
        free_seats,
        scanners,
        fans,
        cash_given: Mutex::new(BTreeSet::new()),
        asked: Mutex::new(Vec::new()),
        workers: Mutex::new(
            (0..2)
                .map(|_| start_worker(&app.database_url(), &stripe.base(), &smtp.url()))
                .collect(),
        ),
        smtp,
        database_url: app.database_url(),
        stripe_base: stripe.base(),
    }
}

/// What the storm counts.
#[derive(Default)]
struct Tally {
    operations: HashMap<Op, usize>,
    answers: HashMap<u16, usize>,
    faults: usize,
    checks: usize,
    /// Worker passes that ended on a database error (a deadlock under the
    /// storm): a worker passes again, and so does the storm.
    pass_errors: usize,
    /// What an answer proved wrong at once (a refund given that its rule
    /// refuses).
    broken: Vec<String>,
    /// Tickets an offline door let in after someone had gone in on them,
    /// or after they were given back.
    conflicts: usize,
}

/// Notes a worker pass that failed; its work is left to the next one.
fn passed<T>(tally: &mut Tally, result: Result<T, sqlx::Error>) {
    if let Err(e) = result {
        tracing::debug!(error = %e, "a storm pass failed");
        tally.pass_errors += 1;
    }
}

/// A reply the storm accepts: anything but a server error. A 503 is the
/// database saying "not now" under the storm's load; it is counted, and it
/// changed nothing (the invariants say so).
fn accept(tally: &mut Tally, op: Op, reply: &Reply) {
    let status = reply.status.as_u16();
    *tally.answers.entry(status).or_default() += 1;
    assert!(
        status < 500 || status == 503,
        "{op:?} answered {status}: {}",
        reply.body
    );
}

async fn rows(app: &TestApp, sql: &str) -> Vec<(u64, u64)> {
    sqlx::query_as(sqlx::AssertSqlSafe(sql.to_owned()))
        .fetch_all(&app.pool)
        .await
        .unwrap()
}

/// A ticket's code, as its holder's page shows it.
async fn ticket_code(app: &TestApp, reservation: u64, ticket: u64) -> Option<String> {
    let tickets = app
        .get(
            &format!("/api/reservations/{reservation}/tickets"),
            Some(&app.admin_token),
        )
        .await;
    tickets.body.as_array().and_then(|all| {
        all.iter()
            .find(|t| t["ticketId"].as_u64() == Some(ticket))
            .and_then(|t| t["code"].as_str().map(str::to_owned))
    })
}

fn token_of(stage: &Stage, user: u64) -> Option<String> {
    stage
        .fans
        .iter()
        .find(|(id, _)| *id == user)
        .map(|(_, t)| t.clone())
}

/// `ticket-api check`'s violations now, but the offline door's: a ticket
/// it let in after someone had gone in on it, or after it was given back,
/// is what a door without the network did, which `check` reports for the
/// staff to look at, not a fault of the box office; the storm counts those
/// (`conflicts`).
async fn violations(app: &TestApp) -> Vec<ticket_core::db::invariants::Violation> {
    let mut conn = app.pool.acquire().await.unwrap();
    let mut found = ticket_core::db::invariants::check(
        &mut conn,
        chrono::Duration::minutes(5),
        ticket_core::db::queue::DEFAULT_MAX_ATTEMPTS,
        None,
    )
    .await
    .unwrap();
    found.retain(|v| !v.invariant.starts_with(OFFLINE_CONFLICT));
    found
}

/// How `check` names what an offline door let in that it should not have.
const OFFLINE_CONFLICT: &str = "an offline scanner let someone in";

/// A payment provider that answers nothing: the provider down.
fn provider_down() -> StripeClient {
    StripeClient::new(
        reqwest::Url::parse("http://127.0.0.1:9/").unwrap(),
        ticket_core::secret::Secret::new("sk_test_down"),
    )
    .unwrap()
}

/// A reservation request; a third of them as a careful client sends it,
/// with an `Idempotency-Key`, half of those sent again as after a timeout:
/// a request taken in line must be answered again with the same queue id,
/// replayed, and nothing written twice.
async fn reserve(
    app: &TestApp,
    fan: &str,
    body: serde_json::Value,
    rng: &mut Rng,
    seed: u64,
    tally: &mut Tally,
) -> Reply {
    if !rng.chance(33) {
        return app.post("/api/reservations", Some(fan), body).await;
    }
    let send = || {
        app.client
            .post(format!("{}/api/reservations", app.base))
            .bearer_auth(fan)
            .header("Idempotency-Key", format!("storm-{seed}"))
            .json(&body)
            .send()
    };
    let first = TestApp::reply(send().await.unwrap()).await;
    if first.status.as_u16() == 201 && rng.chance(50) {
        let again = TestApp::reply(send().await.unwrap()).await;
        let replayed = again.headers.get("idempotent-replayed").is_some();
        if again.status.as_u16() != 201
            || again.body["queueId"] != first.body["queueId"]
            || !replayed
        {
            tally.broken.push(format!(
                "a retry with key storm-{seed} was answered {} {} (first: {})",
                again.status, again.body, first.body
            ));
        }
    }
    first
}

/// One operation, as the seed drew it.
async fn run(app: &TestApp, stripe: &LocalStripe, stage: &Stage, op: Op, seed: u64) -> Tally {
    let mut rng = Rng(seed);
    let mut tally = Tally::default();
    *tally.operations.entry(op).or_default() += 1;
    let Some((user, fan)) = rng.pick(&stage.fans) else {
        return tally;
    };
    match op {
        Op::ReserveSeats => {
            let (seats, concert_seats) = if rng.chance(70) {
                (rng.below(2) + 1, &stage.seated_seats)
            } else {
                (rng.below(2) + 1, &stage.free_seats)
            };
            let mut chosen: Vec<u64> = (0..seats).filter_map(|_| rng.pick(concert_seats)).collect();
            chosen.sort_unstable();
            chosen.dedup();
            let reply = reserve(
                app,
                &fan,
                json!({"seatIds": chosen}),
                &mut rng,
                seed,
                &mut tally,
            )
            .await;
            accept(&mut tally, op, &reply);
        }
        Op::ReserveBest => {
            let category = if rng.chance(50) { "VIP" } else { "Standard" };
            let body =
                json!({"concertId": stage.seated, "category": category, "count": rng.below(2) + 1});
            let reply = reserve(app, &fan, body, &mut rng, seed, &mut tally).await;
            accept(&mut tally, op, &reply);
            if let Some(queued) = reply.body["queueId"].as_u64() {
                stage
                    .asked
                    .lock()
                    .unwrap()
                    .push((queued, category.to_owned()));
            }
        }
        Op::ReserveStanding => {
            let body =
                json!({"concertId": stage.standing, "area": "Floor", "count": rng.below(2) + 1});
            let reply = reserve(app, &fan, body, &mut rng, seed, &mut tally).await;
            accept(&mut tally, op, &reply);
        }
        Op::Decide => app.drain().await,
        Op::Pay => {
            let held = rows(
                app,
                "SELECT id, user_id FROM reservations WHERE status = 'HELD' \
                  AND hold_expires_at > UTC_TIMESTAMP(6) ORDER BY id DESC LIMIT 20",
            )
            .await;
            if let Some((id, owner)) = rng.pick(&held)
                && let Some(token) = token_of(stage, owner)
            {
                let reply = app
                    .post(
                        &format!("/api/reservations/{id}/payment"),
                        Some(&token),
                        json!({}),
                    )
                    .await;
                accept(&mut tally, op, &reply);
                if let Some(secret) = reply.body["clientSecret"].as_str() {
                    let pi = secret.split("_secret_").next().unwrap_or(secret).to_owned();
                    let card = if rng.chance(80) {
                        "pm_card_visa"
                    } else {
                        "pm_card_chargeCustomerFail"
                    };
                    stripe.pay(&pi, card).await;
                }
            }
        }
        Op::ConfirmAtDesk => {
            let held = rows(
                app,
                "SELECT id, user_id FROM reservations WHERE status = 'HELD' ORDER BY id DESC LIMIT 20",
            )
            .await;
            if let Some((id, _)) = rng.pick(&held) {
                let reply = app
                    .post(
                        &format!("/api/reservations/{id}/confirm"),
                        Some(&app.admin_token),
                        json!({}),
                    )
                    .await;
                accept(&mut tally, op, &reply);
            }
        }
        Op::Cancel => {
            let own = rows(
                app,
                &format!(
                    "SELECT id, user_id FROM reservations WHERE user_id = {user} \
                      AND status IN ('HELD', 'CONFIRMED')"
                ),
            )
            .await;
            if let Some((id, _)) = rng.pick(&own) {
                let reply = app
                    .post(
                        &format!("/api/reservations/{id}/cancel"),
                        Some(&fan),
                        json!({}),
                    )
                    .await;
                accept(&mut tally, op, &reply);
            }
        }
        Op::RefundOrder | Op::RefundTicket => {
            let sold = rows(
                app,
                "SELECT t.id, t.reservation_id FROM tickets t WHERE t.status = 'VALID' \
                  ORDER BY t.id DESC LIMIT 40",
            )
            .await;
            if let Some((ticket, reservation)) = rng.pick(&sold) {
                let body = if op == Op::RefundTicket {
                    json!({"ticketIds": [ticket]})
                } else {
                    json!({})
                };
                let reply = app
                    .post(
                        &format!("/api/reservations/{reservation}/refund"),
                        Some(&app.admin_token),
                        body,
                    )
                    .await;
                accept(&mut tally, op, &reply);
            }
        }
        Op::CheckIn => {
            let valid = rows(
                app,
                "SELECT reservation_id, concert_id FROM tickets WHERE status = 'VALID' \
                  ORDER BY id DESC LIMIT 40",
            )
            .await;
            if let Some((reservation, concert)) = rng.pick(&valid) {
                let tickets = app
                    .get(
                        &format!("/api/reservations/{reservation}/tickets"),
                        Some(&app.admin_token),
                    )
                    .await;
                let codes: Vec<String> = tickets
                    .body
                    .as_array()
                    .map(|t| {
                        t.iter()
                            .filter_map(|t| t["code"].as_str().map(str::to_owned))
                            .collect()
                    })
                    .unwrap_or_default();
                if let (Some(code), Some(door)) = (rng.pick(&codes), stage.scanners.get(&concert)) {
                    let reply = app
                        .post(
                            "/api/check-ins",
                            Some(door),
                            json!({"code": code, "gate": "S"}),
                        )
                        .await;
                    accept(&mut tally, op, &reply);
                }
            }
        }
        Op::CheckInOffline => {
            // A door that lost the network uploads what it let in: scans
            // made a while ago, some sent before (the same scan ids).
            let valid = rows(
                app,
                &format!(
                    "SELECT t.id, t.reservation_id FROM tickets t WHERE t.status = 'VALID' \
                      AND t.checked_in_at IS NULL AND t.concert_id = {} ORDER BY t.id DESC LIMIT 40",
                    stage.seated
                ),
            )
            .await;
            let mut scans = Vec::new();
            for _ in 0..=rng.below(3) {
                let Some((ticket, reservation)) = rng.pick(&valid) else {
                    break;
                };
                let code = ticket_code(app, reservation, ticket).await;
                if let Some(code) = code {
                    let at = chrono::Utc::now() - chrono::Duration::seconds(rng.below(600) as i64);
                    scans.push(json!({"scanId": format!("storm-{}", rng.below(100_000)),
                        "code": code, "gate": "Offline", "scannedAt": at.to_rfc3339()}));
                }
            }
            if let (false, Some(door)) = (scans.is_empty(), stage.scanners.get(&stage.seated)) {
                let reply = app
                    .post("/api/check-ins/batch", Some(door), json!({"scans": scans}))
                    .await;
                accept(&mut tally, op, &reply);
                tally.conflicts += reply.body["conflicts"].as_array().map_or(0, Vec::len);
                tally.conflicts += reply.body["results"].as_array().map_or(0, |results| {
                    results
                        .iter()
                        .filter(|r| r["status"] == "TICKET_VOID" && r["replayed"] == false)
                        .count()
                });
            }
        }
        Op::JoinWaitingList => {
            let reply = app
                .post(
                    &format!("/api/concerts/{}/waiting-list", stage.seated),
                    Some(&fan),
                    json!({"seats": 1}),
                )
                .await;
            accept(&mut tally, op, &reply);
        }
        Op::Offer => {
            let offered = Offers::new(app.pool.clone()).offer_once().await;
            passed(&mut tally, offered);
        }
        Op::DeleteAccount => {
            // A fan leaves now and then; most have something that keeps them.
            if rng.chance(30) {
                let reply = app.delete(&format!("/api/users/{user}"), Some(&fan)).await;
                accept(&mut tally, op, &reply);
            }
        }
        Op::Reprice => {
            let mut categories: Value = serde_json::from_str(CATEGORIES).unwrap();
            categories[0]["price"] = json!(6000 + 100 * rng.below(20));
            let reply = app
                .patch(
                    &format!("/api/concerts/{}", stage.seated),
                    Some(&app.admin_token),
                    json!({"categories": categories}),
                )
                .await;
            accept(&mut tally, op, &reply);
        }
        Op::EndHold => {
            // The hold's end reached, as a clock would bring it.
            let held = rows(
                app,
                "SELECT id, user_id FROM reservations WHERE status = 'HELD' ORDER BY id DESC LIMIT 20",
            )
            .await;
            if let Some((id, _)) = rng.pick(&held) {
                sqlx::query(
                    "UPDATE reservations SET hold_expires_at = UTC_TIMESTAMP(6) WHERE id = ?",
                )
                .bind(id)
                .execute(&app.pool)
                .await
                .unwrap();
            }
        }
        Op::Sweep => {
            let swept = HoldSweeper::new(app.pool.clone()).sweep_once().await;
            passed(&mut tally, swept);
        }
        Op::MoneyPass => {
            let pass = Money::new(app.pool.clone(), stripe.client()).pass().await;
            passed(&mut tally, pass);
        }
        Op::ProviderDown => {
            // A worker whose provider does not answer: nothing is lost,
            // refunds wait for a later pass.
            tally.faults += 1;
            let pass = Money::new(app.pool.clone(), provider_down()).pass().await;
            passed(&mut tally, pass);
        }
        Op::ReplayWebhook => {
            // Stripe's delivery again, late, twice or out of order.
            let paid = sqlx::query_as::<_, (String,)>(
                "SELECT provider_payment_id FROM payments WHERE provider_payment_id IS NOT NULL \
                  ORDER BY id DESC LIMIT 20",
            )
            .fetch_all(&app.pool)
            .await
            .unwrap();
            if let Some((pi,)) = rng.pick(&paid) {
                tally.faults += 1;
                let object = stripe.payment_intent(&pi).await;
                let kind = if object["status"] == "succeeded" {
                    "payment_intent.succeeded"
                } else {
                    "payment_intent.payment_failed"
                };
                let event = format!("evt_storm_{}", rng.below(40));
                let reply = deliver(app, &event, kind, &object).await;
                accept(&mut tally, op, &reply);
            }
        }
        Op::KillWorkerMidStep => {
            // A worker killed in the middle of a step: its transaction is
            // rolled back or committed whole, and its claims run out.
            tally.faults += 1;
            let (pool, client) = (app.pool.clone(), stripe.client());
            let which = rng.below(3);
            let step = tokio::spawn(async move {
                match which {
                    0 => {
                        Money::new(pool, client).pass().await.ok();
                    }
                    1 => {
                        HoldSweeper::new(pool).sweep_once().await.ok();
                    }
                    _ => {
                        Offers::new(pool).offer_once().await.ok();
                    }
                }
            });
            tokio::time::sleep(Duration::from_millis(rng.below(30) as u64)).await;
            step.abort();
            let _ = step.await;
        }
        Op::KillWorkerProcess => {
            // A worker process SIGKILLed wherever it was, and another
            // started in its place.
            tally.faults += 1;
            let mut workers = stage.workers.lock().unwrap();
            let which = rng.below(workers.len());
            let _ = workers[which].0.kill();
            let _ = workers[which].0.wait();
            workers[which] = stage.start_worker();
        }
        Op::RecordCashBack => {
            let pending = rows(
                app,
                "SELECT f.id, f.reservation_id FROM refunds f JOIN payments p ON p.id = f.payment_id \
                  WHERE f.status = 'PENDING' AND p.provider = 'MANUAL'",
            )
            .await;
            if let Some((refund, _)) = rng.pick(&pending) {
                let reply = app
                    .post(
                        &format!("/api/refunds/{refund}/paid-back"),
                        Some(&app.admin_token),
                        json!({"paymentReference": format!("CASH-{refund}")}),
                    )
                    .await;
                accept(&mut tally, op, &reply);
                if reply.status == 200 {
                    stage.cash_given.lock().unwrap().insert(refund);
                }
            }
        }
        Op::FanRefund => {
            // A fan gives back their own order: only while its concert
            // takes refunds (the standing floor's closed long ago).
            let own = rows(
                app,
                &format!(
                    "SELECT id, concert_id FROM reservations WHERE user_id = {user} \
                      AND status = 'CONFIRMED'"
                ),
            )
            .await;
            if let Some((id, concert)) = rng.pick(&own) {
                let reply = app
                    .post(
                        &format!("/api/reservations/{id}/refund"),
                        Some(&fan),
                        json!({}),
                    )
                    .await;
                accept(&mut tally, op, &reply);
                if reply.status == 200 && concert == stage.standing {
                    tally.broken.push(format!(
                        "a fan's refund of order {id} was given after its concert's refunds closed: {}",
                        reply.body
                    ));
                }
            }
        }
        Op::RefundAtTheDoor => {
            // A ticket refunded as it is scanned at the door: one of the
            // two, never both.
            let valid = rows(
                app,
                &format!(
                    "SELECT t.id, t.reservation_id FROM tickets t WHERE t.status = 'VALID' \
                      AND t.concert_id = {} ORDER BY t.id DESC LIMIT 40",
                    stage.seated
                ),
            )
            .await;
            if let Some((ticket, reservation)) = rng.pick(&valid) {
                let code = ticket_code(app, reservation, ticket).await;
                if let (Some(code), Some(door)) = (code, stage.scanners.get(&stage.seated)) {
                    let refund = format!("/api/reservations/{reservation}/refund");
                    let (refunded, admitted) = tokio::join!(
                        app.post(
                            &refund,
                            Some(&app.admin_token),
                            json!({"ticketIds": [ticket]}),
                        ),
                        app.post(
                            "/api/check-ins",
                            Some(door),
                            json!({"code": code, "gate": "S"})
                        ),
                    );
                    accept(&mut tally, op, &refunded);
                    accept(&mut tally, op, &admitted);
                }
            }
        }
        Op::DropHold => {
            // The operator sets the priced concert to confirm at once.
            let reply = app
                .patch(
                    &format!("/api/concerts/{}", stage.seated),
                    Some(&app.admin_token),
                    json!({"holdSeconds": 0}),
                )
                .await;
            accept(&mut tally, op, &reply);
        }
        Op::ReorderCategories => {
            // The operator lists the categories the other way round, each
            // on the same rows (a reprice puts them back).
            let categories = json!([
                {"name": "VIP", "price": 12900, "currency": "EUR", "rows": ["A"]},
                {"name": "Standard", "price": 6900, "currency": "EUR",
                 "rows": ["B", "C", "D", "E", "F", "G", "H"]}]);
            let reply = app
                .patch(
                    &format!("/api/concerts/{}", stage.seated),
                    Some(&app.admin_token),
                    json!({"categories": categories}),
                )
                .await;
            accept(&mut tally, op, &reply);
        }
        Op::DeskSale => {
            // The clerk's open shift (opened when there is none): a buyer's
            // place asked of the line, or a desk hold paid.
            let Some(shift) = desk_shift(app, stage).await else {
                return tally;
            };
            if rng.chance(50) {
                let order = json!({"concertId": stage.seated, "category": "Standard", "count": 1});
                let reply = app
                    .post(
                        &format!("/api/desk/shifts/{shift}/requests"),
                        Some(&stage.clerk),
                        json!({"order": order, "email": "walkin@mail.example"}),
                    )
                    .await;
                accept(&mut tally, op, &reply);
            } else {
                let held = rows(
                    app,
                    "SELECT r.id, r.user_id FROM reservations r JOIN desk_guests g ON g.user_id = r.user_id \
                      WHERE r.status = 'HELD' ORDER BY r.id DESC LIMIT 10",
                )
                .await;
                if let Some((id, _)) = rng.pick(&held) {
                    let method = if rng.chance(50) { "CASH" } else { "CARD" };
                    let reply = app
                        .post(
                            &format!("/api/desk/shifts/{shift}/payments"),
                            Some(&stage.clerk),
                            json!({"reservationId": id, "method": method}),
                        )
                        .await;
                    accept(&mut tally, op, &reply);
                }
            }
        }
        Op::DeskClose => {
            // The clerk counts the drawer, a note or two off now and then.
            let mine = format!("/api/concerts/{}/desk/my-shift", stage.seated);
            let open = app.get(&mine, Some(&stage.clerk)).await;
            if let Some(shift) = open.body["id"].as_u64() {
                let expected = open.body["expectedCash"].as_i64().unwrap_or(0);
                let counted = (expected - 500 * rng.below(3) as i64).max(0);
                let reply = app
                    .post(
                        &format!("/api/desk/shifts/{shift}/close"),
                        Some(&stage.clerk),
                        json!({"countedCash": counted}),
                    )
                    .await;
                accept(&mut tally, op, &reply);
            }
        }
        Op::VoidOrder => {
            let sold = rows(
                app,
                &format!(
                    "SELECT id, user_id FROM reservations WHERE concert_id = {} \
                      AND status IN ('CONFIRMED', 'HELD') ORDER BY id DESC LIMIT 20",
                    stage.seated
                ),
            )
            .await;
            if let Some((id, _)) = rng.pick(&sold) {
                let reply = app
                    .post(
                        &format!("/api/concerts/{}/orders/void", stage.seated),
                        Some(&stage.finance),
                        json!({"reservationIds": [id], "reason": "storm", "refund": true}),
                    )
                    .await;
                accept(&mut tally, op, &reply);
            }
        }
        Op::RoleChange => {
            let role = rng
                .pick(&["DOOR", "MANAGER", "FINANCE", "BOX_OFFICE"])
                .unwrap_or("DOOR");
            let reply =
                set_role(app, &app.admin_token, 1, stage.spare, json!({"role": role})).await;
            accept(&mut tally, op, &reply);
        }
        Op::CancelShow => {
            let reply = app
                .post(
                    &format!("/api/concerts/{}/cancel", stage.free),
                    Some(&app.admin_token),
                    json!({"reason": "the storm"}),
                )
                .await;
            accept(&mut tally, op, &reply);
            let pass = Cancellations::new(app.pool.clone()).pass().await;
            passed(&mut tally, pass);
        }
        Op::Check => {
            tally.checks += 1;
            let found = violations(app).await;
            assert!(found.is_empty(), "mid-storm: {found:?}");
        }
    }
    tally
}

/// Posts a `payment_intent.*` event signed now, as Stripe would.
async fn deliver(app: &TestApp, event_id: &str, kind: &str, pi: &Value) -> Reply {
    let now = chrono::Utc::now().timestamp();
    deliver_event(app, event_id, kind, pi, now, localstripe::WEBHOOK_SECRET).await
}

/// Every payment settled and every refund carried out, as the workers get
/// there once nothing new comes in: open payments checked at the provider
/// (their check brought forward, as a clock would), holds swept, refunds
/// made, cash given back recorded.
async fn settle_everything(app: &TestApp, stripe: &LocalStripe, stage: &Stage) {
    let money = Money::new(app.pool.clone(), stripe.client());
    for _ in 0..50 {
        app.drain().await;
        sqlx::query(
            "UPDATE reservations SET hold_expires_at = UTC_TIMESTAMP(6) WHERE status = 'HELD'",
        )
        .execute(&app.pool)
        .await
        .unwrap();
        HoldSweeper::new(app.pool.clone())
            .sweep_once()
            .await
            .unwrap();
        Cancellations::new(app.pool.clone()).pass().await.unwrap();
        sqlx::query("UPDATE payments SET check_at = UTC_TIMESTAMP(6) WHERE check_at IS NOT NULL")
            .execute(&app.pool)
            .await
            .unwrap();
        sqlx::query(
            "UPDATE refunds SET due_at = UTC_TIMESTAMP(6) WHERE status = 'PENDING' AND due_at IS NOT NULL",
        )
        .execute(&app.pool)
        .await
        .unwrap();
        money.pass().await.unwrap();
        let cash: Vec<(u64,)> = sqlx::query_as(
            "SELECT f.id FROM refunds f JOIN payments p ON p.id = f.payment_id \
              WHERE f.status = 'PENDING' AND p.provider = 'MANUAL'",
        )
        .fetch_all(&app.pool)
        .await
        .unwrap();
        for (refund,) in cash {
            app.post(
                &format!("/api/refunds/{refund}/paid-back"),
                Some(&app.admin_token),
                json!({}),
            )
            .await
            .assert_status(200);
            stage.cash_given.lock().unwrap().insert(refund);
        }
        let (open, pending): (i64, i64) = sqlx::query_as(
            "SELECT (SELECT COUNT(*) FROM payments WHERE check_at IS NOT NULL), \
                    (SELECT COUNT(*) FROM refunds WHERE status = 'PENDING')",
        )
        .fetch_one(&app.pool)
        .await
        .unwrap();
        if open == 0 && pending == 0 {
            return;
        }
    }
    panic!("payments or refunds never settled");
}

/// The books against the provider and the seats, from every side:
/// - per payment, what the provider took and gave back against what the
///   database says, and what is kept against what it sold;
/// - per PaymentIntent the provider holds, a payment in the books (none
///   erased while it keeps money);
/// - per confirmed order with priced tickets, the payment that sold it
///   (no seat sold without its money);
/// - per ticket used at the door, no money given back for it (unless the
///   show was cancelled);
/// - per request by category, seats of that category only;
/// - per refund of money taken by hand recorded as given back, the storm
///   gave it (no cash recorded that nobody handed over).
///
/// The number of payments, and the mismatches, each described.
/// The clerk's open shift at the seated concert, opened when there is none
/// (two opened at once: one is refused, both then read the same).
async fn desk_shift(app: &TestApp, stage: &Stage) -> Option<u64> {
    let mine = format!("/api/concerts/{}/desk/my-shift", stage.seated);
    if let Some(id) = app.get(&mine, Some(&stage.clerk)).await.body["id"].as_u64() {
        return Some(id);
    }
    app.post(
        &format!("/api/concerts/{}/desk/shifts", stage.seated),
        Some(&stage.clerk),
        json!({"float": 20000}),
    )
    .await;
    app.get(&mine, Some(&stage.clerk)).await.body["id"].as_u64()
}

async fn ledger(app: &TestApp, stripe: &LocalStripe, stage: &Stage) -> (usize, Vec<String>) {
    let (payments, mut mismatches) = per_payment(app, stripe).await;
    let known: BTreeSet<String> = sqlx::query_scalar(
        "SELECT provider_payment_id FROM payments WHERE provider_payment_id IS NOT NULL",
    )
    .fetch_all(&app.pool)
    .await
    .unwrap()
    .into_iter()
    .collect();
    for pi in stripe.payment_intents().await {
        let id = pi["id"].as_str().unwrap_or_default();
        if known.contains(id) || pi["status"] != "succeeded" {
            continue;
        }
        let took = pi["amount"].as_u64().unwrap_or_default();
        let gave_back: u64 = stripe.refunds_of(id).await.iter().map(|r| r.1).sum();
        if took != gave_back {
            mismatches.push(format!(
                "the provider keeps {} of {id}, a payment the books do not have",
                took - gave_back.min(took)
            ));
        }
    }
    let unpaid: Vec<(u64, u64)> = sqlx::query_as(
        "SELECT r.id, CAST(SUM(rs.price) AS UNSIGNED) FROM reservations r \
           JOIN tickets t ON t.reservation_id = r.id AND t.status = 'VALID' \
           JOIN reservation_seats rs ON rs.reservation_id = r.id AND rs.seat_id = t.seat_id \
          WHERE r.status = 'CONFIRMED' AND rs.price > 0 \
            AND NOT EXISTS (SELECT 1 FROM payments p WHERE p.reservation_id = r.id \
                  AND p.status = 'SUCCEEDED' \
                  AND (p.provider = 'MANUAL' OR p.provider_payment_id = r.payment_reference)) \
          GROUP BY r.id",
    )
    .fetch_all(&app.pool)
    .await
    .unwrap();
    for (reservation, price) in unpaid {
        mismatches.push(format!(
            "order {reservation} sold tickets worth {price} without a payment"
        ));
    }
    let used_and_refunded: Vec<(u64, u64)> = sqlx::query_as(
        "SELECT DISTINCT ft.ticket_id, f.id FROM refund_tickets ft JOIN refunds f ON f.id = ft.refund_id \
           JOIN check_ins c ON c.ticket_id = ft.ticket_id AND c.outcome = 'ADMITTED' \
          WHERE f.status <> 'FAILED' AND f.reason <> 'CONCERT_CANCELLED'",
    )
    .fetch_all(&app.pool)
    .await
    .unwrap();
    for (ticket, refund) in used_and_refunded {
        mismatches.push(format!(
            "ticket {ticket} was used at the door and its money given back (refund {refund})"
        ));
    }
    let asked = stage.asked.lock().unwrap().clone();
    for (queued, category) in asked {
        let given: Vec<String> = sqlx::query_scalar(
            "SELECT DISTINCT rs.category FROM reservations r \
               JOIN reservation_seats rs ON rs.reservation_id = r.id WHERE r.queue_id = ?",
        )
        .bind(queued)
        .fetch_all(&app.pool)
        .await
        .unwrap();
        if given.iter().any(|name| *name != category) {
            mismatches.push(format!(
                "request {queued} asked for {category} seats and was given {given:?}"
            ));
        }
    }
    let recorded: Vec<(u64,)> = sqlx::query_as(
        "SELECT f.id FROM refunds f JOIN payments p ON p.id = f.payment_id \
          WHERE p.provider = 'MANUAL' AND f.status = 'SUCCEEDED' AND f.amount > 0",
    )
    .fetch_all(&app.pool)
    .await
    .unwrap();
    let given = stage.cash_given.lock().unwrap().clone();
    for (refund,) in recorded {
        if !given.contains(&refund) {
            mismatches.push(format!(
                "refund {refund} of money taken by hand is recorded as given back; nobody gave it"
            ));
        }
    }
    (payments, mismatches)
}

/// Per payment: what the provider took and gave back against what the
/// database says, and what is kept against what was sold.
async fn per_payment(app: &TestApp, stripe: &LocalStripe) -> (usize, Vec<String>) {
    let payments: Vec<(u64, u64, String, Option<String>, u64, String)> = sqlx::query_as(
        "SELECT id, reservation_id, provider, provider_payment_id, amount, status FROM payments",
    )
    .fetch_all(&app.pool)
    .await
    .unwrap();
    let mut mismatches = Vec::new();
    for (id, reservation, provider, pi, amount, status) in &payments {
        let (refunded,): (u64,) = sqlx::query_as(
            "SELECT CAST(COALESCE(SUM(amount), 0) AS UNSIGNED) FROM refunds \
              WHERE payment_id = ? AND status = 'SUCCEEDED'",
        )
        .bind(id)
        .fetch_one(&app.pool)
        .await
        .unwrap();
        let (sold, sold_by): (u64, i64) = sqlx::query_as(
            "SELECT CAST(COALESCE(SUM(rs.price), 0) AS UNSIGNED), \
                    COALESCE(MAX(r.status = 'CONFIRMED' AND (? = 'MANUAL' OR r.payment_reference <=> ?)), 0) \
               FROM reservations r JOIN tickets t ON t.reservation_id = r.id AND t.status = 'VALID' \
               JOIN reservation_seats rs ON rs.reservation_id = t.reservation_id AND rs.seat_id = t.seat_id \
              WHERE r.id = ?",
        )
        .bind(provider)
        .bind(pi)
        .bind(reservation)
        .fetch_one(&app.pool)
        .await
        .unwrap();
        let taken = if status == "SUCCEEDED" { *amount } else { 0 };
        let kept = taken.saturating_sub(refunded);
        let should_keep = if sold_by == 1 { sold } else { 0 };
        if kept != should_keep {
            mismatches.push(format!(
                "payment {id} (reservation {reservation}): keeps {kept}, sold {should_keep}"
            ));
        }
        if provider == "STRIPE"
            && let Some(pi) = pi
        {
            let at_provider = stripe.payment_intent(pi).await;
            let took = if at_provider["status"] == "succeeded" {
                at_provider["amount"].as_u64().unwrap_or_default()
            } else {
                0
            };
            let gave_back: u64 = stripe.refunds_of(pi).await.iter().map(|r| r.1).sum();
            if took != taken || gave_back != refunded {
                mismatches.push(format!(
                    "payment {id} ({pi}): the provider took {took} and gave back {gave_back}, \
                     the books say {taken} and {refunded}"
                ));
            }
        }
    }
    (payments.len(), mismatches)
}

/// The storm: `TICKET_STORM_OPERATIONS` (default 5,000) operations from 100
/// fans, an operator, the door, the workers and the provider.
#[tokio::test]
async fn a_storm_of_random_operations_keeps_every_invariant_and_the_books() {
    let seed = std::env::var("TICKET_STORM_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(57, |d| d.as_nanos() as u64)
        });
    let operations: usize = std::env::var("TICKET_STORM_OPERATIONS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5_000);
    eprintln!("storm: seed {seed} (TICKET_STORM_SEED={seed} replays it), {operations} operations");
    let stripe = LocalStripe::start().await;
    let app = paying_app(&stripe).await;
    let stage = stage(&app, &stripe, 100).await;
    let mut rng = Rng(seed);
    let mut tally = Tally::default();
    let started = std::time::Instant::now();
    let mut done = 0;
    let mut show_cancelled = false;
    while done < operations {
        // A round of operations at once: their races are the storm's.
        let round = (rng.below(6) + 2).min(operations - done);
        let mut ops: Vec<(Op, u64)> = (0..round).map(|_| (choose(&mut rng), rng.next())).collect();
        if !show_cancelled && done > operations * 3 / 4 {
            ops.push((Op::CancelShow, rng.next()));
            show_cancelled = true;
        }
        done += ops.len();
        let results = futures::future::join_all(
            ops.iter()
                .map(|(op, seed)| run(&app, &stripe, &stage, *op, *seed)),
        )
        .await;
        for result in results {
            for (op, n) in result.operations {
                *tally.operations.entry(op).or_default() += n;
            }
            for (status, n) in result.answers {
                *tally.answers.entry(status).or_default() += n;
            }
            tally.faults += result.faults;
            tally.checks += result.checks;
            tally.pass_errors += result.pass_errors;
            tally.broken.extend(result.broken);
            tally.conflicts += result.conflicts;
        }
    }
    // The workers ran all along (a worker that exits on its own is a
    // fault), and stop (killed, as anywhere) before the books are read.
    for worker in stage.workers.lock().unwrap().iter_mut() {
        assert!(
            matches!(worker.0.try_wait(), Ok(None)),
            "a worker process ended on its own"
        );
    }
    stage.workers.lock().unwrap().clear();
    settle_everything(&app, &stripe, &stage).await;
    let found = violations(&app).await;
    let (payments, mismatches) = ledger(&app, &stripe, &stage).await;
    let mut by_kind: Vec<_> = tally.operations.iter().collect();
    by_kind.sort_by_key(|(op, _)| format!("{op:?}"));
    let mut answers: Vec<_> = tally.answers.iter().collect();
    answers.sort();
    eprintln!(
        "storm: seed {seed}: {done} operations in {:.1} s ({by_kind:?}); answers {answers:?}; \
         faults injected {}; checks mid-storm {}; worker passes ended by the database {}; \
         tickets an offline door let in twice or given back {}; mails taken {}; \
         payments {payments}; \
         invariant violations {}; money mismatches {}; rules broken {}",
        started.elapsed().as_secs_f64(),
        tally.faults,
        tally.checks,
        tally.pass_errors,
        tally.conflicts,
        stage.smtp.taken(),
        found.len(),
        mismatches.len(),
        tally.broken.len()
    );
    assert!(found.is_empty(), "seed {seed}: {found:?}");
    assert!(mismatches.is_empty(), "seed {seed}: {mismatches:#?}");
    assert!(tally.broken.is_empty(), "seed {seed}: {:#?}", tally.broken);
    // The desk really sold and closed under the storm (a long enough one).
    if done >= 1000 {
        let (desk_sales, closed): (i64, i64) = sqlx::query_as(
            "SELECT (SELECT COUNT(*) FROM payments WHERE shift_id IS NOT NULL), \
                    (SELECT COUNT(*) FROM desk_shifts WHERE closed_at IS NOT NULL)",
        )
        .fetch_one(&app.pool)
        .await
        .unwrap();
        eprintln!("storm: desk payments {desk_sales}, shifts closed {closed}");
        assert!(
            desk_sales > 0 && closed > 0,
            "seed {seed}: the desk sold nothing"
        );
    }
}
