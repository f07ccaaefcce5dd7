//! [`LineOutput`]: the output side of the stdio transport, where rmcp's messages and our own
//! error replies are written, one whole line at a time, so lines never interleave.
//!
//! One writer task owns the output and writes what a channel brings it, in order. rmcp's
//! messages are sent from its `send` futures, which wait until their line is written; an error
//! reply for a bad input line is decided in `Transport::receive`, which must stay cancel-safe
//! and so never waits: it is queued with `try_send`, and dropped if the client is not reading
//! its replies (the channel is bounded, so such a client cannot grow our memory). Both go
//! through the same channel, so a reply is never overtaken by the answer to a request read
//! after the bad line.

use std::sync::Arc;

use tokio::{
    io::{AsyncWrite, AsyncWriteExt as _},
    sync::{mpsc, oneshot},
};

/// How many lines may wait for the writer; error replies beyond it are dropped.
const QUEUE: usize = 1024;

/// What the writer task is asked to do.
enum Job {
    /// Write a line (ending with `\n`) and flush; say how it went, if anyone waits.
    Write {
        line: Vec<u8>,
        done: Option<oneshot::Sender<std::io::Result<()>>>,
    },
    /// Flush and shut the output down, then stop.
    Close(oneshot::Sender<std::io::Result<()>>),
}

/// The shared output: a channel to the task that writes.
pub(super) struct LineOutput {
    jobs: mpsc::Sender<Job>,
}

impl LineOutput {
    /// An output writing to `write`, through a task of its own. Needs a Tokio runtime.
    pub(super) fn new<W: AsyncWrite + Unpin + Send + 'static>(write: W) -> Arc<Self> {
        let (jobs, queue) = mpsc::channel(QUEUE);
        tokio::spawn(write_lines(write, queue));
        Arc::new(Self { jobs })
    }

    /// Queues an error reply (`line` ends with `\n`) without waiting; drops it if the client
    /// is not reading its replies.
    pub(super) fn queue_reply(&self, line: Vec<u8>) {
        if let Err(mpsc::error::TrySendError::Full(_)) =
            self.jobs.try_send(Job::Write { line, done: None })
        {
            tracing::warn!(
                "an MCP error reply on stdout was dropped: the client is not reading its replies"
            );
        }
    }

    /// Writes one line (ending with `\n`), after any queued replies, and flushes.
    pub(super) async fn send_line(&self, line: Vec<u8>) -> std::io::Result<()> {
        let (done, written) = oneshot::channel();
        let job = Job::Write {
            line,
            done: Some(done),
        };
        if self.jobs.send(job).await.is_err() {
            return Err(closed());
        }
        written.await.unwrap_or_else(|_| Err(closed()))
    }

    /// Writes the queued lines, flushes and shuts the output down. Later sends fail.
    pub(super) async fn close(&self) -> std::io::Result<()> {
        let (done, closed_down) = oneshot::channel();
        if self.jobs.send(Job::Close(done)).await.is_err() {
            // Already closed: nothing left to do.
            return Ok(());
        }
        closed_down.await.unwrap_or(Ok(()))
    }
}

/// The writer task. After a failed write (the other end is gone) it stops writing and fails
/// every later line at once.
async fn write_lines<W: AsyncWrite + Unpin>(write: W, mut queue: mpsc::Receiver<Job>) {
    let mut write = Some(write);
    while let Some(job) = queue.recv().await {
        match job {
            Job::Write { line, done } => {
                let result = match write.as_mut() {
                    Some(writer) => write_flushed(writer, &line).await,
                    None => Err(closed()),
                };
                if result.is_err() {
                    write = None;
                }
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
            }
            Job::Close(done) => {
                let result = match write.take() {
                    Some(mut writer) => writer.shutdown().await,
                    None => Ok(()),
                };
                let _ = done.send(result);
                return;
            }
        }
    }
}

async fn write_flushed<W: AsyncWrite + Unpin>(writer: &mut W, line: &[u8]) -> std::io::Result<()> {
    writer.write_all(line).await?;
    writer.flush().await
}

fn closed() -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::BrokenPipe,
        "the MCP output is closed (the client stopped reading, or the session ended)",
    )
}

#[cfg(test)]
mod tests {
    use tokio::io::AsyncReadExt as _;

    use super::*;

    #[tokio::test]
    async fn queued_replies_go_out_before_a_later_line_and_in_order() {
        let (mut client, server) = tokio::io::duplex(4096);
        let output = LineOutput::new(server);
        output.queue_reply(b"reply 1\n".to_vec());
        output.queue_reply(b"reply 2\n".to_vec());
        output
            .send_line(b"answer\n".to_vec())
            .await
            .expect("the line is written");
        output.close().await.expect("the output closes");
        let mut written = String::new();
        client
            .read_to_string(&mut written)
            .await
            .expect("the pipe is readable");
        assert_eq!(written, "reply 1\nreply 2\nanswer\n");
        assert!(output.send_line(b"late\n".to_vec()).await.is_err());
    }

    #[tokio::test]
    async fn a_queued_reply_is_written_without_a_send() {
        let (client, server) = tokio::io::duplex(4096);
        let output = LineOutput::new(server);
        output.queue_reply(b"reply\n".to_vec());
        let mut line = String::new();
        let mut client = tokio::io::BufReader::new(client);
        tokio::time::timeout(
            std::time::Duration::from_secs(10),
            tokio::io::AsyncBufReadExt::read_line(&mut client, &mut line),
        )
        .await
        .expect("the reply is written soon")
        .expect("the pipe is readable");
        assert_eq!(line, "reply\n");
    }
}
