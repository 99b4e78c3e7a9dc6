use std::collections::BTreeSet;

use crate::helpers::spawn_app;

/// Every route the server answers, as (method, path template).
const ROUTES: &[(&str, &str)] = &[
    ("get", "/healthz"),
    ("get", "/readyz"),
    ("post", "/api/auth/login"),
    ("post", "/api/auth/logout-all"),
    ("post", "/api/users"),
    ("post", "/api/concerts/{id}/access-codes"),
    ("get", "/api/concerts/{id}/challenge"),
    ("get", "/api/concerts/{id}/access-codes"),
    ("delete", "/api/concerts/{id}/access-codes/{codeId}"),
    ("get", "/api/organizers"),
    ("post", "/api/organizers"),
    ("get", "/api/organizers/{id}"),
    ("patch", "/api/organizers/{id}"),
    ("get", "/api/organizers/{id}/members"),
    ("get", "/api/organizers/{id}/audit"),
    ("put", "/api/organizers/{id}/members/{userId}"),
    ("delete", "/api/organizers/{id}/members/{userId}"),
    ("post", "/api/organizers/{id}/invitations"),
    ("get", "/api/organizers/{id}/invitations"),
    ("delete", "/api/organizers/{id}/invitations/{invitationId}"),
    ("get", "/api/users/me/invitations"),
    ("post", "/api/invitations/{id}/accept"),
    ("post", "/api/invitations/{id}/decline"),
    ("post", "/api/concerts/{id}/desk/shifts"),
    ("get", "/api/concerts/{id}/desk/shifts"),
    ("get", "/api/desk/shifts/{id}"),
    ("get", "/api/concerts/{id}/desk/my-shift"),
    ("post", "/api/desk/shifts/{id}/requests"),
    ("post", "/api/desk/shifts/{id}/payments"),
    ("post", "/api/desk/shifts/{id}/refunds"),
    ("post", "/api/desk/shifts/{id}/close"),
    ("post", "/api/concerts/{id}/orders/void"),
    ("get", "/api/concerts/{id}/orders/signals"),
    ("post", "/api/concerts/{id}/waiting-list"),
    ("get", "/api/concerts/{id}/waiting-list"),
    ("delete", "/api/concerts/{id}/waiting-list"),
    ("get", "/api/concerts/{id}/waiting-list/me"),
    ("get", "/api/users/me"),
    ("get", "/api/users/{id}"),
    ("patch", "/api/users/{id}"),
    ("delete", "/api/users/{id}"),
    ("get", "/api/concerts"),
    ("post", "/api/concerts"),
    ("get", "/api/concerts/{id}"),
    ("patch", "/api/concerts/{id}"),
    ("delete", "/api/concerts/{id}"),
    ("get", "/api/concerts/{id}/seats"),
    ("get", "/api/concerts/{id}/availability"),
    ("get", "/api/concerts/{id}/seat-map"),
    ("get", "/api/concerts/{id}/sale"),
    ("post", "/api/seats"),
    ("get", "/api/seats/{id}"),
    ("patch", "/api/seats/{id}"),
    ("delete", "/api/seats/{id}"),
    ("post", "/api/reservations"),
    ("get", "/api/reservations/status/{id}"),
    ("get", "/api/reservations/status/{id}/events"),
    ("get", "/api/reservations/{id}"),
    ("post", "/api/reservations/cancel"),
    ("post", "/api/reservations/{id}/confirm"),
    ("post", "/api/reservations/{id}/cancel"),
    ("get", "/api/users/me/reservations"),
    ("get", "/api/reservations/{id}/tickets"),
    ("get", "/api/tickets/{id}/qr.svg"),
    ("get", "/api/concerts/{id}/check-in/keys"),
    ("get", "/api/concerts/{id}/check-in/revoked"),
    ("post", "/api/concerts/{id}/scanners"),
    ("get", "/api/concerts/{id}/scanners"),
    ("delete", "/api/concerts/{id}/scanners/{scannerId}"),
    ("post", "/api/check-ins"),
    ("post", "/api/check-ins/batch"),
    ("post", "/api/reservations/{id}/payment"),
    ("get", "/api/reservations/{id}/payments"),
    ("post", "/api/payments/stripe/webhook"),
    ("get", "/api/payments/config"),
    ("put", "/api/concerts/{id}/seating-plan"),
    ("get", "/api/concerts/{id}/seating-plan"),
    ("post", "/api/reservations/{id}/refund"),
    ("post", "/api/refunds/{id}/paid-back"),
    ("post", "/api/concerts/{id}/cancel"),
    ("get", "/api/concerts/{id}/cancellation"),
    ("get", "/api/concerts/{id}/sales"),
    ("get", "/api/concerts/{id}/orders"),
];

