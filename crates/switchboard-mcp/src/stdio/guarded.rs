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

use std::{
    borrow::Cow,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
};

use rmcp::{
    RoleServer,
    model::{ClientJsonRpcMessage, ClientNotification, ServerJsonRpcMessage, ServerResult},
    transport::Transport,
};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt as _, AsyncRead, AsyncWrite, BufReader};

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
            match self.next_line().await {
                Ok(true) => {}
                Ok(false) => return None,
                Err(error) => {
                    tracing::error!(%error, "could not read MCP messages from stdin");
                    return None;
                }
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
