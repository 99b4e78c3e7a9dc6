//! W3C trace context between OpenTelemetry contexts, HTTP headers and the
//! `traceparent` / `tracestate` columns of a queue row.

use opentelemetry::Context;
use opentelemetry::propagation::{Extractor, TextMapPropagator as _};
use opentelemetry::trace::{TraceContextExt as _, TraceFlags};
use opentelemetry_sdk::propagation::TraceContextPropagator;

use crate::db::queue::TraceContext;

/// The two headers, borrowed: extraction runs on every request and every
/// claimed row, so it allocates no map.
struct Carrier<'a> {
    traceparent: Option<&'a str>,
    tracestate: Option<&'a str>,
}

impl Extractor for Carrier<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        match key {
            "traceparent" => self.traceparent,
            "tracestate" => self.tracestate,
            _ => None,
        }
    }

    fn keys(&self) -> Vec<&str> {
        vec!["traceparent", "tracestate"]
    }
}

/// The context a stored trace context names, as a remote parent; an empty
/// context (a new trace) when nothing valid is stored.
pub fn context_of(stored: &TraceContext) -> Context {
    from_headers(|name| match name {
        "traceparent" => stored.traceparent.as_deref(),
        "tracestate" => stored.tracestate.as_deref(),
        _ => None,
    })
}

/// Longest `tracestate` a queue row keeps (its column's size). A valid one
/// may be longer (32 members of up to 513 characters); then it is dropped,
/// as the W3C recommendation allows, and the trace itself still continues.
pub const MAX_TRACESTATE: usize = 512;

/// What to store for `context` (its current span): the W3C `traceparent`
/// and `tracestate` headers; nothing when it has no valid span.
pub fn stored_form(context: &Context) -> TraceContext {
    let span = context.span();
    let ids = span.span_context();
    if !ids.is_valid() {
        return TraceContext::default();
    }
    let tracestate = ids.trace_state().header();
    TraceContext {
        traceparent: Some(format!(
            "00-{}-{}-{:02x}",
            ids.trace_id(),
            ids.span_id(),
            (ids.trace_flags() & TraceFlags::SAMPLED).to_u8()
        )),
        tracestate: (!tracestate.is_empty() && tracestate.len() <= MAX_TRACESTATE)
            .then_some(tracestate),
    }
}

/// The parent context carried by request headers (`traceparent`,
/// `tracestate`); an empty context when they carry none or an invalid one.
pub fn from_headers<'a>(get: impl Fn(&str) -> Option<&'a str>) -> Context {
    let carrier = Carrier {
        traceparent: get("traceparent"),
        tracestate: get("tracestate"),
    };
    TraceContextPropagator::new().extract(&carrier)
}

/// The same remote parent, with its sampled flag cleared: the trace id
/// continues, and this service's sampler decides as for an unsampled caller.
pub fn without_sampled_flag(parent: &Context) -> Context {
    let span = parent.span();
    let ids = span.span_context();
    let cleared = opentelemetry::trace::SpanContext::new(
        ids.trace_id(),
        ids.span_id(),
        ids.trace_flags() & !TraceFlags::SAMPLED,
        ids.is_remote(),
        ids.trace_state().clone(),
    );
    Context::new().with_remote_span_context(cleared)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stored_context_round_trips() {
        let stored = TraceContext {
            traceparent: Some("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01".into()),
            tracestate: Some("vendor=value".into()),
        };
        let context = context_of(&stored);
        let span = context.span();
        let ids = span.span_context();
        assert!(ids.is_remote() && ids.is_sampled());
        assert_eq!(
            ids.trace_id().to_string(),
            "4bf92f3577b34da6a3ce929d0e0e4736"
        );
        assert_eq!(stored_form(&context), stored);
    }

    #[test]
    fn an_oversized_tracestate_is_dropped_but_the_trace_continues() {
        let members: Vec<String> = (0..20)
            .map(|i| format!("k{i}={}", "v".repeat(200)))
            .collect();
        let stored = TraceContext {
            traceparent: Some("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01".into()),
            tracestate: Some(members.join(",")),
        };
        let again = stored_form(&context_of(&stored));
        assert_eq!(again.traceparent, stored.traceparent);
        assert_eq!(again.tracestate, None);
    }

    #[test]
    fn nothing_valid_means_a_new_trace() {
        for traceparent in [
            None,
            Some("garbage"),
            Some("00-00000000000000000000000000000000-00f067aa0ba902b7-01"),
        ] {
            let stored = TraceContext {
                traceparent: traceparent.map(str::to_owned),
                tracestate: None,
            };
            let context = context_of(&stored);
            assert!(!context.span().span_context().is_valid(), "{traceparent:?}");
            assert_eq!(stored_form(&context), TraceContext::default());
        }
    }
}
