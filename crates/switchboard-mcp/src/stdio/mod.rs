//! MCP over stdio, for a client that spawns this process: one JSON-RPC message per line on
//! stdin, answers on stdout, nothing else on stdout (logs go to stderr).
//!
//! The identity is fixed by the operator for the life of the process, and so is the session:
//! the handler mints one `mcp-session-<uuid>` when it starts. Input goes through
//! [`guarded::GuardedStdio`], so malformed lines are answered with JSON-RPC errors instead of
//! being dropped or ending the server. [`serve_io`] runs the same server over any reader and
//! writer (a `tokio::io::duplex` pipe in tests).
//!
//! [`serve_stdio_until`] also stops on request (a process's SIGTERM): it reads no further
//! message, lets the requests in flight be answered up to a deadline, and ends the session.
//!
//! [`serve_stdio`] reads and writes the standard streams through rmcp's `stdio_pipes()`: when
//! both are pipes (the way MCP clients start a stdio server) and on Linux, they are driven by
//! Tokio's I/O reactor instead of handing every read and write to the blocking thread pool, as
//! `tokio::io::stdin()`/`stdout()` do. Anywhere else (a terminal, a file, a socket, macOS,
//! Windows) it falls back to Tokio's blocking handles.

pub(crate) mod classify;
mod guarded;
mod in_flight;
pub(crate) mod known_methods;
mod output;

use std::{sync::atomic::Ordering, time::Duration};

use rmcp::{ServiceExt as _, service::ServerInitializeError};
use switchboard_registry::ToolRegistry;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_util::sync::CancellationToken;

use crate::{error::McpError, identity::Identity, server::McpServer};

/// The longest message (one line) accepted on stdin, in bytes: 4 MiB, like the HTTP
/// endpoint's default body limit. A longer line is answered with `-32600` and skipped.
pub const STDIO_MAX_MESSAGE_BYTES: usize = 4 * 1024 * 1024;

/// Serves MCP on this process's stdin and stdout until the client closes stdin.
pub async fn serve_stdio(registry: ToolRegistry, identity: Identity) -> Result<(), McpError> {
    serve_stdio_with(McpServer::new(registry, identity)).await
}

/// [`serve_stdio`] with a handler configured beforehand (for instance
/// [`McpServer::with_state_key`] or [`McpServer::with_server_info`]).
pub async fn serve_stdio_with(server: McpServer) -> Result<(), McpError> {
    let (read, write) = rmcp::transport::stdio_pipes();
    serve_handler(server, read, write).await
}

/// How a server of [`serve_stdio_until`] ended.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct StdioEnd {
    /// Requests still in flight when the drain's deadline came: they were cancelled, and their
    /// clients got no answer.
    pub cut_off: usize,
}

/// [`serve_stdio_with`] until the client closes stdin, or until `stop` is cancelled: then no
/// further message is read, the requests in flight get up to `drain_timeout` to be answered
/// (their answers are written), and the session ends. Says how many requests the deadline cut
/// off.
///
/// Stdin is read through rmcp's non-blocking pipes when stdin and stdout are both pipes (on
/// Linux); otherwise (a terminal, above all) by a thread of its own, not by Tokio's blocking
/// pool: a read still waiting for a line when the session ends must not keep the runtime, and
/// so the process, from stopping.
pub async fn serve_stdio_until(
    server: McpServer,
    stop: CancellationToken,
    drain_timeout: Duration,
) -> Result<StdioEnd, McpError> {
    let (read, write) = rmcp::transport::stdio_pipes();
    if both_pipes() {
        return serve_io_until(server, read, write, stop, drain_timeout).await;
    }
    // Never polled: no read is started through Tokio's blocking pool.
    drop(read);
    serve_io_until(server, stdin_by_thread(), write, stop, drain_timeout).await
}

