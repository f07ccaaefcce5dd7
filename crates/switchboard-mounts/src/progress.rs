//! Progress from a mounted server, passed on to whoever called the mounted tool.
//!
//! rmcp gives every request it sends a progress token of its own, so a call learns its token
//! only once the request is on its way. The call then routes that token to its caller's
//! [`ProgressNotifier`] here, and the server's client handler looks each
//! `notifications/progress` up by token. The routes are per server and outlive a restart;
//! a route is removed when its call ends. A report that arrives before the call has routed
//! its token (a server reporting within microseconds of the request) is dropped, as MCP
//! allows for progress.
//!
//! The same per-server value carries the server's [`LogRoutes`]: the calls in flight that its
//! log messages may go to ([`crate::logs`]), so everything a call hears from its server reaches
//! the tool through one handle.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex, PoisonError},
};

use rmcp::model::{ProgressNotificationParam, ProgressToken};
use switchboard_core::ProgressNotifier;

use crate::logs::LogRoutes;

/// Where each in-flight call of one server's tools wants its progress, and its logs.
#[derive(Debug, Clone, Default)]
pub(crate) struct ProgressRoutes {
    tokens: Arc<Mutex<HashMap<ProgressToken, ProgressNotifier>>>,
    logs: LogRoutes,
}

impl ProgressRoutes {
    /// The calls in flight that the server's log messages may go to.
    pub(crate) fn logs(&self) -> &LogRoutes {
        &self.logs
    }

    /// Routes `token`'s reports to `notifier` until the returned guard is dropped.
    pub(crate) fn route(&self, token: ProgressToken, notifier: ProgressNotifier) -> Route {
        self.tokens
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(token.clone(), notifier);
        Route {
            routes: self.clone(),
            token,
        }
    }

    /// Passes one report on, if a call routed its token.
    pub(crate) fn deliver(&self, report: &ProgressNotificationParam) {
        let notifier = self
            .tokens
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&report.progress_token)
            .cloned();
        if let Some(notifier) = notifier {
            notifier.report(report.progress, report.total, report.message.as_deref());
        }
    }
}

/// A routed token; dropping it removes the route.
#[derive(Debug)]
pub(crate) struct Route {
    routes: ProgressRoutes,
    token: ProgressToken,
}

impl Drop for Route {
    fn drop(&mut self) {
        self.routes
            .tokens
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&self.token);
    }
}
