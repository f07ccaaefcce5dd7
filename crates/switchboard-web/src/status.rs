//! The HTTP status of a navigation error, and the title its page shows.

use axum::http::StatusCode;
use switchboard_navigation::NavError;

/// The status and title for `error`: a missing page and another organisation's resource are
/// the same `404`.
pub(crate) fn of(error: &NavError) -> (StatusCode, &'static str) {
    match error.kind() {
        "bad_url" => (StatusCode::BAD_REQUEST, "Refused URL"),
        "no_such_page" | "not_found" => (StatusCode::NOT_FOUND, "No such page"),
        "invalid_params" => (StatusCode::BAD_REQUEST, "Not a valid page"),
        "page_changed" => (StatusCode::CONFLICT, "The page changed"),
        "missing_context" => (StatusCode::UNAUTHORIZED, "Who are you?"),
        "permission_denied" | "category_denied" | "tool_scope_denied" | "approval_required" => {
            (StatusCode::FORBIDDEN, "Not allowed")
        }
        "invalid_input" | "org_id_not_allowed" | "tool_failed" => {
            (StatusCode::UNPROCESSABLE_ENTITY, "The action was refused")
        }
        "gate_refused" | "idempotency_conflict" | "proposal_closed" => {
            (StatusCode::CONFLICT, "The action was refused")
        }
        "timeout" => (StatusCode::GATEWAY_TIMEOUT, "Timed out"),
        "domain_unavailable" | "store_unavailable" | "audit_failed" | "audit_unavailable" => {
            (StatusCode::SERVICE_UNAVAILABLE, "Unavailable")
        }
        _ => (StatusCode::INTERNAL_SERVER_ERROR, "Something went wrong"),
    }
}
