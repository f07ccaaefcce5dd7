//! Export of the call spans over OTLP/HTTP (protobuf), switched on by the standard
//! OpenTelemetry environment variables, or by [`ExportSettings`] (a config file's) where the
//! environment says nothing.
//!
//! [`OtlpExport::from_env`] starts an exporter when `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (used
//! as the full URL) or `OTEL_EXPORTER_OTLP_ENDPOINT` (the collector's base URL, `/v1/traces`
//! appended) is set and not empty, and `OTEL_SDK_DISABLED` is not `true`; otherwise it answers
//! `None` and nothing is installed. [`OtlpExport::from_env_or`] does the same, and when neither
//! variable is set, exports to [`ExportSettings::endpoint`] (a base URL too) if it names one.
//! The exporter reads the other standard variables itself (`OTEL_EXPORTER_OTLP_HEADERS`,
//! `OTEL_EXPORTER_OTLP_TIMEOUT` and their `_TRACES_` forms); `OTEL_EXPORTER_OTLP_PROTOCOL`, if
//! set, must be `http/protobuf`, the one protocol built in. The service is named by
//! `OTEL_SERVICE_NAME` (or `service.name` in `OTEL_RESOURCE_ATTRIBUTES`), else by
//! [`ExportSettings::service_name`], `switchboard` when none says.
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
    /// The endpoint of the [`ExportSettings`] is not an `http://` or `https://` URL.
    #[error(
        "the OTLP endpoint `{endpoint}` is not usable: {reason}; give the collector's base URL, \
         such as `http://otel-collector:4318` (spans go to `/v1/traces` under it)"
    )]
    InvalidEndpoint {
        /// The endpoint as given.
        endpoint: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The exporter refused its configuration (an endpoint that is not a URL, a bad header).
    #[error("could not start the OTLP span exporter: {0}")]
    Build(#[from] ExporterBuildError),
    /// The exporter could not send the last spans on shutdown.
    #[error("the OTLP span exporter did not shut down cleanly: {0}")]
    Shutdown(#[from] OTelSdkError),
}

/// Where to export and under which service name, when the environment does not say (the
/// CLI's config file, `[telemetry]`): see [`OtlpExport::from_env_or`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ExportSettings {
    /// The collector's base URL (`http://` or `https://`); spans go to `{it}/v1/traces`, as
    /// for `OTEL_EXPORTER_OTLP_ENDPOINT`.
    pub endpoint: Option<String>,
    /// The spans' `service.name`.
    pub service_name: Option<String>,
}

impl ExportSettings {
    /// Settings exporting to `endpoint` (if any) as `service_name` (if any).
    pub fn new(endpoint: Option<String>, service_name: Option<String>) -> Self {
        Self {
            endpoint,
            service_name,
        }
    }
}

/// The URL spans are posted to for the collector's base URL `endpoint`: `{endpoint}/v1/traces`,
/// once `endpoint` is checked to be an `http://` or `https://` URL with a host.
fn traces_url(endpoint: &str) -> Result<String, ExportError> {
    let invalid = |reason| ExportError::InvalidEndpoint {
        endpoint: endpoint.to_owned(),
        reason,
    };
    let trimmed = endpoint.trim();
    let rest = trimmed
        .strip_prefix("http://")
        .or_else(|| trimmed.strip_prefix("https://"))
        .ok_or_else(|| invalid("it does not start with `http://` or `https://`"))?;
    if rest.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(invalid("it holds a space or a control character"));
    }
    let host = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if host.is_empty() || host.starts_with(':') {
        return Err(invalid("it names no host"));
    }
    if rest.contains(['?', '#']) {
        return Err(invalid("a base URL has no query or fragment"));
    }
    Ok(format!("{}/v1/traces", trimmed.trim_end_matches('/')))
}

/// A running OTLP span exporter: see the [module documentation](self).
#[derive(Debug)]
pub struct OtlpExport {
    provider: SdkTracerProvider,
}

impl OtlpExport {
    /// The exporter the environment asks for, started; `None` when it asks for none.
    pub fn from_env() -> Result<Option<Self>, ExportError> {
        Self::from_env_or(&ExportSettings::default())
    }

    /// The exporter the environment asks for, else the one `settings` ask for, started;
    /// `None` when neither asks for one (or `OTEL_SDK_DISABLED` is `true`). The environment
    /// wins key by key: its endpoint over `settings.endpoint`, its service name over
    /// `settings.service_name`.
    pub fn from_env_or(settings: &ExportSettings) -> Result<Option<Self>, ExportError> {
        let set = |name: &str| std::env::var(name).is_ok_and(|value| !value.trim().is_empty());
        let disabled = std::env::var("OTEL_SDK_DISABLED")
            .is_ok_and(|value| value.trim().eq_ignore_ascii_case("true"));
        let from_env =
            set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") || set("OTEL_EXPORTER_OTLP_ENDPOINT");
        let from_settings = settings
            .endpoint
            .as_deref()
            .filter(|endpoint| !endpoint.trim().is_empty());
        if disabled || !(from_env || from_settings.is_some()) {
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
        let endpoint = match from_settings {
            Some(endpoint) if !from_env => Some(traces_url(endpoint)?),
            _ => None,
        };
        Self::start_named(endpoint.as_deref(), settings.service_name.as_deref()).map(Some)
    }

    /// Starts an exporter that posts to `endpoint` (the full URL, such as
    /// `http://127.0.0.1:4318/v1/traces`), or where the environment says when `None`.
    pub fn start(endpoint: Option<&str>) -> Result<Self, ExportError> {
        Self::start_named(endpoint, None)
    }

    /// [`start`](Self::start), naming the service `service_name` when the environment does
    /// not name it.
    fn start_named(
        endpoint: Option<&str>,
        service_name: Option<&str>,
    ) -> Result<Self, ExportError> {
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
            let service_name = service_name
                .map(str::trim)
                .filter(|name| !name.is_empty())
                .unwrap_or(DEFAULT_SERVICE_NAME);
            Resource::builder()
                .with_service_name(service_name.to_owned())
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_base_url_gets_the_traces_path() {
        assert_eq!(
            traces_url("http://otel-collector:4318").expect("valid"),
            "http://otel-collector:4318/v1/traces"
        );
        assert_eq!(
            traces_url("https://otlp.example/ingest/").expect("valid"),
            "https://otlp.example/ingest/v1/traces"
        );
    }

    #[test]
    fn an_endpoint_that_is_no_http_url_is_refused_saying_why() {
        for (bad, why) in [
            ("otel-collector:4318", "does not start with `http://`"),
            (
                "grpc://otel-collector:4317",
                "does not start with `http://`",
            ),
            ("http://", "names no host"),
            ("http://:4318", "names no host"),
            ("http://otel collector:4318", "a space"),
            ("http://otel-collector:4318/?x=1", "no query"),
        ] {
            let error = traces_url(bad).expect_err(bad).to_string();
            assert!(error.contains(why), "{bad}: {error}");
            assert!(error.contains(bad), "{bad}: {error}");
            assert!(error.contains("http://otel-collector:4318"), "{error}");
        }
    }
}
