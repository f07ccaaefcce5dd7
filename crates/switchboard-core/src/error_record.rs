//! An [`InvokeError`] as plain JSON data and back, for stores that keep a mutation's first
//! result across restarts: an idempotent retry must get back the very error the first run
//! returned, not a look-alike.
//!
//! The record is the error's wire form, `{"kind", "message", …details}`, plus the fields the
//! details leave out (free-text reasons, a tool error's message, a panic message, the exact
//! timeout), so that `InvokeError::from_record(&error.to_record()) == Ok(error)` for every
//! variant. Both directions match every variant exhaustively: a new variant does not compile
//! until it is encoded here. `message` is kept for people reading the stored record and is not
//! read back: the message is always rebuilt from the fields.

use std::time::Duration;

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::{
    context::REQUIRED_CONTEXT_FIELDS,
    error::{ErrorKind, FieldError, InvokeError, ToolError},
    policy::ScopeField,
};

/// A stored error record this build cannot turn back into an [`InvokeError`]: written by a
/// newer build, or damaged.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not an error record this build can read back: {0}")]
pub struct InvalidErrorRecord(String);

/// The names `MutationScopeMissing::fields` can hold.
const SCOPE_FIELDS: [&str; 2] = [
    ScopeField::ThreadId.as_str(),
    ScopeField::ProjectId.as_str(),
];

/// The names `ProposalClosed::status` can hold.
const PROPOSAL_STATUSES: [&str; 4] = ["pending", "approved", "rejected", "expired"];

impl InvokeError {
    /// Everything needed to rebuild this error: its wire form (`kind`, `message`, details) and
    /// the fields the details leave out. See [`from_record`](Self::from_record).
    pub fn to_record(&self) -> Value {
        let mut record = Map::new();
        record.insert("kind".to_owned(), Value::from(self.kind().as_str()));
        record.insert("message".to_owned(), Value::from(self.to_string()));
        record.extend(self.details());
        let mut extra = |key: &str, value: Value| {
            record.insert(key.to_owned(), value);
        };
        match self {
            InvokeError::CategoryDenied { reason, .. }
            | InvokeError::DomainUnavailable { reason, .. }
            | InvokeError::AuditFailed { reason, .. }
            | InvokeError::ApprovalDenied { reason, .. }
            | InvokeError::StoreUnavailable { reason, .. } => {
                extra("reason", reason.clone().into())
            }
            InvokeError::ToolFailed { error, .. } | InvokeError::GateRefused { error, .. } => {
                extra("error_message", error.message().into());
            }
            InvokeError::ToolPanicked { message, .. } => {
                extra("panic_message", message.clone().into())
            }
            InvokeError::Timeout { after, .. } => {
                extra("timeout_secs", after.as_secs().into());
                extra("timeout_subsec_nanos", after.subsec_nanos().into());
            }
            InvokeError::ToolNotFound { .. }
            | InvokeError::MissingContext { .. }
            | InvokeError::OrgIdNotAllowed { .. }
            | InvokeError::PermissionDenied { .. }
            | InvokeError::InvalidInput { .. }
            | InvokeError::ThreadNotOwned { .. }
            | InvokeError::ToolScopeDenied { .. }
            | InvokeError::MutationScopeMissing { .. }
            | InvokeError::IdempotencyKeyRequired { .. }
            | InvokeError::IdempotencyConflict { .. }
            | InvokeError::ApprovalRequired { .. }
            | InvokeError::ProposalNotFound { .. }
            | InvokeError::ProposalClosed { .. } => {}
        }
        Value::Object(record)
    }

