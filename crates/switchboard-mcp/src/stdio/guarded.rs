//! [`GuardedStdio`]: a newline-delimited JSON-RPC transport that answers what rmcp's own
//! `AsyncRwTransport` silently skips, and never lets bad input end the server.
//!
//! rmcp drops a line that is not JSON without a word (a deliberate choice upstream, to avoid
//! error storms), ends `serve_server` when a notification or a response arrives before the
//! session has started, and misroutes answers when two requests in flight share an id. Here,
//! instead:
//!
//! - a line that is not JSON (including invalid UTF-8 and random bytes) is answered with the
//!   JSON-RPC parse error `-32700`, `id: null`, as JSON-RPC 2.0 prescribes;
//! - JSON that is not a JSON-RPC 2.0 message (a wrong shape, a batch array, a scalar) is
//!   answered with `-32600` (invalid request), with the message's `id` when it can be echoed
//!   exactly and `null` otherwise;
//! - a line longer than the limit is answered with `-32600` and skipped to its end, without
//!   ever being held in memory whole;
//! - a request that reuses the id of a request still in flight is answered with `-32600` and
//!   that id ([`super::in_flight`] says why);
//! - notifications and responses that arrive before the session has started are dropped (with
//!   a debug log: a notification gets no answer, and a response cannot be answered), since
//!   rmcp would end the session on them;
//! - blank lines are ignored.
//!
//! Everything else goes to rmcp, which answers unknown methods (`-32601`), bad params and the
//! rest with the request's id. How a line is sorted is [`super::classify`]; how answers are
//! written is [`super::output`].
//!
//! The session starts when rmcp's `serve_server` leaves its opening loop and hands the
//! transport to the service loop, where notifications and responses are handled as they come.
//! Before that, rmcp answers `ping`, `server/discover` and requests lacking the 2026-07-28
//! `_meta` itself, and waits for `initialize` or for a first request with complete 2026-07-28
//! `_meta`; anything else it reads there ends it with `ExpectedInitializeRequest`. So an
//! answered request does not mean the session has started (a `ping` before `initialize` is
//! answered too). What does: sending the result of `initialize` (marked here, before it is
//! written, so the client cannot get ahead of it), or `serve_server` returning, which
//! [`super::serve_io`] reports through [`Started`] (the only sign of a 2026-07-28 session,
//! which opens on an ordinary request).
//!
//! [`Transport::receive`] is raced against other events by rmcp's service loop, so it must be
//! cancel-safe: it keeps its partial line in `self` and never awaits a write (its error replies
//! are queued on the output).
//!
//! A transport given a [`Drain`] (by [`super::serve_io_until`]) stops reading once the drain's
//! token is cancelled: from then on `receive` ends the session (returns `None`) as soon as no
//! request is in flight. Until then the answers of the requests in flight are still written,
//! since rmcp's loop sends them between two calls of `receive`. At the drain's deadline, the
//! requests still in flight are cut off: `receive` hands rmcp a `notifications/cancelled` for
//! each, as if the client had cancelled it (rmcp cancels its handler, which records the call
//! `cancelled`, and writes no answer), and counts them.

use std::{
    borrow::Cow,
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicUsize, Ordering},
    },
    time::Duration,
};

use rmcp::{
    RoleServer,
    model::{ClientJsonRpcMessage, ClientNotification, ServerJsonRpcMessage, ServerResult},
    transport::Transport,
};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt as _, AsyncRead, AsyncWrite, BufReader};
use tokio_util::sync::CancellationToken;

use super::{
    classify::{Classified, INVALID_REQUEST, classify, error_reply},
    in_flight::InFlight,
    output::LineOutput,
};

/// Whether the MCP session has started: until then, notifications and responses are dropped.
/// Shared by the transport and [`super::serve_io`], which sets it once rmcp's `serve_server`
/// has returned.
#[derive(Debug, Clone, Default)]
pub(crate) struct Started(Arc<AtomicBool>);

impl Started {
    /// Marks the session started.
    pub(crate) fn set(&self) {
        self.0.store(true, Ordering::Release);
    }

    fn get(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }
}

/// How a transport stops on request: see the module docs.
#[derive(Debug)]
pub(crate) struct Drain {
    /// Cancelled to stop reading.
    stop: CancellationToken,
    /// How long the requests in flight then get to be answered.
    timeout: Duration,
    /// When they must be answered by, set when the stop is first seen.
    deadline: Option<tokio::time::Instant>,
    /// How many requests were still in flight at the deadline.
    cut_off: Arc<AtomicUsize>,
}

