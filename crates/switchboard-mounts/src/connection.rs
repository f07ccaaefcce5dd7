//! One live client connection to a mounted server: the child process (stdio) started in a
//! process group of its own, or the streamable HTTP endpoint with the server's configured
//! credential; the MCP handshake; and the tail of what a child wrote on stderr, kept for the
//! messages of a failed start.
//!
//! What the server says arrives through [`Routing`], which routes its progress and log messages
//! to the calls they are for as they are read, in order with the answers ([`crate::progress`],
//! [`crate::logs`]). A server configured with a `log_level` that declares the logging
//! capability is sent `logging/setLevel` with it after each handshake. The level our own MCP
//! clients set is not passed on: their sessions share the one connection and each may want
//! another level, so the server logs at the configured level and each session's own level is
//! applied on our side.
//!
//! rmcp's `TokioChildProcess` owns the child; closing the connection closes the child's stdin,
//! then sends SIGTERM, then kills it after a grace period, which is the MCP stdio shutdown.

use std::{
    collections::VecDeque,
    process::Stdio,
    sync::{Arc, Mutex, PoisonError},
};

use rmcp::{
    RoleClient, ServiceExt as _,
    model::{ServerJsonRpcMessage, ServerNotification},
    service::{Peer, RunningService, RxJsonRpcMessage, TxJsonRpcMessage},
    transport::{
        StreamableHttpClientTransport, TokioChildProcess,
        streamable_http_client::StreamableHttpClientTransportConfig,
    },
};
use tokio::{
    io::{AsyncBufReadExt as _, BufReader},
    sync::mpsc,
};

use crate::{
    child,
    config::{ServerConfig, Transport},
    error::StartError,
    progress::CallRoutes,
};

/// How many of the child's last stderr lines a failed start reports.
const STDERR_TAIL_LINES: usize = 20;

/// The last lines a child wrote on stderr.
#[derive(Debug, Clone, Default)]
pub(crate) struct StderrTail(Arc<Mutex<VecDeque<String>>>);

impl StderrTail {
    fn push(&self, line: String) {
        let mut lines = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if lines.len() == STDERR_TAIL_LINES {
            lines.pop_front();
        }
        lines.push_back(line);
    }

