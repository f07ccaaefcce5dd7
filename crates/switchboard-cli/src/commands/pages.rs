//! The navigation pages that `serve --http` serves beside `/mcp`, for people in a browser.
//!
//! Pages over HTTP are always on with `--http`: every path other than `/mcp` is a page (HTML or
//! markdown, `switchboard-web`). People sign in with the tokens of `--tokens`, and act as
//! humans; without tokens every page acts as the operator identity from the flags, as `/mcp`
//! does (loopback addresses only, which the MCP configuration already checks). With `--oauth`
//! the pages have no sign-in and let nobody in.

use std::sync::Arc;

use anyhow::Context as _;
use switchboard::ToolRegistry;
use switchboard_mcp::{HttpAuth, HttpConfig, Identity};
use switchboard_navigation::Navigator;
use switchboard_web::{Person, SignIn, WebConfig};
use switchboard_workflows_engine::Engine;
use tokio_util::sync::CancellationToken;

/// The pages of `registry`, to serve beside `/mcp` with the authentication and allow-lists of
/// `config`, and the events of `engine`'s runs (ended by `streams_stop`).
pub(crate) fn router(
    registry: &ToolRegistry,
    config: &HttpConfig,
    engine: &Engine,
    streams_stop: &CancellationToken,
) -> anyhow::Result<axum::Router> {
    let navigator = Navigator::new(registry.clone())
        .context("the pages of the linked domains do not fit together")?;
    let sign_in = match config.auth() {
        HttpAuth::Operator(identity) => SignIn::Operator(person_of(identity)),
        HttpAuth::Tokens(table) => {
            let table = table.clone();
            SignIn::Tokens(Arc::new(move |token: &str| {
                table.identity(token).map(person_of)
            }))
        }
        // OAuth access tokens are for MCP clients: the pages have no OAuth sign-in, so they
        // let nobody in (docs/mcp.md, "OAuth").
        HttpAuth::OAuth(_) => SignIn::Tokens(Arc::new(|_: &str| None)),
        // `HttpAuth` is non-exhaustive: a way of authenticating the pages do not know yet
        // lets nobody in.
        _ => SignIn::Tokens(Arc::new(|_: &str| None)),
    };
    let mut web = WebConfig::new(sign_in).workflows(engine.clone(), streams_stop.clone());
    for host in config.allowed_hosts() {
        web = web.allow_host(host.to_string());
    }
    for origin in config.allowed_origins() {
        web = web.allow_origin(origin.to_string());
    }
    Ok(switchboard_web::router(Arc::new(navigator), web))
}

/// The person an identity stands for in a browser (always a human there).
fn person_of(identity: &Identity) -> Person {
    Person {
        org: identity.org.clone(),
        user: identity.user.clone(),
        roles: identity.roles.clone(),
    }
}
