//! Which traces are kept: a caller's decision, the middleware's, or the ratio.

use opentelemetry::trace::{Link, SpanKind, TraceContextExt as _, TraceId, TraceState};
use opentelemetry::{Context, KeyValue};
use opentelemetry_sdk::trace::{Sampler, SamplingDecision, SamplingResult, ShouldSample};

/// Whether a span is sampled: as its parent was, when it has one (a request's caller
/// decided, through its `traceparent`); a server span without a parent is sampled (the
/// middleware made it only for a request it sampled, [`api::trace`]); a span with links
/// and no parent (a group commit) when any request it links to was; any other root (a
/// refresh, an import) at the configured ratio.
#[derive(Debug, Clone)]
pub(super) struct ServiceSampler {
    ratio: Sampler,
}

impl ServiceSampler {
    /// The sampler for new traces kept at `ratio`.
    pub(super) fn new(ratio: f64) -> Self {
        Self { ratio: Sampler::TraceIdRatioBased(ratio) }
    }
}

impl ShouldSample for ServiceSampler {
    fn should_sample(
        &self,
        parent: Option<&Context>,
        trace_id: TraceId,
        name: &str,
        kind: &SpanKind,
        attributes: &[KeyValue],
        links: &[Link],
    ) -> SamplingResult {
        let decide = |sampled: bool, trace_state: TraceState| SamplingResult {
            decision: if sampled { SamplingDecision::RecordAndSample } else { SamplingDecision::Drop },
            attributes: Vec::new(),
            trace_state,
        };
        if let Some(parent) = parent.filter(|parent| parent.has_active_span()) {
            let parent = parent.span();
            let context = parent.span_context();
            return decide(context.is_sampled(), context.trace_state().clone());
        }
        if *kind == SpanKind::Server {
            return decide(true, TraceState::default());
        }
        if !links.is_empty() {
            return decide(links.iter().any(|link| link.span_context.is_sampled()), TraceState::default());
        }
        self.ratio.should_sample(None, trace_id, name, kind, attributes, links)
    }
}

#[cfg(test)]
mod tests {
    use opentelemetry::trace::{SpanContext, SpanId, TraceFlags};

    use super::*;

    fn remote(sampled: bool) -> Context {
        let flags = if sampled { TraceFlags::SAMPLED } else { TraceFlags::default() };
        let context = SpanContext::new(TraceId::from(7), SpanId::from(9), flags, true, TraceState::default());
        Context::new().with_remote_span_context(context)
    }

    fn decision(sampler: &ServiceSampler, parent: Option<&Context>, kind: SpanKind, links: &[Link]) -> bool {
        sampler.should_sample(parent, TraceId::from(1), "x", &kind, &[], links).decision
            == SamplingDecision::RecordAndSample
    }

    #[test]
    fn a_span_follows_its_parents_decision() {
        let never = ServiceSampler::new(0.0);
        let always = ServiceSampler::new(1.0);
        assert!(decision(&never, Some(&remote(true)), SpanKind::Internal, &[]));
        assert!(!decision(&always, Some(&remote(false)), SpanKind::Server, &[]));
    }

    #[test]
    fn a_root_server_span_was_sampled_by_the_middleware_and_other_roots_by_the_ratio() {
        let never = ServiceSampler::new(0.0);
        assert!(decision(&never, None, SpanKind::Server, &[]));
        assert!(!decision(&never, None, SpanKind::Internal, &[]));
        assert!(decision(&ServiceSampler::new(1.0), None, SpanKind::Internal, &[]));
    }

    #[test]
    fn a_group_commit_is_kept_when_a_request_it_carried_was() {
        let never = ServiceSampler::new(0.0);
        let link = |sampled: bool| Link::with_context(remote(sampled).span().span_context().clone());
        assert!(decision(&never, None, SpanKind::Internal, &[link(false), link(true)]));
        assert!(!decision(&ServiceSampler::new(1.0), None, SpanKind::Internal, &[link(false)]));
    }
}
