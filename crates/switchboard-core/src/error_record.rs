//! An [`InvokeError`] as plain JSON data and back, for stores that keep a mutation's first
//! result across restarts: an idempotent retry must get back the very error the first run
//! returned, not a look-alike.
//!
//! The record is the error's wire form, `{"kind", "message", …details}`, plus the fields the
//! details leave out (free-text reasons, a tool error's message, a panic message, the exact
//! timeout), so that `InvokeError::from_record(&error.to_record()) == Ok(error)` for every
//! variant. Both directions are derived from the fields of [`InvokeError`] by serde; the
//! [`fields`] module here writes and reads the few that are not plain values. `message` is
//! kept for people reading the stored record and is not read back: the message is always
//! rebuilt from the fields.

use serde_json::Value;

use crate::error::{ErrorKind, InvokeError};

/// A stored error record this build cannot turn back into an [`InvokeError`]: written by a
/// newer build, or damaged.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not an error record this build can read back: {0}")]
pub struct InvalidErrorRecord(String);

impl InvokeError {
    /// Everything needed to rebuild this error: its wire form (`kind`, `message`, details) and
    /// the fields the details leave out. See [`from_record`](Self::from_record).
    pub fn to_record(&self) -> Value {
        let mut record = self.record_fields();
        record.insert("message".to_owned(), Value::from(self.to_string()));
        Value::Object(record)
    }

    /// Rebuilds the error [`to_record`](Self::to_record) described, field for field.
    pub fn from_record(record: &Value) -> Result<InvokeError, InvalidErrorRecord> {
        let fields = record
            .as_object()
            .ok_or_else(|| InvalidErrorRecord("an error record is a JSON object".to_owned()))?;
        let kind = fields
            .get("kind")
            .and_then(Value::as_str)
            .ok_or_else(|| InvalidErrorRecord("field `kind`: expected a string".to_owned()))?;
        let kind: ErrorKind = kind
            .parse()
            .map_err(|error| InvalidErrorRecord(format!("{error}")))?;
        if matches!(kind, ErrorKind::NoRoute | ErrorKind::Cancelled) {
            return Err(InvalidErrorRecord(format!(
                "`{kind}` is reported by the orchestrator or the audit trail, never as an \
                 invoke error"
            )));
        }
        // An owned value: the error's `&'static str` fields cannot borrow from the record.
        InvokeError::deserialize(record.clone())
            .map_err(|error| InvalidErrorRecord(format!("`{kind}` record: {error}")))
    }
}

/// How the record writes and reads the fields of [`InvokeError`] that are not plain values
/// (named in its `#[serde(with)]` attributes).
pub(crate) mod fields {
    use std::{borrow::Cow, time::Duration};

    use serde::{Deserialize, Deserializer, Serialize, Serializer, de::Error as _};

    use crate::{context::REQUIRED_CONTEXT_FIELDS, error::ToolError, policy::ScopeField};

    /// A tool error as `code` (on the wire too) and `error_message` (in the record only).
    pub(crate) mod tool_error {
        use super::*;

        #[derive(Serialize, Deserialize)]
        struct Fields<'a> {
            code: Cow<'a, str>,
            error_message: Cow<'a, str>,
            #[serde(default, skip_serializing_if = "std::ops::Not::not")]
            retryable: bool,
            #[serde(default, skip_serializing_if = "std::ops::Not::not")]
            in_doubt: bool,
        }

        pub(crate) fn serialize<S: Serializer>(
            error: &ToolError,
            serializer: S,
        ) -> Result<S::Ok, S::Error> {
            Fields {
                code: Cow::Borrowed(error.code()),
                error_message: Cow::Borrowed(error.message()),
                retryable: error.is_retryable(),
                in_doubt: error.is_in_doubt(),
            }
            .serialize(serializer)
        }

        pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
            deserializer: D,
        ) -> Result<ToolError, D::Error> {
            let fields = Fields::deserialize(deserializer)?;
            let mut error =
                ToolError::new(fields.code.into_owned(), fields.error_message.into_owned());
            if fields.retryable {
                error = error.retryable();
            }
            if fields.in_doubt {
                error = error.in_doubt();
            }
            Ok(error)
        }
    }

    /// A timeout as `timeout_ms` (on the wire too) and the exact `timeout_secs` and
    /// `timeout_subsec_nanos` (in the record only, and what is read back).
    pub(crate) mod timeout {
        use super::*;

        #[derive(Serialize)]
        struct Written {
            timeout_ms: u64,
            timeout_secs: u64,
            timeout_subsec_nanos: u32,
        }

        #[derive(Deserialize)]
        struct Read {
            timeout_secs: u64,
            timeout_subsec_nanos: u32,
        }

        pub(crate) fn serialize<S: Serializer>(
            after: &Duration,
            serializer: S,
        ) -> Result<S::Ok, S::Error> {
            Written {
                timeout_ms: u64::try_from(after.as_millis()).unwrap_or(u64::MAX),
                timeout_secs: after.as_secs(),
                timeout_subsec_nanos: after.subsec_nanos(),
            }
            .serialize(serializer)
        }

        pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
            deserializer: D,
        ) -> Result<Duration, D::Error> {
            let read = Read::deserialize(deserializer)?;
            Ok(Duration::new(read.timeout_secs, read.timeout_subsec_nanos))
        }
    }

    /// The names `ProposalClosed::status` can hold.
    const PROPOSAL_STATUSES: [&str; 5] =
        ["pending", "approved", "rejected", "expired", "withdrawn"];

    /// The names `MutationScopeMissing::fields` can hold.
    const SCOPE_FIELDS: [&str; 2] = [
        ScopeField::ThreadId.as_str(),
        ScopeField::ProjectId.as_str(),
    ];

    pub(crate) fn context_fields<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Vec<&'static str>, D::Error> {
        names(deserializer, "fields", &REQUIRED_CONTEXT_FIELDS)
    }

    pub(crate) fn scope_fields<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Vec<&'static str>, D::Error> {
        names(deserializer, "fields", &SCOPE_FIELDS)
    }

    pub(crate) fn proposal_status<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<&'static str, D::Error> {
        let text = String::deserialize(deserializer)?;
        known("status", &text, &PROPOSAL_STATUSES).map_err(D::Error::custom)
    }

    fn names<'de, D: Deserializer<'de>>(
        deserializer: D,
        key: &str,
        vocabulary: &[&'static str],
    ) -> Result<Vec<&'static str>, D::Error> {
        Vec::<String>::deserialize(deserializer)?
            .iter()
            .map(|text| known(key, text, vocabulary).map_err(D::Error::custom))
            .collect()
    }

    /// A name from a closed vocabulary, as the `&'static str` the error holds.
    fn known(key: &str, text: &str, vocabulary: &[&'static str]) -> Result<&'static str, String> {
        vocabulary
            .iter()
            .copied()
            .find(|name| *name == text)
            .ok_or_else(|| {
                format!(
                    "field `{key}`: `{text}` is not one of {}",
                    vocabulary.join(", ")
                )
            })
    }
}

#[cfg(test)]
mod tests {
    use std::{collections::BTreeSet, time::Duration};

    use serde_json::json;

    use super::*;
    use crate::{
        Category, Initiator,
        error::{FieldError, ToolError},
    };

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
                    FieldError::new(
                        "/x",
                        "unknown field `x`; the fields here are `shift_id`, `user_id`",
                    ),
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
            InvokeError::LayerRefused {
                tool: tool(),
                layer: "business-hours".to_owned(),
                code: "outside_business_hours".to_owned(),
                reason: "changes are made between 08:00 and 18:00".to_owned(),
            },
            InvokeError::RateLimited {
                tool: tool(),
                limit: "60 calls per 60 s per user".to_owned(),
                retry_after_ms: 1_250,
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
            InvokeError::AuditUnavailable {
                tool: tool(),
                reason: "the audit store is failing: connection refused".to_owned(),
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
            .iter()
            .filter(|kind| !matches!(kind, ErrorKind::NoRoute | ErrorKind::Cancelled))
            .map(|kind| kind.as_str())
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
    fn a_retryable_tool_error_says_so_in_both_forms_and_only_then() {
        let plain = InvokeError::ToolFailed {
            tool: "t".to_owned(),
            error: ToolError::new("busy", "try later"),
        };
        assert!(plain.to_record().get("retryable").is_none());
        let retryable = InvokeError::ToolFailed {
            tool: "t".to_owned(),
            error: ToolError::new("busy", "try later").retryable(),
        };
        let record = retryable.to_record();
        assert_eq!(record["retryable"], true);
        assert_eq!(
            serde_json::to_value(&retryable).expect("wire")["retryable"],
            true
        );
        let read = InvokeError::from_record(&record).expect("reads back");
        assert!(matches!(read, InvokeError::ToolFailed { error, .. } if error.is_retryable()));
    }

    #[test]
    fn an_error_in_doubt_says_so_in_both_forms_and_reads_back() {
        let plain = InvokeError::ToolFailed {
            tool: "t".to_owned(),
            error: ToolError::new("lost", "the answer was lost"),
        };
        assert!(plain.to_record().get("in_doubt").is_none());
        assert!(!plain.is_in_doubt());
        let in_doubt = InvokeError::ToolFailed {
            tool: "t".to_owned(),
            error: ToolError::new("lost", "the answer was lost").in_doubt(),
        };
        let record = in_doubt.to_record();
        assert_eq!(record["in_doubt"], true);
        assert_eq!(
            serde_json::to_value(&in_doubt).expect("wire")["in_doubt"],
            true
        );
        let read = InvokeError::from_record(&record).expect("reads back");
        assert!(read.is_in_doubt());
        assert_eq!(read, in_doubt);
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
