//! The audit record: one per invoke attempt, success or failure, and one per switch of tools.
//!
//! A record says who called which tool, for which tenant, with what (a hash of the input, never
//! the input itself: params may hold personal data), how long it took and how it ended. A
//! switch's record says who switched which tools off or on (see `switch.rs`).

use std::{fmt, sync::Arc};

use jiff::Timestamp;
use serde::{Serialize, Serializer};
use switchboard_core::{
    Category, CorrelationId, Digest, ErrorKind, Initiator, OrgId, SessionId, UserId, ask::AskRecord,
};

/// A record's position in its store: unique and increasing in the order records were appended.
pub type AuditId = u64;

/// How a call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// The tool returned a result.
    Ok,
    /// The call failed; the kind says at which step.
    Error(ErrorKind),
}

impl Outcome {
    /// `ok`, or the error kind's stable name.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::Error(kind) => kind.as_str(),
        }
    }

    /// Whether the call succeeded.
    pub fn is_ok(self) -> bool {
        self == Outcome::Ok
    }
}

/// A string that names no outcome.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown audit outcome `{0}`: expected `ok` or an error kind such as `timeout`")]
pub struct UnknownOutcome(pub String);

/// Parses [`Outcome::as_str`] back: how a persistent store reads the outcomes it wrote.
impl std::str::FromStr for Outcome {
    type Err = UnknownOutcome;

    fn from_str(value: &str) -> Result<Self, Self::Err> {
        if value == "ok" {
            return Ok(Outcome::Ok);
        }
        value
            .parse::<ErrorKind>()
            .map(Outcome::Error)
            .map_err(|_| UnknownOutcome(value.to_owned()))
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Outcome {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// One invoke attempt, or one switch of tools ([`SWITCH_RECORD_TOOL`](crate::SWITCH_RECORD_TOOL)).
///
/// Context fields are optional because a call refused for `missing_context` is audited too;
/// `domain` and `category` are absent when the tool does not exist.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AuditRecord {
    /// Assigned by the store on append.
    pub id: AuditId,
    /// When the call started.
    pub timestamp: Timestamp,
    /// The tool name as asked for (truncated to 128 bytes if longer).
    pub tool: Arc<str>,
    /// The tool's domain.
    pub domain: Option<Arc<str>>,
    /// The tool's category.
    pub category: Option<Category>,
    /// The tenant, from the context.
    pub org_id: Option<OrgId>,
    /// The user, from the context.
    pub user_id: Option<UserId>,
    /// The session, from the context.
    pub session_id: Option<SessionId>,
    /// The correlation id, from the context.
    pub correlation_id: Option<CorrelationId>,
    /// Who started the call.
    pub initiator: Initiator,
    /// Digest of the params' canonical JSON; `None` only when the input could not be
    /// serialized.
    pub input_hash: Option<Digest>,
    /// Digest of the result's canonical JSON: `Some` on success, `None` on failure and when
    /// the output could not be serialized.
    pub output_hash: Option<Digest>,
    /// Why a digest is missing (`input: …` or `output: …`); absent when none is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub digest_error: Option<String>,
    /// Wall time from the start of the invoke to the end of the tool, in microseconds.
    pub duration_us: u64,
    /// How it ended.
    pub outcome: Outcome,
    /// The mutation this record belongs to (mutating calls, replays, proposals); absent for
    /// reads.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub action: Option<crate::action::AuditAction>,
    /// The node that ran the call, when several share one store ([`AuditConfig::node`]
    /// names it; the log stamps each record it writes).
    ///
    /// [`AuditConfig::node`]: crate::AuditConfig::node
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<Arc<str>>,
    /// What the tool asked the client while it ran (forms, pages, completions), in order, as
    /// digests: see [`switchboard_core::ask`]. Empty for almost every call.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub asks: Vec<AskRecord>,
    /// What a switch of tools did, in the record of that switch (`tool` is
    /// [`SWITCH_RECORD_TOOL`](crate::SWITCH_RECORD_TOOL)); absent in a call's record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub switch: Option<crate::SwitchRecord>,
}

/// Longest tool name kept in a record; names come from callers and may be garbage.
pub const MAX_TOOL_NAME_BYTES: usize = 128;

/// Truncates a caller-supplied tool name at a character boundary.
pub fn clamp_tool_name(name: &str) -> &str {
    if name.len() <= MAX_TOOL_NAME_BYTES {
        return name;
    }
    let mut end = MAX_TOOL_NAME_BYTES;
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    &name[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clamps_long_names_on_char_boundaries() {
        let long = "é".repeat(100);
        let clamped = clamp_tool_name(&long);
        assert!(clamped.len() <= MAX_TOOL_NAME_BYTES);
        assert!(long.starts_with(clamped));
        assert_eq!(
            clamp_tool_name("core_get_current_user"),
            "core_get_current_user"
        );
    }

    #[test]
    fn outcome_names_are_the_error_kinds() {
        assert_eq!(Outcome::Ok.as_str(), "ok");
        assert_eq!(Outcome::Error(ErrorKind::Timeout).as_str(), "timeout");
    }

    #[test]
    fn outcomes_parse_back_from_their_names() {
        let every =
            std::iter::once(Outcome::Ok).chain(ErrorKind::ALL.iter().copied().map(Outcome::Error));
        for outcome in every {
            assert_eq!(outcome.as_str().parse::<Outcome>(), Ok(outcome));
        }
        assert_eq!(
            "OK".parse::<Outcome>(),
            Err(UnknownOutcome("OK".to_owned()))
        );
    }

    #[test]
    fn asks_are_in_the_json_only_when_the_call_asked() {
        let record = AuditRecord {
            id: 3,
            timestamp: Timestamp::constant(1_795_000_000, 0),
            tool: "roster_plan_week".into(),
            domain: None,
            category: None,
            org_id: None,
            user_id: None,
            session_id: None,
            correlation_id: None,
            initiator: Initiator::Human,
            input_hash: None,
            output_hash: None,
            digest_error: None,
            duration_us: 1,
            outcome: Outcome::Ok,
            action: None,
            node: None,
            asks: Vec::new(),
            switch: None,
        };
        let json = serde_json::to_value(&record).expect("a record is JSON");
        assert!(json.get("asks").is_none(), "{json}");
        let asked = AuditRecord {
            asks: vec![AskRecord {
                kind: switchboard_core::ask::AskKind::Form,
                outcome: switchboard_core::ask::AskOutcome::Accepted,
                error: None,
                request_hash: Some(Digest([0xab; 32])),
                answer_hash: None,
                duration_us: 40,
            }],
            ..record
        };
        let json = serde_json::to_value(&asked).expect("a record is JSON");
        assert_eq!(
            json["asks"],
            serde_json::json!([{
                "kind": "form",
                "outcome": "accepted",
                "request_hash": "ab".repeat(32),
                "duration_us": 40,
            }])
        );
    }
}
