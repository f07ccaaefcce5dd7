//! "What to do": for each error kind, the change to the *command line* that would get the call
//! through.
//!
//! The runtime's messages say why a call was refused in terms any caller understands ("ask an
//! administrator for a role that does"); only the CLI knows that the fix is `--role manager`
//! or `--confirm`. So the hints live here, keyed by the error's variant, and name flags and
//! environment variables. They are shown in human output only: `--json` carries the runtime's
//! error unchanged.

use switchboard::{AskError, Category, InvokeError, PermissionMatrix, Role};

/// The hints for a refused or failed call, most useful first.
pub(crate) fn for_invoke(error: &InvokeError, permissions: &PermissionMatrix) -> Vec<String> {
    match error {
        InvokeError::ToolNotFound { suggestions, .. } => unknown_tool(suggestions),
        InvokeError::MissingContext { fields } => vec![missing_context(fields)],
        InvokeError::OrgIdNotAllowed { path } => vec![format!(
            "remove `{path}` from PARAMS_JSON: the organisation always comes from --org \
             (or SWITCHBOARD_ORG)"
        )],
        InvokeError::CategoryDenied { category, .. } => match category {
            Category::Execute => vec!["run it as a human: --initiator human".to_owned()],
            Category::Restricted => vec![
                "confirm it: --initiator human --confirm (only once you are sure: it cannot be undone)"
                    .to_owned(),
            ],
            Category::Read | Category::Propose => Vec::new(),
        },
        InvokeError::PermissionDenied {
            permission, roles, ..
        } => {
            let granting: Vec<String> = permissions
                .roles_granting(permission)
                .iter()
                .map(ToString::to_string)
                .collect();
            let mut hints = unknown_roles(roles, permissions);
            if granting.is_empty() {
                hints.push(format!(
                    "no role in the permission matrix grants {permission}: add it to a role in \
                     the file passed with --permissions"
                ));
            } else {
                hints.push(format!(
                    "pass a --role that grants {permission} (roles granting it: {})",
                    granting.join(", ")
                ));
            }
            hints
        }
        InvokeError::InvalidInput { tool, .. } => vec![
            "fix each field listed above; all of them were checked".to_owned(),
            format!("see what the tool takes: switchboard schema {tool}"),
        ],
        InvokeError::ToolFailed { tool, error } if error.is_in_doubt() => vec![format!(
            "the outcome of `{tool}` is unknown: check whether its change was made before \
             calling it again"
        )],
        InvokeError::ToolFailed { tool, error } => vec![format!(
            "`{tool}` ran and refused the request (code `{}`): change the params as its message \
             says",
            error.code()
        )],
        InvokeError::ToolPanicked { tool, .. } => vec![format!(
            "this is a bug in `{tool}`: report it with the correlation id of the audit record \
             below"
        )],
        InvokeError::Timeout { .. } => vec![
            "retry (a tool that changes something may have made part of its change: check \
             first); if it keeps timing out, the tool's timeout is too short for this request"
                .to_owned(),
        ],
        InvokeError::DomainUnavailable { domain, .. } => vec![format!(
            "the `{domain}` domain is down: retry, and look at the logs with RUST_LOG=info"
        )],
        InvokeError::AuditFailed { .. } => vec![
            "the call was not acknowledged because its audit record is not written: the message \
             says whether it ran; a retry with the same idempotency key replays a mutation that \
             ran rather than running it again"
                .to_owned(),
        ],
        InvokeError::AuditUnavailable { .. } => vec![
            "the audit store is failing, so nothing was run: retry once it is back (the log \
             names the store and its error)"
                .to_owned(),
        ],
        InvokeError::RateLimited { retry_after_ms, .. } => vec![format!(
            "a rate limit of the server's config (`[limits]`) refused the call before it ran: \
             retry in {retry_after_ms} ms, or ask the operator to raise the limit"
        )],
        InvokeError::LayerRefused { layer, .. } => vec![format!(
            "the `{layer}` layer of this service refused the call before it ran: its message \
             says what would be admitted"
        )],
        InvokeError::StoreUnavailable { .. } => vec![
            "the approvals database failed (the log names the file and the error): fix it, \
             then run the same command again"
                .to_owned(),
        ],
        InvokeError::ProposalNotFound { .. } => vec![
            "list the pending proposals of your organisation: switchboard proposals (with the \
             same --state-dir or --approvals store)"
                .to_owned(),
        ],
        InvokeError::ProposalClosed { .. } => vec![
            "a proposal is decided once: nothing more to do with it; list the pending ones with \
             switchboard proposals"
                .to_owned(),
        ],
        _ => Vec::new(),
    }
}

/// The hints for an `ask` that did not produce a result.
pub(crate) fn for_ask(error: &AskError, permissions: &PermissionMatrix) -> Vec<String> {
    match error {
        AskError::NoRoute { closest, .. } => {
            let mut hints = Vec::new();
            if !closest.is_empty() {
                hints.push("rephrase it as one of the intents above".to_owned());
            }
            hints.push("see every tool and its intents: switchboard tools --json".to_owned());
            hints.push("or call a tool directly: switchboard call TOOL PARAMS_JSON".to_owned());
            hints
        }
        AskError::Invoke { error, .. } => for_invoke(error, permissions),
        _ => Vec::new(),
    }
}

