//! The page's Content-Security-Policy: nothing inline (no `unsafe-inline`,
//! no `eval`) and nothing from another origin, except, when payments are
//! on, what Stripe.js needs: its script, the frames it draws card fields
//! and 3-D Secure in, and the API it sends the card to. The card never
//! passes through the box office.

use axum::http::HeaderValue;
use ticket_core::payments::Stripe;

/// Stripe's own script host serves its frames from subdomains, and 3-D
/// Secure from `hooks.stripe.com` (Stripe's CSP guide).
const STRIPE_JS_ORIGIN: &str = "https://js.stripe.com";
const STRIPE_FRAMES: [&str; 2] = ["https://*.js.stripe.com", "https://hooks.stripe.com"];

pub fn content_security_policy(stripe: Option<&Stripe>) -> HeaderValue {
    let mut script = vec!["'self'".to_owned()];
    let mut frame = Vec::new();
    let mut connect = vec!["'self'".to_owned()];
    if let Some(stripe) = stripe {
        let (js, api) = stripe.page_origins();
        if js == STRIPE_JS_ORIGIN {
            script.push(STRIPE_FRAMES[0].to_owned());
            frame.extend(STRIPE_FRAMES.map(str::to_owned));
        }
        script.push(js.clone());
        frame.push(js.clone());
        connect.push(api.clone());
        if api != js {
            connect.push(js);
        }
    }
    let frame = if frame.is_empty() {
        String::new()
    } else {
        format!("frame-src {}; ", frame.join(" "))
    };
    let policy = format!(
        "default-src 'none'; script-src {}; style-src 'self'; img-src 'self' data:; \
         {frame}connect-src {}; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
        script.join(" "),
        connect.join(" "),
    );
    // Origins are ASCII by construction (`ascii_serialization`).
    HeaderValue::from_str(&policy).unwrap_or_else(|_| HeaderValue::from_static(STRICT))
}

/// The policy without payments.
pub const STRICT: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
     img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'self'; \
     frame-ancestors 'none'";

/// The door's QR worker's own policy: its modules and ZXing's WebAssembly
/// from here, compiled (`wasm-unsafe-eval` allows WebAssembly only, never
/// `eval`); the page keeps its stricter one.
pub const QR_WORKER: &str =
    "default-src 'none'; script-src 'self' 'wasm-unsafe-eval'; connect-src 'self'";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_payments_the_policy_allows_nothing_from_elsewhere() {
        assert_eq!(content_security_policy(None), STRICT);
    }

    #[test]
    fn with_stripe_the_page_may_load_its_script_frames_and_api() {
        let stripe = ticket_core::testing::localstripe::provider_at(
            "https://api.stripe.com/",
            "https://js.stripe.com/v3/",
        );
        assert_eq!(
            content_security_policy(Some(&stripe)),
            "default-src 'none'; \
             script-src 'self' https://*.js.stripe.com https://js.stripe.com; \
             style-src 'self'; img-src 'self' data:; \
             frame-src https://*.js.stripe.com https://hooks.stripe.com https://js.stripe.com; \
             connect-src 'self' https://api.stripe.com https://js.stripe.com; \
             base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
        );
    }
}
