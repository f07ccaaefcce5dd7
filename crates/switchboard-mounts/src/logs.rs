//! Log messages from a mounted server (`notifications/message`), passed on to the calls they
//! may belong to, and always to `tracing`.
//!
//! **Why a rule is needed.** A log message carries no request id: MCP does not say which call
//! (if any) a server logged for. So it is attributed by time: it goes to the calls of that
//! server's tools in flight when it arrives. Each call registers its `tracing` span for its
//! duration ([`LogRoutes::listen`]), and the message becomes a `tracing` event inside that
//! span; `switchboard-mcp` sends the events of a call's span to the MCP session that made the
//! call, at the level that session set (its `log_layer`), so the caller gets the server's log
//! as `notifications/message` while the call runs.
//!
//! **Tenants.** One connection to a server serves the calls of every organisation, so
//! attributing by time must not hand one organisation's log to another. A message goes to the
//! calls in flight only if all of them act for one organisation, *and* no call of another
//! organisation ended since [`LINGER`] before the oldest of them started (a server often logs
//! just after it answers, about the call it answered). Otherwise it goes to `tracing` alone.
//! Within one organisation, a message reaches every call in flight, whichever user made it.
//! What no rule can tell apart is a server that, unprompted, logs about one organisation's work
//! while another's calls are running alone; a server whose logs may carry one tenant's data
//! should be mounted once per tenant.
//!
//! **In order.** The message is routed as it is read off the connection (`connection::Routing`),
//! before anything read after it: a message the server sent before its answer is routed while
//! the call is still in flight, so it is queued for the caller before the call returns.
//!
//! **Our logs.** Every message is also a `tracing` event of target [`LOG_TARGET`] with the
//! fields `server`, `mcp.logger` (the server's id, then `/` and the server's logger name if it
//! gave one), `mcp.level` (the MCP level) and `mcp.data` (the data as JSON text): one event in
//! each receiving call's span, or one event outside any span when no call receives it. MCP
//! levels become `tracing` levels as `debug` DEBUG, `info` INFO, `notice` and `warning` WARN,
//! `error` and above ERROR.

#![allow(deprecated)] // rmcp 3 marks the MCP logging types deprecated (SEP-2577).

use std::{
    collections::HashMap,
    sync::{Arc, Mutex, PoisonError},
    time::{Duration, Instant},
};

use rmcp::model::{LoggingLevel, LoggingMessageNotificationParam};
use switchboard_core::OrgId;
use tracing::{Level, Span};

/// The `tracing` target of a mounted server's log messages.
pub(crate) const LOG_TARGET: &str = "switchboard_mounts::server_log";

/// How long after a call of one organisation ends a message is still kept from the calls of
/// another: a server that logs just after answering is logging about the call it answered.
pub(crate) const LINGER: Duration = Duration::from_secs(1);

/// The calls of one server's tools in flight, which its log messages may go to. Per server,
/// and outlives a restart.
#[derive(Debug, Clone, Default)]
pub(crate) struct LogRoutes(Arc<Mutex<InFlight>>);

#[derive(Debug, Default)]
struct InFlight {
    next_call: u64,
    calls: HashMap<u64, Listening>,
    /// When a call of each organisation last ended.
    last_ended: HashMap<OrgId, Instant>,
}

#[derive(Debug)]
struct Listening {
    org: OrgId,
    span: Span,
    started: Instant,
}

impl InFlight {
    /// The calls a message arriving at `now` goes to, by the rule of the module docs: empty
    /// when none may have it.
    fn recipients(&self, now: Instant) -> Vec<u64> {
        let mut calls = self.calls.iter();
        let Some((_, first)) = calls.next() else {
            return Vec::new();
        };
        if calls.any(|(_, call)| call.org != first.org) {
            return Vec::new();
        }
        let oldest = self
            .calls
            .values()
            .map(|call| call.started)
            .min()
            .unwrap_or(now);
        let another_org_just_ended = self
            .last_ended
            .iter()
            .any(|(org, ended)| *org != first.org && *ended + LINGER > oldest);
        if another_org_just_ended {
            return Vec::new();
        }
        let mut ids: Vec<u64> = self.calls.keys().copied().collect();
        ids.sort_unstable();
        ids
    }
}

