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
//! rest with the request's id.
//!
//! [`Transport::receive`] is raced against other events by rmcp's service loop, so it must be
//! cancel-safe: it keeps its partial line in `self` and never awaits a write. All output (rmcp's
//! messages and our error replies) goes through one writer task, one whole line at a time, so
//! lines never interleave.

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
use serde_json::{Value, json};
use tokio::{
    io::{AsyncBufReadExt as _, AsyncRead, AsyncWrite, AsyncWriteExt as _, BufReader},
    sync::{mpsc, oneshot},
};

/// How many error replies may wait for the writer before further ones are dropped (a client
/// that floods garbage without reading its replies must not grow our memory).
const REPLY_QUEUE: usize = 1024;

/// JSON-RPC 2.0: invalid JSON was received.
const PARSE_ERROR: i64 = -32700;

/// JSON-RPC 2.0: the JSON sent is not a valid request object.
const INVALID_REQUEST: i64 = -32600;

/// What the writer task is asked to do.
enum Outgoing {
    /// Write one line (the bytes already end with `\n`), then report how it went.
    Line(Vec<u8>, Option<oneshot::Sender<std::io::Result<()>>>),
    /// Flush and shut the output down, then report.
    Close(oneshot::Sender<std::io::Result<()>>),
}

/// A server-side stdio transport with JSON-RPC error replies for bad input.
pub(crate) struct GuardedStdio<R> {
    read: BufReader<R>,
    /// The line being read; kept here so that a cancelled `receive` loses nothing.
    line: Vec<u8>,
    /// Set while skipping the rest of an over-long line.
    discarding: bool,
    outgoing: mpsc::Sender<Outgoing>,
    /// Set once the server has answered a request: a lifecycle (`initialize`, or a 2026-07-28
    /// request with its `_meta`) has started, so notifications and responses may pass.
    started: Arc<AtomicBool>,
    max_line_bytes: usize,
}

