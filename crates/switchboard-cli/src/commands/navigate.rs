//! `switchboard navigate URL` and `switchboard act URL ACTION`: the pages of the linked domains
//! from a terminal, as an agent sees them over MCP (`navigate`, `execute_action`) and a person
//! in a browser.
//!
//! Both run through the `Navigator` on the registry `call` boots, with the same identity,
//! permission and store flags, so what a page offers and what an action may do are decided
//! exactly as for any other caller, and every page read and every action leaves its audit
//! records under the command's correlation id (printed with `--json`, as `call --json` does).
//! An agent's change becomes a proposal; `act` run as an agent keeps it in the state
//! directory's `approvals.db` (as `call` does), where `switchboard approve` finds it.
//! A refusal is the navigator's typed error: exit code 1, with its kind, its reason, what to do
//! and the audit records on standard error, or `{"error", "audit"}` under `--json`.

use clap::Args;
use serde::Serialize;
use serde_json::{Value, json};
use switchboard::{AuditRecord, InvokeError, ToolRegistry};
use switchboard_navigation::{ActionOutcome, NavError, Navigator, PageView};

use crate::{
    app::{Exit, UsageError},
    args::RegistryArgs,
    escape::escape_controls,
    hints,
    identity::IdentityArgs,
    output, params, render,
    workflows_setup::StateDirArgs,
};

/// `switchboard navigate URL [IDENTITY] [--json]`.
#[derive(Debug, Args)]
pub(crate) struct NavigateArgs {
    /// The page's URL: a path such as `/roster` or `/roster/shifts/acme-2026-11-24-pm`; `/`
    /// lists the pages.
    #[arg(value_name = "URL")]
    pub(crate) url: String,

    /// Print one JSON object: `{"page", "audit"}` or `{"error", "audit"}`.
    #[arg(long)]
    pub(crate) json: bool,

    /// Who looks.
    #[command(flatten)]
    pub(crate) identity: IdentityArgs,

    /// The permission matrix and the stores.
    #[command(flatten)]
    pub(crate) registry: RegistryArgs,
}

/// `switchboard act URL ACTION [PARAMS_JSON] [--param NAME=VALUE]... [IDENTITY] [--json]`.
#[derive(Debug, Args)]
pub(crate) struct ActArgs {
    /// The page's URL (see `switchboard navigate`).
    #[arg(value_name = "URL")]
    pub(crate) url: String,

    /// The action, as the page lists it under "Available actions".
    #[arg(value_name = "ACTION")]
    pub(crate) action: String,

    /// The action's params, as one JSON object; `-` reads them from standard input. The page's
    /// URL gives the others (a shift page gives `shift_id`): never repeat them here.
    #[arg(value_name = "PARAMS_JSON", default_value = "{}")]
    pub(crate) params: String,

    /// One param: `NAME=TEXT` (a string) or `NAME:=JSON` (any JSON value, such as `count:=3`);
    /// repeatable, added to PARAMS_JSON.
    #[arg(long = "param", value_name = "NAME=VALUE")]
    pub(crate) param: Vec<String>,

    /// The page's `version` you acted on (`navigate --json` prints it): when the page's data
    /// changed since, the action is refused with `page_changed`, naming what changed.
    #[arg(long, value_name = "VERSION")]
    pub(crate) page_version: Option<String>,

    /// Print one JSON object: `{"outcome", "audit"}` or `{"error", "audit"}`.
    #[arg(long)]
    pub(crate) json: bool,

    /// Who acts.
    #[command(flatten)]
    pub(crate) identity: IdentityArgs,

    /// The permission matrix and the stores.
    #[command(flatten)]
    pub(crate) registry: RegistryArgs,

    /// Where an agent's proposals are kept.
    #[command(flatten)]
    pub(crate) state: StateDirArgs,
}

/// The params of `act`: PARAMS_JSON with each `--param` added. Checked before the runtime
/// boots; whether they fit the action is the navigator's call (`invalid_input`).
pub(crate) fn action_params(args: &ActArgs) -> Result<Value, UsageError> {
    let from_json = params::read(&args.params)?;
    if args.param.is_empty() {
        return Ok(from_json);
    }
    let mut merged = match from_json {
        Value::Object(map) => map,
        _ => {
            return Err(UsageError::new(
                "PARAMS_JSON must be a JSON object when --param is given, e.g. '{}'",
            ));
        }
    };
    for text in &args.param {
        let (name, value) = one_param(text)?;
        if merged.contains_key(&name) {
            return Err(UsageError::new(format!(
                "the param `{}` is given twice: keep one (--param or PARAMS_JSON)",
                escape_controls(&name)
            )));
        }
        merged.insert(name, value);
    }
    Ok(Value::Object(merged))
}

