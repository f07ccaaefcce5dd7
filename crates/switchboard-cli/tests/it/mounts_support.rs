//! What the tests of `--mounts` share: the npm servers they mount, a server of their own
//! served over streamable HTTP on a loopback port, and `switchboard serve --stdio` mounting a
//! file, closed by its MCP client.

use std::{net::SocketAddr, path::PathBuf, process::Stdio, sync::Arc};

use rmcp::{
    ClientHandler, RoleClient, ServerHandler,
    service::RunningService,
    transport::{
        StreamableHttpServerConfig, StreamableHttpService,
        streamable_http_server::session::local::LocalSessionManager,
    },
};

use crate::common::{ACME_ADMIN, TempFile, bounded, exit_of, switchboard};

/// The executable `name` of an npm server under `target/mcp-servers`, failing the test with
/// what to run when it is missing.
pub(crate) fn npm_bin(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../target/mcp-servers/node_modules/.bin")
        .join(name);
    assert!(
        path.exists(),
        "{} is missing: `cargo xtask test` installs the MCP servers the tests mount (`cargo \
         xtask test --prepare` installs them and runs nothing)",
        path.display()
    );
    path.to_string_lossy().into_owned()
}

/// Serves a clone of `handler` to each MCP session at `http://{address}/mcp`, on a free
/// loopback port, until the test's runtime ends.
pub(crate) async fn serve_on_loopback<H>(handler: H) -> SocketAddr
where
    H: ServerHandler + Clone,
{
    let (app, listener, address) = mcp_app_on_loopback(handler).await;
    tokio::spawn(async move { axum::serve(listener, app).await });
    address
}

/// The app that serves a clone of `handler` to each MCP session at `/mcp`, and a listener on
/// a free loopback port with its address, for a test that serves them its own way.
pub(crate) async fn mcp_app_on_loopback<H>(
    handler: H,
) -> (axum::Router, tokio::net::TcpListener, SocketAddr)
where
    H: ServerHandler + Clone,
{
    let service = StreamableHttpService::new(
        move || Ok(handler.clone()),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    let app = axum::Router::new().nest_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .expect("a loopback port");
    let address = listener.local_addr().expect("the bound address");
    (app, listener, address)
}

/// `switchboard serve --stdio` as alice, an acme admin, mounting `file`, with its stdin and
/// stdout piped to the test; a test adds its own flags and says where its stderr goes.
pub(crate) fn serve_stdio_mounting(file: &TempFile) -> tokio::process::Command {
    let mut command = switchboard(&["serve", "--stdio"]);
    command
        .args(ACME_ADMIN)
        .args(["--mounts", file.path()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped());
    command
}

/// Closes `client`, then waits for `server` (the `switchboard serve --stdio` it talked to),
/// failing the test unless it exits successfully.
pub(crate) async fn close<H: ClientHandler>(
    client: RunningService<RoleClient, H>,
    mut server: tokio::process::Child,
) {
    bounded("closing the client", client.cancel())
        .await
        .expect("closes");
    let status = exit_of("the server exiting", &mut server).await;
    assert!(status.success(), "{status}");
}