impl<R> std::fmt::Debug for GuardedStdio<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GuardedStdio")
            .field("buffered_line_bytes", &self.line.len())
            .field("started", &self.started.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl<R: AsyncRead + Unpin + Send + 'static> GuardedStdio<R> {
    /// Reads messages from `read` and writes replies to `write`. Spawns the writer task, so
    /// call it inside a Tokio runtime.
    pub(crate) fn new<W>(read: R, write: W, max_line_bytes: usize) -> Self
    where
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let (outgoing, queue) = mpsc::channel(REPLY_QUEUE);
        tokio::spawn(write_lines(write, queue));
        Self {
            read: BufReader::new(read),
            line: Vec::new(),
            discarding: false,
            outgoing,
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
                self.reply(error_reply(
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

    /// Queues an error reply without waiting (so `receive` stays cancel-safe); drops it if the
    /// client is not reading its replies.
    fn reply(&self, reply: Value) {
        let mut bytes = reply.to_string().into_bytes();
        bytes.push(b'\n');
        if self.outgoing.try_send(Outgoing::Line(bytes, None)).is_err() {
            tracing::warn!(
                "an MCP error reply on stdout was dropped: the client is not reading its replies"
            );
        }
    }
}

/// What one input line is.
enum Classified {
    /// A JSON-RPC message for rmcp.
    Message(Box<ClientJsonRpcMessage>),
    /// Nothing to do (a blank line).
    Skip,
    /// Bad input: send this error reply.
    Reply(Value),
}

/// Sorts one line (without its line ending) into a message, nothing, or an error reply.
fn classify(text: &[u8]) -> Classified {
    if text.iter().all(u8::is_ascii_whitespace) {
        return Classified::Skip;
    }
    let value = match serde_json::from_slice::<Value>(text) {
        Ok(value) => value,
        Err(error) => {
            return Classified::Reply(error_reply(
                Value::Null,
                PARSE_ERROR,
                &format!("Parse error: the line is not JSON ({error})"),
            ));
        }
    };
    if value.is_array() {
        return Classified::Reply(error_reply(
            Value::Null,
            INVALID_REQUEST,
            "Invalid Request: JSON-RPC batches are not supported by MCP; send one message per line",
        ));
    }
    // Only a string or a number is an id JSON-RPC allows us to echo.
    let id = match value.get("id") {
        Some(id @ (Value::String(_) | Value::Number(_))) => id.clone(),
        _ => Value::Null,
    };
    match serde_json::from_value::<ClientJsonRpcMessage>(value) {
        Ok(message) => Classified::Message(Box::new(message)),
        Err(error) => Classified::Reply(error_reply(
            id,
            INVALID_REQUEST,
            &format!("Invalid Request: not a JSON-RPC 2.0 message an MCP client sends ({error})"),
        )),
    }
}

/// A JSON-RPC error response.
fn error_reply(id: Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

/// The writer task: writes whole lines in order, flushing whenever the queue runs dry.
async fn write_lines<W: AsyncWrite + Unpin>(mut write: W, mut queue: mpsc::Receiver<Outgoing>) {
    while let Some(outgoing) = queue.recv().await {
        match outgoing {
            Outgoing::Line(bytes, done) => {
                let mut result = write.write_all(&bytes).await;
                if result.is_ok() && queue.is_empty() {
                    result = write.flush().await;
                }
                let failed = result.is_err();
                match done {
                    Some(done) => {
                        let _ = done.send(result);
                    }
                    None => {
                        if let Err(error) = result {
                            tracing::warn!(%error, "could not write an MCP error reply");
                        }
                    }
                }
                if failed {
                    // The other end is gone: later sends see a closed queue and fail.
                    return;
                }
            }
            Outgoing::Close(done) => {
                let mut result = write.flush().await;
                if result.is_ok() {
                    result = write.shutdown().await;
                }
                let _ = done.send(result);
                return;
            }
        }
    }
}

fn writer_gone() -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::BrokenPipe,
        "the MCP output is closed (the client stopped reading)",
    )
}

impl<R: AsyncRead + Unpin + Send + 'static> Transport<RoleServer> for GuardedStdio<R> {
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
        let outgoing = self.outgoing.clone();
        async move {
            let mut bytes = serde_json::to_vec(&item)?;
            bytes.push(b'\n');
            let (done, written) = oneshot::channel();
            outgoing
                .send(Outgoing::Line(bytes, Some(done)))
                .await
                .map_err(|_| writer_gone())?;
            written.await.map_err(|_| writer_gone())?
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
            let line = std::mem::take(&mut self.line);
            let text = line.strip_suffix(b"\n").unwrap_or(&line);
            let text = text.strip_suffix(b"\r").unwrap_or(text);
            match classify(text) {
                Classified::Skip => {}
                Classified::Reply(reply) => self.reply(reply),
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
        let (done, closed) = oneshot::channel();
        if self.outgoing.send(Outgoing::Close(done)).await.is_err() {
            return Ok(());
        }
        closed.await.unwrap_or(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply_of(line: &[u8]) -> Value {
        match classify(line) {
            Classified::Reply(reply) => reply,
            Classified::Message(message) => panic!("expected an error reply, got {message:?}"),
            Classified::Skip => panic!("expected an error reply, got nothing"),
        }
    }

    #[test]
    fn not_json_is_a_parse_error_with_a_null_id() {
        for line in [&b"{not json"[..], b"\xff\xfe\x00", b"}"] {
            let reply = reply_of(line);
            assert_eq!(reply["error"]["code"], json!(PARSE_ERROR), "{reply}");
            assert_eq!(reply["id"], Value::Null, "{reply}");
        }
    }

    #[test]
    fn wrong_shapes_are_invalid_requests_with_the_id_when_readable() {
        let reply = reply_of(br#"{"foo": 1}"#);
        assert_eq!(reply["error"]["code"], json!(INVALID_REQUEST), "{reply}");
        assert_eq!(reply["id"], Value::Null);
        let reply = reply_of(br#"{"jsonrpc": "2.0", "id": 7, "method": 12}"#);
        assert_eq!(reply["error"]["code"], json!(INVALID_REQUEST), "{reply}");
        assert_eq!(reply["id"], json!(7), "{reply}");
        let reply = reply_of(br#"{"jsonrpc": "1.0", "id": "a", "method": "ping"}"#);
        assert_eq!(reply["error"]["code"], json!(INVALID_REQUEST), "{reply}");
        assert_eq!(reply["id"], json!("a"), "{reply}");
        for line in [&br#"[1, 2]"#[..], br#""text""#, b"42", b"null"] {
            let reply = reply_of(line);
            assert_eq!(reply["error"]["code"], json!(INVALID_REQUEST), "{reply}");
            assert_eq!(reply["id"], Value::Null, "{reply}");
        }
    }

    #[test]
    fn blank_lines_are_skipped_and_messages_pass() {
        assert!(matches!(classify(b"  \t"), Classified::Skip));
        let ping = br#"{"jsonrpc": "2.0", "id": 1, "method": "ping"}"#;
        assert!(matches!(classify(ping), Classified::Message(_)));
    }
}
