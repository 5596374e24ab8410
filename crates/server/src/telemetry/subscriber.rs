//! The subscriber with traces on: which spans exist at all, which the log sees and which
//! the trace sees.
//!
//! What reaches the trace layer: a sampled request's server span ([`api::trace`]) and
//! every span of the service's crates made inside it; the roots of background work (a
//! group commit of token records, linked to the requests whose records it carried; a view
//! refresh; an import). Its filter turns away every event and every span outside those.

use tracing::Subscriber;
use tracing::subscriber::Interest;
use tracing_subscriber::filter::{Filtered, LevelFilter};
use tracing_subscriber::layer::{Filter, Layered, SubscriberExt as _};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::{EnvFilter, Layer, Registry};

/// The subscriber's layers beneath [`LogOrTrace`].
pub type Global = Layered<LogOrTrace, Registry>;
/// The subscriber's layers beneath the log's.
pub type Unfiltered = Layered<Box<dyn Layer<Global> + Send + Sync>, Global>;
/// The subscriber's layers beneath the trace's.
pub type Logged = Layered<Filtered<Box<dyn Layer<Unfiltered> + Send + Sync>, LogFilter, Unfiltered>, Unfiltered>;

/// The subscriber with traces on, as [`super::init`] installs it (and the
/// tests below count its spans): the global filter, a layer that sees everything that
/// exists (`unfiltered`), the log filtered by `log_filter`'s directives and the trace
/// by [`TraceFilter`].
pub fn subscriber(
    log_filter: impl Fn() -> EnvFilter,
    unfiltered: Box<dyn Layer<Global> + Send + Sync>,
    log: Box<dyn Layer<Unfiltered> + Send + Sync>,
    trace: Box<dyn Layer<Logged> + Send + Sync>,
) -> impl Subscriber + for<'span> LookupSpan<'span> + Send + Sync {
    // What neither the log nor the trace wants is ruled out for all (the layers' own
    // filters cannot do that); beneath, each sees only what it wants.
    tracing_subscriber::registry()
        .with(LogOrTrace::new(LogFilter::new(log_filter())))
        .with(unfiltered)
        .with(log.with_filter(LogFilter::new(log_filter())))
        .with(trace.with_filter(TraceFilter))
}

/// The trace layer's filter: spans only; a root of an exported trace
/// ([`api::trace::EXPORTED`]), or a span of the service's crates made while such a
/// trace's span is entered on this thread. Events, other crates' spans and an unsampled
/// request's work never reach it.
///
/// It also says, through [`LogOrTrace`], which spans exist at all: `tracing`'s per-layer
/// filters do not rule a span out for the whole subscriber when every one of them turns
/// it away (tracing-subscriber 0.3 makes it anyway), so without that global filter every
/// unsampled request's spans were made, entered and closed for no layer (issue 34's
/// bench: a quarter more instructions a request at a ratio of 1 %).
#[derive(Debug, Clone, Copy)]
pub struct TraceFilter;

