//! The box office's page: a buyer's seat map and checkout, and the
//! operator's concerts and on-sale view, as plain HTML, CSS and JavaScript
//! modules built into the binary (no build step; the sources in `api/web/`
//! are what is served). The page is a client of the public API like any
//! other. Each asset goes with a strong ETag (a 304 when unchanged), gzip
//! for clients that take it, and a Content-Security-Policy that allows
//! nothing inline and nothing from elsewhere.

use std::io::Write as _;
use std::sync::LazyLock;

use axum::Router;
use axum::body::Bytes;
use axum::extract::Path;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use sha2::Digest as _;

use crate::error::{ApiError, ErrorCode};
use crate::state::AppState;

/// Nothing inline (no `unsafe-inline`, no `eval`), nothing from another
/// origin; the API is the page's own origin.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
     style-src 'self'; img-src 'self' data:; connect-src 'self'; \
     base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/", get(index))
        .route("/assets/{name}", get(asset))
}

/// Whether a path is the page's (served from memory, never rate limited:
/// a page that loads half its scripts is worse than none).
pub fn is_page(path: &str) -> bool {
    path == "/" || path.starts_with("/assets/")
}

struct Asset {
    name: &'static str,
    content_type: &'static str,
    plain: Bytes,
    gzip: Bytes,
    etag: HeaderValue,
    gzip_etag: HeaderValue,
}

macro_rules! assets {
    ($($name:literal => $type:literal),* $(,)?) => {
        [$(($name, $type, include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/web/", $name)).as_slice())),*]
    };
}

static ASSETS: LazyLock<Vec<Asset>> = LazyLock::new(|| {
    assets![
        "index.html" => "text/html; charset=utf-8",
        "app.css" => "text/css; charset=utf-8",
        "app.js" => "text/javascript; charset=utf-8",
        "api.js" => "text/javascript; charset=utf-8",
        "dom.js" => "text/javascript; charset=utf-8",
        "events.js" => "text/javascript; charset=utf-8",
        "seatmap.js" => "text/javascript; charset=utf-8",
        "buyer.js" => "text/javascript; charset=utf-8",
        "operator.js" => "text/javascript; charset=utf-8",
        "favicon.svg" => "image/svg+xml",
    ]
    .into_iter()
    .map(|(name, content_type, bytes)| Asset::new(name, content_type, bytes))
    .collect()
});

impl Asset {
    fn new(name: &'static str, content_type: &'static str, bytes: &'static [u8]) -> Self {
        let digest = sha2::Sha256::digest(bytes);
        let hash: String = digest[..12].iter().map(|b| format!("{b:02x}")).collect();
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        // Writing to memory does not fail; an empty gzip is never sent.
        let gzip = encoder
            .write_all(bytes)
            .and_then(|()| encoder.finish())
            .unwrap_or_default();
        let tag = |suffix: &str| {
            HeaderValue::from_str(&format!("\"{hash}{suffix}\""))
                .unwrap_or(HeaderValue::from_static("\"\""))
        };
        Self {
            name,
            content_type,
            plain: Bytes::from_static(bytes),
            gzip: Bytes::from(gzip),
            etag: tag(""),
            gzip_etag: tag("-gzip"),
        }
    }

    fn respond(&self, headers: &HeaderMap) -> Response {
        let gzip = super::availability::accepts_gzip(headers) && !self.gzip.is_empty();
        let etag = if gzip { &self.gzip_etag } else { &self.etag };
        let unchanged = super::availability::if_none_match(headers)
            .any(|tag| tag == "*" || tag == self.etag || tag == self.gzip_etag);
        let mut response = if unchanged {
            StatusCode::NOT_MODIFIED.into_response()
        } else {
            let mut response = if gzip {
                self.gzip.clone()
            } else {
                self.plain.clone()
            }
            .into_response();
            let out = response.headers_mut();
            out.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static(self.content_type),
            );
            if gzip {
                out.insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
            }
            response
        };
        let out = response.headers_mut();
        out.insert(header::ETAG, etag.clone());
        // Revalidated every time (a 304 when unchanged): a new release is
        // seen at once, and nothing needs versioned names.
        out.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
        out.insert(header::VARY, HeaderValue::from_static("Accept-Encoding"));
        out.insert(
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(CONTENT_SECURITY_POLICY),
        );
        out.insert(
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        );
        out.insert(
            header::REFERRER_POLICY,
            HeaderValue::from_static("no-referrer"),
        );
        out.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
        response
    }
}

fn find(name: &str) -> Option<&'static Asset> {
    ASSETS.iter().find(|asset| asset.name == name)
}

async fn index(headers: HeaderMap) -> Response {
    match find("index.html") {
        Some(asset) => asset.respond(&headers),
        None => not_found(),
    }
}

async fn asset(Path(name): Path<String>, headers: HeaderMap) -> Response {
    match find(&name).filter(|asset| asset.name != "index.html") {
        Some(asset) => asset.respond(&headers),
        None => not_found(),
    }
}

fn not_found() -> Response {
    ApiError::new(ErrorCode::RouteNotFound, "no such route").into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_asset_is_built_in_and_compresses() {
        for asset in ASSETS.iter() {
            assert!(!asset.plain.is_empty(), "{}", asset.name);
            assert!(!asset.gzip.is_empty(), "{}", asset.name);
        }
    }
}
