//! W3C trace context from request headers, validated before it is stored
//! on a queue row.

use axum::http::HeaderMap;
use ticket_core::db::queue::TraceContext;

/// `traceparent` when it is well-formed (`00-<32 hex>-<16 hex>-<2 hex>`),
/// with `tracestate` (at most 512 visible ASCII characters) beside it.
pub fn from_headers(headers: &HeaderMap) -> TraceContext {
    let traceparent = headers
        .get("traceparent")
        .and_then(|v| v.to_str().ok())
        .filter(|v| is_traceparent(v))
        .map(str::to_owned);
    let tracestate = traceparent.as_ref().and_then(|_| {
        headers
            .get("tracestate")
            .and_then(|v| v.to_str().ok())
            .filter(|v| v.len() <= 512 && v.chars().all(|c| c.is_ascii_graphic() || c == ' '))
            .map(str::to_owned)
    });
    TraceContext {
        traceparent,
        tracestate,
    }
}

fn is_traceparent(value: &str) -> bool {
    let parts: Vec<&str> = value.split('-').collect();
    let hex = |s: &str, len: usize| {
        s.len() == len
            && s.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    };
    matches!(parts.as_slice(), [version, trace, parent, flags]
        if hex(version, 2) && *version != "ff" && hex(trace, 32) && hex(parent, 16) && hex(flags, 2)
            && trace.bytes().any(|b| b != b'0') && parent.bytes().any(|b| b != b'0'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_only_valid_traceparents() {
        assert!(is_traceparent(
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        ));
        for bad in [
            "",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'); DROP",
        ] {
            assert!(!is_traceparent(bad), "{bad}");
        }
    }
}
