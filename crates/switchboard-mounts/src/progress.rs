//! Progress from a mounted server, passed on to whoever called the mounted tool.
//!
//! rmcp gives every request it sends a progress token of its own, so a call learns its token
//! only once the request is on its way. The call then routes that token to its caller's
//! [`ProgressNotifier`] here, and the connection's reader (`connection::Routing`) looks each
//! `notifications/progress` up by token as it reads it, in order with the answers. The routes
//! are per server and outlive a restart; a route is removed when its call ends.
//!
//! A server may report before the call has routed its token (it answers within microseconds of
//! the request). The last [`EARLY_REPORTS`] reports whose token no call has routed are kept,
//! and handed over in order when a call routes their token. Tokens are only unique within one
//! connection, so a new connection forgets them.
//!
//! [`CallRoutes`] is everything the calls in flight of one server hear from it: these progress
//! routes, and the server's [`LogRoutes`] (the calls its log messages may go to,
//! [`crate::logs`]), so the connection's reader and the tool share one handle.

use std::{
    collections::{HashMap, VecDeque},
    sync::{Arc, Mutex, PoisonError},
};

use rmcp::model::{ProgressNotificationParam, ProgressToken};
use switchboard_core::ProgressNotifier;

use crate::logs::LogRoutes;

/// How many reports for tokens no call has routed yet are kept.
pub(crate) const EARLY_REPORTS: usize = 64;

/// Where each in-flight call of one server's tools wants its progress, and its logs.
#[derive(Debug, Clone, Default)]
pub(crate) struct CallRoutes {
    table: Arc<Mutex<Table>>,
    logs: LogRoutes,
}

#[derive(Debug, Default)]
struct Table {
    routes: HashMap<ProgressToken, ProgressNotifier>,
    /// Reports no call had routed when they arrived, oldest first.
    early: VecDeque<ProgressNotificationParam>,
}

impl CallRoutes {
    /// The calls in flight that the server's log messages may go to.
    pub(crate) fn logs(&self) -> &LogRoutes {
        &self.logs
    }

    /// Routes `token`'s reports to `notifier` until the returned guard is dropped, starting
    /// with those that arrived before.
    pub(crate) fn route(&self, token: ProgressToken, notifier: ProgressNotifier) -> Route {
        let early: VecDeque<ProgressNotificationParam> = {
            let mut table = self.table.lock().unwrap_or_else(PoisonError::into_inner);
            table.routes.insert(token.clone(), notifier.clone());
            let (mine, others) = std::mem::take(&mut table.early)
                .into_iter()
                .partition(|report| report.progress_token == token);
            table.early = others;
            mine
        };
        for report in &early {
            notifier.report(report.progress, report.total, report.message.as_deref());
        }
        Route {
            routes: self.clone(),
            token,
        }
    }

    /// Passes one report on, or keeps it if no call has routed its token yet.
    pub(crate) fn deliver(&self, report: &ProgressNotificationParam) {
        let notifier = {
            let mut table = self.table.lock().unwrap_or_else(PoisonError::into_inner);
            let notifier = table.routes.get(&report.progress_token).cloned();
            if notifier.is_none() {
                if table.early.len() == EARLY_REPORTS {
                    table.early.pop_front();
                }
                table.early.push_back(report.clone());
            }
            notifier
        };
        if let Some(notifier) = notifier {
            notifier.report(report.progress, report.total, report.message.as_deref());
        }
    }

    /// Forgets the reports kept for tokens of an earlier connection.
    pub(crate) fn new_connection(&self) {
        self.table
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .early
            .clear();
    }
}

/// A routed token; dropping it removes the route.
#[derive(Debug)]
pub(crate) struct Route {
    routes: CallRoutes,
    token: ProgressToken,
}

impl Drop for Route {
    fn drop(&mut self) {
        self.routes
            .table
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .routes
            .remove(&self.token);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use rmcp::model::NumberOrString;

    use super::*;

    fn report(token: i64, done: f64) -> ProgressNotificationParam {
        ProgressNotificationParam::new(ProgressToken(NumberOrString::Number(token)), done)
    }

    fn collector() -> (ProgressNotifier, Arc<Mutex<Vec<f64>>>) {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&seen);
        let notifier = ProgressNotifier::new(move |progress: switchboard_core::Progress<'_>| {
            sink.lock().expect("not poisoned").push(progress.done);
        });
        (notifier, seen)
    }

    #[test]
    fn reports_before_the_route_are_handed_over_in_order_and_only_to_their_call() {
        let routes = CallRoutes::default();
        routes.deliver(&report(1, 1.0));
        routes.deliver(&report(2, 5.0));
        routes.deliver(&report(1, 2.0));
        let (notifier, seen) = collector();
        let _route = routes.route(ProgressToken(NumberOrString::Number(1)), notifier);
        routes.deliver(&report(1, 3.0));
        assert_eq!(*seen.lock().expect("not poisoned"), [1.0, 2.0, 3.0]);
    }

    #[test]
    fn early_reports_are_bounded_and_forgotten_with_their_connection() {
        let routes = CallRoutes::default();
        for done in 0..(EARLY_REPORTS + 10) {
            routes.deliver(&report(9, done as f64));
        }
        routes.deliver(&report(7, 1.0));
        routes.new_connection();
        let (notifier, seen) = collector();
        let _route = routes.route(ProgressToken(NumberOrString::Number(7)), notifier);
        assert!(seen.lock().expect("not poisoned").is_empty());
        let kept = routes.table.lock().expect("not poisoned").early.len();
        assert_eq!(kept, 0);
    }
}
