//! `notifications/tools/list_changed`: telling a client that the tools it may call changed,
//! when tools are registered or removed at run time (`ToolRegistry::register`/`unregister`),
//! or switched off and on (`ToolRegistry::disable`/`enable`).
//!
//! The registry bumps a `watch` counter on every change; [`watch_visible_tools`] waits on it
//! and notifies only when the list *this* client sees (the tools its roles are permitted, with
//! those its session revealed: `ToolRegistry::list_permitted_in`) differs from before, so a
//! client never learns that tools it cannot see came or went. On
//! 2025 revisions one watcher runs per session from `notifications/initialized` until the
//! session ends; on 2026-07-28 it runs inside a `subscriptions/listen` request.

use std::{future::Future, sync::Arc};

use switchboard_core::{Role, ToolDescriptor};
use switchboard_registry::ToolRegistry;
use tokio::sync::watch;

/// What a watcher compares against: the registry's change counter and the tools `roles` could
/// see, both taken at one moment. A watcher notifies for every change after that moment.
#[derive(Debug)]
pub(crate) struct Baseline {
    changes: watch::Receiver<u64>,
    visible: Vec<Arc<ToolDescriptor>>,
}

impl Baseline {
    /// The registry as `roles` see it now, in `session` if it has a list of its own.
    pub(crate) fn now(registry: &ToolRegistry, roles: &[Role], session: Option<&str>) -> Self {
        // Subscribed first: a change between the two lines is then seen as a change.
        let changes = registry.watch_changes();
        let visible = visible_tools(registry, roles, session);
        Self { changes, visible }
    }
}

/// The tools `roles` may call, with those `session` revealed.
fn visible_tools(
    registry: &ToolRegistry,
    roles: &[Role],
    session: Option<&str>,
) -> Vec<Arc<ToolDescriptor>> {
    match session {
        Some(session) => registry.list_permitted_in(roles, session),
        None => registry.list_permitted(roles),
    }
}

/// Calls `notify` each time the tools `roles` may call (in `session`, if it has a list of its
/// own) change after `baseline` was taken,
/// until `stop` completes, the registry goes away, or `notify` answers `false` (the client is
/// gone).
pub(crate) async fn watch_visible_tools<N, Sent>(
    registry: ToolRegistry,
    roles: Vec<Role>,
    session: Option<Arc<str>>,
    baseline: Baseline,
    stop: impl Future<Output = ()>,
    mut notify: N,
) where
    N: FnMut() -> Sent,
    Sent: Future<Output = bool>,
{
    let Baseline {
        mut changes,
        mut visible,
    } = baseline;
    let mut stop = std::pin::pin!(stop);
    loop {
        tokio::select! {
            () = &mut stop => return,
            changed = changes.changed() => {
                if changed.is_err() {
                    return;
                }
            }
        }
        let now = visible_tools(&registry, &roles, session.as_deref());
        if now != visible {
            visible = now;
            if !notify().await {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::{
        borrow::Cow,
        sync::atomic::{AtomicUsize, Ordering},
        time::Duration,
    };

    use serde_json::{Value, json};
    use switchboard_core::{BoxFuture, Category, ToolContext, ToolError, ToolOrigin};
    use switchboard_registry::{RuntimeTool, RuntimeToolSpec};

    use super::*;

    /// A run-time tool that answers `{}`.
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

    fn mounted(name: &'static str) -> RuntimeToolSpec {
        RuntimeToolSpec {
            descriptor: ToolDescriptor {
                name: Cow::Borrowed(name),
                title: None,
                domain: Cow::Borrowed("mounted"),
                category: Category::Read,
                permission: Cow::Borrowed("core.users.read"),
                description: Cow::Borrowed("Registered at run time by a test."),
                intents: Vec::new(),
                tags: Vec::new(),
                timeout: None,
                input_schema: Arc::new(json!({"type": "object", "properties": {}})),
                output_schema: None,
                tasks: switchboard_core::TaskSupport::Forbidden,
                asks_before_task: false,
                origin: ToolOrigin::Runtime {
                    source: "list-changed-test".to_owned(),
                },
            },
            tool: Arc::new(Nothing),
            exposure: switchboard_registry::Exposure::Listed,
        }
    }

    /// The race a subscription had: the baseline is taken (the subscription acknowledged),
    /// the tools change, and only then does the watcher start. It must still notify.
    #[tokio::test]
    async fn a_change_between_the_baseline_and_the_watcher_is_notified() {
        let registry = ToolRegistry::builder()
            .start()
            .await
            .expect("the registry starts");
        let roles = vec![Role::from("admin")];
        let baseline = Baseline::now(&registry, &roles, None);
        registry
            .register(vec![mounted("mounted_lookup")])
            .await
            .expect("registers");
        let notified = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&notified);
        let watching = watch_visible_tools(
            registry.clone(),
            roles,
            None,
            baseline,
            std::future::pending(),
            move || {
                counter.fetch_add(1, Ordering::SeqCst);
                // The client is gone after the first notice: the watcher returns.
                async { false }
            },
        );
        tokio::time::timeout(Duration::from_secs(10), watching)
            .await
            .expect("the watcher notified and returned");
        assert_eq!(notified.load(Ordering::SeqCst), 1);
        registry.shutdown().await;
    }
}
