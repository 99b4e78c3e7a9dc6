//! Log lines on stderr: JSON objects for collectors in a cluster, readable
//! lines on a terminal; both with the trace id of the span they were logged in.

use std::fmt;
use std::io::IsTerminal;

use opentelemetry::trace::TraceContextExt as _;
use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_opentelemetry::OpenTelemetrySpanExt as _;
use tracing_subscriber::Layer;
use tracing_subscriber::fmt::format::{Format, Writer};
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    Json,
    Text,
}

impl LogFormat {
    /// `TICKET_LOG_FORMAT=json|text`; otherwise JSON inside Kubernetes (where
    /// every pod has `KUBERNETES_SERVICE_HOST`) and text elsewhere.
    pub fn from_env() -> Self {
        match std::env::var("TICKET_LOG_FORMAT").as_deref() {
            Ok("json") => Self::Json,
            Ok("text") => Self::Text,
            _ if std::env::var_os("KUBERNETES_SERVICE_HOST").is_some() => Self::Json,
            _ => Self::Text,
        }
    }
}

pub(super) fn layer<S>(format: LogFormat) -> Box<dyn Layer<S> + Send + Sync>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    let layer = tracing_subscriber::fmt::layer().with_writer(std::io::stderr);
    match format {
        // JSON lines never show span fields: spans are left out of this layer
        // entirely, so that no request pays for formatting them.
        LogFormat::Json => Box::new(layer.event_format(JsonLine).with_filter(
            tracing_subscriber::filter::filter_fn(|meta| meta.is_event()),
        )),
        LogFormat::Text => Box::new(
            layer
                // Colour codes only for people, not for files and collectors.
                .with_ansi(std::io::stderr().is_terminal())
                .event_format(TextLine(Format::default())),
        ),
    }
}

/// The trace and span id of the span current where the event was logged.
fn current_ids() -> Option<(String, String)> {
    let span = tracing::Span::current();
    if span.is_none() {
        return None;
    }
    let context = span.context();
    let otel = context.span();
    let ids = otel.span_context();
    ids.is_valid()
        .then(|| (ids.trace_id().to_string(), ids.span_id().to_string()))
}

struct TextLine(Format);

impl<S, N> FormatEvent<S, N> for TextLine
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        if let Some((trace_id, _)) = current_ids() {
            write!(writer, "trace_id={trace_id} ")?;
        }
        self.0.format_event(ctx, writer, event)
    }
}

/// One JSON object per line: time, level, target, message, the event's fields,
/// and trace_id / span_id inside a span.
struct JsonLine;

impl<S, N> FormatEvent<S, N> for JsonLine
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        _ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let meta = event.metadata();
        let mut line = serde_json::Map::new();
        line.insert(
            "timestamp".into(),
            chrono::Utc::now()
                .to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
                .into(),
        );
        line.insert("level".into(), meta.level().as_str().into());
        line.insert("target".into(), meta.target().into());
        event.record(&mut JsonFields(&mut line));
        if let Some((trace_id, span_id)) = current_ids() {
            line.insert("trace_id".into(), trace_id.into());
            line.insert("span_id".into(), span_id.into());
        }
        let text = serde_json::to_string(&line).map_err(|_| fmt::Error)?;
        writeln!(writer, "{text}")
    }
}

struct JsonFields<'a>(&'a mut serde_json::Map<String, serde_json::Value>);

impl Visit for JsonFields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.0
            .insert(field.name().to_owned(), format!("{value:?}").into());
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.into());
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.0.insert(field.name().to_owned(), value.into());
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.0.insert(field.name().to_owned(), value.into());
    }
    fn record_f64(&mut self, field: &Field, value: f64) {
        self.0.insert(field.name().to_owned(), value.into());
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.0.insert(field.name().to_owned(), value.into());
    }
    fn record_error(&mut self, field: &Field, value: &(dyn std::error::Error + 'static)) {
        self.0
            .insert(field.name().to_owned(), value.to_string().into());
    }
}
