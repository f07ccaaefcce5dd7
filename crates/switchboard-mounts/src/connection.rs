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
//! A stdio connection owns its server's processes ([`ServerProcesses`]) beside the client
//! service that speaks MCP over their pipes. [`Live`] watches both: the connection ends when its
//! stream closes *or* when the process started here exits, even if a process it started lives
//! on with the pipes open. However it ends (by itself, or on purpose: a restart, `close`), the
//! same steps end it: the client service stops, which closes the pipes (the server's stdin ends,
//! the MCP stdio shutdown's first step), and [`ServerProcesses::end`] ends the whole process
//! group.

use std::{
    collections::VecDeque,
    sync::{Arc, Mutex, PoisonError},
    time::Duration,
};

use rmcp::{
    RoleClient, ServiceExt as _,
    model::{ServerJsonRpcMessage, ServerNotification},
    service::{ClientInitializeError, Peer, RunningService, RxJsonRpcMessage, TxJsonRpcMessage},
    transport::{
        StreamableHttpClientTransport,
        async_rw::AsyncRwTransport,
        streamable_http_client::{
            AuthRequiredError, StreamableHttpClientTransportConfig, StreamableHttpError,
        },
    },
};
use tokio::{
    io::{AsyncBufReadExt as _, BufReader},
    sync::{mpsc, oneshot},
};

use crate::{
    child::{self, ServerProcesses, Spawned},
    config::{ServerConfig, Transport},
    error::StartError,
    progress::CallRoutes,
};

/// How many of the child's last stderr lines a failed start reports.
const STDERR_TAIL_LINES: usize = 20;

/// How long an ending connection's client service has to stop once its server's processes
/// have ended.
const SERVICE_STOP_WAIT: Duration = Duration::from_secs(5);

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
    /// The server's id.
    pub(crate) server: String,
    /// The rmcp client service.
    pub(crate) service: RunningService<RoleClient, Listener>,
    /// The server's processes (stdio servers).
    pub(crate) processes: Option<ServerProcesses>,
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

    /// The process id of the server's started process (stdio servers).
    pub(crate) fn pid(&self) -> Option<u32> {
        self.processes.as_ref().map(ServerProcesses::pid)
    }

    /// Ends the connection as [`Live::end`] does: the pipes closed and the server's whole
    /// process group ended, or the HTTP session ended.
    pub(crate) async fn close(self) {
        Live::watch(self, |_| {}).end().await;
    }
}

/// What is told when a watched connection ends by itself.
type OnEnd = Box<dyn FnOnce(String) + Send>;

/// A connection being watched: when it ends by itself (the stream closes, or the process
/// started for a stdio server exits or is killed), what is left of it is ended and the callback
/// it was watched with is told why. Ending it on purpose ([`Live::end`]) tells nobody.
/// Dropped, it ends as if on purpose.
pub(crate) struct Live {
    peer: Peer<RoleClient>,
    pid: Option<u32>,
    stderr: StderrTail,
    /// Asks the watching task to end the connection.
    stop: Option<oneshot::Sender<()>>,
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
            server,
            service,
            processes,
            stderr,
            tools_changed: _,
        } = connection;
        let peer = service.peer().clone();
        let pid = processes.as_ref().map(ServerProcesses::pid);
        let (stop, stopped) = oneshot::channel();
        let on_end: Arc<Mutex<Option<OnEnd>>> = Arc::new(Mutex::new(Some(Box::new(on_end))));
        let notify = Arc::clone(&on_end);
        let ended = tokio::spawn(async move {
            let Some(reason) = run_until_ended(&server, service, processes, stopped).await else {
                return;
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
            stop: Some(stop),
            on_end,
            ended,
        }
    }

    /// The handle calls are made through.
    pub(crate) fn peer(&self) -> Peer<RoleClient> {
        self.peer.clone()
    }

    /// The process id of the server's started process (stdio servers).
    pub(crate) fn pid(&self) -> Option<u32> {
        self.pid
    }

    /// The last lines the child wrote on stderr.
    pub(crate) fn stderr_tail(&self) -> String {
        self.stderr.text()
    }

    /// Ends the connection on purpose (nobody is told), and waits until it has: the pipes
    /// closed and the server's whole process group ended ([`ServerProcesses::end`]), or the
    /// HTTP session ended.
    pub(crate) async fn end(mut self) {
        self.on_end
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let _ = (&mut self.ended).await;
    }
}

