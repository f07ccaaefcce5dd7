//! Export of the call spans over OTLP/HTTP (protobuf), switched on by the standard
//! OpenTelemetry environment variables.
//!
//! [`OtlpExport::from_env`] starts an exporter when `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (used
//! as the full URL) or `OTEL_EXPORTER_OTLP_ENDPOINT` (the collector's base URL, `/v1/traces`
//! appended) is set and not empty, and `OTEL_SDK_DISABLED` is not `true`; otherwise it answers
//! `None` and nothing is installed. The exporter reads the other standard variables itself
//! (`OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_EXPORTER_OTLP_TIMEOUT` and their `_TRACES_` forms);
//! `OTEL_EXPORTER_OTLP_PROTOCOL`, if set, must be `http/protobuf`, the one protocol built in.
//! The service is named by `OTEL_SERVICE_NAME` (or `service.name` in
//! `OTEL_RESOURCE_ATTRIBUTES`), `switchboard` when neither says.
//!
//! Spans are batched and sent from the batch processor's own thread (reqwest's blocking
//! client, over rustls), never on a call's task. [`OtlpExport::layer`] is the
//! `tracing-subscriber` layer that turns the call spans (target [`CALL_TARGET`]) into
//! OpenTelemetry spans; it keeps no other span. [`OtlpExport::shutdown`] sends what is
//! batched and stops the exporter: call it on the way out, or the last spans are lost.

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{ExporterBuildError, SpanExporter, WithExportConfig as _};
use opentelemetry_sdk::{Resource, error::OTelSdkError, trace::SdkTracerProvider};
use tracing::{Level, Subscriber};
use tracing_subscriber::{Layer, filter::Targets, registry::LookupSpan};

use crate::CALL_TARGET;

/// The service name when the environment names none.
const DEFAULT_SERVICE_NAME: &str = "switchboard";

/// The instrumentation scope the spans are reported under.
const SCOPE: &str = "switchboard";

/// Why the OTLP export could not start or stop.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExportError {
    /// `OTEL_EXPORTER_OTLP_PROTOCOL` asks for a protocol that is not built in.
    #[error(
        "OTEL_EXPORTER_OTLP_PROTOCOL is `{0}`, but switchboard exports spans over \
         `http/protobuf` only: unset it or set it to `http/protobuf`"
    )]
    UnsupportedProtocol(String),
    /// The exporter refused its configuration (an endpoint that is not a URL, a bad header).
    #[error("could not start the OTLP span exporter: {0}")]
    Build(#[from] ExporterBuildError),
    /// The exporter could not send the last spans on shutdown.
    #[error("the OTLP span exporter did not shut down cleanly: {0}")]
    Shutdown(#[from] OTelSdkError),
}

/// A running OTLP span exporter: see the [module documentation](self).
#[derive(Debug)]
pub struct OtlpExport {
    provider: SdkTracerProvider,
}

impl OtlpExport {
    /// The exporter the environment asks for, started; `None` when it asks for none.
    pub fn from_env() -> Result<Option<Self>, ExportError> {
        let set = |name: &str| std::env::var(name).is_ok_and(|value| !value.trim().is_empty());
        let disabled = std::env::var("OTEL_SDK_DISABLED")
            .is_ok_and(|value| value.trim().eq_ignore_ascii_case("true"));
        if disabled
            || !(set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") || set("OTEL_EXPORTER_OTLP_ENDPOINT"))
        {
            return Ok(None);
        }
        for name in [
            "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
            "OTEL_EXPORTER_OTLP_PROTOCOL",
        ] {
            if let Ok(protocol) = std::env::var(name)
                && !protocol.trim().is_empty()
                && protocol.trim() != "http/protobuf"
            {
                return Err(ExportError::UnsupportedProtocol(protocol));
            }
        }
        Self::start(None).map(Some)
    }

    /// Starts an exporter that posts to `endpoint` (the full URL, such as
    /// `http://127.0.0.1:4318/v1/traces`), or where the environment says when `None`.
    pub fn start(endpoint: Option<&str>) -> Result<Self, ExportError> {
        let mut exporter = SpanExporter::builder()
            .with_http()
            .with_protocol(opentelemetry_otlp::Protocol::HttpBinary);
        if let Some(endpoint) = endpoint {
            exporter = exporter.with_endpoint(endpoint);
        }
        let exporter = exporter.build()?;
        let named = std::env::var("OTEL_SERVICE_NAME").is_ok_and(|name| !name.is_empty())
            || std::env::var("OTEL_RESOURCE_ATTRIBUTES")
                .is_ok_and(|attributes| attributes.contains("service.name="));
        let resource = if named {
            Resource::builder().build()
        } else {
            Resource::builder()
                .with_service_name(DEFAULT_SERVICE_NAME)
                .build()
        };
        let provider = SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(resource)
            .build();
        Ok(Self { provider })
    }

    /// The `tracing-subscriber` layer that exports the call spans (and only them) through
    /// this exporter.
    pub fn layer<S>(&self) -> impl Layer<S> + Send + Sync + 'static
    where
        S: Subscriber + for<'span> LookupSpan<'span> + Send + Sync,
    {
        tracing_opentelemetry::layer()
            .with_tracer(self.provider.tracer(SCOPE))
            .with_filter(Targets::new().with_target(CALL_TARGET, Level::INFO))
    }

    /// Sends the spans still batched and stops the exporter. Blocks until the batch is sent
    /// or the exporter's timeout passes: call it off the async runtime's worker threads (or
    /// in `spawn_blocking`).
    pub fn shutdown(self) -> Result<(), ExportError> {
        self.provider.shutdown()?;
        Ok(())
    }
}
