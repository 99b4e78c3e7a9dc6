//! The box office's page: a buyer's seat map and checkout, and the
//! operator's concerts and on-sale view, as plain HTML, CSS and JavaScript
//! modules built into the binary (no build step; the sources in `api/web/`
//! are what is served). The page is a client of the public API like any
//! other. Each asset goes with a strong ETag (a 304 when unchanged), gzip
//! for clients that take it (`CachedBody`), and a Content-Security-Policy
//! that allows nothing inline and nothing from elsewhere but Stripe.js
//! when payments are on (`csp.rs`).

mod csp;

use std::sync::{Arc, LazyLock};

use axum::Router;
use axum::body::Bytes;
use axum::extract::Path;
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use crate::cached_body::CachedBody;
use crate::error::{ApiError, ErrorCode};

pub use csp::content_security_policy;

/// The page, under the policy that `stripe` (when payments are on) calls for.
pub fn router<S: Clone + Send + Sync + 'static>(
    stripe: Option<&ticket_core::payments::Stripe>,
) -> Router<S> {
    let policy = Arc::new(content_security_policy(stripe));
    let for_assets = policy.clone();
    Router::new()
        .route(
            "/",
            get(move |headers: HeaderMap| async move { index(&policy, &headers) }),
        )
        .route(
            "/assets/{name}",
            get(
                move |Path(name): Path<String>, headers: HeaderMap| async move {
                    asset(&for_assets, &name, &headers)
                },
            ),
        )
}

/// Whether a path is the page's (served from memory, never rate limited:
/// a page that loads half its scripts is worse than none).
pub fn is_page(path: &str) -> bool {
    path == "/" || path.starts_with("/assets/")
}

struct Asset {
    name: &'static str,
    content_type: &'static str,
    body: CachedBody,
}

/// `name => type` serves `web/name`; `name from path => type` serves
/// `web/path` under `name` (the vendored widget).
macro_rules! assets {
    ($($name:literal $(from $path:literal)? => $type:literal),* $(,)?) => {
        [$(($name, $type, include_bytes!(concat!(
            env!("CARGO_MANIFEST_DIR"), "/web/", assets!(@source $name $($path)?)
        )).as_slice())),*]
    };
    (@source $name:literal) => { $name };
    (@source $name:literal $path:literal) => { $path };
}

static ASSETS: LazyLock<Vec<Asset>> = LazyLock::new(|| {
    assets![
        "index.html" => "text/html; charset=utf-8",
        "app.css" => "text/css; charset=utf-8",
        "app.js" => "text/javascript; charset=utf-8",
        "api.js" => "text/javascript; charset=utf-8",
        "dom.js" => "text/javascript; charset=utf-8",
        "i18n.js" => "text/javascript; charset=utf-8",
        // The page's words, one catalogue a language (only the one spoken is loaded).
        "messages-en.json" => "application/json",
        "messages-ko.json" => "application/json",
        "messages-en-operator.json" => "application/json",
        "messages-ko-operator.json" => "application/json",
        "events.js" => "text/javascript; charset=utf-8",
        "seatmap.js" => "text/javascript; charset=utf-8",
        "plan-map.js" => "text/javascript; charset=utf-8",
        "account.js" => "text/javascript; charset=utf-8",
        "concerts.js" => "text/javascript; charset=utf-8",
        "concert.js" => "text/javascript; charset=utf-8",
        "reservations.js" => "text/javascript; charset=utf-8",
        "admin.js" => "text/javascript; charset=utf-8",
        "concert-form.js" => "text/javascript; charset=utf-8",
        "concert-editors.js" => "text/javascript; charset=utf-8",
        "sale-view.js" => "text/javascript; charset=utf-8",
        "proof.js" => "text/javascript; charset=utf-8",
        "waiting-list.js" => "text/javascript; charset=utf-8",
        "money.js" => "text/javascript; charset=utf-8",
        "payment.js" => "text/javascript; charset=utf-8",
        "best.js" => "text/javascript; charset=utf-8",
        "orders.js" => "text/javascript; charset=utf-8",
        "tickets.js" => "text/javascript; charset=utf-8",
        "door.js" => "text/javascript; charset=utf-8",
        "palette.js" => "text/javascript; charset=utf-8",
        "access-codes.js" => "text/javascript; charset=utf-8",
        "scanners.js" => "text/javascript; charset=utf-8",
        "waiting-admin.js" => "text/javascript; charset=utf-8",
        "team.js" => "text/javascript; charset=utf-8",
        "desk.js" => "text/javascript; charset=utf-8",
        "void-orders.js" => "text/javascript; charset=utf-8",
        // ALTCHA's widget (npm `altcha`, scripts/vendor-altcha.sh), loaded
        // by proof.js only where a concert asks for a proof of work.
        "altcha.js" from "vendor/altcha/altcha.js" => "text/javascript; charset=utf-8",
        "altcha.css" from "vendor/altcha/altcha.css" => "text/css; charset=utf-8",
        "altcha-sha-worker.js" from "vendor/altcha/sha-worker.js" => "text/javascript; charset=utf-8",
        // The door's QR reader where the browser has none (npm
        // `barcode-detector` and ZXing's wasm, scripts/vendor-qr.sh),
        // loaded by door.js only, in a worker of its own policy.
        "qr-worker.js" => "text/javascript; charset=utf-8",
        "barcode-detector.js" from "vendor/qr/barcode-detector.js" => "text/javascript; charset=utf-8",
        "zxing-exported.js" from "vendor/qr/zxing-exported.js" => "text/javascript; charset=utf-8",
        "zxing_reader.wasm" from "vendor/qr/zxing_reader.wasm" => "application/wasm",
        "favicon.svg" => "image/svg+xml",
    ]
    .into_iter()
    .map(|(name, content_type, bytes)| Asset::new(name, content_type, bytes))
    .collect()
});