impl LogRoutes {
    /// Registers a call acting for `org`, whose messages go into `span`, until the returned
    /// guard is dropped.
    pub(crate) fn listen(&self, org: OrgId, span: Span) -> LogRoute {
        let mut in_flight = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let call = in_flight.next_call;
        in_flight.next_call += 1;
        in_flight.calls.insert(
            call,
            Listening {
                org,
                span,
                started: Instant::now(),
            },
        );
        LogRoute {
            routes: self.clone(),
            call,
        }
    }

    /// Passes one message of `server` on: to the calls the rule admits, and to `tracing`.
    pub(crate) fn relay(&self, server: &str, message: &LoggingMessageNotificationParam) {
        let spans: Vec<Span> = {
            let in_flight = self.0.lock().unwrap_or_else(PoisonError::into_inner);
            in_flight
                .recipients(Instant::now())
                .iter()
                .filter_map(|call| in_flight.calls.get(call).map(|call| call.span.clone()))
                .collect()
        };
        let logger = match &message.logger {
            Some(logger) => format!("{server}/{logger}"),
            None => server.to_owned(),
        };
        let relayed = Relayed {
            server,
            logger: &logger,
            level: level_name(message.level),
            data: &message.data.to_string(),
        };
        let level = tracing_level(message.level);
        if spans.is_empty() {
            relayed.emit(level, None);
        }
        for span in spans {
            relayed.emit(level, Some(&span));
        }
    }

    #[cfg(test)]
    fn recipients_at(&self, now: Instant) -> Vec<u64> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .recipients(now)
    }
}

/// A registered call; dropping it ends the registration.
#[derive(Debug)]
pub(crate) struct LogRoute {
    routes: LogRoutes,
    call: u64,
}

impl Drop for LogRoute {
    fn drop(&mut self) {
        let mut in_flight = self.routes.0.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(call) = in_flight.calls.remove(&self.call) {
            in_flight.last_ended.insert(call.org, Instant::now());
        }
    }
}

/// One message as `tracing` fields.
struct Relayed<'a> {
    server: &'a str,
    logger: &'a str,
    level: &'static str,
    data: &'a str,
}

/// A `tracing` event of [`LOG_TARGET`] at a level chosen at run time (`tracing`'s levels are
/// constants of each call site).
macro_rules! relayed_event {
    ($level:expr, $($fields:tt)*) => {
        match $level {
            Level::ERROR => tracing::event!(target: LOG_TARGET, Level::ERROR, $($fields)*),
            Level::WARN => tracing::event!(target: LOG_TARGET, Level::WARN, $($fields)*),
            Level::INFO => tracing::event!(target: LOG_TARGET, Level::INFO, $($fields)*),
            _ => tracing::event!(target: LOG_TARGET, Level::DEBUG, $($fields)*),
        }
    };
}

/// The same, outside any span.
macro_rules! relayed_root_event {
    ($level:expr, $($fields:tt)*) => {
        match $level {
            Level::ERROR => tracing::event!(target: LOG_TARGET, parent: None, Level::ERROR, $($fields)*),
            Level::WARN => tracing::event!(target: LOG_TARGET, parent: None, Level::WARN, $($fields)*),
            Level::INFO => tracing::event!(target: LOG_TARGET, parent: None, Level::INFO, $($fields)*),
            _ => tracing::event!(target: LOG_TARGET, parent: None, Level::DEBUG, $($fields)*),
        }
    };
}

impl Relayed<'_> {
    /// Emits the event inside `span` (entered, so that span-scoped layers see it as the call's),
    /// or outside any span.
    fn emit(&self, level: Level, span: Option<&Span>) {
        let Self {
            server,
            logger,
            level: mcp_level,
            data,
        } = *self;
        match span {
            Some(span) => span.in_scope(|| {
                relayed_event!(
                    level,
                    server,
                    mcp.logger = logger,
                    mcp.level = mcp_level,
                    mcp.data = data,
                    "the mounted server logged"
                );
            }),
            None => relayed_root_event!(
                level,
                server,
                mcp.logger = logger,
                mcp.level = mcp_level,
                mcp.data = data,
                "the mounted server logged"
            ),
        }
    }
}

