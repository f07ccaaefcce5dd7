//! Tracing of registry calls with OpenTelemetry: the [`TracingLayer`] opens one span per call
//! (caller, tool, outcome, duration), and [`traceparent`] carries a call's trace from one node
//! to the next as a W3C `traceparent`, so that a call through a front node, a mounted server and
//! a workflow's steps shows as one trace.
//!
//! The spans are ordinary `tracing` spans (target [`CALL_TARGET`]); they become OpenTelemetry
//! spans where the process installs `tracing-opentelemetry`'s layer, which the `otlp` feature's
//! [`otlp::OtlpExport`] builds with an OTLP/HTTP exporter. Without that layer, or with the
//! span's level filtered out, a call pays for a disabled span only.

mod layer;
#[cfg(feature = "otlp")]
pub mod otlp;
pub mod traceparent;

pub use layer::{CALL_SPAN, CALL_TARGET, TracingLayer};
