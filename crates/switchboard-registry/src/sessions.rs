//! Per-session tool lists: the unlisted tools a session asked to see.
//!
//! A tool list is the same for every caller holding the same roles:
//! [`Exposure::Unlisted`](crate::Exposure::Unlisted) tools are found by name, never listed. Some
//! callers hold a session whose list may grow on request (an MCP 2025-11-25 session, an in-process
//! agent): such a caller opens the session with [`ToolRegistry::open_session`], may then reveal a
//! domain's unlisted tools to it ([`ToolRegistry::reveal_domain`]), and lists with
//! [`ToolRegistry::list_permitted_in`]. A caller that opened nothing cannot reveal anything: MCP
//! 2026-07-28 says that a tool list must not vary by connection, so its transport never opens one.
//!
//! Revealing changes no tool and no permission: a revealed tool is listed to the session's
//! callers only if their roles may call it, and every call still passes every check. Each
//! reveal counts as a change of the tool table ([`ToolRegistry::watch_changes`]), so that a
//! session watching its list recomputes it. What a session revealed is forgotten when the last
//! [`OpenSession`] guard for it is dropped.

use std::{collections::BTreeSet, sync::Arc};

use switchboard_core::{Role, ToolDescriptor};

use crate::{
    error::RegistryError,
    registry::{Shared, ToolRegistry},
};

/// What the registry keeps of one open session.
#[derive(Debug, Default)]
pub(crate) struct SessionList {
    /// How many [`OpenSession`] guards hold it.
    holders: usize,
    /// The domains whose unlisted tools it lists.
    revealed: BTreeSet<Arc<str>>,
}

/// Every open session's list, by session id.
pub(crate) type SessionLists = scc::HashMap<Arc<str>, SessionList>;

/// A session whose tool list may grow (see the module docs); dropping the last guard of a
/// session forgets what it revealed.
#[must_use = "the session's list is forgotten when the guard is dropped"]
pub struct OpenSession {
    shared: Arc<Shared>,
    session: Arc<str>,
}

impl std::fmt::Debug for OpenSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenSession")
            .field("session", &self.session)
            .finish_non_exhaustive()
    }
}

impl OpenSession {
    /// The session's id.
    pub fn session(&self) -> &str {
        &self.session
    }
}

impl Drop for OpenSession {
    fn drop(&mut self) {
        let _ = self.shared.sessions.remove_if_sync(&*self.session, |list| {
            list.holders = list.holders.saturating_sub(1);
            list.holders == 0
        });
    }
}

impl ToolRegistry {
    /// Opens `session`'s own tool list, which [`reveal_domain`](Self::reveal_domain) may then
    /// grow. The list lives as long as a returned guard does.
    pub fn open_session(&self, session: &str) -> OpenSession {
        let session: Arc<str> = Arc::from(session);
        self.shared()
            .sessions
            .entry_sync(Arc::clone(&session))
            .or_default()
            .get_mut()
            .holders += 1;
        OpenSession {
            shared: Arc::clone(self.shared_arc()),
            session,
        }
    }

    /// Lists the unlisted tools of `domain` (those registered now and later) to `session`,
    /// which must be open. Refused when the session is not open
    /// ([`RegistryError::SessionNotOpen`]) or already lists the domain
    /// ([`RegistryError::AlreadyRevealed`]).
    pub fn reveal_domain(&self, session: &str, domain: &str) -> Result<(), RegistryError> {
        let revealed = self
            .shared()
            .sessions
            .update_sync(session, |_, list| list.revealed.insert(Arc::from(domain)));
        match revealed {
            None => Err(RegistryError::SessionNotOpen {
                session: session.to_owned(),
            }),
            Some(false) => Err(RegistryError::AlreadyRevealed {
                session: session.to_owned(),
                domain: domain.to_owned(),
            }),
            Some(true) => {
                self.shared().note_change();
                Ok(())
            }
        }
    }

