//! The one middleware in front of rmcp's streamable-HTTP service: every check of a request, in
//! the order that leaks the least.
//!
//! 1. `Host` and `Origin` (DNS-rebinding protection): `400`/`403`. First, so a page attempting
//!    a rebinding learns nothing else, not even whether the endpoint wants a token.
//! 2. Authentication: `401` with `WWW-Authenticate` (with OAuth also `403` for a missing
//!    scope, `503` while the issuer's keys are not fetched). The `Authorization` header is then
//!    removed, so the token never reaches rmcp or the handler.
//! 3. The declared body size: `413`.
//! 4. The body of a POST, read whole within the size limit and the body timeout, and checked
//!    to be one JSON-RPC message (`body`): `400`, `408`, `413`.
//! 5. The session named by `mcp-session-id`: `404` unless it is alive and the principal's;
//!    the session caps for an `initialize` (`429`, `503`); a request id already in flight in
//!    the session (`400`).
//! 6. A request whose params do not fit its method and that rmcp cannot be handed: its `-32602`,
//!    as an ordinary response (`invalid_params`).
//! 7. rmcp, run with the request's principal in [`REQUEST_PRINCIPAL`], so that a handler the
//!    service builds for this request (the one serving a new session, or a stateless request)
//!    acts as that principal. An error answer of rmcp's is rewritten into a JSON-RPC error with
//!    an `id` (`reject::normalize`), and an event stream whose first message is the answer
//!    becomes one JSON body (`json_answer`).
//!
//! Refusals in steps 1 to 3, and a body that could not be read whole, leave body bytes unread
//! on the connection, so they say `Connection: close`; every later answer leaves the
//! connection usable.

use std::sync::Arc;

use axum::{
    extract::{ConnectInfo, Request, State},
    http::{HeaderMap, Method, header},
    middleware::Next,
    response::Response,
};
use serde_json::Value;

use super::{
    Connection, HttpLimits,
    auth::{Authenticator, Principal},
    body, invalid_params, json_answer, limit,
    origin::RebindingGuard,
    reject,
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
    pub(crate) limits: HttpLimits,
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
    let body_pending = has_body(request.headers());
    let early = |response: Response| {
        if body_pending {
            reject::closing(response)
        } else {
            response
        }
    };

    if let Err(refusal) = guard.rebinding.check(request.uri(), request.headers()) {
        return early(refusal.into_response());
    }

    let principal = match guard.authenticator.authenticate(request.headers()).await {
        Ok(principal) => principal,
        Err(failure) => {
            tracing::warn!(
                ?remote,
                ?failure,
                "refused an MCP request: no valid bearer token"
            );
            return early(failure.response());
        }
    };
    // The token has done its job: nothing further in (rmcp, the handler, their logs) sees it.
    request.headers_mut().remove(header::AUTHORIZATION);

    if let Some(length) = limit::declared_length(request.headers())
        && length > u64::try_from(guard.max_body_bytes).unwrap_or(u64::MAX)
    {
        tracing::warn!(?remote, length, "refused an MCP request: body too large");
        return early(limit::too_large(guard.max_body_bytes, Some(length)));
    }

    let mut message = None;
    if request.method() == Method::POST {
        match body::read_message(request, guard.max_body_bytes, guard.limits.body_timeout).await {
            Ok((read, posted)) => {
                request = read;
                message = posted;
            }
            Err(refused) => {
                tracing::warn!(?remote, message = %refused.refusal.message, "refused an MCP request body");
                let response = refused.refusal.into_response();
                return if refused.body_unread {
                    reject::closing(response)
                } else {
                    response
                };
            }
        }
    }
    let id = message
        .as_ref()
        .map_or(Value::Null, |message| message.id.clone());

    let quota = match (&guard.authenticator, remote) {
        (Authenticator::Operator(_), Some(remote)) => Arc::from(format!("peer {}", remote.ip())),
        _ => Arc::clone(&principal.key),
    };
    let admission = match guard
        .sessions
        .admit(
            &mut request,
            &principal,
            &quota,
            connection.as_ref(),
            message.as_ref(),
        )
        .await
    {
        Ok(admission) => admission,
        Err(refusal) => return refusal.with_id(id).into_response(),
    };

    if let Some(answer) = message
        .as_ref()
        .and_then(|message| message.invalid_params.as_ref())
    {
        let response = invalid_params::respond(&admission, answer).await;
        return guard.sessions.complete(admission, &principal, response);
    }

    let response = REQUEST_PRINCIPAL
        .scope(Arc::clone(&principal), next.run(request))
        .await;
    let response = reject::normalize(response, &id).await;
    let response = if message
        .as_ref()
        .is_some_and(|message| message.request_id.is_some())
    {
        json_answer::unless_streaming(response).await
    } else {
        response
    };
    guard.sessions.complete(admission, &principal, response)
}

/// Whether the request carries body bytes (declared, or chunked).
fn has_body(headers: &HeaderMap) -> bool {
    headers.contains_key(header::TRANSFER_ENCODING)
        || limit::declared_length(headers).is_some_and(|length| length > 0)
}
