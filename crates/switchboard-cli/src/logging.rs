//! Logs: `tracing` events go to standard error, filtered by `RUST_LOG` (default: warnings, and
//! `serve`'s start-up lines saying where it keeps each store).
//!
//! Standard output belongs to results (and to exactly one JSON object under `--json`), so no
//! log line may ever land there. Under `serve`, a second layer forwards each MCP call's events
//! to the session that made it (`notifications/message`, at the level the session set with
//! `logging/setLevel`); it has its own filter, so `RUST_LOG` limits only standard error, and it
//! writes nothing itself.
//!
//! Colour is for people: log lines carry ANSI colour codes only when standard error is a
//! terminal and `NO_COLOR` is unset or empty (<https://no-color.org>), so a log written to a
//! file or a pipe is plain text.
//!
//! When the environment asks for OTLP export (`OTEL_EXPORTER_OTLP_ENDPOINT` or
//! `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, see `switchboard_telemetry::otlp`), or the config
//! file's `[telemetry] otlp_endpoint` does and the environment names no endpoint, a third layer
//! turns the registry's call spans into OpenTelemetry spans and exports them; `RUST_LOG` does
//! not filter it. Without an endpoint it is not installed, nor is the tracing layer around
//! calls. `OTEL_SERVICE_NAME` wins over `[telemetry] service_name`, and `OTEL_SDK_DISABLED=true`
//! over both.
//!
//! `serve --log-format json` writes one JSON object per line instead (tracing-subscriber's
//! `json` format: `timestamp`, `level`, `target`, `fields` with the message, and the spans),
//! for log collectors; never coloured.

use std::{ffi::OsStr, io::IsTerminal as _, path::Path};

use serde::Deserialize;
use switchboard_telemetry::otlp::{ExportError, ExportSettings, OtlpExport};
use tracing_subscriber::{EnvFilter, prelude::*};

use crate::operate::LogFormat;

/// The filter used when `RUST_LOG` is unset or invalid. rmcp logs every JSON-RPC error it
/// answers (a client's mistake, such as an unknown tool) as a warning with a Rust debug dump;
/// our server logs those itself, at info, in its own words, so rmcp's are left to errors.
/// `serve`'s start-up lines saying where each store is kept are shown at info.
const DEFAULT_FILTER: &str = "warn,rmcp::service=error,switchboard::stores=info";

/// The config file's `[telemetry]` table: the OTLP export for those who set no
/// `OTEL_*` variables. Each key gives way to its variable.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct TelemetryFile {
    /// The collector's base URL (`http://otel-collector:4318`; spans go to `/v1/traces` under
    /// it); `OTEL_EXPORTER_OTLP_ENDPOINT` and `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` win over it.
    pub(crate) otlp_endpoint: Option<String>,
    /// The spans' `service.name`; `OTEL_SERVICE_NAME` (or `service.name` in
    /// `OTEL_RESOURCE_ATTRIBUTES`) wins over it.
    pub(crate) service_name: Option<String>,
}

/// Installs the subscriber, writing `format`, with the MCP log layer when `serving_mcp`, and
/// the OTLP export when the environment, or else `telemetry` (the config file `file`'s
/// `[telemetry]`), asks for it: that exporter is returned, to be shut down on the way out.
/// Refused (and the subscriber installed without export) when those settings are not usable.
/// Safe to call once per process.
pub(crate) fn init(
    serving_mcp: bool,
    format: LogFormat,
    telemetry: &TelemetryFile,
    file: Option<&Path>,
) -> anyhow::Result<Option<OtlpExport>> {
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(DEFAULT_FILTER));
    let standard_error = match format {
        LogFormat::Text => {
            let colour = wants_colour(
                std::io::stderr().is_terminal(),
                std::env::var_os("NO_COLOR").as_deref(),
            );
            tracing_subscriber::fmt::layer()
                .with_writer(std::io::stderr)
                .with_ansi(colour)
                .with_filter(filter)
                .boxed()
        }
        LogFormat::Json => tracing_subscriber::fmt::layer()
            .json()
            .with_writer(std::io::stderr)
            .with_filter(filter)
            .boxed(),
    };
    let settings = ExportSettings::new(
        telemetry.otlp_endpoint.clone(),
        telemetry.service_name.clone(),
    );
    let export = OtlpExport::from_env_or(&settings).map_err(|error| match (&error, file) {
        // Only the file's endpoint is checked here: the environment's goes to the exporter.
        (ExportError::InvalidEndpoint { .. }, Some(file)) => {
            anyhow::Error::new(error).context(format!(
                "`[telemetry] otlp_endpoint` in the config file {}",
                file.display()
            ))
        }
        _ => anyhow::Error::new(error),
    });
    let otlp = export
        .as_ref()
        .ok()
        .and_then(Option::as_ref)
        .map(OtlpExport::layer);
    let subscriber = tracing_subscriber::registry()
        .with(standard_error)
        .with(serving_mcp.then(switchboard_mcp::log_layer));
    // Added only when there is one: an absent layer (`Option::None`) on top of the others
    // makes the subscriber's level hint `OFF` for what they leave to it, and the MCP log layer
    // stops seeing the events below the standard error's filter.
    let _ = match otlp {
        Some(otlp) => subscriber.with(otlp).try_init(),
        None => subscriber.try_init(),
    };
    export
}

/// Whether log lines get colour: only on a terminal, and only when `NO_COLOR` is unset or
/// empty.
fn wants_colour(terminal: bool, no_colour: Option<&OsStr>) -> bool {
    terminal && no_colour.is_none_or(OsStr::is_empty)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colour_only_on_a_terminal_and_never_under_no_color() {
        assert!(wants_colour(true, None));
        assert!(wants_colour(true, Some(OsStr::new(""))));
        assert!(!wants_colour(true, Some(OsStr::new("1"))));
        assert!(!wants_colour(false, None));
        assert!(!wants_colour(false, Some(OsStr::new(""))));
    }
}
