//! The OpenAPI 3.1 document, generated from the handlers' annotations.

use axum::routing::get;
use axum::{Json, Router};
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

use crate::routes::{auth, concerts, health, reservations, seats, users};
use crate::state::AppState;

#[derive(OpenApi)]
#[openapi(
    info(title = "ticket", description = "Concert ticket reservations that never sell a seat twice."),
    paths(
        health::healthz, health::readyz,
        auth::login,
        users::create, users::me, users::show, users::update, users::remove,
        concerts::create, concerts::list, concerts::show, concerts::update, concerts::remove,
        seats::list, seats::show, seats::create, seats::update, seats::remove,
        reservations::enqueue, reservations::status, reservations::show, reservations::mine, reservations::cancel,
    ),
    components(schemas(crate::error::Problem, crate::error::ErrorCode, crate::error::ProblemField)),
    modifiers(&BearerAuth),
    tags(
        (name = "auth", description = "Log in for a bearer token"),
        (name = "users", description = "Accounts"),
        (name = "concerts", description = "Concerts and their seat layouts"),
        (name = "seats", description = "Seats of a concert"),
        (name = "reservations", description = "Asynchronous reservation requests, reservations and cancellation"),
        (name = "operations", description = "Health and readiness probes"),
    )
)]
pub struct ApiDoc;

struct BearerAuth;

impl Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .bearer_format("JWT")
                    .build(),
            ),
        );
    }
}

pub fn router() -> Router<AppState> {
    Router::new().route(
        "/api/openapi.json",
        get(|| async { Json(ApiDoc::openapi()) }),
    )
}