/// `NAME=TEXT` as a string, `NAME:=JSON` as that JSON value.
fn one_param(text: &str) -> Result<(String, Value), UsageError> {
    let refuse = || {
        UsageError::new(format!(
            "--param `{}` is not NAME=TEXT or NAME:=JSON, e.g. --param user_id=sam or \
             --param count:=3",
            escape_controls(text)
        ))
    };
    let (name, value) = text.split_once('=').ok_or_else(refuse)?;
    let (name, value) = match name.strip_suffix(':') {
        Some(name) => (name, params::parse(value, &format!("--param {name}"))?),
        None => (name, Value::String(value.to_owned())),
    };
    if name.is_empty() {
        return Err(refuse());
    }
    Ok((name.to_owned(), value))
}

/// What `navigate --json` prints on success.
#[derive(Serialize)]
struct PageReport<'a> {
    page: &'a PageView,
    audit: &'a [AuditRecord],
}

/// What `act --json` prints on success.
#[derive(Serialize)]
struct OutcomeReport<'a> {
    outcome: &'a ActionOutcome,
    audit: &'a [AuditRecord],
}

/// What `navigate --json` and `act --json` print on a refusal.
#[derive(Serialize)]
struct ErrorReport<'a> {
    error: Value,
    audit: &'a [AuditRecord],
}

/// Opens the page at the URL and prints it, as markdown or JSON.
pub(super) async fn navigate(registry: &ToolRegistry, args: NavigateArgs) -> anyhow::Result<Exit> {
    let navigator = navigator(registry)?;
    let identity = args.identity.into_identity();
    super::open_thread(registry, &identity.context);
    let page = navigator.navigate(&args.url, &identity.context).await;
    let audit = super::audit_of(registry, &identity.correlation_id).await?;
    match page {
        Ok(page) if args.json => {
            let report = PageReport {
                page: &page,
                audit: &audit,
            };
            output::write_stdout(&output::to_json(&report)?);
            Ok(Exit::Success)
        }
        Ok(page) => {
            output::write_stdout(&markdown(&page));
            Ok(Exit::Success)
        }
        Err(error) => refuse(
            registry,
            &error,
            &args.url,
            args.json,
            &audit,
            &identity.correlation_id,
        ),
    }
}

/// Runs the action and prints its outcome and the page it leads to, as text or JSON.
pub(super) async fn act(
    registry: &ToolRegistry,
    args: ActArgs,
    params: Value,
) -> anyhow::Result<Exit> {
    let navigator = navigator(registry)?;
    let identity = args.identity.into_identity();
    super::open_thread(registry, &identity.context);
    let outcome = navigator
        .execute_action(
            &args.url,
            &args.action,
            params,
            args.page_version.as_deref(),
            &identity.context,
        )
        .await;
    let audit = super::audit_of(registry, &identity.correlation_id).await?;
    match outcome {
        Ok(outcome) if args.json => {
            let report = OutcomeReport {
                outcome: &outcome,
                audit: &audit,
            };
            output::write_stdout(&output::to_json(&report)?);
            Ok(Exit::Success)
        }
        Ok(outcome) => {
            let page = markdown(&outcome.next);
            output::write_stdout(&render::action_success(
                &outcome,
                &page,
                &audit,
                &identity.correlation_id,
            ));
            Ok(Exit::Success)
        }
        Err(error) => refuse(
            registry,
            &error,
            &args.url,
            args.json,
            &audit,
            &identity.correlation_id,
        ),
    }
}

/// The navigator over the pages linked into the binary.
fn navigator(registry: &ToolRegistry) -> anyhow::Result<Navigator> {
    use anyhow::Context as _;
    Navigator::new(registry.clone()).context("the pages of the linked domains do not fit together")
}

/// The page as markdown, each line's control characters escaped (its line breaks are the
/// page's own), its actions ending with the `switchboard act` command that runs one.
fn markdown(page: &PageView) -> String {
    let hint = format!(
        "Run one with `switchboard act {} ACTION [--param NAME=VALUE]...`.",
        page.url
    );
    let text = page.markdown_with_hint(&hint);
    let mut escaped = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let (body, end) = match line.strip_suffix('\n') {
            Some(body) => (body, "\n"),
            None => (line, ""),
        };
        escaped.push_str(&escape_controls(body));
        escaped.push_str(end);
    }
    escaped
}

/// Reports a refusal (exit 1): its JSON with the audit records, or its kind, reason, what to
/// do and the audit records on standard error.
fn refuse(
    registry: &ToolRegistry,
    error: &NavError,
    url: &str,
    json: bool,
    audit: &[AuditRecord],
    correlation_id: &str,
) -> anyhow::Result<Exit> {
    if json {
        let report = ErrorReport {
            error: error_json(error),
            audit,
        };
        output::write_stdout(&output::to_json(&report)?);
    } else {
        let hints = nav_hints(error, url, registry);
        output::write_stderr(&render::nav_refusal(error, &hints, audit, correlation_id));
    }
    Ok(Exit::Refused)
}

