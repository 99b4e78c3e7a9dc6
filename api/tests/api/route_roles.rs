//! Every route of the OpenAPI document, asked by a caller of each role, the
//! platform's admin, a member of another organizer, a fan and an anonymous
//! caller, and each answer compared with what docs/api.md's `who` column
//! and docs/concepts.md's role table say (issue 60). A route added without
//! a row, or whose permission check is removed or changed, fails here.
//!
//! Long because it reads both tables, builds what each route acts on, and
//! holds a sample body for every route that takes one.

use std::collections::{BTreeMap, BTreeSet};

use reqwest::Method;
use serde_json::{Value, json};

use crate::authorization::{fingerprint, operations};
use crate::helpers::*;

/// Who the `who` column lets call a route.
#[derive(Debug, Clone, PartialEq)]
enum Who {
    /// Anyone, signed in or not (skipped here).
    Public,
    /// Any signed-in account, on its own behalf.
    AnyUser,
    /// The platform's admin alone.
    Admin,
    /// The account the thing belongs to (and the admin).
    Owner,
    /// A member of the organizer, whatever the role.
    Member,
    /// A door scanner's token, never a person's.
    Scanner,
    /// The account invited, none of the callers.
    Invitee,
    /// A member whose role gives the permission (and the admin); with
    /// `fans_own`, the fan the thing belongs to as well; with `clerk`, the
    /// desk shift's own clerk too.
    Permission {
        name: String,
        fans_own: bool,
        clerk: bool,
    },
    /// The desk shift's own clerk (the team's BOX_OFFICE member) alone.
    Clerk,
}

/// `{queueId}`, `{id}` → `{}`: paths as both documents name them.
fn normal(path: &str) -> String {
    let path = path.split_once('?').map_or(path, |(p, _)| p);
    let mut out = String::new();
    let mut inside = false;
    for c in path.chars() {
        match c {
            '{' => {
                inside = true;
                out.push_str("{}");
            }
            '}' => inside = false,
            _ if inside => {}
            _ => out.push(c),
        }
    }
    out
}

/// The backticked spans of a table cell.
fn spans(cell: &str) -> Vec<&str> {
    cell.split('`').skip(1).step_by(2).collect()
}

/// docs/concepts.md's role table: each permission with the roles that
/// have it.
fn role_table() -> BTreeMap<String, BTreeSet<&'static str>> {
    let concepts = std::fs::read_to_string("../docs/concepts.md").expect("docs/concepts.md");
    let mut table = BTreeMap::new();
    for line in concepts.lines().filter(|l| l.starts_with("| `")) {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        if cells.len() != ROLES.len() + 3 {
            continue;
        }
        let Some(permission) = spans(cells[1]).first().map(|p| p.to_string()) else {
            continue;
        };
        let roles = ROLES
            .iter()
            .zip(&cells[2..])
            .filter(|(_, mark)| **mark == "✓")
            .map(|(role, _)| *role)
            .collect();
        table.insert(permission, roles);
    }
    assert!(table.len() >= 12, "the role table: {table:?}");
    table
}

/// docs/api.md's route table: "METHOD /normal/path" → who may call it.
fn route_table(permissions: &BTreeMap<String, BTreeSet<&'static str>>) -> BTreeMap<String, Who> {
    let api = std::fs::read_to_string("../docs/api.md").expect("docs/api.md");
    let mut table = BTreeMap::new();
    for line in api.lines().filter(|l| l.starts_with("| `")) {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        if cells.len() < 4 {
            continue;
        }
        let whos: Vec<&str> = cells[2].split(" / ").collect();
        for span in spans(cells[1]) {
            let Some((methods, path)) = span.rsplit_once(' ') else {
                continue;
            };
            let methods: Vec<&str> = methods.split(" / ").collect();
            let known = ["GET", "POST", "PUT", "PATCH", "DELETE"];
            if !path.starts_with('/') || !methods.iter().all(|m| known.contains(m)) {
                continue;
            }
            for (i, method) in methods.iter().enumerate() {
                let who = if whos.len() == methods.len() {
                    whos[i]
                } else {
                    cells[2]
                };
                table.insert(
                    format!("{method} {}", normal(path)),
                    who_of(who, permissions),
                );
            }
        }
    }
    table
}

