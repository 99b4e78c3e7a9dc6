//! The box office's page as the API serves it: built into the binary, at
//! `/` and `/assets/…`, cacheable (strong ETag, 304), gzipped for clients
//! that take it, under a Content-Security-Policy that allows nothing
//! inline and nothing from elsewhere, and never rate limited.

use std::io::Read as _;

use ticket_api::middleware::limits::LimitSettings;

use crate::helpers::{spawn_app, spawn_app_with_limits};

const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
                   connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

fn header<'a>(response: &'a reqwest::Response, name: &str) -> &'a str {
    response
        .headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
}

#[tokio::test]
async fn the_page_and_every_asset_it_names_are_served_with_a_strict_policy() {
    let app = spawn_app().await;
    let index = app.fetch("/", &[]).await;
    assert_eq!(index.status(), 200);
    assert_eq!(header(&index, "content-type"), "text/html; charset=utf-8");
    assert_eq!(header(&index, "content-security-policy"), CSP);
    assert_eq!(header(&index, "x-content-type-options"), "nosniff");
    assert_eq!(header(&index, "cache-control"), "no-cache");
    let html = index.text().await.unwrap();
    assert!(
        !html.contains("<script>") && !html.contains("style="),
        "nothing inline"
    );
    assert!(
        !html.contains("http://") && !html.contains("https://"),
        "nothing from elsewhere"
    );
    // What the page names, then every module those import (statically or
    // when a view is first shown), and the catalogues of both languages.
    let mut assets: Vec<String> = html
        .split('"')
        .filter(|part| part.starts_with("/assets/"))
        .map(str::to_owned)
        .collect();
    for language in ["en", "ko"] {
        assets.push(format!("/assets/messages-{language}.json"));
        assets.push(format!("/assets/messages-{language}-operator.json"));
    }
    let mut checked = std::collections::BTreeSet::new();
    while let Some(asset) = assets.pop() {
        if !checked.insert(asset.clone()) {
            continue;
        }
        let response = app.fetch(&asset, &[]).await;
        assert_eq!(response.status(), 200, "{asset}");
        let expected = match asset.rsplit('.').next() {
            Some("js") => "text/javascript; charset=utf-8",
            Some("css") => "text/css; charset=utf-8",
            Some("svg") => "image/svg+xml",
            Some("json") => "application/json",
            other => panic!("unexpected asset {other:?}"),
        };
        assert_eq!(header(&response, "content-type"), expected, "{asset}");
        let body = response.text().await.unwrap();
        // SVG's namespace is a name, not an address anything is fetched
        // from; the vendored widget (ALTCHA) names its home page, and the
        // policy keeps it from fetching anything there.
        let fetched = body.replace("http://www.w3.org/2000/svg", "");
        assert!(
            !fetched.contains("http://") && !fetched.contains("https://")
                || asset.ends_with(".svg")
                || asset.starts_with("/assets/altcha"),
            "{asset} reaches nothing elsewhere"
        );
        if asset.ends_with(".js") {
            assets.extend(
                body.split('"')
                    .filter_map(|part| part.strip_prefix("./"))
                    .filter(|name| name.ends_with(".js"))
                    .map(|name| format!("/assets/{name}")),
            );
        }
    }
    // The buyer's and the operator's views, the door and the plan's map.
    for module in [
        "concert.js",
        "sale-view.js",
        "access-codes.js",
        "door.js",
        "plan-map.js",
    ] {
        assert!(
            checked.contains(&format!("/assets/{module}")),
            "{module} not reached"
        );
    }
}

#[tokio::test]
async fn an_unchanged_asset_costs_a_304_and_gzip_is_given_to_those_who_take_it() {
    let app = spawn_app().await;
    let path = "/assets/seatmap.js";
    let plain = app.fetch(path, &[]).await;
    let etag = header(&plain, "etag").to_owned();
    assert!(
        etag.starts_with('"') && etag.ends_with('"'),
        "a strong ETag: {etag}"
    );
    let source = plain.bytes().await.unwrap();

    let again = app.fetch(path, &[("If-None-Match", &etag)]).await;
    assert_eq!(again.status(), 304);
    assert!(again.bytes().await.unwrap().is_empty());

    let zipped = app.fetch(path, &[("Accept-Encoding", "gzip")]).await;
    assert_eq!(header(&zipped, "content-encoding"), "gzip");
    assert_eq!(header(&zipped, "vary"), "Accept-Encoding");
    let gzip_etag = header(&zipped, "etag").to_owned();
    assert_ne!(gzip_etag, etag, "each encoding has its own tag");
    let compressed = zipped.bytes().await.unwrap();
    assert!(compressed.len() < source.len() / 2);
    let mut unzipped = Vec::new();
    flate2::read::GzDecoder::new(&compressed[..])
        .read_to_end(&mut unzipped)
        .unwrap();
    assert_eq!(unzipped, source);
    // Either tag names the same asset.
    let either = app.fetch(path, &[("If-None-Match", &gzip_etag)]).await;
    assert_eq!(either.status(), 304);
}

#[tokio::test]
async fn an_unknown_asset_is_a_problem_not_the_page() {
    let app = spawn_app().await;
    for path in [
        "/assets/missing.js",
        "/assets/index.html",
        "/assets/../Cargo.toml",
        "/index.html",
    ] {
        let reply = app.get(path, None).await;
        reply.assert_problem(404, "ROUTE_NOT_FOUND");
    }
}

#[tokio::test]
async fn loading_the_page_spends_no_rate_limit() {
    let app = spawn_app_with_limits(LimitSettings {
        anonymous_requests_per_sec: 1,
        ..LimitSettings::OFF
    })
    .await;
    for _ in 0..10 {
        for path in ["/", "/assets/app.js", "/assets/app.css"] {
            let response = app.fetch(path, &[]).await;
            assert_eq!(response.status(), 200, "{path}");
        }
    }
    // The API itself still is limited.
    let mut limited = false;
    for _ in 0..10 {
        limited |= app.get("/api/concerts", None).await.status == 429;
    }
    assert!(limited);
}
