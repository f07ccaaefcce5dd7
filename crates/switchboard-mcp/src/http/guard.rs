//! The one middleware in front of rmcp's streamable-HTTP service: every check of a request, in
//! the order that leaks the least.
//!
//! 1. `Host` and `Origin` (DNS-rebinding protection): `400`/`403`. First, so a page attempting
//!    a rebinding learns nothing else, not even whether the endpoint wants a token.
//! 2. Authentication: `401` with `WWW-Authenticate`. The `Authorization` header is then
//!    removed, so the token never reaches rmcp or the handler.
//! 3. The declared body size: `413`.
//! 4. The session named by `mcp-session-id`: `404` unless it is alive and the principal's.
//! 5. rmcp, run with the request's principal in [`REQUEST_PRINCIPAL`], so that a handler the
//!    service builds for this request (the one serving a new session, or a stateless request)
//!    acts as that principal. A streamed body over the limit is answered `413` by rmcp and
//!    rewritten to our JSON.

use std::sync::Arc;

use axum::{
    extract::{ConnectInfo, Request, State},
    http::{StatusCode, header},
    middleware::Next,
    response::Response,
};

use super::{
    Connection,
    auth::{Authenticator, Principal},
    limit,
    origin::RebindingGuard,
    session::SessionTracker,
};

tokio::task_local! {
    /// Who the request being handed to rmcp acts as (read by the handler factory).
    pub(crate) static REQUEST_PRINCIPAL: Arc<Principal>;
}

/// What the middleware checks requests against.
#[derive(Debug)]
pub(crate) struct Guard {
    pub(crate) rebinding: RebindingGuard,
    pub(crate) authenticator: Authenticator,
    pub(crate) max_body_bytes: usize,
    pub(crate) sessions: Arc<SessionTracker>,
}

/// Checks `request`, then hands it to rmcp (`next`).
pub(crate) async fn check(
    State(guard): State<Arc<Guard>>,
    mut request: Request,
    next: Next,
) -> Response {
    let connection = request
        .extensions()
        .get::<ConnectInfo<Connection>>()
        .map(|ConnectInfo(connection)| connection.clone());
    let remote = connection.as_ref().map(|connection| connection.remote);

    if let Err(refusal) = guard.rebinding.check(request.uri(), request.headers()) {
        return refusal.into_response();
    }

    let principal = match guard.authenticator.authenticate(request.headers()) {
        Ok(principal) => principal,
        Err(failure) => {
            tracing::warn!(
                ?remote,
                ?failure,
                "refused an MCP request: no valid bearer token"
            );
            return failure.response();
        }
    };
    // The token has done its job: nothing further in (rmcp, the handler, their logs) sees it.
    request.headers_mut().remove(header::AUTHORIZATION);

    if let Some(length) = limit::declared_length(request.headers())
        && length > u64::try_from(guard.max_body_bytes).unwrap_or(u64::MAX)
    {
        tracing::warn!(?remote, length, "refused an MCP request: body too large");
        return limit::too_large(guard.max_body_bytes, Some(length));
    }

    let admission = match guard
        .sessions
        .admit(&mut request, &principal, connection.as_ref())
        .await
    {
        Ok(admission) => admission,
        Err(refusal) => return refusal.into_response(),
    };

    let response = REQUEST_PRINCIPAL
        .scope(Arc::clone(&principal), next.run(request))
        .await;
    let response = if response.status() == StatusCode::PAYLOAD_TOO_LARGE {
        limit::too_large(guard.max_body_bytes, None)
    } else {
        response
    };
    guard.sessions.complete(admission, &principal, response)
}