fn who_of(cell: &str, permissions: &BTreeMap<String, BTreeSet<&'static str>>) -> Who {
    if cell.starts_with("its clerk (") {
        return Who::Clerk;
    }
    if let Some(name) = spans(cell)
        .into_iter()
        .find(|s| permissions.contains_key(*s))
    {
        return Who::Permission {
            name: name.to_owned(),
            fans_own: cell.contains("its owner"),
            clerk: cell.starts_with("its clerk"),
        };
    }
    match cell {
        "anyone" | "probes" | "Stripe" => Who::Public,
        "user" => Who::AnyUser,
        "admin" => Who::Admin,
        "a member" => Who::Member,
        "a scanner" => Who::Scanner,
        "the invitee" => Who::Invitee,
        "its owner" | "its owner or an admin" | "that user or an admin" => Who::Owner,
        other => panic!("docs/api.md: who is \"{other}\"?"),
    }
}

/// Who asks.
#[derive(Debug, Clone)]
enum Caller {
    Anonymous,
    Fan,
    /// The owner of another organizer.
    Rival,
    Admin,
    Role(&'static str),
}

/// What one route acts on, made anew for each write that is let through.
struct Fixture {
    organizer: u64,
    concert: u64,
    free_seat: u64,
    buyer: u64,
    /// A request won and held (HELD), and its queue row.
    held: u64,
    queue: u64,
    /// A sold order with one ticket given back by hand (PENDING).
    sold: u64,
    ticket: u64,
    code: String,
    refund: u64,
    access_code: u64,
    scanner: u64,
    /// A DOOR member beside the team.
    extra_member: u64,
    /// A pending invitation of the buyer's to the team.
    invitation: u64,
    /// The team's BOX_OFFICE member's open desk shift.
    shift: u64,
}

async fn fixture(app: &TestApp, team: &Team, buyer: &(u64, String), n: usize) -> Fixture {
    let owner = team.token("OWNER");
    let body = json!({"title": "Roles", "venue": "Hall", "concertDate": "2099-05-01T19:00:00Z",
        "rows": 1, "seatsPerRow": 6, "holdSeconds": 600, "maxSeatsPerOrder": 4,
        "categories": [{"name": "Standard", "price": 2500, "currency": "EUR"}]});
    let made = app.post("/api/concerts", Some(owner), body).await;
    let concert = made.assert_status(201)["id"].as_u64().unwrap();
    let seats: Vec<u64> = app
        .seats(concert)
        .await
        .iter()
        .map(|s| s["id"].as_u64().unwrap())
        .collect();
    let sold = won(app, &buyer.1, &seats[0..2]).await;
    let admin = Some(app.admin_token.as_str());
    let confirm = format!("/api/reservations/{sold}/confirm");
    app.post(&confirm, admin, json!({}))
        .await
        .assert_status(200);
    let tickets = app
        .get(&format!("/api/reservations/{sold}/tickets"), admin)
        .await;
    let tickets = tickets.assert_status(200).clone();
    let refund = app
        .post(
            &format!("/api/reservations/{sold}/refund"),
            admin,
            json!({"ticketIds": [tickets[0]["ticketId"]]}),
        )
        .await;
    let refund = refund.assert_status(200)["refundId"].as_u64().unwrap();
    let queue = order(app, &buyer.1, &seats[2..3]).await.assert_status(201)["queueId"]
        .as_u64()
        .unwrap();
    app.drain().await;
    let held = app.queue_status(&buyer.1, queue).await["reservationId"]
        .as_u64()
        .unwrap();
    let codes = app
        .post(
            &format!("/api/concerts/{concert}/access-codes"),
            Some(owner),
            json!({"count": 1, "usesPerCode": 1, "seatsPerCode": 1}),
        )
        .await;
    let access_code = codes.assert_status(201)["codes"][0]["id"].as_u64().unwrap();
    let scanner = app
        .post(
            &format!("/api/concerts/{concert}/scanners"),
            Some(owner),
            json!({"name": "gate"}),
        )
        .await;
    let scanner = scanner.assert_status(201)["scannerId"].as_u64().unwrap();
    let (extra_member, _) = app.user(&format!("extra{n}")).await;
    set_role(app, owner, team.id, extra_member, json!({"role": "DOOR"}))
        .await
        .assert_status(204);
    let (invitee, _) = app.user(&format!("invitee{n}")).await;
    let invited = app
        .post(
            &format!("/api/organizers/{}/invitations", team.id),
            Some(owner),
            json!({"nickName": format!("invitee{n}"), "role": "FINANCE"}),
        )
        .await;
    let invitation = invited.assert_status(201)["id"].as_u64().unwrap();
    assert_eq!(invited.body["userId"], invitee);
    let opened = app
        .post(
            &format!("/api/concerts/{concert}/desk/shifts"),
            Some(team.token("BOX_OFFICE")),
            json!({"float": 1000}),
        )
        .await;
    let shift = opened.assert_status(201)["id"].as_u64().unwrap();
    Fixture {
        organizer: team.id,
        concert,
        free_seat: seats[5],
        buyer: buyer.0,
        held,
        queue,
        sold,
        ticket: tickets[1]["ticketId"].as_u64().unwrap(),
        code: tickets[1]["code"].as_str().unwrap().to_owned(),
        refund,
        access_code,
        scanner,
        extra_member,
        invitation,
        shift,
    }
}

/// The path of an operation, its ids those of `f`.
fn path_of(operation: &str, f: &Fixture) -> String {
    let (_, template) = operation.split_once(' ').unwrap();
    let segments: Vec<&str> = template.split('/').collect();
    let mut path = Vec::new();
    for (i, segment) in segments.iter().enumerate() {
        let before = if i > 0 { segments[i - 1] } else { "" };
        let id = match (*segment, before) {
            ("{}", "concerts") => f.concert.to_string(),
            ("{}", "seats") => f.free_seat.to_string(),
            ("{}", "organizers") => f.organizer.to_string(),
            ("{}", "members") => f.extra_member.to_string(),
            ("{}", "status") => f.queue.to_string(),
            ("{}", "reservations") if template.ends_with("/confirm") => f.held.to_string(),
            ("{}", "reservations") if template.ends_with("/payment") => f.held.to_string(),
            ("{}", "reservations") => f.sold.to_string(),
            ("{}", "tickets") => f.ticket.to_string(),
            ("{}", "refunds") => f.refund.to_string(),
            ("{}", "users") => f.buyer.to_string(),
            ("{}", "access-codes") => f.access_code.to_string(),
            ("{}", "scanners") => f.scanner.to_string(),
            ("{}", "invitations") => f.invitation.to_string(),
            ("{}", "shifts") => f.shift.to_string(),
            ("{}", other) => panic!("{operation}: which id follows {other}?"),
            (segment, _) => segment.to_owned(),
        };
        path.push(id);
    }
    let path = path.join("/");
    if template == "/api/concerts/{}/orders" {
        format!("{path}?q=a")
    } else {
        path
    }
}

/// A body the route takes, for those that take one.
fn body_of(operation: &str, f: &Fixture, n: usize) -> Option<Value> {
    let (method, template) = operation.split_once(' ').unwrap();
    let body = match (method, template) {
        ("POST", "/api/concerts") => json!({"title": "New", "venue": "Hall",
            "concertDate": "2099-06-01T19:00:00Z", "organizerId": f.organizer}),
        ("PATCH", "/api/concerts/{}") => json!({"title": "Renamed"}),
        ("PUT", "/api/concerts/{}/seating-plan") => json!({"name": "Plan", "categories": [],
            "size": {"width": 100, "height": 100}, "zones": []}),
        ("POST", "/api/organizers") => json!({"name": "New", "slug": format!("new-{n}")}),
        ("PATCH", "/api/organizers/{}") => json!({"name": "Renamed"}),
        ("PUT", "/api/organizers/{}/members/{}") => json!({"role": "DOOR"}),
        ("POST", "/api/concerts/{}/access-codes") => {
            json!({"count": 1, "usesPerCode": 1, "seatsPerCode": 1})
        }
        ("POST", "/api/concerts/{}/waiting-list") => json!({"seats": 1}),
        ("POST", "/api/seats") => json!({"concertId": f.concert, "seatNumber": format!("Z{n}")}),
        ("PATCH", "/api/seats/{}") => json!({"seatNumber": format!("Y{n}")}),
        ("PATCH", "/api/users/{}") => json!({"language": "ko"}),
        ("POST", "/api/reservations") => json!({"seatIds": [f.free_seat]}),
        ("POST", "/api/reservations/cancel") => json!({"reservationId": f.held}),
        ("POST", "/api/reservations/{}/confirm")
        | ("POST", "/api/reservations/{}/refund")
        | ("POST", "/api/refunds/{}/paid-back") => json!({}),
        ("POST", "/api/concerts/{}/cancel") => json!({"reason": "storm"}),
        ("POST", "/api/concerts/{}/scanners") => json!({"name": "gate 2"}),
        ("POST", "/api/organizers/{}/invitations") => {
            json!({"nickName": "fan", "role": "DOOR"})
        }
        ("POST", "/api/concerts/{}/desk/shifts") => json!({"float": 0}),
        ("POST", "/api/concerts/{}/orders/void") => {
            json!({"reservationIds": [f.sold], "reason": "bots", "refund": true})
        }
        ("POST", "/api/desk/shifts/{}/requests") => json!({"order": {"seatIds": [f.free_seat]}}),
        ("POST", "/api/desk/shifts/{}/payments") => {
            json!({"reservationId": f.held, "method": "CASH"})
        }
        ("POST", "/api/desk/shifts/{}/refunds") => json!({"reservationId": f.sold}),
        ("POST", "/api/desk/shifts/{}/close") => json!({"countedCash": 1000}),
        ("POST", "/api/check-ins") => json!({"code": f.code, "gate": "A"}),
        ("POST", "/api/check-ins/batch") => json!({"scans": [{"scanId": format!("scan-{n}"),
            "code": f.code, "gate": "A", "scannedAt": "2099-05-01T19:00:00Z"}]}),
        _ => return None,
    };
    Some(body)
}

/// The status and code of an answer, its body read only when it is a
/// refusal (an event stream let through never ends).
async fn ask(
    app: &TestApp,
    operation: &str,
    path: &str,
    token: Option<&str>,
    body: Option<Value>,
) -> (u16, Value) {
    let (method, _) = operation.split_once(' ').unwrap();
    let method = Method::from_bytes(method.as_bytes()).unwrap();
    let mut request = reqwest::Client::new().request(method, format!("{}{path}", app.base));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.expect("request failed");
    let status = response.status().as_u16();
    if status < 400 {
        return (status, Value::Null);
    }
    (status, response.json().await.unwrap_or(Value::Null))
}

/// What `caller` is owed: None when let through (anything but 401, 403
/// and 404), else the refusal's status and, where the docs name it, code
/// and permission.
fn owed(
    who: &Who,
    caller: &Caller,
    roles: &BTreeMap<String, BTreeSet<&'static str>>,
) -> Option<(u16, &'static str, Option<String>)> {
    use Caller::*;
    let refused = |status, code| Some((status, code, None));
    match (who, caller) {
        (Who::Public, _) => None,
        (_, Anonymous) => refused(401, "UNAUTHORIZED"),
        (Who::AnyUser, _) => None,
        (Who::Admin, Admin) => None,
        (Who::Admin, _) => refused(403, "FORBIDDEN"),
        (Who::Owner, Admin) => None,
        (Who::Owner, _) => refused(0, ""),
        (Who::Member, Admin | Role(_)) => None,
        (Who::Member, _) => refused(404, "ORGANIZER_NOT_FOUND"),
        (Who::Scanner | Who::Invitee, _) => refused(0, ""),
        (Who::Clerk, Role("BOX_OFFICE")) => None,
        (Who::Clerk, _) => refused(0, ""),
        (Who::Permission { clerk: true, .. }, Role("BOX_OFFICE")) => None,
        (Who::Permission { .. }, Admin) => None,
        (Who::Permission { .. }, Rival) => refused(404, ""),
        (Who::Permission { fans_own: true, .. }, Fan) => refused(404, ""),
        (
            Who::Permission {
                fans_own: false, ..
            },
            Fan,
        ) => refused(403, "FORBIDDEN"),
        (Who::Permission { name, .. }, Role(role)) => {
            if roles[name].contains(role) {
                None
            } else {
                Some((403, "PERMISSION_REQUIRED", Some(name.clone())))
            }
        }
    }
}

/// Whether an answer is what was owed (status 0: any refusal). A route
/// for any account may answer 404 about the caller's own things (not on
/// the waiting list); the payment route answers everyone alike while no
/// provider is configured, before it looks at the order.
fn matches(
    who: &Who,
    owed: &Option<(u16, &'static str, Option<String>)>,
    status: u16,
    body: &Value,
) -> bool {
    let unpaid = status == 503 && body["code"] == "PAYMENTS_UNAVAILABLE";
    match owed {
        None if *who == Who::AnyUser => ![401, 403].contains(&status),
        None => ![401, 403, 404].contains(&status),
        Some((0, _, _)) => [401, 403, 404].contains(&status) || unpaid,
        Some((want, code, permission)) => {
            status == *want
                && (code.is_empty() || body["code"] == *code)
                && permission.as_ref().is_none_or(|p| body["permission"] == *p)
        }
    }
}

#[tokio::test]
async fn every_route_answers_each_role_as_the_docs_say() {
    let started = std::time::Instant::now();
    let app = spawn_app().await;
    let roles = role_table();
    let routes = route_table(&roles);
    let doc = app.get("/api/openapi.json", None).await;
    let doc = doc.assert_status(200).clone();
    let team = Team::new(&app, "house").await;
    let rival = Team::new(&app, "rival").await;
    let (_, fan) = app.user("fan").await;
    let buyer = app.user("buyer").await;
    let mut callers: Vec<(Caller, Option<String>)> = vec![
        (Caller::Anonymous, None),
        (Caller::Fan, Some(fan)),
        (Caller::Rival, Some(rival.token("OWNER").to_owned())),
        (Caller::Admin, Some(app.admin_token.clone())),
    ];
    for (role, _, token) in &team.members {
        callers.push((Caller::Role(role), Some(token.clone())));
    }

    let mut ops: Vec<(String, Who)> = Vec::new();
    for operation in operations(&doc) {
        let (method, path) = operation.split_once(' ').unwrap();
        let key = format!("{method} {}", normal(path));
        let who = routes
            .get(&key)
            .unwrap_or_else(|| panic!("{operation} has no row in docs/api.md"))
            .clone();
        if who != Who::Public {
            ops.push((key, who));
        }
    }

    // Signing out everywhere ends a caller's token: asked last.
    ops.sort_by_key(|(operation, _)| operation == "POST /api/auth/logout-all");

    // The refusals first, on one fixture: none of them changes a row.
    let mut n = 0;
    let shared = fixture(&app, &team, &buyer, n).await;
    let before = fingerprint(&app).await;
    let mut wrong = Vec::new();
    let mut asked = 0;
    for (operation, who) in &ops {
        for (caller, token) in &callers {
            let owed = owed(who, caller, &roles);
            if owed.is_none() {
                continue;
            }
            let path = path_of(operation, &shared);
            let (status, body) = ask(
                &app,
                operation,
                &path,
                token.as_deref(),
                body_of(operation, &shared, n),
            )
            .await;
            asked += 1;
            if !matches(who, &owed, status, &body) {
                wrong.push(format!(
                    "{operation} as {caller:?}: {status} {body}, owed {owed:?}"
                ));
            }
        }
    }
    assert_eq!(
        before,
        fingerprint(&app).await,
        "a refused request changed a row"
    );

    // Then those let through, each write on a fixture of its own.
    for (operation, who) in &ops {
        for (caller, token) in &callers {
            if owed(who, caller, &roles).is_some() {
                continue;
            }
            let writes = !operation.starts_with("GET ") && *who != Who::AnyUser;
            let fresh;
            let f = if writes {
                n += 1;
                fresh = fixture(&app, &team, &buyer, n).await;
                &fresh
            } else {
                &shared
            };
            let path = path_of(operation, f);
            let (status, body) = ask(
                &app,
                operation,
                &path,
                token.as_deref(),
                body_of(operation, f, n),
            )
            .await;
            asked += 1;
            if !matches(who, &None, status, &body) {
                wrong.push(format!(
                    "{operation} as {caller:?}: {status} {body}, owed its answer"
                ));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "{} answers differ from the docs:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
    eprintln!(
        "route × role: {} routes × {} callers, {asked} requests asked, {n} fixtures, {:.1} s",
        ops.len(),
        callers.len(),
        started.elapsed().as_secs_f64()
    );
}
