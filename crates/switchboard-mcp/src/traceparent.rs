//! A call's correlation id from the W3C Trace Context `traceparent` in its `_meta`, checked
//! before it is used.
//!
//! MCP lets a client put a `traceparent` in a request's `_meta` (SEP-414). The correlation id
//! is stored in every audit record of the call and printed back by `switchboard audit`, so a
//! value is taken only if it is a valid `traceparent` of version `00` (W3C Trace Context,
//! section 3.2):
//!
//! ```text
//! 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01
//! version-trace-id (32 hex)-parent-id (16 hex)-trace-flags (2 hex)
//! ```
//!
//! exactly 55 characters, lower-case hex only, with neither the trace-id nor the parent-id all
//! zeros. Version `ff` is invalid, and other versions are not accepted either: their layout is
//! not fixed yet. Anything else (an empty value, a newline, a terminal escape, a megabyte) is
//! ignored, as the specification asks of an invalid `traceparent`: the call gets a minted
//! `mcp-<uuid v7>`, exactly as a call without one, and a debug event says so (with the value's
//! length, never the value). A valid `traceparent` is also a valid id
//! ([`switchboard_core::is_valid_id`]), the format every caller-chosen id is held to.
//!
//! **The whole `traceparent` is the correlation id, not only its trace-id.** A correlation id
//! names one request: the registry derives a mutation's idempotency key from it when the call
//! names no thread, so that a retry of the same request is recognised and a new request is a
//! new action. A trace-id is shared by every call of one agent run; taking it alone would make
//! two distinct calls with the same params in one run the same action, and the second would
//! be answered with the first one's result instead of running. The parent-id is what tells
//! the calls of one trace apart. Finding every call of a trace remains possible: the trace-id
//! is the characters 3 to 35 of each of its correlation ids.

use rmcp::{RoleServer, service::RequestContext};
use switchboard_core::{CorrelationId, mint_id};

/// The length of a version-`00` `traceparent`.
const LENGTH: usize = 55;

/// The call's correlation id: its `_meta.traceparent` if that is valid, else a fresh
/// `mcp-<uuid v7>`.
pub(crate) fn correlation_id(context: &RequestContext<RoleServer>) -> CorrelationId {
    match context.meta.get_traceparent() {
        Some(traceparent) if is_valid(traceparent) => CorrelationId::from(traceparent),
        Some(ignored) => {
            tracing::debug!(
                length = ignored.len(),
                "the call's `_meta.traceparent` is not a valid W3C traceparent; ignored, and a \
                 correlation id minted"
            );
            CorrelationId::from(mint_id("mcp"))
        }
        None => CorrelationId::from(mint_id("mcp")),
    }
}

/// Whether `text` is a valid W3C `traceparent` of version `00` (see the module docs).
pub(crate) fn is_valid(text: &str) -> bool {
    let bytes = text.as_bytes();
    if bytes.len() != LENGTH || !bytes.starts_with(b"00-") || bytes[35] != b'-' || bytes[52] != b'-'
    {
        return false;
    }
    let (trace_id, parent_id, flags) = (&bytes[3..35], &bytes[36..52], &bytes[53..55]);
    let lower_hex = |field: &[u8]| {
        field
            .iter()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(b))
    };
    let all_zeros = |field: &[u8]| field.iter().all(|b| *b == b'0');
    lower_hex(trace_id)
        && lower_hex(parent_id)
        && lower_hex(flags)
        && !all_zeros(trace_id)
        && !all_zeros(parent_id)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The specification's own example (W3C Trace Context, section 3.2.2.5).
    const EXAMPLE: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn accepts_version_00_traceparents() {
        assert!(is_valid(EXAMPLE));
        assert!(is_valid(
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"
        ));
        assert!(is_valid(
            "00-00000000000000000000000000000001-0000000000000001-ff"
        ));
        assert!(switchboard_core::is_valid_id(EXAMPLE));
    }

    #[test]
    fn refuses_everything_else() {
        let megabyte = "0".repeat(1 << 20);
        let with = |from: usize, replacement: &str| {
            let mut text = EXAMPLE.to_owned();
            text.replace_range(from..from + replacement.len(), replacement);
            text
        };
        for bad in [
            String::new(),
            megabyte,
            format!("{EXAMPLE}\n"),
            format!("{EXAMPLE}-extra"),
            EXAMPLE[..54].to_owned(),
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\u{1b}[2J".to_owned(),
            "00-4bf92f3577b34da6a3ce929d0e0e4736\n00f067aa0ba902b7-01".to_owned(),
            // Upper case, other versions, and version ff.
            EXAMPLE.to_uppercase(),
            with(0, "01"),
            with(0, "ff"),
            // All-zero ids.
            with(3, &"0".repeat(32)),
            with(36, &"0".repeat(16)),
            // Not hex, or separators elsewhere.
            with(3, "g"),
            with(36, "-"),
            with(53, "0x"),
            with(2, "_"),
            EXAMPLE.replace('-', "_"),
        ] {
            assert!(!is_valid(&bad), "{:?}", bad.get(..80).unwrap_or(&bad));
        }
    }
}