/// Whether stdin and stdout are both pipes, as rmcp's `stdio_pipes` needs them for its
/// non-blocking transport.
fn both_pipes() -> bool {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::fs::FileTypeExt as _;
        let pipe = |fd: u8| {
            std::fs::metadata(format!("/proc/self/fd/{fd}"))
                .is_ok_and(|metadata| metadata.file_type().is_fifo())
        };
        pipe(0) && pipe(1)
    }
    #[cfg(not(target_os = "linux"))]
    {
        false
    }
}

/// Stdin, read by a thread of its own into a pipe this process reads asynchronously. The
/// thread ends at the end of stdin, or when the pipe's reader is gone and a read returns; a
/// read that never returns ends with the process.
fn stdin_by_thread() -> tokio::io::DuplexStream {
    use std::io::Read as _;
    use tokio::io::AsyncWriteExt as _;

    let (reader, mut writer) = tokio::io::duplex(64 * 1024);
    let runtime = tokio::runtime::Handle::current();
    let spawned = std::thread::Builder::new()
        .name("mcp-stdin".to_owned())
        .spawn(move || {
            let mut stdin = std::io::stdin().lock();
            let mut buffer = vec![0_u8; 64 * 1024];
            loop {
                let read = match stdin.read(&mut buffer) {
                    Ok(0) => return,
                    Ok(read) => read,
                    Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(error) => {
                        tracing::error!(%error, "could not read MCP messages from stdin");
                        return;
                    }
                };
                if runtime.block_on(writer.write_all(&buffer[..read])).is_err() {
                    return;
                }
            }
        });
    if let Err(error) = spawned {
        tracing::error!(%error, "could not start the thread that reads stdin");
    }
    reader
}

/// [`serve_stdio_until`] over any reader and writer, as [`serve_io_with`] is to
/// [`serve_stdio_with`].
pub async fn serve_io_until<R, W>(
    server: McpServer,
    read: R,
    write: W,
    stop: CancellationToken,
    drain_timeout: Duration,
) -> Result<StdioEnd, McpError>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (drain, cut_off) = guarded::Drain::new(stop, drain_timeout);
    let transport =
        guarded::GuardedStdio::new(read, write, STDIO_MAX_MESSAGE_BYTES).with_drain(drain);
    // Boxed: the session's future is large (clippy::large_futures).
    Box::pin(serve_transport(server, transport)).await?;
    Ok(StdioEnd {
        cut_off: cut_off.load(Ordering::Acquire),
    })
}

/// Serves MCP with messages read from `read` and answers written to `write`, until `read`
/// ends. Malformed input is answered with JSON-RPC errors (`-32700`, `-32600`) and never ends
/// the server. A client that leaves before `initialize` is not an error.
pub async fn serve_io<R, W>(
    registry: ToolRegistry,
    identity: Identity,
    read: R,
    write: W,
) -> Result<(), McpError>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    serve_io_with(McpServer::new(registry, identity), read, write).await
}

/// [`serve_io`] with a handler configured beforehand, as [`serve_stdio_with`] is to
/// [`serve_stdio`].
pub async fn serve_io_with<R, W>(server: McpServer, read: R, write: W) -> Result<(), McpError>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    serve_handler(server, read, write).await
}

async fn serve_handler<R, W>(server: McpServer, read: R, write: W) -> Result<(), McpError>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let transport = guarded::GuardedStdio::new(read, write, STDIO_MAX_MESSAGE_BYTES);
    // Boxed: the session's future is large (clippy::large_futures).
    Box::pin(serve_transport(server, transport)).await
}

async fn serve_transport<R>(
    server: McpServer,
    transport: guarded::GuardedStdio<R>,
) -> Result<(), McpError>
where
    R: AsyncRead + Unpin + Send + 'static,
{
    let started = transport.started();
    let running = match server.serve(transport).await {
        Ok(running) => {
            started.set();
            running
        }
        Err(ServerInitializeError::ConnectionClosed(_)) => {
            tracing::info!("the MCP client on stdio left before initialize");
            return Ok(());
        }
        Err(error) => return Err(McpError::StdioInitialize(error.to_string())),
    };
    let reason = running.waiting().await.map_err(McpError::StdioSession)?;
    tracing::info!(?reason, "the MCP session on stdio ended");
    Ok(())
}
