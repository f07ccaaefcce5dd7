//! [`GuardedStdio`]: a newline-delimited JSON-RPC transport that answers what rmcp's own
//! `AsyncRwTransport` silently skips, and never lets bad input end the server.
//!
//! rmcp drops a line that is not JSON without a word (a deliberate choice upstream, to avoid
//! error storms), and ends `serve_server` when a notification or a response arrives before
//! `initialize`. Here, instead:
//!
//! - a line that is not JSON (including invalid UTF-8 and random bytes) is answered with the
//!   JSON-RPC parse error `-32700`, `id: null`, as JSON-RPC 2.0 prescribes;
//! - JSON that is not a JSON-RPC 2.0 message (a wrong shape, a batch array, a scalar) is
//!   answered with `-32600` (invalid request), with the message's `id` when one can be read
//!   and `null` otherwise;
//! - a line longer than the limit is answered with `-32600` and skipped to its end, without
//!   ever being held in memory whole;
//! - notifications and responses that arrive before the server has answered anything (so
//!   before `initialize`) are dropped, since rmcp would end the session on them;
//! - blank lines are ignored.
//!
//! Everything else goes to rmcp, which answers unknown methods (`-32601`), bad params and the
//! rest with the request's id. How a line is sorted is [`super::classify`]; how answers are
//! written is [`super::output`].
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
    model::{ClientJsonRpcMessage, ServerJsonRpcMessage},
    transport::Transport,
};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt as _, AsyncRead, AsyncWrite, BufReader};

use super::{
    classify::{Classified, INVALID_REQUEST, classify, error_reply},
    output::LineOutput,
};

/// A server-side stdio transport with JSON-RPC error replies for bad input.
pub(crate) struct GuardedStdio<R, W> {
    read: BufReader<R>,
    /// The line being read; kept here so that a cancelled `receive` loses nothing.
    line: Vec<u8>,
    /// Set while skipping the rest of an over-long line.
    discarding: bool,
    output: Arc<LineOutput<W>>,
    /// Set once the server has answered a request: a lifecycle (`initialize`, or a 2026-07-28
    /// request with its `_meta`) has started, so notifications and responses may pass.
    started: Arc<AtomicBool>,
    max_line_bytes: usize,
}

impl<R, W> std::fmt::Debug for GuardedStdio<R, W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GuardedStdio")
            .field("buffered_line_bytes", &self.line.len())
            .field("started", &self.started.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl<R, W> GuardedStdio<R, W>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    /// Reads messages from `read` and writes answers and error replies to `write`.
    pub(crate) fn new(read: R, write: W, max_line_bytes: usize) -> Self {
        Self {
            read: BufReader::new(read),
            line: Vec::new(),
            discarding: false,
            output: LineOutput::new(write),
            started: Arc::new(AtomicBool::new(false)),
            max_line_bytes,
        }
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

    /// Queues an error reply without waiting (so `receive` stays cancel-safe).
    fn reply(&self, reply: &Value) {
        let mut bytes = reply.to_string().into_bytes();
        bytes.push(b'\n');
        self.output.queue_reply(bytes);
    }
}

impl<R, W> Transport<RoleServer> for GuardedStdio<R, W>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    type Error = std::io::Error;

    fn name() -> Cow<'static, str> {
        "guarded-stdio".into()
    }

    fn send(
        &mut self,
        item: ServerJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        if matches!(item, ServerJsonRpcMessage::Response(_)) {
            self.started.store(true, Ordering::Release);
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
                Classified::Message(message) => {
                    let is_request = matches!(*message, ClientJsonRpcMessage::Request(_));
                    if !is_request && !self.started.load(Ordering::Acquire) {
                        // rmcp would end the session with `ExpectedInitializeRequest`.
                        tracing::debug!(
                            "dropped a notification or response sent before initialize"
                        );
                        continue;
                    }
                    return Some(*message);
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.output.close().await
    }
}
