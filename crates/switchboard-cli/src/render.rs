//! Human output: what a person at a terminal reads.
//!
//! Results go to standard output; a refused call (its kind, its reason, what to do, and its
//! audit record) goes to standard error, so standard output stays empty when a call fails.
//! Nothing here is a contract for scripts: they use `--json`, whose shapes live in
//! [`crate::output`]. Every function returns the text rather than printing it, so tests can
//! read it.
//!
//! Every field that comes from data (names, ids, utterances, messages, hints) goes through
//! [`escape_controls`] before it is painted: in table cells ([`crate::table::Cell`]) and in the
//! lines built here. Results are printed as JSON, whose strings serde escapes already.

use owo_colors::Stream;
use serde_json::Value;
use switchboard::{
    AskError, AuditRecord, Category, DomainStatus, InvokeError, Route, ToolDescriptor,
    audit::ActionEvent,
};

use switchboard_navigation::{ActionOutcome, NavError};

use crate::{
    escape::escape_controls,
    output::{Tone, paint},
    table::{self, Cell},
};

/// The `tools` tables: each tool's name, domain, category, permission and the description's
/// summary; then each domain's placement and health.
pub(crate) fn tools(tools: &[&ToolDescriptor], domains: &[DomainStatus]) -> String {
    let rows: Vec<Vec<Cell>> = tools
        .iter()
        .map(|tool| {
            vec![
                Cell::toned(tool.name.as_ref(), Tone::Name),
                Cell::plain(tool.domain.as_ref()),
                Cell::toned(tool.category.as_str(), category_tone(tool.category)),
                Cell::plain(tool.permission.as_ref()),
                Cell::plain(summary(&tool.description)),
            ]
        })
        .collect();
    let mut text = table::render(
        &["NAME", "DOMAIN", "CATEGORY", "PERMISSION", "DESCRIPTION"],
        &rows,
        "",
        Stream::Stdout,
    );
    let rows: Vec<Vec<Cell>> = domains
        .iter()
        .map(|status| {
            let health = crate::commands::tools_health(status);
            let tone = if health == "running" || health == "up" {
                Tone::Good
            } else {
                Tone::Bad
            };
            vec![
                Cell::plain(status.name.as_str()),
                Cell::plain(crate::commands::tools_placement(status)),
                Cell::toned(health, tone),
            ]
        })
        .collect();
    text.push('\n');
    text.push_str(&table::render(
        &["DOMAIN", "PLACEMENT", "HEALTH"],
        &rows,
        "",
        Stream::Stdout,
    ));
    text
}

/// The first sentence of a description's first paragraph, on one line (descriptions are doc
/// comments, wrapped where the source wrapped them).
pub(crate) fn summary(description: &str) -> String {
    let paragraph = description.split("\n\n").next().unwrap_or_default();
    let joined = paragraph.split_whitespace().collect::<Vec<_>>().join(" ");
    match joined.find(". ") {
        Some(end) => joined[..=end].to_owned(),
        None => joined,
    }
}

fn category_tone(category: Category) -> Tone {
    match category {
        Category::Read => Tone::Good,
        Category::Propose | Category::Execute => Tone::Notice,
        Category::Restricted => Tone::Bad,
    }
}

/// A successful `call`: the result, then the audit records.
pub(crate) fn call_success(
    tool: &str,
    result: &Value,
    audit: &[AuditRecord],
    correlation_id: &str,
) -> String {
    let stream = Stream::Stdout;
    let mut text = format!(
        "{} {}\n",
        paint(&escape_controls(tool), Tone::Name, stream),
        paint("ok", Tone::Good, stream)
    );
    text.push_str(&replay_line(audit));
    text.push_str(&pretty(result));
    text.push('\n');
    text.push_str(&audit_section(audit, correlation_id, stream));
    text
}

/// `replayed: the first run's result (action …)` when the call was a retry of a mutation that
/// already ran, so its result is the first run's and the tool did not run again; else nothing.
fn replay_line(audit: &[AuditRecord]) -> String {
    audit
        .iter()
        .filter_map(|record| record.action.as_ref())
        .find(|action| action.event == ActionEvent::Replayed)
        .map(|action| {
            format!(
                "replayed: the first run's result (action {}); the tool did not run again\n",
                escape_controls(action.id.as_str())
            )
        })
        .unwrap_or_default()
}

