//! MCP logging fed from `tracing`: `logging/setLevel`, and `notifications/message` for the
//! events a call emits, sent to the session that made the call.
//!
//! How an event finds its session: when a session wants logs, the server runs the call inside
//! an `mcp_call` span and puts the call's [`CallLog`] (the session's level and the call's notice
//! queue, see [`crate::notices`]) into that span's extensions. The layer [`log_layer`] looks for
//! a `CallLog` among the spans around each event (the registry's `invoke` span and the tool's
//! own sit inside `mcp_call`) and, if the session's level admits the event, queues it. Events
//! outside any call, and calls of sessions that asked for nothing, are never seen.
//!
//! Relayed logs: an event may say how it is sent, for a log message that comes from elsewhere
//! (a mounted MCP server's `notifications/message`, relayed by `switchboard-mounts`). Its field
//! `mcp.logger` names the logger (else the event's target), `mcp.level` the MCP level (else the
//! one of its `tracing` level), and `mcp.data` holds the data as JSON text (else the data is
//! the event's fields). The session's level applies to the MCP level.
//!
//! Levels: a session gets nothing until it sends `logging/setLevel` (the 2026-07-28 revision has
//! no such method: a request's `_meta` log level applies to that request). MCP levels map onto
//! `tracing` levels: `debug` admits TRACE and DEBUG, `info` INFO, `notice` and `warning` WARN,
//! `error` ERROR; `critical` and above admit nothing, as `tracing` has nothing that severe.
//!
//! Cost: the layer's filter tells `tracing` the most verbose level any session of the process
//! ever asked for (nothing until the first `setLevel`), so until then no event reaches it, and
//! afterwards only events at most that verbose are looked at. The layer needs a
//! [`tracing_subscriber::Registry`] at the base of the subscriber (the usual
//! `tracing_subscriber::registry().with(..)`); with any other subscriber calls simply send no
//! logs. It never writes anywhere itself, so it is safe on stdio.

#![allow(deprecated)] // rmcp 3 marks the MCP logging types deprecated (SEP-2577).

use std::sync::{
    Arc,
    atomic::{AtomicU8, Ordering},
};

use rmcp::model::{LoggingLevel, LoggingMessageNotificationParam};
use serde_json::{Map, Value};
use tracing::{
    Event, Level, Metadata, Span, Subscriber,
    field::{Field, Visit},
    subscriber::Interest,
};
use tracing_subscriber::{
    filter::LevelFilter,
    layer::{Context, Filter, Layer},
    registry::{LookupSpan, SpanRef},
};

use crate::notices::{Notice, NoticeSender};

/// The name of the span a logging call runs in.
const CALL_SPAN: &str = "mcp_call";

/// The severity of "nothing": above `emergency` (7).
const SILENT: u8 = 8;

/// The most verbose level (lowest severity) any session of this process asked for.
static MOST_VERBOSE: AtomicU8 = AtomicU8::new(SILENT);

/// The level one session asked for with `logging/setLevel` (or one request with `_meta`).
#[derive(Debug)]
pub(crate) struct SessionLogLevel {
    /// The least severe MCP level sent, as a severity (`debug` 0 … `emergency` 7), or
    /// [`SILENT`].
    threshold: AtomicU8,
}

impl SessionLogLevel {
    /// Nothing is sent until the client sets a level.
    pub(crate) const fn silent() -> Self {
        Self {
            threshold: AtomicU8::new(SILENT),
        }
    }

    /// A level fixed at `level` (a 2026-07-28 request's `_meta` log level).
    pub(crate) fn fixed(level: LoggingLevel) -> Self {
        let fixed = Self::silent();
        fixed.set(level);
        fixed
    }

    /// Sends `level` and everything more severe from now on.
    pub(crate) fn set(&self, level: LoggingLevel) {
        let threshold = severity(level);
        self.threshold.store(threshold, Ordering::Relaxed);
        let before = MOST_VERBOSE.fetch_min(threshold, Ordering::Relaxed);
        if level_filter(threshold) > level_filter(before) {
            // Callsites cached as "never interesting" must be asked again.
            tracing::callsite::rebuild_interest_cache();
        }
    }

    /// Whether any `tracing` event could pass: if not, a call needs no span.
    pub(crate) fn admits_anything(&self) -> bool {
        level_filter(self.threshold.load(Ordering::Relaxed)) != LevelFilter::OFF
    }

    fn admits(&self, level: &Level) -> bool {
        self.admits_mcp(mcp_level(level))
    }

    fn admits_mcp(&self, level: LoggingLevel) -> bool {
        severity(level) >= self.threshold.load(Ordering::Relaxed)
    }
}