    /// The lines, oldest first, one per line.
    pub(crate) fn text(&self) -> String {
        let lines = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        lines
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// A started, initialised connection.
pub(crate) struct Connection {
    /// The rmcp client service; closing it ends the child.
    pub(crate) service: RunningService<RoleClient, Listener>,
    /// The child's process id.
    pub(crate) pid: Option<u32>,
    /// What the child wrote on stderr lately.
    pub(crate) stderr: StderrTail,
    /// A message each time the server says its tools changed.
    pub(crate) tools_changed: mpsc::UnboundedReceiver<()>,
}

/// What the client side hears from a mounted server besides what [`Routing`] routes:
/// `notifications/tools/list_changed`.
#[derive(Debug, Clone)]
pub(crate) struct Listener {
    tools_changed: mpsc::UnboundedSender<()>,
}

impl Listener {
    /// A listener, and where it says that tools changed.
    #[cfg(test)]
    pub(crate) fn for_tests() -> (Self, mpsc::UnboundedReceiver<()>) {
        let (tools_changed, changes) = mpsc::unbounded_channel();
        (Self { tools_changed }, changes)
    }
}

impl rmcp::ClientHandler for Listener {
    async fn on_tool_list_changed(&self, _context: rmcp::service::NotificationContext<RoleClient>) {
        let _ = self.tools_changed.send(());
    }
}

impl Connection {
    /// The handle calls are made through.
    pub(crate) fn peer(&self) -> Peer<RoleClient> {
        self.service.peer().clone()
    }

    /// Ends the connection: closes the child's stdin, then SIGTERM, then SIGKILL (rmcp's stdio
    /// shutdown), or ends the HTTP session.
    pub(crate) async fn close(mut self, id: &str) {
        if let Err(error) = self.service.close().await {
            tracing::warn!(server = %id, %error, "the mounted server's connection did not close cleanly");
        }
    }
}

/// What is told when a watched connection ends by itself.
type OnEnd = Box<dyn FnOnce(String) + Send>;

/// A connection being watched: when it ends by itself (the child exits or is killed, the
/// stream closes), the callback it was watched with is told why. Ending it on purpose
/// ([`Live::end`]) tells nobody.
pub(crate) struct Live {
    peer: Peer<RoleClient>,
    pid: Option<u32>,
    stderr: StderrTail,
    cancel: Option<rmcp::service::RunningServiceCancellationToken>,
    on_end: Arc<Mutex<Option<OnEnd>>>,
    ended: tokio::task::JoinHandle<()>,
}

impl Live {
    /// Watches `connection`, calling `on_end` with why if it ends by itself.
    pub(crate) fn watch(
        connection: Connection,
        on_end: impl FnOnce(String) + Send + 'static,
    ) -> Self {
        let Connection {
            service,
            pid,
            stderr,
            tools_changed: _,
        } = connection;
        let peer = service.peer().clone();
        let cancel = service.cancellation_token();
        let on_end: Arc<Mutex<Option<OnEnd>>> = Arc::new(Mutex::new(Some(Box::new(on_end))));
        let notify = Arc::clone(&on_end);
        let ended = tokio::spawn(async move {
            let reason = match service.waiting().await {
                Ok(rmcp::service::QuitReason::Closed) => {
                    "the connection closed (the server exited, or was killed)".to_owned()
                }
                Ok(reason) => format!("the connection ended ({reason:?})"),
                Err(error) => format!("the connection's task failed: {error}"),
            };
            let told = notify.lock().unwrap_or_else(PoisonError::into_inner).take();
            if let Some(tell) = told {
                tell(reason);
            }
        });
        Self {
            peer,
            pid,
            stderr,
            cancel: Some(cancel),
            on_end,
            ended,
        }
    }

    /// The handle calls are made through.
    pub(crate) fn peer(&self) -> Peer<RoleClient> {
        self.peer.clone()
    }

    /// The child's process id (stdio servers).
    pub(crate) fn pid(&self) -> Option<u32> {
        self.pid
    }

    /// The last lines the child wrote on stderr.
    pub(crate) fn stderr_tail(&self) -> String {
        self.stderr.text()
    }

    /// Ends the connection on purpose (nobody is told), and waits until it has: the child's
    /// stdin closed, then SIGTERM, then SIGKILL, or the HTTP session ended.
    pub(crate) async fn end(mut self) {
        self.on_end
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(cancel) = self.cancel.take() {
            cancel.cancel();
        }
        let _ = (&mut self.ended).await;
    }
}

/// Starts (or reaches) `server` and completes the MCP handshake within its start timeout.
pub(crate) async fn connect(
    server: &ServerConfig,
    progress: CallRoutes,
) -> Result<Connection, StartError> {
    let tail = StderrTail::default();
    let (tools_changed, changes) = mpsc::unbounded_channel();
    let listener = Listener { tools_changed };
    let (handshake, pid) = match &server.transport {
        Transport::Stdio {
            command,
            args,
            env,
            cwd,
        } => {
            let spawn_error = |source| StartError::Spawn {
                id: server.id.clone(),
                command: command.clone(),
                source,
            };
            let program = child::resolve(command, cwd.as_deref(), env).map_err(spawn_error)?;
            let wrapped = child::command(&program, args, env, cwd.as_deref());
            let (child, stderr) = TokioChildProcess::builder(wrapped)
                .stderr(Stdio::piped())
                .spawn()
                .map_err(spawn_error)?;
            let pid = child.id();
            if let Some(stderr) = stderr {
                keep_tail(&server.id, stderr, tail.clone());
            }
            (
                tokio::time::timeout(
                    server.start_timeout,
                    listener.serve(Routing::new(child, &server.id, progress)),
                )
                .await,
                pid,
            )
        }
        Transport::Http {
            url,
            bearer_token_env,
        } => {
            let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str());
            if let Some(variable) = bearer_token_env {
                let token = std::env::var(variable).map_err(|_| StartError::Credential {
                    id: server.id.clone(),
                    variable: variable.clone(),
                })?;
                config = config.auth_header(token);
            }
            let transport = StreamableHttpClientTransport::from_config(config);
            (
                tokio::time::timeout(
                    server.start_timeout,
                    listener.serve(Routing::new(transport, &server.id, progress)),
                )
                .await,
                None,
            )
        }
    };
    match handshake {
        Ok(Ok(service)) => {
            ask_log_level(server, &service).await;
            Ok(Connection {
                service,
                pid,
                stderr: tail,
                tools_changed: changes,
            })
        }
        Ok(Err(error)) => Err(StartError::Handshake {
            id: server.id.clone(),
            reason: error.to_string(),
            stderr: tail.text(),
        }),
        Err(_) => Err(StartError::Timeout {
            id: server.id.clone(),
            after: server.start_timeout,
            stderr: tail.text(),
        }),
    }
}

/// A client transport that routes the server's progress and log messages to the calls they are
/// for as it reads them, and passes every message on unchanged. Routing here keeps them in
/// order with each other and with the answers: rmcp's client handler runs each notification on
/// a task of its own, so two reports could be handled out of order, and a report or log the
/// server sent just before its answer could be handled after the call returned, too late for
/// its caller.
pub(crate) struct Routing<T> {
    inner: T,
    server: String,
    routes: CallRoutes,
}

impl<T> Routing<T> {
    /// `inner`, routing what `server` says to `routes`.
    pub(crate) fn new(inner: T, server: &str, routes: CallRoutes) -> Self {
        routes.new_connection();
        Self {
            inner,
            server: server.to_owned(),
            routes,
        }
    }
}

impl<T> rmcp::transport::Transport<RoleClient> for Routing<T>
where
    T: rmcp::transport::Transport<RoleClient>,
{
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        let message = self.inner.receive().await?;
        if let ServerJsonRpcMessage::Notification(notification) = &message {
            match &notification.notification {
                ServerNotification::ProgressNotification(progress) => {
                    self.routes.deliver(&progress.params);
                }
                ServerNotification::LoggingMessageNotification(log) => {
                    self.routes.logs().relay(&self.server, &log.params);
                }
                _ => {}
            }
        }
        Some(message)
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

/// Keeps the last lines of a child's stderr in `tail`, and logs each at debug level.
fn keep_tail(id: &str, stderr: tokio::process::ChildStderr, tail: StderrTail) {
    let id = id.to_owned();
    tokio::spawn(async move {
        let mut lines = BufReader::new(stderr).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            tracing::debug!(server = %id, "{line}");
            tail.push(line);
        }
    });
}

/// Sends `server` its configured log level, if it has one and the server declares the logging
/// capability. A server that refuses or does not answer in its start timeout still serves its
/// tools, so that is logged, not a failed start.
async fn ask_log_level(server: &ServerConfig, service: &RunningService<RoleClient, Listener>) {
    let Some(level) = server.log_level else {
        return;
    };
    let logs = service
        .peer_info()
        .is_some_and(|info| info.capabilities.logging.is_some());
    if !logs {
        tracing::debug!(server = %server.id, "the mounted server declares no logging capability; its log level is not set");
        return;
    }
    #[allow(deprecated)] // rmcp 3 marks the MCP logging types deprecated (SEP-2577).
    let request = service
        .peer()
        .set_level(rmcp::model::SetLevelRequestParams::new(level));
    match tokio::time::timeout(server.start_timeout, request).await {
        Ok(Ok(())) => {}
        Ok(Err(error)) => {
            tracing::warn!(server = %server.id, %error, "the mounted server refused its configured log level");
        }
        Err(_) => {
            tracing::warn!(server = %server.id, after = ?server.start_timeout, "the mounted server did not answer logging/setLevel in time");
        }
    }
}