#[tokio::test]
async fn the_document_is_openapi_3_1_and_covers_every_route() {
    let app = spawn_app().await;
    let reply = app.get("/api/openapi.json", None).await;
    let doc = reply.assert_status(200);
    assert!(
        doc["openapi"].as_str().unwrap().starts_with("3.1"),
        "{}",
        doc["openapi"]
    );

    let documented: BTreeSet<(String, String)> = doc["paths"]
        .as_object()
        .unwrap()
        .iter()
        .flat_map(|(path, item)| {
            item.as_object()
                .unwrap()
                .keys()
                .map(move |m| (m.clone(), path.clone()))
        })
        .collect();
    let expected: BTreeSet<(String, String)> = ROUTES
        .iter()
        .map(|(m, p)| ((*m).to_owned(), (*p).to_owned()))
        .collect();
    assert_eq!(documented, expected);

    // Operation ids are unique: tools link operations by them.
    let ids: Vec<&str> = doc["paths"]
        .as_object()
        .unwrap()
        .values()
        .flat_map(|item| item.as_object().unwrap().values())
        .map(|operation| operation["operationId"].as_str().unwrap())
        .collect();
    let distinct: BTreeSet<&str> = ids.iter().copied().collect();
    assert_eq!(distinct.len(), ids.len(), "{ids:?}");

    // The listed routes really exist: none of them falls through to 404/405.
    for (method, path) in ROUTES {
        let concrete = path.replace("{id}", "1");
        let method = reqwest::Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
        let reply = app.request(method.clone(), &concrete, None, None).await;
        assert!(
            !["ROUTE_NOT_FOUND", "METHOD_NOT_ALLOWED"]
                .contains(&reply.body["code"].as_str().unwrap_or("")),
            "{method} {concrete} is documented but not served"
        );
    }
}

#[tokio::test]
async fn every_error_response_is_a_documented_problem() {
    let app = spawn_app().await;
    let doc = app.get("/api/openapi.json", None).await.body;
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            let responses = op["responses"].as_object().unwrap();
            assert!(
                responses.keys().any(|s| s.starts_with('2')),
                "{method} {path} has no success response"
            );
            for (status, response) in responses {
                if status.starts_with('4') || status.starts_with('5') {
                    let schema = &response["content"]["application/problem+json"]["schema"]["$ref"];
                    assert_eq!(
                        schema, "#/components/schemas/Problem",
                        "{method} {path} {status}"
                    );
                }
            }
            // Found by fuzzing: query parameters documented as path ones.
            for param in op["parameters"].as_array().into_iter().flatten() {
                if param["in"] == "path" {
                    let name = param["name"].as_str().unwrap();
                    assert!(
                        path.contains(&format!("{{{name}}}")),
                        "{method} {path}: path parameter {name}"
                    );
                }
            }
            let protected = op.get("security").is_some();
            if protected {
                assert!(
                    responses.contains_key("401"),
                    "{method} {path} is protected but documents no 401"
                );
            }
            // Signed in or not, every route but the probes is rate limited.
            let probe = matches!(path.as_str(), "/healthz" | "/readyz");
            assert_eq!(
                responses.contains_key("429"),
                !probe,
                "{method} {path}: 429 documented where it can be answered"
            );
        }
    }
    let codes = doc["components"]["schemas"]["ErrorCode"]["enum"]
        .as_array()
        .unwrap();
    for code in [
        "VALIDATION_ERROR",
        "NICKNAME_DUPLICATED",
        "SEAT_STATUS_CONFLICT",
        "DATABASE_UNAVAILABLE",
    ] {
        assert!(
            codes.iter().any(|c| c == code),
            "{code} missing from the ErrorCode schema"
        );
    }
    assert_eq!(
        doc["components"]["securitySchemes"]["bearer"]["scheme"],
        "bearer"
    );
}

/// docs/api.md's table of error codes names every `ErrorCode`, and no other.
#[test]
fn the_api_document_lists_every_error_code() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/api.md"))
        .expect("docs/api.md");
    let (_, table) = readme
        .split_once("<!-- error-codes -->")
        .expect("the table's start marker");
    let (table, _) = table
        .split_once("<!-- /error-codes -->")
        .expect("the table's end marker");
    let listed: BTreeSet<String> = table
        .lines()
        .filter_map(|row| row.strip_prefix("| "))
        .filter_map(|row| row.split(" | ").next())
        .flat_map(|codes| codes.split(", "))
        .filter_map(|code| code.strip_prefix('`')?.strip_suffix('`'))
        .map(str::to_owned)
        .collect();
    let doc =
        serde_json::to_value(<ticket_api::openapi::ApiDoc as utoipa::OpenApi>::openapi()).unwrap();
    let defined: BTreeSet<String> = doc["components"]["schemas"]["ErrorCode"]["enum"]
        .as_array()
        .expect("ErrorCode's values in the OpenAPI document")
        .iter()
        .map(|code| code.as_str().unwrap().to_owned())
        .collect();
    assert_eq!(listed, defined);
}
