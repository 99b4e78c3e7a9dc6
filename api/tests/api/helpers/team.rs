//! Organizers and their members, made through the API.

use reqwest::Method;
use serde_json::{Value, json};

use super::*;

/// An organizer made by the platform's admin, with `owner` as its owner.
pub async fn organizer(app: &TestApp, slug: &str, owner: u64) -> u64 {
    let made = app
        .post(
            "/api/organizers",
            Some(&app.admin_token),
            json!({"name": format!("Promoter {slug}"), "slug": slug}),
        )
        .await;
    let id = made.assert_status(201)["id"].as_u64().unwrap();
    set_role(app, &app.admin_token, id, owner, json!({"role": "OWNER"}))
        .await
        .assert_status(204);
    id
}

pub async fn set_role(app: &TestApp, token: &str, organizer: u64, user: u64, body: Value) -> Reply {
    app.request(
        Method::PUT,
        &format!("/api/organizers/{organizer}/members/{user}"),
        Some(token),
        Some(body),
    )
    .await
}

/// An organizer with one member of each role, each a new account named
/// `{prefix}_{role}`.
pub struct Team {
    pub id: u64,
    /// (role, user id, token), OWNER first.
    pub members: Vec<(&'static str, u64, String)>,
}

pub const ROLES: [&str; 5] = ["OWNER", "MANAGER", "BOX_OFFICE", "DOOR", "FINANCE"];

impl Team {
    pub async fn new(app: &TestApp, prefix: &str) -> Self {
        let mut members = Vec::new();
        for role in ROLES {
            let (user, token) = app.user(&format!("{prefix}_{}", role.to_lowercase())).await;
            members.push((role, user, token));
        }
        let id = organizer(app, &prefix.replace('_', "-"), members[0].1).await;
        for (role, user, _) in &members[1..] {
            set_role(app, &members[0].2, id, *user, json!({"role": role}))
                .await
                .assert_status(204);
        }
        Self { id, members }
    }

    /// A concert of the team's ("Team Night"): one row of `seats` seats at
    /// €25.00, holds of ten minutes, up to four seats an order; (id, seat
    /// ids).
    pub async fn priced_concert(&self, app: &TestApp, seats: u32) -> (u64, Vec<u64>) {
        let body = json!({"title": "Team Night", "venue": "Hall", "concertDate": "2099-05-01T19:00:00Z",
            "rows": 1, "seatsPerRow": seats, "holdSeconds": 600, "maxSeatsPerOrder": 4,
            "categories": [{"name": "Standard", "price": 2500, "currency": "EUR"}]});
        let made = app
            .post("/api/concerts", Some(self.token("OWNER")), body)
            .await;
        let id = made.assert_status(201)["id"].as_u64().unwrap();
        let seats = app.seats(id).await;
        (
            id,
            seats.iter().map(|s| s["id"].as_u64().unwrap()).collect(),
        )
    }

    /// The token of the member with `role`.
    pub fn token(&self, role: &str) -> &str {
        let member = self.members.iter().find(|(r, _, _)| *r == role);
        &member.unwrap_or_else(|| panic!("no {role} in the team")).2
    }
}
