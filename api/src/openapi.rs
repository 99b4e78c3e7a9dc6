//! The OpenAPI 3.1 document, generated from the handlers' annotations.

use axum::routing::get;
use axum::{Json, Router};
use utoipa::openapi::RefOr;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

use crate::accounts::{auth, users};
use crate::concerts::{availability, routes as concerts, sale, seats};
use crate::health;
use crate::presale::routes as presale;
use crate::reservations::{checkout, events as status_events, routes as reservations};

#[derive(OpenApi)]
#[openapi(
    info(title = "ticket", description = "Concert ticket reservations that never sell a seat twice."),
    paths(
        health::healthz, health::readyz,
        auth::login,
        auth::logout_all,
        users::create, users::me, users::show, users::update, users::remove,
        concerts::create, concerts::list, concerts::show, concerts::update, concerts::remove,
        availability::availability,
        availability::seat_map,
        sale::sale,
        crate::concerts::orders::search,
        seats::list, seats::show, seats::create, seats::update, seats::remove,
        reservations::enqueue, reservations::status, reservations::show, reservations::mine,
        status_events::events,
        checkout::confirm, checkout::cancel_by_path, checkout::cancel,
        presale::create, presale::list, presale::revoke,
        crate::organizers::routes::create, crate::organizers::routes::list, crate::organizers::routes::show,
        crate::organizers::routes::update, crate::organizers::routes::members,
        crate::organizers::routes::set_member, crate::organizers::routes::remove_member,
        crate::organizers::trail::audit,
        crate::organizers::invitations::invite, crate::organizers::invitations::of_organizer,
        crate::organizers::invitations::revoke, crate::organizers::invitations::mine,
        crate::organizers::invitations::accept, crate::organizers::invitations::decline,
        crate::desk::routes::open, crate::desk::routes::shifts, crate::desk::routes::shift,
        crate::desk::routes::my_shift,
        crate::desk::routes::request,
        crate::desk::routes::pay, crate::desk::routes::refund, crate::desk::routes::close,
        crate::payments::void::void, crate::payments::void::signals,
        crate::proof_of_work::routes::challenge,
        crate::waiting_list::routes::list, crate::waiting_list::routes::join, crate::waiting_list::routes::leave, crate::waiting_list::routes::me,
        crate::tickets::routes::of_reservation, crate::tickets::routes::qr, crate::tickets::routes::keys, crate::tickets::routes::revoked,
        crate::check_in::scanners::create_scanner, crate::check_in::scanners::list_scanners, crate::check_in::scanners::revoke_scanner,
        crate::check_in::routes::check_in, crate::check_in::routes::check_in_batch,
        crate::payments::routes::pay, crate::payments::routes::payments_of, crate::payments::routes::stripe_webhook, crate::payments::routes::config,
        crate::payments::refunds::refund_tickets,
        crate::payments::refunds::paid_back,
        crate::payments::cancellation::cancel, crate::payments::cancellation::progress,
        crate::payments::takings::sales,
        crate::concerts::seating_plan::put_seating_plan, crate::concerts::seating_plan::seating_plan,
    ),
    components(schemas(crate::error::Problem, crate::error::ErrorCode, crate::error::ProblemField,
                      status_events::PositionEvent, crate::reservations::status::QueueStatusResponse)),
    modifiers(&BearerAuth, &RateLimited, &CommonProblems, &UniqueOperationIds),
    tags(
        (name = "auth", description = "Log in for a bearer token"),
        (name = "users", description = "Accounts"),
        (name = "concerts", description = "Concerts and their seat layouts"),
        (name = "seats", description = "Seats of a concert"),
        (name = "reservations", description = "Asynchronous reservation requests, holds, confirmation and cancellation"),
        (name = "organizers", description = "Organizers, who own concerts, and the roles of their members"),
        (name = "desk", description = "The desk at the venue: shifts, sales in cash or by card, refunds, the count at the close"),
        (name = "presale", description = "Access codes for a concert's presale"),
        (name = "waiting-list", description = "A sold-out concert's waiting list and the offers made from it"),
        (name = "tickets", description = "E-tickets, their signed codes and QR images, and what scanners verify them with"),
        (name = "check-in", description = "Door staff: scanners' credentials, check-in exactly once, offline uploads"),
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

/// Every operation of the document, with its path.
fn operations_mut(
    openapi: &mut utoipa::openapi::OpenApi,
) -> impl Iterator<Item = (&String, &mut utoipa::openapi::path::Operation)> {
    openapi.paths.paths.iter_mut().flat_map(|(path, item)| {
        [
            &mut item.get,
            &mut item.put,
            &mut item.post,
            &mut item.delete,
            &mut item.patch,
        ]
        .into_iter()
        .flatten()
        .map(move |operation| (path, operation))
    })
}

/// Operation ids are the handlers' names, which repeat from one feature to
/// the next (`create`, `list`); a document's ids must be unique, and tools
/// that link operations by id (schemathesis's stateful tests) pick the
/// wrong one otherwise. Each becomes `{tag}_{name}`.
struct UniqueOperationIds;

impl Modify for UniqueOperationIds {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        for (_, operation) in operations_mut(openapi) {
            if let (Some(tag), Some(id)) = (
                operation.tags.as_ref().and_then(|tags| tags.first()),
                operation.operation_id.as_ref(),
            ) {
                operation.operation_id = Some(format!("{tag}_{id}"));
            }
        }
    }
}