    /// Rebuilds the error [`to_record`](Self::to_record) described, field for field.
    pub fn from_record(record: &Value) -> Result<InvokeError, InvalidErrorRecord> {
        let fields =
            Fields(record.as_object().ok_or_else(|| {
                InvalidErrorRecord("an error record is a JSON object".to_owned())
            })?);
        let kind: String = fields.get("kind")?;
        let kind: ErrorKind = kind
            .parse()
            .map_err(|error| InvalidErrorRecord(format!("{error}")))?;
        Ok(match kind {
            ErrorKind::ToolNotFound => InvokeError::ToolNotFound {
                name: fields.get("tool")?,
                suggestions: fields.get("suggestions")?,
            },
            ErrorKind::MissingContext => InvokeError::MissingContext {
                fields: fields.names("fields", &REQUIRED_CONTEXT_FIELDS)?,
            },
            ErrorKind::OrgIdNotAllowed => InvokeError::OrgIdNotAllowed {
                path: fields.get("path")?,
            },
            ErrorKind::CategoryDenied => InvokeError::CategoryDenied {
                tool: fields.get("tool")?,
                category: fields.get("category")?,
                initiator: fields.get("initiator")?,
                reason: fields.get("reason")?,
            },
            ErrorKind::PermissionDenied => InvokeError::PermissionDenied {
                tool: fields.get("tool")?,
                permission: fields.get("permission")?,
                roles: fields.get("roles")?,
            },
            ErrorKind::InvalidInput => InvokeError::InvalidInput {
                tool: fields.get("tool")?,
                errors: fields.field_errors()?,
            },
            ErrorKind::ToolFailed => InvokeError::ToolFailed {
                tool: fields.get("tool")?,
                error: fields.tool_error()?,
            },
            ErrorKind::ToolPanicked => InvokeError::ToolPanicked {
                tool: fields.get("tool")?,
                message: fields.get("panic_message")?,
            },
            ErrorKind::Timeout => InvokeError::Timeout {
                tool: fields.get("tool")?,
                after: Duration::new(
                    fields.get("timeout_secs")?,
                    fields.get("timeout_subsec_nanos")?,
                ),
            },
            ErrorKind::DomainUnavailable => InvokeError::DomainUnavailable {
                tool: fields.get("tool")?,
                domain: fields.get("domain")?,
                reason: fields.get("reason")?,
            },
            ErrorKind::AuditFailed => InvokeError::AuditFailed {
                tool: fields.get("tool")?,
                reason: fields.get("reason")?,
            },
            ErrorKind::NoRoute | ErrorKind::Cancelled => {
                return Err(InvalidErrorRecord(format!(
                    "`{kind}` is reported by the orchestrator or the audit trail, never as an \
                     invoke error"
                )));
            }
            ErrorKind::ThreadNotOwned => InvokeError::ThreadNotOwned {
                tool: fields.get("tool")?,
                thread_id: fields.get("thread_id")?,
            },
            ErrorKind::ToolScopeDenied => InvokeError::ToolScopeDenied {
                tool: fields.get("tool")?,
                agent_type: fields.get("agent_type")?,
            },
            ErrorKind::GateRefused => InvokeError::GateRefused {
                tool: fields.get("tool")?,
                error: fields.tool_error()?,
            },
            ErrorKind::MutationScopeMissing => InvokeError::MutationScopeMissing {
                tool: fields.get("tool")?,
                fields: fields.names("fields", &SCOPE_FIELDS)?,
            },
            ErrorKind::IdempotencyKeyRequired => InvokeError::IdempotencyKeyRequired {
                tool: fields.get("tool")?,
            },
            ErrorKind::IdempotencyConflict => InvokeError::IdempotencyConflict {
                tool: fields.get("tool")?,
                key: fields.get("key")?,
                first_run: fields.get("first_run")?,
            },
            ErrorKind::ApprovalRequired => InvokeError::ApprovalRequired {
                tool: fields.get("tool")?,
                proposal_id: fields.get("proposal_id")?,
                expires_at: fields.get("expires_at")?,
                summary: fields.get("summary")?,
            },
            ErrorKind::ProposalNotFound => InvokeError::ProposalNotFound {
                proposal_id: fields.get("proposal_id")?,
            },
            ErrorKind::ProposalClosed => InvokeError::ProposalClosed {
                proposal_id: fields.get("proposal_id")?,
                status: fields.name("status", &PROPOSAL_STATUSES)?,
            },
            ErrorKind::ApprovalDenied => InvokeError::ApprovalDenied {
                tool: fields.get("tool")?,
                proposal_id: fields.get("proposal_id")?,
                reason: fields.get("reason")?,
            },
            ErrorKind::StoreUnavailable => InvokeError::StoreUnavailable {
                store: fields.get("store")?,
                reason: fields.get("reason")?,
            },
        })
    }
}

/// The fields of a record, read with errors naming the field.
struct Fields<'a>(&'a Map<String, Value>);