/// The `tracing` level of an MCP level.
fn tracing_level(level: LoggingLevel) -> Level {
    match level {
        LoggingLevel::Debug => Level::DEBUG,
        LoggingLevel::Info => Level::INFO,
        LoggingLevel::Notice | LoggingLevel::Warning => Level::WARN,
        LoggingLevel::Error
        | LoggingLevel::Critical
        | LoggingLevel::Alert
        | LoggingLevel::Emergency => Level::ERROR,
    }
}

/// An MCP level as written on the wire.
fn level_name(level: LoggingLevel) -> &'static str {
    match level {
        LoggingLevel::Debug => "debug",
        LoggingLevel::Info => "info",
        LoggingLevel::Notice => "notice",
        LoggingLevel::Warning => "warning",
        LoggingLevel::Error => "error",
        LoggingLevel::Critical => "critical",
        LoggingLevel::Alert => "alert",
        LoggingLevel::Emergency => "emergency",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn org(name: &str) -> OrgId {
        OrgId::from(name)
    }

    #[test]
    fn a_message_with_no_call_in_flight_goes_to_no_call() {
        let routes = LogRoutes::default();
        assert!(routes.recipients_at(Instant::now()).is_empty());
    }

    #[test]
    fn a_message_goes_to_every_call_of_the_one_organisation_in_flight() {
        let routes = LogRoutes::default();
        let _first = routes.listen(org("acme"), Span::none());
        let _second = routes.listen(org("acme"), Span::none());
        assert_eq!(routes.recipients_at(Instant::now()), [0, 1]);
    }

    #[test]
    fn a_message_goes_to_no_call_while_two_organisations_have_calls_in_flight() {
        let routes = LogRoutes::default();
        let _acme = routes.listen(org("acme"), Span::none());
        let globex = routes.listen(org("globex"), Span::none());
        assert!(routes.recipients_at(Instant::now()).is_empty());
        drop(globex);
        // globex's call just ended: what the server says now may still be about it.
        assert!(routes.recipients_at(Instant::now()).is_empty());
    }

    #[test]
    fn a_call_of_another_organisation_that_ended_long_before_keeps_nothing_back() {
        let routes = LogRoutes::default();
        drop(routes.listen(org("globex"), Span::none()));
        {
            let mut in_flight = routes.0.lock().expect("not poisoned");
            let long_ago = Instant::now()
                .checked_sub(LINGER * 2)
                .expect("the clock is past two lingers");
            in_flight.last_ended.insert(org("globex"), long_ago);
        }
        let _acme = routes.listen(org("acme"), Span::none());
        assert_eq!(routes.recipients_at(Instant::now()), [1]);
    }

    #[test]
    fn a_call_of_the_same_organisation_that_just_ended_keeps_nothing_back() {
        let routes = LogRoutes::default();
        drop(routes.listen(org("acme"), Span::none()));
        let _again = routes.listen(org("acme"), Span::none());
        assert_eq!(routes.recipients_at(Instant::now()), [1]);
    }

    #[test]
    fn mcp_levels_become_tracing_levels() {
        assert_eq!(tracing_level(LoggingLevel::Debug), Level::DEBUG);
        assert_eq!(tracing_level(LoggingLevel::Info), Level::INFO);
        assert_eq!(tracing_level(LoggingLevel::Notice), Level::WARN);
        assert_eq!(tracing_level(LoggingLevel::Warning), Level::WARN);
        assert_eq!(tracing_level(LoggingLevel::Emergency), Level::ERROR);
        for level in [LoggingLevel::Notice, LoggingLevel::Critical] {
            assert_eq!(
                serde_json::to_value(level).expect("a level serialises"),
                level_name(level)
            );
        }
    }
}