impl Asset {
    fn new(name: &'static str, content_type: &'static str, bytes: &'static [u8]) -> Self {
        Self {
            name,
            content_type,
            body: CachedBody::new(Bytes::from_static(bytes), flate2::Compression::best()),
        }
    }

    fn respond(&self, policy: &HeaderValue, headers: &HeaderMap) -> Response {
        // Revalidated every time (a 304 when unchanged): a new release is
        // seen at once, and nothing needs versioned names.
        let mut response = self.body.respond(headers, self.content_type, "no-cache");
        let out = response.headers_mut();
        out.insert(header::CONTENT_SECURITY_POLICY, policy.clone());
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

fn index(policy: &HeaderValue, headers: &HeaderMap) -> Response {
    match find("index.html") {
        Some(asset) => asset.respond(policy, headers),
        None => not_found(),
    }
}

fn asset(policy: &HeaderValue, name: &str, headers: &HeaderMap) -> Response {
    match find(name).filter(|asset| asset.name != "index.html") {
        // A worker lives under its own response's policy: this one alone
        // may compile WebAssembly.
        Some(asset) if asset.name == "qr-worker.js" => {
            asset.respond(&HeaderValue::from_static(csp::QR_WORKER), headers)
        }
        Some(asset) => asset.respond(policy, headers),
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
    fn only_the_qr_worker_may_compile_webassembly() {
        let page = HeaderValue::from_static(csp::STRICT);
        let policy_of = |name: &str| {
            asset(&page, name, &HeaderMap::new()).headers()[header::CONTENT_SECURITY_POLICY].clone()
        };
        assert_eq!(policy_of("qr-worker.js"), csp::QR_WORKER);
        for name in ["door.js", "barcode-detector.js", "zxing_reader.wasm"] {
            assert_eq!(policy_of(name), page, "{name}");
        }
    }

    #[test]
    fn every_asset_is_built_in_and_compresses() {
        for asset in ASSETS.iter() {
            assert!(asset.body.gzip_len() > 0, "{}", asset.name);
        }
    }
}

/// The catalogues against each other and against the page's code: what
/// one language says the other says, with the same `{names}`; every key
/// the code names is there; none is there that nothing names.
#[cfg(test)]
mod catalogues {
    use std::collections::{BTreeMap, BTreeSet};

    use serde_json::Value;

    const WEB: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/web/");
    /// Keys made in code from a code or a field name (`problem.${code}`).
    /// Keys made from the API's own values: a problem's code, a field, a
    /// role, an audit entry's action and target, a signal's kind.
    const MADE: [&str; 6] = [
        "problem.",
        "invalid.",
        "role.",
        "audit.did.",
        "audit.of.",
        "void.signal.",
    ];

    /// A language's words, its parts together; no key in two parts.
    fn catalogue(language: &str) -> BTreeMap<String, Value> {
        let mut words = BTreeMap::new();
        for part in ["", "-operator"] {
            let text =
                std::fs::read_to_string(format!("{WEB}messages-{language}{part}.json")).unwrap();
            let part: BTreeMap<String, Value> = serde_json::from_str(&text).unwrap();
            for (key, value) in part {
                assert!(words.insert(key.clone(), value).is_none(), "{key} twice");
            }
        }
        words
    }

    /// A text's forms ("one", "other"), or the text itself.
    fn forms(value: &Value) -> Vec<String> {
        match value {
            Value::String(text) => vec![text.clone()],
            Value::Object(forms) => {
                assert!(forms.contains_key("other"), "{value}");
                forms
                    .values()
                    .map(|v| v.as_str().unwrap().to_owned())
                    .collect()
            }
            other => panic!("not a message: {other}"),
        }
    }

    fn names(text: &str) -> BTreeSet<String> {
        text.split('{')
            .skip(1)
            .filter_map(|rest| rest.split_once('}'))
            .map(|(name, _)| name.to_owned())
            .collect()
    }

    /// The double-quoted literals of the page's modules that look like
    /// keys ("nav.logIn").
    fn keys_in_code() -> BTreeSet<String> {
        let mut keys = BTreeSet::new();
        for entry in std::fs::read_dir(WEB).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|e| e != "js") {
                continue;
            }
            let code = std::fs::read_to_string(&path).unwrap();
            for literal in code.split('"').skip(1).step_by(2) {
                let key_like = literal.split_once('.').is_some_and(|(space, rest)| {
                    space.chars().all(|c| c.is_ascii_alphabetic())
                        && space.starts_with(|c: char| c.is_ascii_lowercase())
                        && !rest.is_empty()
                        && rest.chars().all(|c| c.is_ascii_alphanumeric() || c == '.')
                });
                if key_like && !literal.ends_with(".js") && !literal.ends_with(".json") {
                    keys.insert(literal.to_owned());
                }
            }
        }
        keys
    }

    #[test]
    fn both_languages_say_the_same_things_with_the_same_names() {
        let english = catalogue("en");
        let korean = catalogue("ko");
        assert_eq!(
            english.keys().collect::<Vec<_>>(),
            korean.keys().collect::<Vec<_>>()
        );
        for (key, text) in &english {
            let wanted: BTreeSet<String> = forms(text).iter().flat_map(|t| names(t)).collect();
            for form in forms(&korean[key]) {
                assert_eq!(names(&form), wanted, "{key}: {form}");
            }
        }
    }

    /// A Korean particle depends on the sound it follows, which a
    /// placeholder hides: no sentence guesses with both forms ("이(가)",
    /// "을(를)"); each is phrased so that none is needed, or a noun of its
    /// own carries it (issue 58).
    #[test]
    fn korean_sentences_never_guess_a_particle() {
        const GUESSES: [&str; 10] = [
            "이(가)", "가(이)", "은(는)", "는(은)", "을(를)", "를(을)", "과(와)", "와(과)",
            "(으)로", "(이)",
        ];
        for (key, text) in catalogue("ko") {
            for form in forms(&text) {
                for guess in GUESSES {
                    assert!(!form.contains(guess), "{key}: {form}");
                }
            }
        }
    }

    #[test]
    fn every_key_the_page_names_is_there_and_every_key_is_named() {
        let english = catalogue("en");
        let spaces: BTreeSet<&str> = english
            .keys()
            .filter_map(|k| k.split_once('.'))
            .map(|(space, _)| space)
            .collect();
        let named = keys_in_code();
        for key in &named {
            let (space, _) = key.split_once('.').unwrap();
            if spaces.contains(space) {
                assert!(
                    english.contains_key(key),
                    "{key} is named but not in the catalogue"
                );
            }
        }
        for key in english.keys() {
            assert!(
                named.contains(key) || MADE.iter().any(|made| key.starts_with(made)),
                "{key} is in the catalogue but nothing names it"
            );
        }
    }

    #[test]
    fn every_error_code_has_its_sentence() {
        use utoipa::OpenApi as _;
        let english = catalogue("en");
        let doc = serde_json::to_value(crate::openapi::ApiDoc::openapi()).unwrap();
        let codes = doc["components"]["schemas"]["ErrorCode"]["enum"]
            .as_array()
            .unwrap();
        for code in codes {
            let key = format!("problem.{}", code.as_str().unwrap());
            assert!(english.contains_key(&key), "{key}");
        }
    }
}
