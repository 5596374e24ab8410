//! Traces over OTLP/HTTP (protobuf), set up as tracing-opentelemetry's
//! `examples/opentelemetry-otlp.rs` sets them up: OpenTelemetry's batch span processor
//! (`export_queue`, which also counts what it drops) and OTLP exporter, and the
//! layer that turns the service's `tracing` spans into OpenTelemetry spans
//! (docs/operations.md, "Traces").

use std::time::Duration;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{ExporterBuildError, Protocol, WithExportConfig as _};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing::Subscriber;
use tracing_subscriber::Layer;
use tracing_subscriber::registry::LookupSpan;

use super::export_queue::{BoundedBatch, INTERVAL, QUEUE};
use super::sampler::ServiceSampler;

/// How long one export may take before it is given up.
const EXPORT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long the last export may hold up the process's exit.
const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(3);

/// Where and how spans are exported: [`crate::settings::Logs`]'s trace settings.
#[derive(Debug, Clone)]
pub struct TraceExport {
    /// The OTLP/HTTP URL spans are sent to (`{--otlp-endpoint}/v1/traces`, or
    /// `--otlp-traces-endpoint` whole).
    pub url: String,
    /// The `service.name` of every span.
    pub service_name: String,
    /// The share of new traces kept.
    pub ratio: f64,
}

/// The running export: [`Exporter::shut_down`] sends what is queued and stops it.
pub struct Exporter {
    provider: SdkTracerProvider,
}

impl Exporter {
    /// Sends the spans still queued (waiting at most a few seconds for the collector)
    /// and stops the export thread.
    pub fn shut_down(self) {
        let _ = self.provider.shutdown_with_timeout(SHUTDOWN_TIMEOUT);
    }
}

/// Starts exporting to `export`'s collector: the exporter to keep until exit, and the
/// trace's layer for [`super::subscriber::subscriber`].
///
/// # Errors
/// The OTLP exporter could not be made (its HTTP client); nothing is exported.
pub fn start<S>(export: &TraceExport) -> Result<(Exporter, Box<dyn Layer<S> + Send + Sync>), ExporterBuildError>
where
    S: Subscriber + for<'span> LookupSpan<'span> + Send + Sync,
{
    let otlp = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(Protocol::HttpBinary)
        .with_endpoint(export.url.clone())
        .with_timeout(EXPORT_TIMEOUT)
        .build()?;
    let provider = SdkTracerProvider::builder()
        .with_sampler(ServiceSampler::new(export.ratio))
        .with_span_processor(BoundedBatch::new(otlp, QUEUE, INTERVAL))
        .with_resource(Resource::builder().with_service_name(export.service_name.clone()).build())
        // A group commit links to every traced request it carried: up to 512.
        .with_max_links_per_span(512)
        .build();
    let layer = tracing_opentelemetry::layer()
        .with_tracer(provider.tracer("branch-atm"))
        .with_location(false)
        .with_threads(false)
        .with_tracked_inactivity(false)
        .boxed();
    Ok((Exporter { provider }, layer))
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use opentelemetry::trace::SpanKind;
    use opentelemetry_sdk::error::OTelSdkResult;
    use opentelemetry_sdk::trace::{SpanData, SpanExporter};

    use super::*;

    /// Keeps what it is sent.
    #[derive(Debug, Clone, Default)]
    struct Kept(Arc<Mutex<Vec<SpanData>>>);

    impl SpanExporter for Kept {
        async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
            self.0.lock().unwrap().extend(batch);
            Ok(())
        }
    }

    /// The server span of an answer `status`, as exported.
    fn server_span_answering(status: u16) -> SpanData {
        use tracing_subscriber::layer::SubscriberExt as _;
        let kept = Kept::default();
        let provider = SdkTracerProvider::builder()
            .with_simple_exporter(kept.clone())
            .with_sampler(ServiceSampler::new(1.0))
            .build();
        let layer = tracing_opentelemetry::layer().with_tracer(provider.tracer("test"));
        let subscriber = tracing_subscriber::registry().with(layer);
        tracing::subscriber::with_default(subscriber, || {
            let span = tracing::info_span!(target: api::trace::EXPORTED, "request", otel.name = "GET /api/v1/atms", otel.kind = "server");
            api::trace::answered(&span, status);
        });
        let _ = provider.force_flush();
        let spans = kept.0.lock().unwrap().clone();
        spans.into_iter().next().unwrap()
    }

    fn attribute(span: &SpanData, key: &str) -> Option<String> {
        span.attributes.iter().find(|kv| kv.key.as_str() == key).map(|kv| kv.value.to_string())
    }

    #[test]
    fn a_5xx_is_an_error_of_the_server_span_and_a_4xx_is_not() {
        let failed = server_span_answering(503);
        assert_eq!(failed.name, "GET /api/v1/atms");
        assert_eq!(failed.span_kind, SpanKind::Server);
        assert!(matches!(failed.status, opentelemetry::trace::Status::Error { .. }), "{:?}", failed.status);
        assert_eq!(attribute(&failed, "error.type").as_deref(), Some("503"));
        assert_eq!(attribute(&failed, "http.response.status_code").as_deref(), Some("503"));

        let refused = server_span_answering(401);
        assert_eq!(refused.status, opentelemetry::trace::Status::Unset);
        assert_eq!(attribute(&refused, "error.type"), None);
        assert_eq!(attribute(&refused, "http.response.status_code").as_deref(), Some("401"));
    }
}