impl Fields<'_> {
    fn get<T: DeserializeOwned>(&self, key: &str) -> Result<T, InvalidErrorRecord> {
        let value = self.0.get(key).cloned().unwrap_or(Value::Null);
        serde_json::from_value(value)
            .map_err(|error| InvalidErrorRecord(format!("field `{key}`: {error}")))
    }

    /// A name from a closed vocabulary, as the `&'static str` the error holds.
    fn name(
        &self,
        key: &str,
        vocabulary: &[&'static str],
    ) -> Result<&'static str, InvalidErrorRecord> {
        let text: String = self.get(key)?;
        known(key, &text, vocabulary)
    }

    fn names(
        &self,
        key: &str,
        vocabulary: &[&'static str],
    ) -> Result<Vec<&'static str>, InvalidErrorRecord> {
        let texts: Vec<String> = self.get(key)?;
        texts
            .iter()
            .map(|text| known(key, text, vocabulary))
            .collect()
    }

    fn tool_error(&self) -> Result<ToolError, InvalidErrorRecord> {
        let code: String = self.get("code")?;
        let message: String = self.get("error_message")?;
        Ok(ToolError::new(code, message))
    }

    fn field_errors(&self) -> Result<Vec<FieldError>, InvalidErrorRecord> {
        let errors: Vec<Map<String, Value>> = self.get("errors")?;
        errors
            .iter()
            .map(|error| {
                let error = Fields(error);
                Ok(FieldError::new(
                    error.get::<String>("path")?,
                    error.get::<String>("reason")?,
                ))
            })
            .collect()
    }
}