/// The JSON of a navigation error, as `serve --navigation` answers it: `{"kind", "message",
/// ...}` with what a script can act on (the URL, the nearest routes, the fields that changed),
/// and a registry error's own JSON, as `call --json` prints it.
fn error_json(error: &NavError) -> Value {
    let message = error.to_string();
    let kind = error.kind();
    match error {
        NavError::Invoke(invoke) => serde_json::to_value(invoke)
            .unwrap_or_else(|_| json!({"kind": kind, "message": message})),
        NavError::NoSuchPage { url, nearest } => {
            json!({"kind": kind, "message": message, "url": url, "nearest": nearest})
        }
        NavError::Stale { url, changed } => {
            json!({"kind": kind, "message": message, "url": url, "changed": changed})
        }
        NavError::BadUrl { url, .. }
        | NavError::NotFound { url, .. }
        | NavError::InvalidParams { url, .. } => {
            json!({"kind": kind, "message": message, "url": url})
        }
        _ => json!({"kind": kind, "message": message}),
    }
}

/// What to do about a navigation error, naming the command that would help.
fn nav_hints(error: &NavError, url: &str, registry: &ToolRegistry) -> Vec<String> {
    let url = escape_controls(url);
    match error {
        NavError::BadUrl { .. } => vec![
            "a URL is a path such as /roster/shifts/acme-2026-11-24-pm, without `..`, `//` or \
             encoded slashes"
                .to_owned(),
        ],
        NavError::NoSuchPage { .. } => {
            vec!["see the pages you can reach: switchboard navigate /".to_owned()]
        }
        NavError::NotFound { .. } | NavError::InvalidParams { .. } => {
            vec!["see the pages you can reach: switchboard navigate /".to_owned()]
        }
        NavError::Stale { .. } => vec![format!(
            "look at the page again (switchboard navigate {url} --json prints its version), \
             then act with --page-version VERSION"
        )],
        NavError::Invoke(InvokeError::GateRefused { error, .. })
            if error.code() == "action_unavailable" =>
        {
            vec![format!(
                "see the actions offered to you there: switchboard navigate {url}"
            )]
        }
        NavError::Invoke(invoke) => hints::for_invoke(invoke, registry.permissions()),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn act_args(params: &str, param: &[&str]) -> ActArgs {
        use clap::Parser as _;
        let mut line = vec!["switchboard", "act", "/roster", "assign", params];
        for one in param {
            line.extend(["--param", one]);
        }
        match crate::args::Cli::try_parse_from(line)
            .expect("parses")
            .command
        {
            crate::args::Command::Act(args) => args,
            other => panic!("an act command, not {other:?}"),
        }
    }

    #[test]
    fn params_join_the_json_object_and_each_param() {
        assert_eq!(
            action_params(&act_args(
                "{\"note\": \"hi\"}",
                &["user_id=sam", "count:=3"]
            ))
            .expect("valid"),
            json!({"note": "hi", "user_id": "sam", "count": 3})
        );
        assert_eq!(
            action_params(&act_args("{}", &["expr=a=b", "empty="])).expect("valid"),
            json!({"expr": "a=b", "empty": ""}),
            "the first `=` splits; the rest is the value"
        );
        assert_eq!(
            action_params(&act_args("[1]", &[])).expect("passed on"),
            json!([1]),
            "without --param, PARAMS_JSON goes to the navigator as it is"
        );
    }

    #[test]
    fn a_bad_param_is_a_usage_error_saying_the_form() {
        for (params, param, expected) in [
            ("{}", "user_id", "NAME=TEXT or NAME:=JSON"),
            ("{}", "=sam", "NAME=TEXT or NAME:=JSON"),
            ("{}", "count:=three", "--param count is not valid JSON"),
            ("{\"user_id\": \"sam\"}", "user_id=mark", "given twice"),
            ("[1]", "user_id=sam", "must be a JSON object"),
        ] {
            let error = action_params(&act_args(params, &[param])).expect_err(param);
            assert!(error.to_string().contains(expected), "{param}: {error}");
        }
    }

    #[test]
    fn markdown_keeps_its_lines_and_escapes_what_is_inside_them() {
        let page = PageView {
            url: "/x".to_owned(),
            route: "/x",
            title: "X",
            content: "- **Name:** a\u{1b}[31mb\r\n- next".to_owned(),
            data: Value::Null,
            version: String::new(),
            actions: Vec::new(),
        };
        let text = markdown(&page);
        assert!(
            text.contains("- **Name:** a\\u{1b}[31mb\\r\n- next\n"),
            "{text}"
        );
        assert!(!text.contains('\u{1b}') && !text.contains('\r'), "{text}");
    }

    #[test]
    fn an_unknown_page_is_json_with_the_nearest_routes() {
        let error = NavError::NoSuchPage {
            url: "/rostr".to_owned(),
            nearest: vec!["/roster".to_owned()],
        };
        let value = error_json(&error);
        assert_eq!(value["kind"], "no_such_page");
        assert_eq!(value["nearest"], json!(["/roster"]));
        assert!(
            value["message"]
                .as_str()
                .is_some_and(|message| message.contains("`/roster`")),
            "{value}"
        );
    }
}