/// The hints for a tool name nothing is registered under.
pub(crate) fn unknown_tool(suggestions: &[String]) -> Vec<String> {
    let mut hints = Vec::new();
    if !suggestions.is_empty() {
        hints.push(format!("did you mean {}?", suggestions.join(", ")));
    }
    hints.push("list every tool: switchboard tools".to_owned());
    hints
}

/// "pass --org and --user (or set SWITCHBOARD_ORG / SWITCHBOARD_USER)", for the fields missing.
fn missing_context(fields: &[&str]) -> String {
    let sources: Vec<(&str, Option<&str>)> = fields
        .iter()
        .map(|field| match *field {
            "org_id" => ("--org", Some("SWITCHBOARD_ORG")),
            "user_id" => ("--user", Some("SWITCHBOARD_USER")),
            "session_id" => ("--session", None),
            "correlation_id" => ("--correlation", None),
            _ => ("an identity flag", None),
        })
        .collect();
    let flags: Vec<&str> = sources.iter().map(|(flag, _)| *flag).collect();
    let variables: Vec<&str> = sources
        .iter()
        .filter_map(|(_, variable)| *variable)
        .collect();
    let mut hint = format!("pass {}", flags.join(" and "));
    if !variables.is_empty() {
        hint.push_str(&format!(" (or set {})", variables.join(" / ")));
    }
    hint
}

/// For each of `roles` that no rule of the matrix mentions (most likely a typo), a hint naming
/// it, with the known role it most resembles when one is close.
fn unknown_roles(roles: &[Role], permissions: &PermissionMatrix) -> Vec<String> {
    roles
        .iter()
        .filter(|role| permissions.roles().all(|known| known != *role))
        .map(|role| {
            let closest = permissions
                .roles()
                .map(|known| (strsim::jaro_winkler(role.as_str(), known.as_str()), known))
                .filter(|(similarity, _)| *similarity >= 0.8)
                .max_by(|a, b| a.0.total_cmp(&b.0));
            match closest {
                Some((_, known)) => format!(
                    "`{role}` is not a role the permission matrix knows: did you mean `{known}`?"
                ),
                None => format!("`{role}` is not a role the permission matrix knows"),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use switchboard::{Initiator, ToolError};

    use super::*;

    fn hints(error: InvokeError) -> Vec<String> {
        for_invoke(&error, &PermissionMatrix::default())
    }

    #[test]
    fn missing_context_names_the_flags_and_variables() {
        assert_eq!(
            hints(InvokeError::MissingContext {
                fields: vec!["org_id", "user_id"]
            }),
            ["pass --org and --user (or set SWITCHBOARD_ORG / SWITCHBOARD_USER)"]
        );
        assert_eq!(
            hints(InvokeError::MissingContext {
                fields: vec!["org_id"]
            }),
            ["pass --org (or set SWITCHBOARD_ORG)"]
        );
    }

    #[test]
    fn permission_denied_names_the_roles_that_would_do() {
        let error = InvokeError::PermissionDenied {
            tool: "roster_assign_shift".to_owned(),
            permission: "roster.shifts.assign".to_owned(),
            roles: Vec::new(),
        };
        assert_eq!(
            hints(error),
            ["pass a --role that grants roster.shifts.assign (roles granting it: admin, manager)"]
        );
        let nobody = InvokeError::PermissionDenied {
            tool: "x".to_owned(),
            permission: "x.y".to_owned(),
            roles: Vec::new(),
        };
        let matrix = PermissionMatrix::from_toml("[roles]\nstaff = [\"core.*\"]").expect("valid");
        assert!(for_invoke(&nobody, &matrix)[0].starts_with("no role in the permission matrix"));
    }

    #[test]
    fn category_denied_says_how_to_get_through() {
        let denied = |category| InvokeError::CategoryDenied {
            tool: "t".to_owned(),
            category,
            initiator: Initiator::Agent,
            reason: String::new(),
        };
        assert_eq!(
            hints(denied(Category::Execute)),
            ["run it as a human: --initiator human"]
        );
        assert!(
            hints(denied(Category::Restricted))[0]
                .starts_with("confirm it: --initiator human --confirm")
        );
    }

    #[test]
    fn other_kinds_point_at_the_next_command() {
        assert_eq!(
            hints(InvokeError::ToolNotFound {
                name: "core_get_user".to_owned(),
                suggestions: vec!["core_get_current_user".to_owned()],
            }),
            [
                "did you mean core_get_current_user?",
                "list every tool: switchboard tools"
            ]
        );
        let invalid = hints(InvokeError::InvalidInput {
            tool: "roster_list_shifts".to_owned(),
            errors: Vec::new(),
        });
        assert_eq!(
            invalid[1],
            "see what the tool takes: switchboard schema roster_list_shifts"
        );
        let failed = hints(InvokeError::ToolFailed {
            tool: "roster_assign_shift".to_owned(),
            error: ToolError::new("shift_not_found", "no shift"),
        });
        assert!(failed[0].contains("`shift_not_found`"));
        let lost = hints(InvokeError::ToolFailed {
            tool: "github_create_issue".to_owned(),
            error: ToolError::new("mounted_outcome_unknown", "lost").in_doubt(),
        });
        assert_eq!(
            lost,
            [
                "the outcome of `github_create_issue` is unknown: check whether its change was \
                 made before calling it again"
            ]
        );
    }
}