/// Where the events of one call go: checked against its session's level, queued as notices.
#[derive(Debug, Clone)]
pub(crate) struct CallLog {
    level: Arc<SessionLogLevel>,
    notices: NoticeSender,
}

impl CallLog {
    pub(crate) fn new(level: Arc<SessionLogLevel>, notices: NoticeSender) -> Self {
        Self { level, notices }
    }

    fn forward(&self, event: &Event<'_>) {
        let metadata = event.metadata();
        if !self.level.admits(metadata.level()) {
            return;
        }
        let mut data = EventData::default();
        event.record(&mut data);
        let param = data.into_message(mcp_level(metadata.level()), metadata.target());
        if self.level.admits_mcp(param.level) {
            self.notices.send(Notice::Log(param));
        }
    }
}

/// The span a call whose session wants logs runs in, holding `log` for [`log_layer`]. A
/// disabled span (no layer installed) if nobody would read it.
pub(crate) fn call_span(log: CallLog) -> Span {
    // ERROR, so that the span passes the static level check whenever a session listens: the
    // layer's level hint is then at least ERROR.
    let span = tracing::error_span!(target: "switchboard_mcp::call", CALL_SPAN);
    span.with_subscriber(|(id, dispatch)| {
        if let Some(registry) = dispatch.downcast_ref::<tracing_subscriber::Registry>()
            && let Some(span) = registry.span(id)
        {
            span.extensions_mut().insert(log);
        }
    });
    span
}

/// The `tracing` layer that forwards a call's events to the MCP session that made it. Install
/// it in the process's subscriber, next to the usual ones:
///
/// ```no_run
/// use tracing_subscriber::prelude::*;
///
/// tracing_subscriber::registry()
///     .with(tracing_subscriber::fmt::layer().with_writer(std::io::stderr))
///     .with(switchboard_mcp::log_layer())
///     .init();
/// ```
///
/// It carries its own filter: the other layers' filters do not limit what sessions get, and
/// it adds no cost until a session asks for logs.
pub fn log_layer<S>() -> impl Layer<S> + Send + Sync + 'static
where
    S: Subscriber + for<'lookup> LookupSpan<'lookup>,
{
    CallLogLayer.with_filter(CallLogFilter)
}

/// The layer of [`log_layer`]: queues each event for the session of the call it belongs to.
#[derive(Debug)]
struct CallLogLayer;

impl<S> Layer<S> for CallLogLayer
where
    S: Subscriber + for<'lookup> LookupSpan<'lookup>,
{
    fn on_event(&self, event: &Event<'_>, context: Context<'_, S>) {
        if let Some(scope) = context.event_scope(event) {
            for span in scope {
                if let Some(log) = span.extensions().get::<CallLog>() {
                    log.forward(event);
                    return;
                }
            }
        }
    }
}

/// The filter of [`log_layer`]: only `mcp_call` spans, and only events inside one whose
/// session's level admits them.
#[derive(Debug)]
struct CallLogFilter;

impl<S> Filter<S> for CallLogFilter
where
    S: Subscriber + for<'lookup> LookupSpan<'lookup>,
{
    fn enabled(&self, metadata: &Metadata<'_>, context: &Context<'_, S>) -> bool {
        if metadata.is_span() {
            return is_call_span(metadata);
        }
        context
            .lookup_current()
            .is_some_and(|span| admitted_in(&span, metadata.level()))
    }

    fn callsite_enabled(&self, metadata: &'static Metadata<'static>) -> Interest {
        let interesting = if metadata.is_span() {
            is_call_span(metadata)
        } else {
            *metadata.level() <= level_filter(MOST_VERBOSE.load(Ordering::Relaxed))
        };
        match (interesting, metadata.is_span()) {
            (false, _) => Interest::never(),
            (true, true) => Interest::always(),
            (true, false) => Interest::sometimes(),
        }
    }

    fn max_level_hint(&self) -> Option<LevelFilter> {
        Some(level_filter(MOST_VERBOSE.load(Ordering::Relaxed)))
    }
}

fn is_call_span(metadata: &Metadata<'_>) -> bool {
    metadata.name() == CALL_SPAN && metadata.target() == "switchboard_mcp::call"
}

