//! Progress from a mounted server, passed on to whoever called the mounted tool.
//!
//! rmcp gives every request it sends a progress token of its own, so a call learns its token
//! only once the request is on its way. The call then routes that token to its caller's
//! [`ProgressNotifier`] here, and the server's client handler looks each
//! `notifications/progress` up by token. The routes are per server and outlive a restart;
//! a route is removed when its call ends. A report that arrives before the call has routed
//! its token (a server reporting within microseconds of the request) is dropped, as MCP
//! allows for progress.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex, PoisonError},
};

use rmcp::model::{ProgressNotificationParam, ProgressToken};
use switchboard_core::ProgressNotifier;

/// Where each in-flight call of one server's tools wants its progress.
#[derive(Debug, Clone, Default)]
pub(crate) struct ProgressRoutes(Arc<Mutex<HashMap<ProgressToken, ProgressNotifier>>>);

impl ProgressRoutes {
    /// Routes `token`'s reports to `notifier` until the returned guard is dropped.
    pub(crate) fn route(&self, token: ProgressToken, notifier: ProgressNotifier) -> Route {
        self.0
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
            .0
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
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&self.token);
    }
}
