//! Which traces are kept: the standard samplers from `OTEL_TRACES_SAMPLER`
//! (`_ARG`), with two differences. Unset means the caller's decision, else
//! 10 % of new traces. And a new trace whose links include a sampled span is
//! kept: a worker's `receive` span (a trace of its own, linked to every
//! claimed request) is then recorded whenever one of its requests is traced,
//! so that no traced request's `process` span links to a dropped batch.

use opentelemetry::trace::{Link, SpanKind, TraceContextExt as _, TraceId, TraceState};
use opentelemetry::{Context, KeyValue};
use opentelemetry_sdk::trace::{Sampler, SamplingDecision, SamplingResult, ShouldSample};

/// Share of new traces sampled when `OTEL_TRACES_SAMPLER` is not set (a
/// caller's sampling decision is always followed). Tracing every request
/// cost the enqueue path 18 % of its throughput, this 5 %; see
/// docs/benchmarks.md.
pub const DEFAULT_SAMPLE_RATIO: f64 = 0.1;

#[derive(Debug, Clone)]
pub struct LinkAware(Sampler);

impl LinkAware {
    /// The sampler the environment names (problems are returned with the
    /// default put in its place).
    pub fn from_env() -> (Self, Option<String>) {
        let name = std::env::var("OTEL_TRACES_SAMPLER").ok();
        let arg = std::env::var("OTEL_TRACES_SAMPLER_ARG").ok();
        let (sampler, problem) = standard(name.as_deref(), arg.as_deref());
        (Self(sampler), problem)
    }
}

fn standard(name: Option<&str>, arg: Option<&str>) -> (Sampler, Option<String>) {
    let ratio = || match arg.map(|a| a.trim().parse::<f64>()) {
        Some(Ok(r)) if (0.0..=1.0).contains(&r) => (r, None),
        // The specification's default ratio.
        None => (1.0, None),
        Some(_) => (
            1.0,
            Some(format!(
                "OTEL_TRACES_SAMPLER_ARG={arg:?} is not a ratio in [0, 1]; using 1.0"
            )),
        ),
    };
    let parent_based = |root: Sampler| Sampler::ParentBased(Box::new(root));
    match name.map(str::trim) {
        None | Some("") => (
            parent_based(Sampler::TraceIdRatioBased(DEFAULT_SAMPLE_RATIO)),
            None,
        ),
        Some("always_on") => (Sampler::AlwaysOn, None),
        Some("always_off") => (Sampler::AlwaysOff, None),
        Some("traceidratio") => {
            let (r, problem) = ratio();
            (Sampler::TraceIdRatioBased(r), problem)
        }
        Some("parentbased_always_on") => (parent_based(Sampler::AlwaysOn), None),
        Some("parentbased_always_off") => (parent_based(Sampler::AlwaysOff), None),
        Some("parentbased_traceidratio") => {
            let (r, problem) = ratio();
            (parent_based(Sampler::TraceIdRatioBased(r)), problem)
        }
        Some(other) => (
            parent_based(Sampler::TraceIdRatioBased(DEFAULT_SAMPLE_RATIO)),
            Some(format!(
                "OTEL_TRACES_SAMPLER={other:?} is not supported; using the default"
            )),
        ),
    }
}

impl ShouldSample for LinkAware {
    fn should_sample(
        &self,
        parent_context: Option<&Context>,
        trace_id: TraceId,
        name: &str,
        span_kind: &SpanKind,
        attributes: &[KeyValue],
        links: &[Link],
    ) -> SamplingResult {
        let is_root = parent_context.is_none_or(|cx| !cx.span().span_context().is_valid());
        if is_root && links.iter().any(|link| link.span_context.is_sampled()) {
            return SamplingResult {
                decision: SamplingDecision::RecordAndSample,
                attributes: Vec::new(),
                trace_state: TraceState::default(),
            };
        }
        self.0
            .should_sample(parent_context, trace_id, name, span_kind, attributes, links)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry::trace::{SpanContext, SpanId, TraceFlags};

    fn decide(sampler: &LinkAware, parent: &Context, links: &[Link]) -> SamplingDecision {
        // A trace id the 10 % ratio drops (its low bits are all ones).
        let trace_id = TraceId::from_hex("ffffffffffffffffffffffffffffffff").unwrap();
        sampler
            .should_sample(Some(parent), trace_id, "x", &SpanKind::Client, &[], links)
            .decision
    }

    fn context(sampled: bool) -> SpanContext {
        let flags = if sampled {
            TraceFlags::SAMPLED
        } else {
            TraceFlags::default()
        };
        SpanContext::new(
            TraceId::from_hex("4bf92f3577b34da6a3ce929d0e0e4736").unwrap(),
            SpanId::from_hex("00f067aa0ba902b7").unwrap(),
            flags,
            true,
            TraceState::default(),
        )
    }

    #[test]
    fn a_new_trace_linked_to_a_sampled_span_is_kept() {
        let (sampler, problem) = (LinkAware(standard(None, None).0), standard(None, None).1);
        assert!(problem.is_none());
        let root = Context::new();
        assert_eq!(decide(&sampler, &root, &[]), SamplingDecision::Drop);
        let unsampled = [Link::with_context(context(false))];
        assert_eq!(decide(&sampler, &root, &unsampled), SamplingDecision::Drop);
        let one_sampled = [
            Link::with_context(context(false)),
            Link::with_context(context(true)),
        ];
        assert_eq!(
            decide(&sampler, &root, &one_sampled),
            SamplingDecision::RecordAndSample
        );
    }

    #[test]
    fn a_callers_decision_is_followed() {
        let sampler = LinkAware(standard(None, None).0);
        let sampled = Context::new().with_remote_span_context(context(true));
        let unsampled = Context::new().with_remote_span_context(context(false));
        assert_eq!(
            decide(&sampler, &sampled, &[]),
            SamplingDecision::RecordAndSample
        );
        let linked = [Link::with_context(context(true))];
        assert_eq!(
            decide(&sampler, &unsampled, &linked),
            SamplingDecision::Drop
        );
    }

    #[test]
    fn the_standard_names_are_understood() {
        assert!(matches!(
            standard(Some("always_on"), None),
            (Sampler::AlwaysOn, None)
        ));
        assert!(
            matches!(standard(Some("traceidratio"), Some("0.25")).0, Sampler::TraceIdRatioBased(r) if r == 0.25)
        );
        assert!(standard(Some("traceidratio"), Some("2")).1.is_some());
        assert!(standard(Some("jaeger_remote"), None).1.is_some());
        assert!(matches!(
            standard(Some("parentbased_always_off"), None),
            (Sampler::ParentBased(_), None)
        ));
    }
}