fn known(
    key: &str,
    text: &str,
    vocabulary: &[&'static str],
) -> Result<&'static str, InvalidErrorRecord> {
    vocabulary
        .iter()
        .copied()
        .find(|name| *name == text)
        .ok_or_else(|| {
            InvalidErrorRecord(format!(
                "field `{key}`: `{text}` is not one of {}",
                vocabulary.join(", ")
            ))
        })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use serde_json::json;

    use super::*;
    use crate::{Category, Initiator};

    /// One error of every variant, with every optional field set one way or the other.
    fn one_of_each() -> Vec<InvokeError> {
        let tool = || "roster_assign_shift".to_owned();
        vec![
            InvokeError::ToolNotFound {
                name: "roster_asign".to_owned(),
                suggestions: vec![tool()],
            },
            InvokeError::MissingContext {
                fields: vec!["org_id", "correlation_id"],
            },
            InvokeError::OrgIdNotAllowed {
                path: "/nested/orgId".to_owned(),
            },
            InvokeError::CategoryDenied {
                tool: tool(),
                category: Category::Restricted,
                initiator: Initiator::Human,
                reason: "needs a confirmation".to_owned(),
            },
            InvokeError::PermissionDenied {
                tool: tool(),
                permission: "roster.shifts.assign".to_owned(),
                roles: vec!["staff".into(), "auditor".into()],
            },
            InvokeError::InvalidInput {
                tool: tool(),
                errors: vec![
                    FieldError::new("/shift_id", "is required"),
                    FieldError::new("", "unexpected field `x`"),
                ],
            },
            InvokeError::ToolFailed {
                tool: tool(),
                error: ToolError::new("shift_not_found", "no shift `s9` in your organisation"),
            },
            InvokeError::ToolPanicked {
                tool: tool(),
                message: "index out of bounds".to_owned(),
            },
            InvokeError::Timeout {
                tool: tool(),
                after: Duration::new(2, 500_000_123),
            },
            InvokeError::DomainUnavailable {
                tool: tool(),
                domain: "roster".to_owned(),
                reason: "its actor has stopped".to_owned(),
            },
            InvokeError::AuditFailed {
                tool: tool(),
                reason: "disk full".to_owned(),
            },
            InvokeError::ThreadNotOwned {
                tool: tool(),
                thread_id: "t1".into(),
            },
            InvokeError::ToolScopeDenied {
                tool: tool(),
                agent_type: None,
            },
            InvokeError::ToolScopeDenied {
                tool: tool(),
                agent_type: Some("planner".into()),
            },
            InvokeError::GateRefused {
                tool: tool(),
                error: ToolError::new("week_locked", "the week of 2026-11-16 is locked"),
            },
            InvokeError::MutationScopeMissing {
                tool: tool(),
                fields: vec!["thread_id", "project_id"],
            },
            InvokeError::IdempotencyKeyRequired { tool: tool() },
            InvokeError::IdempotencyConflict {
                tool: tool(),
                key: "assign-42".into(),
                first_run: None,
            },
            InvokeError::IdempotencyConflict {
                tool: tool(),
                key: "assign-42".into(),
                first_run: Some("act-1".into()),
            },
            InvokeError::ApprovalRequired {
                tool: tool(),
                proposal_id: "prop-1".into(),
                expires_at: "2026-11-24T10:00:00Z".to_owned(),
                summary: "assign s1 to sam".to_owned(),
            },
            InvokeError::ProposalNotFound {
                proposal_id: "prop-2".into(),
            },
            InvokeError::ProposalClosed {
                proposal_id: "prop-3".into(),
                status: "expired",
            },
            InvokeError::ApprovalDenied {
                tool: tool(),
                proposal_id: "prop-4".into(),
                reason: "an agent can never approve".to_owned(),
            },
            InvokeError::StoreUnavailable {
                store: "proposals".to_owned(),
                reason: "storing proposal prop-5: disk I/O error".to_owned(),
            },
        ]
    }

    /// The wire form and the stored record of one error of every variant, and every kind's
    /// name, byte for byte: scripts, MCP clients and stores written by earlier builds read
    /// them, so any change here is a breaking change.
    #[test]
    fn wire_forms_and_records_are_unchanged() {
        let mut golden = String::new();
        for kind in ErrorKind::ALL {
            golden.push_str(&format!("kind {kind}\n"));
        }
        for error in one_of_each() {
            let wire = serde_json::to_string(&error).expect("serializes");
            let wire_value = serde_json::to_value(&error).expect("serializes");
            let record = error.to_record().to_string();
            golden.push_str(&format!(
                "wire {wire}\nvalue {wire_value}\nrecord {record}\n"
            ));
        }
        insta::assert_snapshot!("error_wire_forms", golden);
    }

    #[test]
    fn every_variant_round_trips_through_its_record() {
        let errors = one_of_each();
        for error in &errors {
            let record = error.to_record();
            assert_eq!(record["kind"], error.kind().as_str());
            assert_eq!(record["message"], error.to_string());
            let text = serde_json::to_string(&record).expect("a record is JSON");
            let parsed: Value = serde_json::from_str(&text).expect("and parses back");
            assert_eq!(InvokeError::from_record(&parsed).as_ref(), Ok(error));
        }
        let covered: BTreeSet<&str> = errors.iter().map(|error| error.kind().as_str()).collect();
        let expected: BTreeSet<&str> = ErrorKind::ALL
            .into_iter()
            .filter(|kind| !matches!(kind, ErrorKind::NoRoute | ErrorKind::Cancelled))
            .map(ErrorKind::as_str)
            .collect();
        assert_eq!(covered, expected, "one sample per invoke error kind");
    }

    #[test]
    fn the_record_extends_the_wire_form() {
        let error = InvokeError::ToolFailed {
            tool: "t".to_owned(),
            error: ToolError::new("boom", "it broke"),
        };
        let wire = serde_json::to_value(&error).expect("serializes");
        let record = error.to_record();
        for (key, value) in wire.as_object().expect("an object") {
            assert_eq!(&record[key], value, "`{key}` differs from the wire form");
        }
        assert_eq!(record["error_message"], "it broke");
    }

    #[test]
    fn unreadable_records_are_errors_naming_the_problem() {
        let cases = [
            (json!("timeout"), "JSON object"),
            (json!({ "kind": "exploded" }), "unknown error kind"),
            (json!({ "kind": "no_route" }), "never as an invoke error"),
            (json!({ "kind": "timeout", "tool": "t" }), "timeout_secs"),
            (
                json!({ "kind": "proposal_closed", "proposal_id": "p", "status": "lost" }),
                "`lost` is not one of",
            ),
        ];
        for (record, expected) in cases {
            let error = InvokeError::from_record(&record).expect_err("unreadable");
            assert!(error.to_string().contains(expected), "{record}: {error}");
        }
    }
}