/// Waits until the connection ends by itself, the server's started process exits, or `stopped`
/// asks (or its sender is dropped); then ends what is left: the client service is stopped
/// (which closes the pipes), the server's process group is ended, and the service is waited
/// for. Answers why the connection ended by itself, or `None` when it was asked to.
async fn run_until_ended(
    server: &str,
    service: RunningService<RoleClient, Listener>,
    mut processes: Option<ServerProcesses>,
    stopped: oneshot::Receiver<()>,
) -> Option<String> {
    let cancel = service.cancellation_token();
    let waiting = service.waiting();
    tokio::pin!(waiting);
    let (reason, service_ended) = tokio::select! {
        quit = &mut waiting => {
            let reason = match quit {
                Ok(rmcp::service::QuitReason::Closed) => {
                    "the connection closed (the server exited, or was killed)".to_owned()
                }
                Ok(reason) => format!("the connection ended ({reason:?})"),
                Err(error) => format!("the connection's task failed: {error}"),
            };
            (Some(reason), true)
        }
        (pid, exited) = async {
            match processes.as_mut() {
                Some(processes) => (processes.pid(), processes.exited().await),
                // An HTTP server has no process of ours.
                None => std::future::pending().await,
            }
        } => {
            let reason = match exited {
                Ok(status) => format!("the server's process {pid} exited ({status})"),
                Err(error) => format!("the server's process {pid} could not be waited for: {error}"),
            };
            (Some(reason), false)
        }
        _ = stopped => (None, false),
    };
    if !service_ended {
        cancel.cancel();
    }
    if let Some(processes) = processes {
        processes.end().await;
    }
    if !service_ended
        && tokio::time::timeout(SERVICE_STOP_WAIT, waiting)
            .await
            .is_err()
    {
        tracing::warn!(server = %server, "the mounted server's client service did not stop within {SERVICE_STOP_WAIT:?} of its end");
    }
    reason
}

/// Starts (or reaches) `server` and completes the MCP handshake within its start timeout.
pub(crate) async fn connect(
    server: &ServerConfig,
    progress: CallRoutes,
) -> Result<Connection, StartError> {
    let tail = StderrTail::default();
    let (tools_changed, changes) = mpsc::unbounded_channel();
    let listener = Listener { tools_changed };
    let (handshake, processes) = match &server.transport {
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
            let Spawned {
                processes,
                stdin,
                stdout,
                stderr,
            } = child::spawn(&server.id, wrapped).map_err(spawn_error)?;
            if let Some(stderr) = stderr {
                keep_tail(&server.id, stderr, tail.clone());
            }
            let transport = AsyncRwTransport::new_client(stdout, stdin);
            (
                tokio::time::timeout(
                    server.start_timeout,
                    listener.serve(Routing::new(transport, &server.id, progress)),
                )
                .await,
                Some(processes),
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
    let reason = match handshake {
        Ok(Ok(service)) => {
            ask_log_level(server, &service).await;
            return Ok(Connection {
                server: server.id.clone(),
                service,
                processes,
                stderr: tail,
                tools_changed: changes,
            });
        }
        Ok(Err(error)) => Some(handshake_reason(&error)),
        Err(_) => None,
    };
    // The handshake's transport, and with it the pipes, went with its future.
    if let Some(processes) = processes {
        processes.end().await;
    }
    let (id, stderr) = (server.id.clone(), tail.text());
    Err(match reason {
        Some(reason) => StartError::Handshake { id, reason, stderr },
        None => StartError::Timeout {
            id,
            after: server.start_timeout,
            stderr,
        },
    })
}

/// Why a handshake failed, in an operator's words: what the transport met (a refused
/// connection, a token the server refused and what it said about it), not rmcp's wrapper of
/// it, which names the transport's Rust type.
fn handshake_reason(error: &ClientInitializeError) -> String {
    let ClientInitializeError::TransportError { error, .. } = error else {
        return error.to_string();
    };
    let mut reasons: Vec<String> = Vec::new();
    let mut next: Option<&(dyn std::error::Error + 'static)> = Some(&*error.error);
    while let Some(current) = next {
        if let Some(refused) = current.downcast_ref::<AuthRequiredError>() {
            return format!(
                "the server refused the bearer token (HTTP 401, `WWW-Authenticate: {}`)",
                refused.www_authenticate_header
            );
        }
        let reason = current.to_string();
        // A level whose message already quotes its source's is not repeated.
        if !reasons.last().is_some_and(|last| last.contains(&reason)) {
            reasons.push(reason);
        }
        next = match current.downcast_ref::<StreamableHttpError<reqwest::Error>>() {
            // rmcp's client error names no source: its HTTP client's error goes on to the
            // cause that says what happened (the connection refused, the name not resolved).
            Some(StreamableHttpError::Client(client)) => Some(client),
            _ => current.source(),
        };
    }
    reasons.join(": ")
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
