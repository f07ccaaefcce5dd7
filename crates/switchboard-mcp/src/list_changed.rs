//! `notifications/tools/list_changed`: telling a client that the tools it may call changed,
//! when tools are registered or removed at run time (`ToolRegistry::register`/`unregister`).
//!
//! The registry bumps a `watch` counter on every change; [`watch_visible_tools`] waits on it
//! and notifies only when the list *this* client sees (the tools its roles are permitted)
//! differs from before, so a client never learns that tools it cannot see came or went. On
//! 2025 revisions one watcher runs per session from `notifications/initialized` until the
//! session ends; on 2026-07-28 it runs inside a `subscriptions/listen` request.

use std::future::Future;

use switchboard_core::Role;
use switchboard_registry::ToolRegistry;

/// Calls `notify` each time the tools `roles` may call change, until `stop` completes, the
/// registry goes away, or `notify` answers `false` (the client is gone).
pub(crate) async fn watch_visible_tools<N, Sent>(
    registry: ToolRegistry,
    roles: Vec<Role>,
    stop: impl Future<Output = ()>,
    mut notify: N,
) where
    N: FnMut() -> Sent,
    Sent: Future<Output = bool>,
{
    let mut changes = registry.watch_changes();
    let mut visible = registry.list_permitted(&roles);
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
        let now = registry.list_permitted(&roles);
        if now != visible {
            visible = now;
            if !notify().await {
                return;
            }
        }
    }
}