impl Drain {
    /// A drain on `stop`, giving the requests in flight `timeout`, and where it will count
    /// those it cuts off.
    pub(crate) fn new(stop: CancellationToken, timeout: Duration) -> (Self, Arc<AtomicUsize>) {
        let cut_off = Arc::new(AtomicUsize::new(0));
        let drain = Self {
            stop,
            timeout,
            deadline: None,
            cut_off: Arc::clone(&cut_off),
        };
        (drain, cut_off)
    }
}

/// A server-side stdio transport with JSON-RPC error replies for bad input.
pub(crate) struct GuardedStdio<R> {
    read: BufReader<R>,
    /// The line being read; kept here so that a cancelled `receive` loses nothing.
    line: Vec<u8>,
    /// Set while skipping the rest of an over-long line.
    discarding: bool,
    output: Arc<LineOutput>,
    /// Whether the session has started, so that notifications and responses may pass.
    started: Started,
    /// The ids of the client's requests that rmcp is serving.
    in_flight: InFlight,
    max_line_bytes: usize,
    /// How the transport stops on request, if it may be asked to.
    drain: Option<Drain>,
}

impl<R> std::fmt::Debug for GuardedStdio<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GuardedStdio")
            .field("buffered_line_bytes", &self.line.len())
            .field("started", &self.started.get())
            .field("in_flight", &self.in_flight)
            .finish_non_exhaustive()
    }
}

impl<R> GuardedStdio<R>
where
    R: AsyncRead + Unpin + Send + 'static,
{
    /// Reads messages from `read` and writes answers and error replies to `write`.
    pub(crate) fn new<W>(read: R, write: W, max_line_bytes: usize) -> Self
    where
        W: AsyncWrite + Unpin + Send + 'static,
    {
        Self {
            read: BufReader::new(read),
            line: Vec::new(),
            discarding: false,
            output: LineOutput::new(write),
            started: Started::default(),
            in_flight: InFlight::default(),
            max_line_bytes,
            drain: None,
        }
    }

    /// This transport, stopping as `drain` says.
    pub(crate) fn with_drain(mut self, drain: Drain) -> Self {
        self.drain = Some(drain);
        self
    }

    /// The next line, unless the drain's token is cancelled first: `None` then.
    async fn next_line_unless_stopped(&mut self) -> Option<std::io::Result<bool>> {
        let Some(stop) = self.drain.as_ref().map(|drain| drain.stop.clone()) else {
            return Some(self.next_line().await);
        };
        tokio::select! {
            biased;
            () = stop.cancelled() => None,
            read = self.next_line() => Some(read),
        }
    }

    /// Once the drain's token is cancelled: `None` at once when no request is in flight (the
    /// session ends), else waits for the deadline (rmcp drops this future to send each answer,
    /// and calls `receive` again) and then returns the cancel of one request still in flight,
    /// counting it as cut off.
    async fn drained(&mut self) -> Option<ClientJsonRpcMessage> {
        let drain = self.drain.as_mut()?;
        let timeout = drain.timeout;
        let deadline = *drain
            .deadline
            .get_or_insert_with(|| tokio::time::Instant::now() + timeout);
        let Some(id) = self.in_flight.ids().into_iter().next() else {
            tracing::info!("stdio drained: no request is in flight");
            return None;
        };
        tokio::time::sleep_until(deadline).await;
        let cut_off = drain.cut_off.fetch_add(1, Ordering::AcqRel) + 1;
        tracing::warn!(
            %id,
            cut_off,
            "a request was still in flight on stdio when the drain ended: it is cancelled"
        );
        // Its id is free once rmcp has it: rmcp answers no cancelled request.
        self.in_flight.finish(&id);
        let cancel = serde_json::json!({
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {
                "requestId": id.into_json_value(),
                "reason": "the server is stopping: the drain's deadline passed",
            },
        });
        match serde_json::from_value(cancel) {
            Ok(message) => Some(message),
            Err(error) => {
                tracing::error!(%error, "could not cancel a request in flight");
                None
            }
        }
    }

    /// The flag that says the session has started, for [`super::serve_io`] to set.
    pub(crate) fn started(&self) -> Started {
        self.started.clone()
    }

    /// Reads one `\n`-terminated line into `self.line`, never holding more than the limit.
    /// `Ok(true)`: a line (or the last, unterminated one); `Ok(false)`: end of input.
    /// Over-long lines are answered and skipped. Cancel-safe: the only await is `fill_buf`.
    async fn next_line(&mut self) -> std::io::Result<bool> {
        loop {
            let buffer = self.read.fill_buf().await?;
            if buffer.is_empty() {
                // A last line without its newline still counts.
                return Ok(!self.line.is_empty());
            }
            let newline = buffer.iter().position(|byte| *byte == b'\n');
            let take = newline.map_or(buffer.len(), |index| index + 1);
            if self.discarding {
                self.read.consume(take);
                self.discarding = newline.is_none();
                continue;
            }
            if self.line.len().saturating_add(take) > self.max_line_bytes {
                self.line.clear();
                self.read.consume(take);
                self.discarding = newline.is_none();
                self.reply(&error_reply(
                    Value::Null,
                    INVALID_REQUEST,
                    &format!(
                        "Invalid Request: the message is longer than {} bytes; it was skipped",
                        self.max_line_bytes
                    ),
                ));
                continue;
            }
            self.line.extend_from_slice(&buffer[..take]);
            self.read.consume(take);
            if newline.is_some() {
                return Ok(true);
            }
        }
    }

    /// The message to hand rmcp, or `None` if it was answered or dropped here.
    fn admit(&mut self, message: ClientJsonRpcMessage) -> Option<ClientJsonRpcMessage> {
        match &message {
            ClientJsonRpcMessage::Request(request) => {
                if !self.in_flight.start(&request.id) {
                    tracing::debug!(id = %request.id, "refused a request whose id is in flight");
                    self.reply(&error_reply(
                        request.id.clone().into_json_value(),
                        INVALID_REQUEST,
                        "Invalid Request: a request with this id is still in flight; \
                         use an id not used before in this session",
                    ));
                    return None;
                }
            }
            _ if !self.started.get() => {
                // rmcp would end the session with `ExpectedInitializeRequest`.
                tracing::debug!(
                    "dropped a notification or response sent before the session started"
                );
                return None;
            }
            ClientJsonRpcMessage::Notification(notification) => {
                if let ClientNotification::CancelledNotification(cancelled) =
                    &notification.notification
                    && let Some(id) = &cancelled.params.request_id
                {
                    // rmcp will not answer it: its id is free.
                    self.in_flight.finish(id);
                }
            }
            ClientJsonRpcMessage::Response(_) | ClientJsonRpcMessage::Error(_) => {}
        }
        Some(message)
    }

    /// Queues an error reply without waiting (so `receive` stays cancel-safe).
    fn reply(&self, reply: &Value) {
        let mut bytes = reply.to_string().into_bytes();
        bytes.push(b'\n');
        self.output.queue_reply(bytes);
    }
}