/// Whether the innermost `CallLog` around `span` admits an event at `level`.
fn admitted_in<S>(span: &SpanRef<'_, S>, level: &Level) -> bool
where
    S: Subscriber + for<'lookup> LookupSpan<'lookup>,
{
    span.scope()
        .find_map(|span| {
            span.extensions()
                .get::<CallLog>()
                .map(|log| log.level.admits(level))
        })
        .unwrap_or(false)
}

/// An MCP level's severity, RFC 5424 order: `debug` 0 … `emergency` 7.
fn severity(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}

/// The MCP level a `tracing` event is sent at.
fn mcp_level(level: &Level) -> LoggingLevel {
    match *level {
        Level::ERROR => LoggingLevel::Error,
        Level::WARN => LoggingLevel::Warning,
        Level::INFO => LoggingLevel::Info,
        _ => LoggingLevel::Debug,
    }
}

/// The most verbose `tracing` level a severity threshold admits.
fn level_filter(threshold: u8) -> LevelFilter {
    match threshold {
        0 => LevelFilter::TRACE,
        1 => LevelFilter::INFO,
        2 | 3 => LevelFilter::WARN,
        4 => LevelFilter::ERROR,
        _ => LevelFilter::OFF,
    }
}

/// An event's fields as a JSON object: `message` plus every other field.
#[derive(Debug, Default)]
struct EventData {
    fields: Map<String, Value>,
}

impl EventData {
    /// The log message: the event's fields at `level` from logger `target`, unless the event
    /// says otherwise (a relayed log, see the module docs).
    fn into_message(
        mut self,
        level: LoggingLevel,
        target: &str,
    ) -> LoggingMessageNotificationParam {
        let logger = match self.fields.remove("mcp.logger") {
            Some(Value::String(logger)) => logger,
            _ => target.to_owned(),
        };
        let level = self
            .fields
            .remove("mcp.level")
            .and_then(|level| serde_json::from_value(level).ok())
            .unwrap_or(level);
        let data = match self.fields.remove("mcp.data") {
            Some(Value::String(text)) => serde_json::from_str(&text).unwrap_or(Value::String(text)),
            Some(data) => data,
            None => Value::Object(self.fields),
        };
        LoggingMessageNotificationParam::new(level, data).with_logger(logger)
    }

    fn insert(&mut self, field: &Field, value: Value) {
        self.fields.insert(field.name().to_owned(), value);
    }
}

impl Visit for EventData {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.insert(field, Value::from(value));
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.insert(field, Value::from(value));
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.insert(field, Value::from(value));
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.insert(field, Value::from(value));
    }

    fn record_f64(&mut self, field: &Field, value: f64) {
        self.insert(field, Value::from(value));
    }

    fn record_error(&mut self, field: &Field, value: &(dyn std::error::Error + 'static)) {
        self.insert(field, Value::from(value.to_string()));
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.insert(field, Value::from(format!("{value:?}")));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mcp_levels_map_onto_tracing_levels() {
        let cases = [
            (LoggingLevel::Debug, LevelFilter::TRACE),
            (LoggingLevel::Info, LevelFilter::INFO),
            (LoggingLevel::Notice, LevelFilter::WARN),
            (LoggingLevel::Warning, LevelFilter::WARN),
            (LoggingLevel::Error, LevelFilter::ERROR),
            (LoggingLevel::Critical, LevelFilter::OFF),
            (LoggingLevel::Emergency, LevelFilter::OFF),
        ];
        for (level, filter) in cases {
            assert_eq!(level_filter(severity(level)), filter, "{level:?}");
        }
    }

    #[test]
    fn a_relayed_event_says_its_logger_level_and_data() {
        let mut relayed = EventData::default();
        for (name, value) in [
            ("message", "the mounted server logged"),
            ("server", "vendor"),
            ("mcp.logger", "vendor/db"),
            ("mcp.level", "notice"),
            ("mcp.data", r#"{"rows":3}"#),
        ] {
            relayed.fields.insert(name.to_owned(), Value::from(value));
        }
        let message = relayed.into_message(LoggingLevel::Warning, "switchboard_mounts::server_log");
        assert_eq!(message.level, LoggingLevel::Notice);
        assert_eq!(message.logger.as_deref(), Some("vendor/db"));
        assert_eq!(message.data, serde_json::json!({"rows": 3}));

        let mut own = EventData::default();
        own.fields
            .insert("message".to_owned(), Value::from("hello"));
        let message = own.into_message(LoggingLevel::Info, "switchboard_registry");
        assert_eq!(message.level, LoggingLevel::Info);
        assert_eq!(message.logger.as_deref(), Some("switchboard_registry"));
        assert_eq!(message.data, serde_json::json!({"message": "hello"}));
    }

    #[test]
    fn a_session_admits_its_level_and_above() {
        let level = SessionLogLevel::silent();
        assert!(!level.admits_anything());
        assert!(!level.admits(&Level::ERROR));
        level.set(LoggingLevel::Warning);
        assert!(level.admits_anything());
        assert!(level.admits(&Level::ERROR));
        assert!(level.admits(&Level::WARN));
        assert!(!level.admits(&Level::INFO));
        level.set(LoggingLevel::Debug);
        assert!(level.admits(&Level::TRACE));
        assert!(!SessionLogLevel::fixed(LoggingLevel::Critical).admits_anything());
    }
}