/// A successful `ask`: the route, the result, then the audit records.
pub(crate) fn ask_success(
    route: &Route,
    result: &Value,
    audit: &[AuditRecord],
    correlation_id: &str,
) -> String {
    let stream = Stream::Stdout;
    let mut text = route_line(route, stream);
    text.push_str(&format!(
        "{} {}\n",
        paint(&escape_controls(&route.tool), Tone::Name, stream),
        paint("ok", Tone::Good, stream)
    ));
    text.push_str(&replay_line(audit));
    text.push_str(&pretty(result));
    text.push('\n');
    text.push_str(&audit_section(audit, correlation_id, stream));
    text
}

/// "route: core_get_current_user (tier 1, cost $0, intent "who am i") params {}".
fn route_line(route: &Route, stream: Stream) -> String {
    let intent = route
        .intent
        .as_deref()
        .map(|intent| format!(", intent \"{}\"", escape_controls(intent)))
        .unwrap_or_default();
    format!(
        "{} {} (tier {}, cost ${}{intent}) params {}\n",
        paint("route:", Tone::Heading, stream),
        paint(&escape_controls(&route.tool), Tone::Name, stream),
        route.tier,
        route.cost,
        route.params,
    )
}

/// A refused or failed `call`: kind, reason, what to do, audit.
pub(crate) fn call_refusal(
    error: &InvokeError,
    hints: &[String],
    audit: &[AuditRecord],
    correlation_id: &str,
) -> String {
    let (reason, details) = explain_invoke(error);
    refusal(
        error.kind().as_str(),
        None,
        &reason,
        &details,
        hints,
        audit,
        correlation_id,
    )
}

/// A refused `proposals`, `approve` or `reject`: the same headline, details and hints as a
/// refused call, with no audit section (the command reads none).
pub(crate) fn decision_refusal(error: &InvokeError, hints: &[String]) -> String {
    let stream = Stream::Stderr;
    let (reason, details) = explain_invoke(error);
    let mut text = headline(error.kind().as_str(), &reason, stream);
    push_details_and_hints(&mut text, &details, hints, stream);
    text
}

/// An `ask` that did not produce a result.
pub(crate) fn ask_refusal(
    error: &AskError,
    hints: &[String],
    audit: &[AuditRecord],
    correlation_id: &str,
) -> String {
    let (reason, details) = match error {
        AskError::NoRoute {
            utterance,
            closest,
            clear_best,
        } if !closest.is_empty() => {
            let intents: Vec<String> = closest
                .iter()
                .map(|c| format!("\"{}\"", escape_controls(&c.example)))
                .collect();
            let width = intents
                .iter()
                .map(|intent| intent.chars().count())
                .max()
                .unwrap_or(0);
            let details = intents
                .iter()
                .zip(closest)
                .map(|(intent, c)| format!("{intent:<width$}  ({})", c.tool))
                .collect();
            let reason = if *clear_best {
                format!(
                    "no tool matches \"{utterance}\"; did you mean \"{}\"?",
                    escape_controls(&closest[0].example)
                )
            } else {
                format!("no tool matches \"{utterance}\"; the closest intents:")
            };
            (reason, details)
        }
        AskError::Invoke { error, .. } => explain_invoke(error),
        other => (other.to_string(), Vec::new()),
    };
    refusal(
        error.kind().as_str(),
        error.route(),
        &reason,
        &details,
        hints,
        audit,
        correlation_id,
    )
}

