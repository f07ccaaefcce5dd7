//! Identifiers carried by a call: organisation, user, session, correlation and role.
//!
//! Each is a distinct newtype so an `org_id` can never be passed where a `user_id` is expected.
//! They wrap `Arc<str>`: a context is cloned on every call, and cloning an id must be a
//! reference-count bump, not an allocation.
//!
//! The newtypes take any string. The ids a caller chooses (a session, a correlation id, a
//! thread, a project, an idempotency key) are stored in audit records and proposals and printed
//! back to people, so the edges that accept them (the CLI's flags, an MCP request's `_meta`)
//! check them with [`is_valid_id`] first: one short, printable format, the same everywhere.

use std::{fmt, sync::Arc};

use serde::{Deserialize, Serialize};

/// The longest id a caller may choose, in characters (ids are ASCII).
pub const MAX_ID_LEN: usize = 128;

/// The id format in words, for the messages that refuse an id.
pub const ID_FORMAT: &str = "1 to 128 characters from A-Z a-z 0-9 . _ : -";

/// Whether `text` may serve as an id a caller chooses: 1 to [`MAX_ID_LEN`] characters of
/// `A-Z a-z 0-9 . _ : -` ([`ID_FORMAT`]).
///
/// Nothing outside printable ASCII gets in, so a stored id can never forge a line or a column
/// of human output, and none is larger than a line of it. Hyphenated UUIDs, `cli-<uuid>`,
/// W3C `traceparent` values and `derived-<hex>` keys all fit.
pub fn is_valid_id(text: &str) -> bool {
    !text.is_empty()
        && text.len() <= MAX_ID_LEN
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b':' | b'-'))
}

/// The longest tool tag, in characters (tags are ASCII).
pub const MAX_TAG_LEN: usize = 64;

/// The tag format in words, for the messages that refuse a tag.
pub const TAG_FORMAT: &str = "1 to 64 characters from a-z 0-9 _ -";

/// Whether `text` may serve as a tool tag: 1 to [`MAX_TAG_LEN`] characters of
/// `a-z 0-9 _ -` ([`TAG_FORMAT`]).
///
/// A tag is an id of the narrowest kind: lowercase, so that `Beta` and `beta` are never two
/// tags, and without `:` or `.`, so that a selector such as `tag:beta` reads one way only.
pub fn is_valid_tag(text: &str) -> bool {
    !text.is_empty()
        && text.len() <= MAX_TAG_LEN
        && text
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'_' | b'-'))
}

/// A fresh id for a session, a call or a connection that brings none: `<prefix>-<uuid v7>`.
///
/// Version 7 UUIDs (RFC 9562) start with the time in milliseconds, so ids minted later sort
/// later. With a prefix of up to 91 characters from [`ID_FORMAT`], the id is valid
/// ([`is_valid_id`]).
pub fn mint_id(prefix: &str) -> String {
    format!("{prefix}-{}", uuid::Uuid::now_v7())
}

macro_rules! id_type {
    ($(#[$meta:meta])* $name:ident) => {
        $(#[$meta])*
        #[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(Arc<str>);

        impl $name {
            /// Wraps a string as this identifier.
            pub fn new(value: impl Into<Arc<str>>) -> Self {
                Self(value.into())
            }

            /// The identifier as a string slice.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}({:?})", stringify!($name), &*self.0)
            }
        }

        impl From<&str> for $name {
            fn from(value: &str) -> Self {
                Self::new(value)
            }
        }

        impl From<String> for $name {
            fn from(value: String) -> Self {
                Self::new(value)
            }
        }

        impl std::borrow::Borrow<str> for $name {
            fn borrow(&self) -> &str {
                &self.0
            }
        }

        impl schemars::JsonSchema for $name {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                std::borrow::Cow::Borrowed("String")
            }

            fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
                <String as schemars::JsonSchema>::json_schema(generator)
            }

            fn inline_schema() -> bool {
                true
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                &*self.0 == other
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                &*self.0 == *other
            }
        }
    };
}

id_type!(
    /// The tenant a call acts for. Only ever taken from the call context, never from params.
    OrgId
);
id_type!(
    /// The user on whose behalf a call runs.
    UserId
);
id_type!(
    /// The session (chat, MCP session, CLI run) a call belongs to.
    SessionId
);
id_type!(
    /// Ties together every call made for one request, across tools and audit records.
    CorrelationId
);
id_type!(
    /// A role the caller holds; the permission matrix maps roles to permissions.
    Role
);
id_type!(
    /// A conversation thread (a chat, an agent run). Owned by one user; the runtime checks
    /// that the caller owns the thread a call names.
    ThreadId
);
id_type!(
    /// The project a call works in, when the caller's product has projects.
    ProjectId
);
id_type!(
    /// The kind of agent making a call (`planner`, `scheduler`, …), as the runtime, the CLI or
    /// the MCP identity knows it. The agent scope table maps it to the tools it may use.
    AgentType
);
id_type!(
    /// Names one intended mutation: a retry with the same key is the same action. Given by
    /// the caller, or derived by the runtime from tool, org, thread and params.
    IdempotencyKey
);
id_type!(
    /// Names one executed (or proposed) mutation in the audit trail: the first run, its
    /// replays, and the proposal it came from share it.
    ActionId
);
id_type!(
    /// Names one stored proposal, awaiting a human's decision.
    ProposalId
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minted_ids_are_prefixed_version_7_uuids_and_valid_ids() {
        let id = mint_id("mcp-session");
        let uuid = id.strip_prefix("mcp-session-").expect("the prefix");
        assert_eq!(
            uuid::Uuid::parse_str(uuid).map(|uuid| uuid.get_version_num()),
            Ok(7)
        );
        assert!(is_valid_id(&id), "{id}");
        assert_ne!(mint_id("cli"), mint_id("cli"));
    }

    #[test]
    fn ids_are_short_printable_ascii() {
        for good in [
            "c1",
            "cli-0190b7c1-7d2e-7f3a-9c1d-2b3c4d5e6f70",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "rollout:2026.q1_x",
        ] {
            assert!(is_valid_id(good), "{good}");
        }
        assert!(is_valid_id(&"x".repeat(MAX_ID_LEN)));
        let too_long = "x".repeat(MAX_ID_LEN + 1);
        for bad in [
            "",
            " ",
            "a b",
            "a\nb",
            "a\u{1b}[31mb",
            "a\u{7f}",
            "a\u{85}b",
            "caf\u{e9}",
            "a/b",
            too_long.as_str(),
        ] {
            assert!(!is_valid_id(bad), "{bad:?}");
        }
        assert!(ID_FORMAT.contains(&MAX_ID_LEN.to_string()));
    }

    #[test]
    fn tags_are_short_lowercase_words() {
        for good in ["beta", "billing", "v2", "read_only", "early-access"] {
            assert!(is_valid_tag(good), "{good}");
        }
        assert!(is_valid_tag(&"t".repeat(MAX_TAG_LEN)));
        let too_long = "t".repeat(MAX_TAG_LEN + 1);
        for bad in [
            "",
            "Beta",
            "a b",
            "tag:beta",
            "a.b",
            "caf\u{e9}",
            too_long.as_str(),
        ] {
            assert!(!is_valid_tag(bad), "{bad:?}");
        }
    }
}
