//! [`LineOutput`]: the output side of the stdio transport, where rmcp's messages and our own
//! error replies are written, one whole line at a time, so lines never interleave.
//!
//! A message rmcp sends is written by the `send` future itself (rmcp runs each in a task of
//! its own), under an async lock held for the whole line: no hand-off to a writer task and back,
//! which would cost two task wake-ups per response.
//!
//! An error reply for a bad input line cannot be written that way: it is decided in
//! `Transport::receive`, which rmcp races against other events and must stay cancel-safe, so it
//! never awaits a write. It is queued instead (a bounded queue: a client that floods garbage
//! without reading its replies must not grow our memory) and written by a short task spawned
//! for it, or by the next `send`, whichever takes the lock first. Whoever holds the lock writes
//! the queued replies before its own line, so a reply is never overtaken by the answer to a
//! request read after the bad line.

use std::{
    collections::VecDeque,
    sync::{
        Arc, Mutex, PoisonError,
        atomic::{AtomicBool, Ordering},
    },
};

use tokio::io::{AsyncWrite, AsyncWriteExt as _};

/// How many error replies may wait for the output before further ones are dropped.
const REPLY_QUEUE: usize = 1024;

/// The shared output: the writer, and the error replies waiting for it.
pub(super) struct LineOutput<W> {
    /// The writer; `None` once the transport closed it or a write failed (the other end is
    /// gone), after which every send fails at once.
    write: tokio::sync::Mutex<Option<W>>,
    /// Error replies waiting to be written, oldest first, each ending with `\n`.
    replies: Mutex<VecDeque<Vec<u8>>>,
    /// Set while a task is on its way to write the waiting replies.
    reply_writer_scheduled: AtomicBool,
}

impl<W: AsyncWrite + Unpin + Send + 'static> LineOutput<W> {
    /// An output writing to `write`.
    pub(super) fn new(write: W) -> Arc<Self> {
        Arc::new(Self {
            write: tokio::sync::Mutex::new(Some(write)),
            replies: Mutex::new(VecDeque::new()),
            reply_writer_scheduled: AtomicBool::new(false),
        })
    }

    /// Queues an error reply (`line` ends with `\n`) without waiting, and makes sure a task
    /// will write it; drops it if the client is not reading its replies. Needs a Tokio runtime.
    pub(super) fn queue_reply(self: &Arc<Self>, line: Vec<u8>) {
        {
            let mut replies = self.replies.lock().unwrap_or_else(PoisonError::into_inner);
            if replies.len() >= REPLY_QUEUE {
                tracing::warn!(
                    "an MCP error reply on stdout was dropped: the client is not reading its \
                     replies"
                );
                return;
            }
            replies.push_back(line);
        }
        if !self.reply_writer_scheduled.swap(true, Ordering::AcqRel) {
            let output = Arc::clone(self);
            tokio::spawn(async move { output.write_queued_replies().await });
        }
    }

    /// Writes the queued replies (the task [`Self::queue_reply`] spawns).
    async fn write_queued_replies(&self) {
        let mut write = self.write.lock().await;
        // From here on, a newly queued reply schedules another task (which may then find
        // nothing left to write): none is left behind.
        self.reply_writer_scheduled.store(false, Ordering::Release);
        let replies = self.take_replies();
        if replies.is_empty() {
            return;
        }
        if let Err(error) = write_whole(&mut write, &replies).await {
            tracing::warn!(%error, "could not write an MCP error reply");
        }
    }

    /// Writes one line (ending with `\n`), after any queued replies, and flushes.
    pub(super) async fn send_line(&self, line: Vec<u8>) -> std::io::Result<()> {
        let mut write = self.write.lock().await;
        let mut bytes = self.take_replies();
        if bytes.is_empty() {
            bytes = line;
        } else {
            bytes.extend_from_slice(&line);
        }
        write_whole(&mut write, &bytes).await
    }

    /// Writes the queued replies, flushes and shuts the output down. Later sends fail.
    pub(super) async fn close(&self) -> std::io::Result<()> {
        let mut write = self.write.lock().await;
        let replies = self.take_replies();
        let Some(mut writer) = write.take() else {
            // Already closed, or the other end is gone: nothing left to do.
            return Ok(());
        };
        if !replies.is_empty() {
            writer.write_all(&replies).await?;
        }
        writer.flush().await?;
        writer.shutdown().await
    }

    /// The queued replies, in order, as one buffer (empty if none).
    fn take_replies(&self) -> Vec<u8> {
        let mut replies = self.replies.lock().unwrap_or_else(PoisonError::into_inner);
        match replies.len() {
            0 => Vec::new(),
            1 => replies.pop_front().unwrap_or_default(),
            _ => replies.drain(..).flatten().collect(),
        }
    }
}

/// Writes `bytes` and flushes; on failure drops the writer, so that later sends fail at once.
async fn write_whole<W: AsyncWrite + Unpin>(
    write: &mut Option<W>,
    bytes: &[u8],
) -> std::io::Result<()> {
    let Some(writer) = write.as_mut() else {
        return Err(std::io::Error::new(
            std::io::ErrorKind::BrokenPipe,
            "the MCP output is closed (the client stopped reading, or the session ended)",
        ));
    };
    let mut result = writer.write_all(bytes).await;
    if result.is_ok() {
        result = writer.flush().await;
    }
    if result.is_err() {
        *write = None;
    }
    result
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