/// Every operation but the probes may answer 429: a signed-in caller spends
/// the per-user budget, anyone else the client address's.
struct RateLimited;

impl Modify for RateLimited {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        for (path, operation) in operations_mut(openapi) {
            if matches!(path.as_str(), "/healthz" | "/readyz") {
                continue;
            }
            operation
                .responses
                .responses
                .entry("429".to_owned())
                .or_insert_with(|| {
                    problem_response("Too many requests: retry after Retry-After seconds")
                });
        }
    }
}

/// Answers any operation may give, documented everywhere: problems are
/// `application/problem+json`; a body can be malformed (400), too large (413)
/// or of the wrong type (415); the database can be unreachable (503).
struct CommonProblems;

/// A problem+json answer with `description`.
fn problem_response(description: &str) -> RefOr<utoipa::openapi::Response> {
    RefOr::T(
        utoipa::openapi::ResponseBuilder::new()
            .description(description)
            .content(
                "application/problem+json",
                utoipa::openapi::ContentBuilder::new()
                    .schema(Some(utoipa::openapi::Ref::from_schema_name("Problem")))
                    .build(),
            )
            .build(),
    )
}

impl Modify for CommonProblems {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        for (path, operation) in operations_mut(openapi) {
            let has_body = operation.request_body.is_some();
            let responses = &mut operation.responses.responses;
            let mut add = |code: &str, description: &str| {
                responses
                    .entry(code.to_owned())
                    .or_insert_with(|| problem_response(description));
            };
            if has_body {
                add("400", "Malformed or invalid body");
                add("413", "Body larger than 64 KiB");
                add("415", "Body is not JSON");
            }
            if path != "/healthz" {
                add(
                    "503",
                    "Database unavailable: retry after Retry-After seconds",
                );
            }
            for (code, response) in responses.iter_mut() {
                if let (RefOr::T(response), true) = (response, !code.starts_with('2')) {
                    let content = std::mem::take(&mut response.content);
                    response.content = content
                        .into_iter()
                        .map(|(kind, body)| {
                            let kind = if kind == "application/json" {
                                "application/problem+json".to_owned()
                            } else {
                                kind
                            };
                            (kind, body)
                        })
                        .collect();
                }
            }
        }
    }
}

pub fn router<S: Clone + Send + Sync + 'static>() -> Router<S> {
    Router::new().route(
        "/api/openapi.json",
        get(|| async { Json(ApiDoc::openapi()) }),
    )
}