    /// The domains `session` revealed, sorted; empty when it is not open.
    pub fn revealed_domains(&self, session: &str) -> Vec<String> {
        self.shared()
            .sessions
            .read_sync(session, |_, list| {
                list.revealed
                    .iter()
                    .map(|domain| domain.to_string())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// [`list_permitted`](Self::list_permitted) as `session` sees it: with the unlisted tools
    /// of the domains it revealed.
    pub fn list_permitted_in(&self, roles: &[Role], session: &str) -> Vec<Arc<ToolDescriptor>> {
        let revealed = self
            .shared()
            .sessions
            .read_sync(session, |_, list| list.revealed.clone())
            .unwrap_or_default();
        if revealed.is_empty() {
            return self.list_permitted(roles);
        }
        self.shared()
            .table
            .load()
            .iter()
            .filter(|tool| {
                tool.exposure.listed(revealed.contains(&*tool.domain.name))
                    && tool.granted_to(roles)
            })
            .map(|tool| Arc::clone(&tool.descriptor))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use serde_json::{Value, json};
    use switchboard_core::{BoxFuture, Category, ToolContext, ToolError, ToolOrigin};

    use super::*;
    use crate::{Exposure, RuntimeTool, RuntimeToolSpec};

    struct Nothing;

    impl RuntimeTool for Nothing {
        fn call<'a>(
            &'a self,
            _ctx: &'a ToolContext,
            _params: Value,
        ) -> BoxFuture<'a, Result<Value, ToolError>> {
            Box::pin(async { Ok(json!({})) })
        }
    }

    fn tool(name: &'static str, domain: &'static str, exposure: Exposure) -> RuntimeToolSpec {
        RuntimeToolSpec {
            descriptor: ToolDescriptor {
                name: Cow::Borrowed(name),
                title: None,
                domain: Cow::Borrowed(domain),
                category: Category::Read,
                permission: Cow::Borrowed("lazy.read"),
                description: Cow::Borrowed("Registered by a test."),
                intents: Vec::new(),
                tags: Vec::new(),
                timeout: None,
                input_schema: Arc::new(json!({"type": "object"})),
                output_schema: None,
                tasks: switchboard_core::TaskSupport::Forbidden,
                asks_before_task: false,
                origin: ToolOrigin::Runtime {
                    source: "sessions-test".to_owned(),
                },
            },
            tool: Arc::new(Nothing),
            exposure,
        }
    }

    fn names(tools: &[Arc<ToolDescriptor>]) -> Vec<&str> {
        tools
            .iter()
            .map(|tool| &*tool.name)
            .filter(|name| name.starts_with("lazy_") || name.starts_with("other_"))
            .collect()
    }

    #[tokio::test]
    async fn an_open_session_lists_the_domains_it_revealed_and_forgets_them_when_closed() {
        let registry = ToolRegistry::builder().start().await.expect("starts");
        registry
            .register(vec![
                tool("lazy_a", "lazy", Exposure::Unlisted),
                tool("lazy_b", "lazy", Exposure::Unlisted),
                tool("lazy_held", "lazy", Exposure::Withheld),
                tool("other_c", "other", Exposure::Unlisted),
            ])
            .await
            .expect("registers");
        let admin = [Role::from("admin")];
        assert!(names(&registry.list_permitted_in(&admin, "s1")).is_empty());

        // Nothing can be revealed to a session that has no list of its own.
        let refused = registry.reveal_domain("s1", "lazy");
        assert!(
            matches!(refused, Err(RegistryError::SessionNotOpen { .. })),
            "{refused:?}"
        );

        let first = registry.open_session("s1");
        let second = registry.open_session("s1");
        let mut changes = registry.watch_changes();
        changes.mark_unchanged();
        registry.reveal_domain("s1", "lazy").expect("reveals");
        assert!(changes.has_changed().expect("open"), "a reveal is a change");
        // A withheld tool stays out even of a session that revealed its domain.
        assert_eq!(
            names(&registry.list_permitted_in(&admin, "s1")),
            ["lazy_a", "lazy_b"]
        );
        assert_eq!(registry.revealed_domains("s1"), ["lazy"]);
        // Only that session, and only to roles that may call the tools.
        assert!(names(&registry.list_permitted_in(&admin, "s2")).is_empty());
        assert!(names(&registry.list_permitted(&admin)).is_empty());
        assert!(names(&registry.list_permitted_in(&[Role::from("guest")], "s1")).is_empty());

        let again = registry.reveal_domain("s1", "lazy");
        assert!(
            matches!(again, Err(RegistryError::AlreadyRevealed { .. })),
            "{again:?}"
        );

        // The list lives while a guard does.
        drop(first);
        assert_eq!(registry.revealed_domains("s1"), ["lazy"]);
        drop(second);
        assert!(registry.revealed_domains("s1").is_empty());
        assert!(names(&registry.list_permitted_in(&admin, "s1")).is_empty());
        assert!(matches!(
            registry.reveal_domain("s1", "lazy"),
            Err(RegistryError::SessionNotOpen { .. })
        ));
        registry.shutdown().await;
    }

    #[tokio::test]
    async fn a_weak_handle_does_not_keep_the_registry() {
        let registry = ToolRegistry::builder().start().await.expect("starts");
        let weak = registry.downgrade();
        assert!(weak.upgrade().is_some());
        registry.shutdown().await;
        drop(registry);
        assert!(weak.upgrade().is_none());
    }
}