thread_local! {
    /// How many spans the trace layer sees are entered on this thread: a span of ours
    /// is made for the trace only inside one. Counted in the filter's `on_enter` and
    /// `on_exit`, which `tracing` calls only for spans the filter let in.
    static EXPORTED_ENTERED: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

impl TraceFilter {
    /// Whether the trace wants this span or event now.
    fn wants(metadata: &tracing::Metadata<'_>) -> bool {
        metadata.is_span()
            && (metadata.target() == api::trace::EXPORTED
                || (ours(metadata.target()) && EXPORTED_ENTERED.with(|entered| entered.get() > 0)))
    }

    /// Whether a callsite may ever make a span the trace wants: decided once per
    /// callsite, so the others cost a load and a branch.
    fn interest(metadata: &'static tracing::Metadata<'static>) -> Interest {
        let may = metadata.is_span() && (metadata.target() == api::trace::EXPORTED || ours(metadata.target()));
        if may { Interest::sometimes() } else { Interest::never() }
    }
}

impl<S: Subscriber> Filter<S> for TraceFilter {
    fn enabled(&self, metadata: &tracing::Metadata<'_>, _: &tracing_subscriber::layer::Context<'_, S>) -> bool {
        Self::wants(metadata)
    }

    fn callsite_enabled(&self, metadata: &'static tracing::Metadata<'static>) -> Interest {
        Self::interest(metadata)
    }

    fn max_level_hint(&self) -> Option<LevelFilter> {
        Some(LevelFilter::TRACE)
    }

    fn on_enter(&self, _: &tracing::span::Id, _: tracing_subscriber::layer::Context<'_, S>) {
        EXPORTED_ENTERED.with(|entered| entered.set(entered.get() + 1));
    }

    fn on_exit(&self, _: &tracing::span::Id, _: tracing_subscriber::layer::Context<'_, S>) {
        EXPORTED_ENTERED.with(|entered| entered.set(entered.get().saturating_sub(1)));
    }
}

/// The log's filter (`--log-filter`'s directives) in the traced subscriber, above the
/// layers ([`LogOrTrace`]) and beneath, on the log's own: an `EnvFilter` told of spans
/// only when its directives name spans (`[request{uuid=…}]=debug`). Without such a
/// directive, `EnvFilter` still takes a lock and looks a span up on every enter, exit
/// and close, for nothing: several hundred instructions a request for the two of them
/// (issue 34's bench, `--logged`; docs/benchmarks.md, "Traces").
pub struct LogFilter {
    filter: EnvFilter,
    /// Whether the directives name spans.
    spans: bool,
}

impl LogFilter {
    /// The filter of `filter`'s directives.
    pub fn new(filter: EnvFilter) -> Self {
        // A directive that names a span is written with its name or fields in brackets,
        // and only such a directive is.
        let spans = filter.to_string().contains('[');
        Self { filter, spans }
    }
}

impl<S> Filter<S> for LogFilter {
    fn enabled(&self, metadata: &tracing::Metadata<'_>, context: &tracing_subscriber::layer::Context<'_, S>) -> bool {
        Filter::enabled(&self.filter, metadata, context)
    }

    fn callsite_enabled(&self, metadata: &'static tracing::Metadata<'static>) -> Interest {
        // The same whatever the subscriber beneath.
        Layer::<Registry>::register_callsite(&self.filter, metadata)
    }

    fn max_level_hint(&self) -> Option<LevelFilter> {
        self.filter.max_level_hint()
    }

    fn on_new_span(
        &self,
        attributes: &tracing::span::Attributes<'_>,
        id: &tracing::span::Id,
        context: tracing_subscriber::layer::Context<'_, S>,
    ) {
        if self.spans {
            self.filter.on_new_span(attributes, id, context);
        }
    }

    fn on_record(
        &self,
        id: &tracing::span::Id,
        values: &tracing::span::Record<'_>,
        context: tracing_subscriber::layer::Context<'_, S>,
    ) {
        if self.spans {
            self.filter.on_record(id, values, context);
        }
    }

    fn on_enter(&self, id: &tracing::span::Id, context: tracing_subscriber::layer::Context<'_, S>) {
        if self.spans {
            self.filter.on_enter(id, context);
        }
    }

    fn on_exit(&self, id: &tracing::span::Id, context: tracing_subscriber::layer::Context<'_, S>) {
        if self.spans {
            self.filter.on_exit(id, context);
        }
    }

    fn on_close(&self, id: tracing::span::Id, context: tracing_subscriber::layer::Context<'_, S>) {
        if self.spans {
            self.filter.on_close(id, context);
        }
    }
}

/// The subscriber's global filter when traces are exported: a span or event exists when
/// the log's filter or the trace's ([`TraceFilter`]) wants it, and is ruled out for every
/// layer otherwise (at its callsite, where both rule it out there). The log and the
/// trace layers keep their own filters beneath it, so that each sees only its own.
pub struct LogOrTrace {
    log: LogFilter,
}

impl LogOrTrace {
    /// The global filter for a log filtered by `log` (the same directives as the log
    /// layer's own filter).
    pub fn new(log: LogFilter) -> Self {
        Self { log }
    }
}

impl<S: Subscriber + for<'span> LookupSpan<'span>> Layer<S> for LogOrTrace {
    fn register_callsite(&self, metadata: &'static tracing::Metadata<'static>) -> Interest {
        // The trace's interest is never `always` (it depends on the thread).
        let log = Filter::<S>::callsite_enabled(&self.log, metadata);
        let trace = TraceFilter::interest(metadata);
        if log.is_always() {
            Interest::always()
        } else if log.is_never() && trace.is_never() {
            Interest::never()
        } else {
            Interest::sometimes()
        }
    }

    fn enabled(&self, metadata: &tracing::Metadata<'_>, context: tracing_subscriber::layer::Context<'_, S>) -> bool {
        TraceFilter::wants(metadata) || Filter::enabled(&self.log, metadata, &context)
    }

    fn max_level_hint(&self) -> Option<LevelFilter> {
        Some(LevelFilter::TRACE)
    }

    // The log's filter may have span directives (`[request{uuid=…}]=debug`): it follows
    // the spans it matches.
    fn on_new_span(
        &self,
        attributes: &tracing::span::Attributes<'_>,
        id: &tracing::span::Id,
        context: tracing_subscriber::layer::Context<'_, S>,
    ) {
        Filter::on_new_span(&self.log, attributes, id, context);
    }

    fn on_record(
        &self,
        id: &tracing::span::Id,
        values: &tracing::span::Record<'_>,
        context: tracing_subscriber::layer::Context<'_, S>,
    ) {
        Filter::on_record(&self.log, id, values, context);
    }

    fn on_enter(&self, id: &tracing::span::Id, context: tracing_subscriber::layer::Context<'_, S>) {
        Filter::on_enter(&self.log, id, context);
    }

    fn on_exit(&self, id: &tracing::span::Id, context: tracing_subscriber::layer::Context<'_, S>) {
        Filter::on_exit(&self.log, id, context);
    }

    fn on_close(&self, id: tracing::span::Id, context: tracing_subscriber::layer::Context<'_, S>) {
        Filter::on_close(&self.log, id, context);
    }
}

/// Whether a target is one of the service's crates.
fn ours(target: &str) -> bool {
    ["domain", "adapters", "api", "server"]
        .iter()
        .any(|krate| target.strip_prefix(krate).is_some_and(|rest| rest.is_empty() || rest.starts_with("::")))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    /// The subscriber [`super::super::init`] installs with traces on, the log
    /// filtered by `log`, with layers that count the spans made, those the log sees and
    /// those the trace sees.
    fn spans_made(log: &str, work: impl FnOnce()) -> (usize, usize, usize) {
        /// Counts the spans a layer is told of.
        struct Counting(Arc<AtomicUsize>);
        impl<S: Subscriber> Layer<S> for Counting {
            fn on_new_span(
                &self,
                _: &tracing::span::Attributes<'_>,
                _: &tracing::span::Id,
                _: tracing_subscriber::layer::Context<'_, S>,
            ) {
                self.0.fetch_add(1, Ordering::Relaxed);
            }
        }
        let [made, logged, traced] = [(); 3].map(|()| Arc::new(AtomicUsize::new(0)));
        let subscriber = subscriber(
            || EnvFilter::new(log),
            Counting(Arc::clone(&made)).boxed(),
            Counting(Arc::clone(&logged)).boxed(),
            Counting(Arc::clone(&traced)).boxed(),
        );
        tracing::subscriber::with_default(subscriber, work);
        [made, logged, traced].map(|count| count.load(Ordering::Relaxed)).into()
    }

    /// Found by issue 34's bench: with traces on, every unsampled request's span and the
    /// bearer check's spans beneath it were made, entered and closed though no layer
    /// wanted them (per-layer filters do not rule a span out for all), a quarter more
    /// instructions a request.
    #[test]
    fn an_unsampled_requests_spans_are_not_made_unless_the_log_wants_them() {
        let unsampled_request = || {
            let request = tracing::info_span!(target: api::trace::LOGGED, "request");
            let _inside = request.enter();
            let check = tracing::trace_span!(target: "domain::services::bearer", "bearer check");
            assert!(check.is_disabled(), "no span beneath an unsampled request");
        };
        assert_eq!(spans_made("warn", unsampled_request), (0, 0, 0), "nothing made with the log at warn");
        assert_eq!(spans_made("info", unsampled_request), (1, 1, 0), "the request's span for the log at info");
    }

    /// `LogFilter` passes spans to `EnvFilter` only for directives that name spans: a
    /// directive that does still works with traces on.
    #[test]
    fn a_log_directive_naming_a_requests_uuid_logs_what_that_request_logs() {
        /// Counts the events a layer is told of.
        struct Events(Arc<AtomicUsize>);
        impl<S: Subscriber> Layer<S> for Events {
            fn on_event(&self, _: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
                self.0.fetch_add(1, Ordering::Relaxed);
            }
        }
        let logged = |directives: &'static str| {
            let count = Arc::new(AtomicUsize::new(0));
            let subscriber = subscriber(
                || EnvFilter::new(directives),
                Events(Arc::new(AtomicUsize::new(0))).boxed(),
                Events(Arc::clone(&count)).boxed(),
                Events(Arc::new(AtomicUsize::new(0))).boxed(),
            );
            tracing::subscriber::with_default(subscriber, || {
                for uuid in ["3fa85f64", "5b1e0c7d"] {
                    let request = tracing::info_span!(target: api::trace::LOGGED, "request", uuid);
                    let _inside = request.enter();
                    tracing::debug!(target: "domain::services", "a debug line inside the request");
                }
            });
            count.load(Ordering::Relaxed)
        };
        assert_eq!(logged("info,[request{uuid=3fa85f64}]=debug"), 1, "the named request's line only");
        assert_eq!(logged("info"), 0);
        assert_eq!(logged("debug"), 2);
    }

    #[test]
    fn a_sampled_requests_work_is_made_for_the_trace_and_not_for_the_log() {
        let made = spans_made("info", || {
            let request = tracing::info_span!(target: api::trace::EXPORTED, "request");
            request.in_scope(|| {
                let check = tracing::trace_span!(target: "domain::services::bearer", "bearer check");
                assert!(!check.is_disabled(), "the trace's child span");
                let theirs = tracing::trace_span!(target: "sqlx::query", "theirs");
                assert!(theirs.is_disabled(), "other crates' spans are not traced");
            });
            let after = tracing::trace_span!(target: "adapters::sql", "after");
            assert!(after.is_disabled(), "nothing once the request's span is left");
        });
        // The request's span is the log's too (it is at `info`); its child is the trace's
        // alone.
        assert_eq!(made, (2, 1, 2));
    }

    #[test]
    fn only_the_services_crates_are_traced_beneath_a_request() {
        assert!(ours("adapters::jwt") && ours("domain") && ours("api::request"));
        assert!(!ours("sqlx::query") && !ours("domainish") && !ours("actix_http::h1"));
    }
}