/// A successful `act`: the action and its tool, the result (or the proposal it became), the
/// page it leads to (`page`, its markdown, escaped already), then the audit records.
pub(crate) fn action_success(
    outcome: &ActionOutcome,
    page: &str,
    audit: &[AuditRecord],
    correlation_id: &str,
) -> String {
    let stream = Stream::Stdout;
    let done = if outcome.proposal.is_some() {
        paint("proposed", Tone::Notice, stream)
    } else {
        paint("ok", Tone::Good, stream)
    };
    let mut text = format!(
        "{} {done} ({})\n",
        paint(&escape_controls(outcome.action), Tone::Name, stream),
        escape_controls(&outcome.tool)
    );
    if let Some(proposal) = &outcome.proposal {
        let id = escape_controls(proposal.id.as_str());
        text.push_str(&format!(
            "proposal {id} waits for a person with the tool's permission: switchboard approve \
             {id} (with the same --state-dir or --approvals store)\n"
        ));
    }
    text.push_str(&replay_line(audit));
    text.push_str(&pretty(&outcome.result));
    text.push_str(&format!(
        "\n{} {}\n\n",
        paint("next:", Tone::Heading, stream),
        escape_controls(&outcome.next_url)
    ));
    text.push_str(page);
    text.push('\n');
    text.push_str(&audit_section(audit, correlation_id, stream));
    text
}

/// A refused `navigate` or `act`: kind, reason, what to do, audit.
pub(crate) fn nav_refusal(
    error: &NavError,
    hints: &[String],
    audit: &[AuditRecord],
    correlation_id: &str,
) -> String {
    let (reason, details) = match error {
        NavError::Invoke(invoke) => explain_invoke(invoke),
        other => (other.to_string(), Vec::new()),
    };
    refusal(
        error.kind(),
        None,
        &reason,
        &details,
        hints,
        audit,
        correlation_id,
    )
}

/// A `schema` for a tool that does not exist (no call, so no audit).
pub(crate) fn schema_refusal(error: &InvokeError, hints: &[String]) -> String {
    let (reason, details) = explain_invoke(error);
    let stream = Stream::Stderr;
    let mut text = headline(error.kind().as_str(), &reason, stream);
    push_details_and_hints(&mut text, &details, hints, stream);
    text
}

/// The reason line and the detail lines below it. Invalid input lists each field error on its
/// own line rather than the message's one long line. Human output only: `--json` keeps the
/// runtime's message whole.
fn explain_invoke(error: &InvokeError) -> (String, Vec<String>) {
    match error {
        InvokeError::InvalidInput { tool, errors } if !errors.is_empty() => (
            format!("invalid input for `{tool}`:"),
            errors.iter().map(ToString::to_string).collect(),
        ),
        // The suggestions are in the hints ("did you mean …?"); say them once.
        InvokeError::ToolNotFound { name, .. } => {
            (format!("no tool is named `{name}`"), Vec::new())
        }
        other => (other.to_string(), Vec::new()),
    }
}

fn refusal(
    kind: &str,
    route: Option<&Route>,
    reason: &str,
    details: &[String],
    hints: &[String],
    audit: &[AuditRecord],
    correlation_id: &str,
) -> String {
    let stream = Stream::Stderr;
    let mut text = String::new();
    if let Some(route) = route {
        text.push_str(&route_line(route, stream));
    }
    text.push_str(&headline(kind, reason, stream));
    push_details_and_hints(&mut text, details, hints, stream);
    text.push('\n');
    text.push_str(&audit_section(audit, correlation_id, stream));
    text
}

fn headline(kind: &str, reason: &str, stream: Stream) -> String {
    format!(
        "{} {}\n",
        paint(&format!("error[{kind}]:"), Tone::Bad, stream),
        escape_controls(reason)
    )
}

fn push_details_and_hints(text: &mut String, details: &[String], hints: &[String], stream: Stream) {
    for detail in details {
        text.push_str(&format!("    {}\n", escape_controls(detail)));
    }
    let label = "what to do:";
    for (index, hint) in hints.iter().enumerate() {
        let hint = escape_controls(hint);
        if index == 0 {
            text.push_str(&format!("  {} {hint}\n", paint(label, Tone::Hint, stream)));
        } else {
            text.push_str(&format!("  {} {hint}\n", " ".repeat(label.len())));
        }
    }
}