impl<R> Transport<RoleServer> for GuardedStdio<R>
where
    R: AsyncRead + Unpin + Send + 'static,
{
    type Error = std::io::Error;

    fn name() -> Cow<'static, str> {
        "guarded-stdio".into()
    }

    fn send(
        &mut self,
        item: ServerJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        match &item {
            ServerJsonRpcMessage::Response(response) => {
                if matches!(response.result, ServerResult::InitializeResult(_)) {
                    self.started.set();
                }
                self.in_flight.finish(&response.id);
            }
            ServerJsonRpcMessage::Error(error) => {
                if let Some(id) = &error.id {
                    self.in_flight.finish(id);
                }
            }
            ServerJsonRpcMessage::Request(_) | ServerJsonRpcMessage::Notification(_) => {}
        }
        let output = Arc::clone(&self.output);
        async move {
            let mut bytes = serde_json::to_vec(&item)?;
            bytes.push(b'\n');
            output.send_line(bytes).await
        }
    }

    async fn receive(&mut self) -> Option<ClientJsonRpcMessage> {
        loop {
            match self.next_line_unless_stopped().await {
                Some(Ok(true)) => {}
                Some(Ok(false)) => return None,
                Some(Err(error)) => {
                    tracing::error!(%error, "could not read MCP messages from stdin");
                    return None;
                }
                None => return self.drained().await,
            }
            let classified = {
                let text = self.line.strip_suffix(b"\n").unwrap_or(&self.line);
                let text = text.strip_suffix(b"\r").unwrap_or(text);
                classify(text)
            };
            // Keep the buffer's capacity for the next line.
            self.line.clear();
            match classified {
                Classified::Skip => {}
                Classified::Reply(reply) => self.reply(&reply),
                Classified::InvalidParams(invalid) => self.reply(&invalid.reply),
                Classified::Message(message) => {
                    if let Some(message) = self.admit(*message) {
                        return Some(message);
                    }
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.output.close().await
    }
}
