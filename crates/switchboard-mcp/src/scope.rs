//! The thread and project a `tools/call` names in its `_meta`, and how the thread gets an owner.
//!
//! The execution context carries who calls (the identity, `crate::identity`) and where the call
//! belongs: its conversation thread and its project. A tool never reads these from its params;
//! over MCP the client names them in the request's `_meta`, under keys of our own prefix:
//!
//! ```json
//! {"method": "tools/call", "params": {"name": "roster_assign_shift", "arguments": {...},
//!   "_meta": {"switchboard/thread_id": "chat-7f3a", "switchboard/project_id": "rollout"}}}
//! ```
//!
//! Both are optional. A value must be an id: a string of 1 to [`MAX_ID_LEN`] characters from
//! `A-Z a-z 0-9 . _ : -`; anything else is refused with `-32602` before the call is made.
//!
//! The registry refuses a call naming a thread its user does not own (`thread_not_owned`).
//! Over MCP, the client invents its threads, so a thread is opened for the calling user the
//! first time a call names it ([`ThreadDirectory::open_if_absent`]); from then on it is theirs,
//! and another user of the organisation naming it is refused. A directory that does not open
//! threads on demand (an application's own) is only asked who the owner is.
//!
//! [`ThreadDirectory::open_if_absent`]: switchboard_registry::ThreadDirectory::open_if_absent

use rmcp::{ErrorData, model::RequestMetaObject};
use serde_json::Value;
use switchboard_core::{CallContext, ProjectId, ThreadId};
use switchboard_registry::ToolRegistry;

/// The `_meta` key naming a call's conversation thread.
pub const THREAD_META_KEY: &str = "switchboard/thread_id";

/// The `_meta` key naming a call's project.
pub const PROJECT_META_KEY: &str = "switchboard/project_id";

/// The longest id accepted, in characters (ids are ASCII).
pub(crate) use switchboard_core::MAX_ID_LEN;

/// The thread and project of one request.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct RequestScope {
    pub(crate) thread: Option<ThreadId>,
    pub(crate) project: Option<ProjectId>,
}

impl RequestScope {
    /// Reads the scope keys of a request's `_meta`; `-32602` names a key whose value is no id.
    pub(crate) fn from_meta(meta: &RequestMetaObject) -> Result<Self, ErrorData> {
        let map = &meta.0.0;
        // Most calls name neither: two lookups and nothing else.
        let thread = map.get(THREAD_META_KEY);
        let project = map.get(PROJECT_META_KEY);
        if thread.is_none() && project.is_none() {
            return Ok(Self::default());
        }
        Ok(Self {
            thread: read_id(THREAD_META_KEY, thread)?.map(ThreadId::new),
            project: read_id(PROJECT_META_KEY, project)?.map(ProjectId::new),
        })
    }

    /// Puts the scope into `context`, opening the thread for the context's user if nobody
    /// owns it yet.
    pub(crate) fn apply(&self, context: &mut CallContext, registry: &ToolRegistry) {
        if let Some(thread) = &self.thread {
            if let (Some(org), Some(user)) = (&context.org_id, &context.user_id) {
                let owner = registry.threads().open_if_absent(org, thread, user);
                if owner.as_ref() != Some(user) {
                    tracing::info!(
                        thread_id = %thread,
                        "the MCP call names a thread another user owns; the registry will refuse it"
                    );
                }
            }
            context.thread_id = Some(thread.clone());
        }
        if let Some(project) = &self.project {
            context.project_id = Some(project.clone());
        }
    }
}

/// Whether `text` is an id: 1 to [`MAX_ID_LEN`] characters of `A-Z a-z 0-9 . _ : -`, the one
/// format every caller-chosen id is held to.
pub(crate) use switchboard_core::is_valid_id as is_id;

fn read_id<'v>(key: &str, value: Option<&'v Value>) -> Result<Option<&'v str>, ErrorData> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) if is_id(text) => Ok(Some(text)),
        Some(_) => Err(ErrorData::invalid_params(
            format!(
                "`_meta.{key}` must be an id: a string of 1 to {MAX_ID_LEN} characters from \
                 A-Z a-z 0-9 . _ : -"
            ),
            None,
        )),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn meta(value: Value) -> RequestMetaObject {
        serde_json::from_value(value).expect("a _meta object")
    }

    #[test]
    fn reads_both_keys_and_nothing_else() {
        let scope = RequestScope::from_meta(&meta(json!({
            THREAD_META_KEY: "chat-7f3a",
            PROJECT_META_KEY: "rollout:2026",
            "progressToken": 1,
        })))
        .expect("valid ids");
        assert_eq!(scope.thread, Some(ThreadId::from("chat-7f3a")));
        assert_eq!(scope.project, Some(ProjectId::from("rollout:2026")));
        assert_eq!(
            RequestScope::from_meta(&meta(json!({"thread_id": "x"}))).expect("no scope"),
            RequestScope::default(),
            "only our prefixed keys count"
        );
    }

    #[test]
    fn refuses_what_is_not_an_id() {
        let long = "x".repeat(MAX_ID_LEN + 1);
        for bad in [
            json!(""),
            json!("a b"),
            json!(7),
            json!({"id": "t"}),
            json!(long),
        ] {
            let error = RequestScope::from_meta(&meta(json!({ THREAD_META_KEY: bad })))
                .expect_err("not an id");
            assert_eq!(error.code, rmcp::model::ErrorCode::INVALID_PARAMS);
            assert!(error.message.contains(THREAD_META_KEY), "{}", error.message);
        }
        assert!(is_id(&"x".repeat(MAX_ID_LEN)));
    }
}