/// "audit (correlation …):" and a table of the records, oldest first.
fn audit_section(audit: &[AuditRecord], correlation_id: &str, stream: Stream) -> String {
    let title = format!("audit (correlation {}):", escape_controls(correlation_id));
    let mut text = format!("{}\n", paint(&title, Tone::Heading, stream));
    if audit.is_empty() {
        text.push_str("  no record: no tool was called\n");
        return text;
    }
    let rows: Vec<Vec<Cell>> = audit.iter().map(audit_row).collect();
    text.push_str(&table::render(
        &[
            "ID",
            "TIME",
            "TOOL",
            "OUTCOME",
            "ORG",
            "USER",
            "INITIATOR",
            "DURATION",
        ],
        &rows,
        "  ",
        stream,
    ));
    text
}

/// `switchboard audit`: the records as given (newest first), with their correlation ids.
pub(crate) fn audit_list(records: &[AuditRecord]) -> String {
    let stream = Stream::Stdout;
    if records.is_empty() {
        return "no audit record matches\n".to_owned();
    }
    let rows: Vec<Vec<Cell>> = records
        .iter()
        .map(|record| {
            let mut row = audit_row(record);
            row.push(Cell::toned(
                record.correlation_id.as_ref().map_or("-", |id| id.as_str()),
                Tone::Dim,
            ));
            row
        })
        .collect();
    table::render(
        &[
            "ID",
            "TIME",
            "TOOL",
            "OUTCOME",
            "ORG",
            "USER",
            "INITIATOR",
            "DURATION",
            "CORRELATION",
        ],
        &rows,
        "",
        stream,
    )
}

fn audit_row(record: &AuditRecord) -> Vec<Cell> {
    let outcome_tone = if record.outcome.is_ok() {
        Tone::Good
    } else {
        Tone::Bad
    };
    let or_dash = |value: Option<&str>| value.unwrap_or("-").to_owned();
    vec![
        Cell::plain(record.id.to_string()),
        Cell::toned(
            record
                .timestamp
                .strftime("%Y-%m-%dT%H:%M:%S%.3fZ")
                .to_string(),
            Tone::Dim,
        ),
        Cell::toned(record.tool.as_ref(), Tone::Name),
        Cell::toned(record.outcome.as_str(), outcome_tone),
        Cell::plain(or_dash(record.org_id.as_ref().map(|id| id.as_str()))),
        Cell::plain(or_dash(record.user_id.as_ref().map(|id| id.as_str()))),
        Cell::plain(record.initiator.as_str()),
        Cell::plain(duration(record.duration_us)),
    ]
}

/// `850 µs`, `12.3 ms`, `1.20 s`.
fn duration(micros: u64) -> String {
    match micros {
        0..1_000 => format!("{micros} µs"),
        1_000..1_000_000 => format!("{:.1} ms", micros as f64 / 1_000.0),
        _ => format!("{:.2} s", micros as f64 / 1_000_000.0),
    }
}

fn pretty(value: &Value) -> String {
    let mut text = serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string());
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summaries_are_the_first_sentence_on_one_line() {
        assert_eq!(
            summary(
                "Lists shifts between two days, sorted by\ndate. Open shifts have no\nassignee."
            ),
            "Lists shifts between two days, sorted by date."
        );
        assert_eq!(summary("Returns the user\n\nMore."), "Returns the user");
    }

    #[test]
    fn durations_read_naturally() {
        assert_eq!(duration(850), "850 µs");
        assert_eq!(duration(12_345), "12.3 ms");
        assert_eq!(duration(1_200_000), "1.20 s");
    }

    #[test]
    fn invalid_input_lists_each_field_error_and_the_hint() {
        owo_colors::set_override(false);
        let error = InvokeError::InvalidInput {
            tool: "roster_list_shifts".to_owned(),
            errors: vec![
                switchboard::FieldError::new("/from", "is not a date"),
                switchboard::FieldError::new("", "`to` is required"),
            ],
        };
        let text = call_refusal(
            &error,
            &["fix it".to_owned(), "then retry".to_owned()],
            &[],
            "c1",
        );
        assert_eq!(
            text,
            "error[invalid_input]: invalid input for `roster_list_shifts`:\n    \
             /from: is not a date\n    \
             (params): `to` is required\n  \
             what to do: fix it\n              \
             then retry\n\n\
             audit (correlation c1):\n  \
             no record: no tool was called\n"
        );
    }
}
