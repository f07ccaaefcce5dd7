//! W3C Trace Context `traceparent`s (version `00`) to and from OpenTelemetry contexts: how a
//! call's trace crosses a process boundary in an MCP request's `_meta` (SEP-414).
//!
//! The MCP server takes a request's valid `traceparent` as the call's correlation id; the
//! [`TracingLayer`](crate::TracingLayer) makes it the parent of the call's span
//! ([`context_of`]). The mounts client puts the current span's `traceparent`
//! ([`current`]) into the `_meta` of the requests it sends to a mounted server, whose layer
//! does the same on its side.

use opentelemetry::{
    Context,
    trace::{SpanContext, SpanId, TraceContextExt as _, TraceFlags, TraceId, TraceState},
};
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

/// The length of a version-`00` `traceparent`.
const LENGTH: usize = 55;

/// The remote span a valid version-`00` `traceparent` names, as a context to parent spans
/// on; `None` for anything else (another version, upper-case hex, all-zero ids, any other
/// length), as W3C Trace Context asks of an invalid header.
pub fn context_of(traceparent: &str) -> Option<Context> {
    let bytes = traceparent.as_bytes();
    if bytes.len() != LENGTH || !bytes.starts_with(b"00-") || bytes[35] != b'-' || bytes[52] != b'-'
    {
        return None;
    }
    let lower_hex = |field: &str| {
        field
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    };
    let (trace_id, span_id, flags) = (
        traceparent.get(3..35)?,
        traceparent.get(36..52)?,
        traceparent.get(53..55)?,
    );
    if !(lower_hex(trace_id) && lower_hex(span_id) && lower_hex(flags)) {
        return None;
    }
    let trace_id = TraceId::from_hex(trace_id).ok()?;
    let span_id = SpanId::from_hex(span_id).ok()?;
    let flags = u8::from_str_radix(flags, 16).ok()?;
    let span = SpanContext::new(
        trace_id,
        span_id,
        TraceFlags::new(flags),
        true,
        TraceState::NONE,
    );
    span.is_valid()
        .then(|| Context::new().with_remote_span_context(span))
}

/// The `traceparent` of `context`'s span, if it has a valid one.
pub fn of_context(context: &Context) -> Option<String> {
    let span = context.span();
    let span = span.span_context();
    span.is_valid().then(|| {
        format!(
            "00-{}-{}-{:02x}",
            span.trace_id(),
            span.span_id(),
            span.trace_flags().to_u8()
        )
    })
}

/// The `traceparent` of the current `tracing` span, if it is an OpenTelemetry span (the
/// process installed `tracing-opentelemetry`'s layer and the span passed its filter).
pub fn current() -> Option<String> {
    of_context(&tracing::Span::current().context())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The specification's own example (W3C Trace Context, section 3.2.2.5).
    const EXAMPLE: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn a_traceparent_goes_there_and_back() {
        let context = context_of(EXAMPLE).expect("valid");
        let span = context.span();
        assert!(span.span_context().is_remote());
        assert_eq!(
            span.span_context().trace_id().to_string(),
            "4bf92f3577b34da6a3ce929d0e0e4736"
        );
        assert_eq!(of_context(&context).as_deref(), Some(EXAMPLE));
    }

    #[test]
    fn anything_else_names_no_span() {
        for bad in [
            "",
            "mcp-0191e5b4-7c4e-7a1b-9f3e-2b1c0d9e8f7a",
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0g",
            "00-4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-",
        ] {
            assert!(context_of(bad).is_none(), "{bad}");
        }
        assert_eq!(of_context(&Context::new()), None);
    }
}
