//! A raw stdio client for the tests that send exact JSON-RPC frames: a configured
//! [`McpServer`] served by [`serve_io_with`] over a `tokio::io::duplex` pipe, one line per
//! message, and every line the server writes read back as JSON.

use serde_json::{Value, json};
use switchboard_mcp::{McpError, McpServer, serve_io_with};
use tokio::{
    io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader, DuplexStream, ReadHalf, WriteHalf},
    task::JoinHandle,
};

use crate::{common::bounded, http_support::initialize};

/// The client's end of a pipe served by [`serve_io_with`].
pub(crate) struct StdioClient {
    serving: JoinHandle<Result<(), McpError>>,
    lines: tokio::io::Lines<BufReader<ReadHalf<DuplexStream>>>,
    writer: WriteHalf<DuplexStream>,
}

impl StdioClient {
    /// Serves `server` on a fresh pipe; nothing is sent yet.
    pub(crate) fn serve(server: McpServer) -> Self {
        let (client, server_end) = tokio::io::duplex(64 * 1024);
        let (server_read, server_write) = tokio::io::split(server_end);
        let serving = tokio::spawn(serve_io_with(server, server_read, server_write));
        let (client_read, writer) = tokio::io::split(client);
        Self {
            serving,
            lines: BufReader::new(client_read).lines(),
            writer,
        }
    }

    /// Serves `server` and starts the session: `initialize`, then `notifications/initialized`.
    pub(crate) async fn initialized(server: McpServer) -> Self {
        let mut client = Self::serve(server);
        let answer = client.request(&initialize()).await;
        assert!(answer["result"].is_object(), "initialize: {answer}");
        client
            .send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        client
    }

    /// Writes `message` as one line.
    pub(crate) async fn send(&mut self, message: &Value) {
        let line = format!("{message}\n");
        bounded("writing a message", self.writer.write_all(line.as_bytes()))
            .await
            .expect("the server reads");
    }

    /// The next message the server writes.
    pub(crate) async fn next(&mut self) -> Value {
        let line = bounded("reading a message", self.lines.next_line())
            .await
            .expect("the pipe is readable")
            .expect("the server is still writing");
        serde_json::from_str(&line).unwrap_or_else(|error| {
            panic!("the server wrote a line that is not JSON ({error}): {line}")
        })
    }

    /// Sends the request `message` and returns its answer (the message with its id; the
    /// notifications before it are skipped).
    pub(crate) async fn request(&mut self, message: &Value) -> Value {
        self.send(message).await;
        loop {
            let answer = self.next().await;
            if answer.get("id") == message.get("id") && answer.get("method").is_none() {
                return answer;
            }
        }
    }

    /// Closes the input, reads what the server still writes, and checks that it ends cleanly.
    pub(crate) async fn finish(mut self) {
        bounded("closing the input", self.writer.shutdown())
            .await
            .expect("the pipe closes");
        while bounded("draining", self.lines.next_line())
            .await
            .expect("the pipe is readable")
            .is_some()
        {}
        bounded("the server ending", self.serving)
            .await
            .expect("the server task ends")
            .expect("the server ends cleanly");
    }
}
