//! Spans recorded after the fact, with the times they were measured at.
//!
//! Batched work serves many traces at once: one group INSERT commits many
//! HTTP requests' rows, one worker batch decides rows from thousands of
//! traces. Each trace gets its own span for its share of that work, with the
//! batch's real start and end times and the parent from that trace.

use std::borrow::Cow;
use std::time::SystemTime;

use opentelemetry::global::BoxedTracer;
use opentelemetry::trace::{
    Link, Span as _, SpanContext, SpanKind, TraceContextExt as _, Tracer as _,
};
use opentelemetry::{Context, KeyValue, global};

/// A span to record: what it was, when, under which parent.
pub struct Recorded {
    pub name: Cow<'static, str>,
    pub kind: SpanKind,
    pub start: SystemTime,
    pub end: SystemTime,
    pub attributes: Vec<KeyValue>,
    pub links: Vec<Link>,
}

impl Recorded {
    pub fn new(
        name: impl Into<Cow<'static, str>>,
        kind: SpanKind,
        start: SystemTime,
        end: SystemTime,
    ) -> Self {
        Self {
            name: name.into(),
            kind,
            start,
            end,
            attributes: Vec::new(),
            links: Vec::new(),
        }
    }

    pub fn attribute(mut self, attribute: KeyValue) -> Self {
        self.attributes.push(attribute);
        self
    }

    pub fn attributes(mut self, attributes: impl IntoIterator<Item = KeyValue>) -> Self {
        self.attributes.extend(attributes);
        self
    }

    pub fn link(mut self, to: SpanContext) -> Self {
        if to.is_valid() {
            self.links.push(Link::with_context(to));
        }
        self
    }

    /// Records the span as a child of `parent`'s span (or as a new trace when
    /// it has none); returns the context of the new span, for its children.
    /// Costs next to nothing when the sampler drops it.
    pub fn record(self, parent: &Context) -> Context {
        self.record_with(&tracer(), parent)
    }

    /// [`Recorded::record`] with a tracer the caller keeps for many spans.
    pub fn record_with(self, tracer: &BoxedTracer, parent: &Context) -> Context {
        let mut span = tracer
            .span_builder(self.name)
            .with_kind(self.kind)
            .with_start_time(self.start)
            .with_attributes(self.attributes)
            .with_links(self.links)
            .start_with_context(tracer, parent);
        let context = parent.with_remote_span_context(span.span_context().clone());
        span.end_with_timestamp(self.end);
        context
    }
}

/// Whether the current span's trace is sampled. Spans that only matter when
/// exported (a producer span, a database call) are skipped otherwise: most
/// requests are not sampled, and their spans would cost without showing.
pub fn current_is_sampled() -> bool {
    use tracing_opentelemetry::OpenTelemetrySpanExt as _;
    let current = tracing::Span::current();
    !current.is_none() && current.context().span().span_context().is_sampled()
}

/// The system's tracer (from the global provider).
pub fn tracer() -> BoxedTracer {
    global::tracer(super::SCOPE)
}

/// Database client span attributes (OpenTelemetry database conventions).
pub fn db_attributes(operation: &'static str, table: &'static str) -> [KeyValue; 4] {
    [
        KeyValue::new("db.system.name", "mysql"),
        KeyValue::new("db.operation.name", operation),
        KeyValue::new("db.collection.name", table),
        KeyValue::new("db.query.summary", format!("{operation} {table}")),
    ]
}

/// The queue, as a messaging destination.
pub const QUEUE: &str = "reservation_queue";
/// `messaging.system` of the queue (a table, so no well-known value fits).
pub const MESSAGING_SYSTEM: &str = "ticket";

/// Messaging span attributes (OpenTelemetry messaging conventions) for an
/// operation on the queue: `send`, `receive` or `process`.
pub fn messaging_attributes(operation: &'static str) -> [KeyValue; 4] {
    [
        KeyValue::new("messaging.system", MESSAGING_SYSTEM),
        KeyValue::new("messaging.operation.name", operation),
        KeyValue::new("messaging.operation.type", operation),
        KeyValue::new("messaging.destination.name", QUEUE),
    ]
}

/// The producer span of one reservation request, current while the API
/// writes the row; record `messaging.message.id` (the queue id) on it.
pub fn send_span() -> tracing::Span {
    tracing::info_span!(
        "send",
        otel.name = "send reservation_queue",
        otel.kind = "producer",
        messaging.system = MESSAGING_SYSTEM,
        messaging.operation.name = "send",
        messaging.operation.type = "send",
        messaging.destination.name = QUEUE,
        messaging.message.id = tracing::field::Empty,
    )
}
