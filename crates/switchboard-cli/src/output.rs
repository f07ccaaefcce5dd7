//! Where output goes and in which shape: the `--json` objects, the streams, and colour.
//!
//! With `--json`, `call` and `ask` print exactly one object on standard output, built here
//! ([`JsonReport`]), so the shape scripts parse is defined in one place. Human output is built
//! by [`crate::render`] as plain strings, then written here in one piece; colour is applied
//! only when the stream it goes to is a terminal (owo-colors `if_supports_color`, which also
//! honours `NO_COLOR` and `FORCE_COLOR`). Writes ignore a closed pipe
//! (`switchboard tools | head -1`) rather than panic as `println!` would.

use std::io::{self, Write};

use owo_colors::{OwoColorize, Stream, Style};
use serde::Serialize;
use serde_json::Value;
use switchboard::{AuditRecord, Route};

use crate::{app::Exit, escape::escape_controls};

/// The one object `call --json` and `ask --json` print.
///
/// Success: `{"result", "route" (ask only), "audit"}`; failure: `{"error", "route" (ask, when
/// the utterance was routed), "audit"}`. `error` is the runtime's own serialization of the
/// error: `{"kind", "message", …details}`.
#[derive(Debug, Serialize)]
pub(crate) struct JsonReport<'a, E: Serialize> {
    /// What the tool returned, on success.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) result: Option<&'a Value>,
    /// Why the call did not succeed, on failure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) error: Option<&'a E>,
    /// How `ask` routed the utterance.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) route: Option<&'a Route>,
    /// The audit records of the call, oldest first.
    pub(crate) audit: &'a [AuditRecord],
}

/// Pretty JSON followed by a newline.
pub(crate) fn to_json(value: &impl Serialize) -> anyhow::Result<String> {
    let mut text = serde_json::to_string_pretty(value)?;
    text.push('\n');
    Ok(text)
}

/// Writes `text` to standard output.
pub(crate) fn write_stdout(text: &str) {
    write_to(&mut io::stdout().lock(), text);
}

/// Writes `text` to standard error.
pub(crate) fn write_stderr(text: &str) {
    write_to(&mut io::stderr().lock(), text);
}

fn write_to(stream: &mut dyn Write, text: &str) {
    // A reader that went away (a closed pipe) is not an error worth reporting, and there is
    // nowhere left to report a failed write to standard error.
    let _ = stream
        .write_all(text.as_bytes())
        .and_then(|()| stream.flush());
}

/// The styles human output uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tone {
    /// Column headers and section titles.
    Heading,
    /// Tool names.
    Name,
    /// Success (`ok`, read tools).
    Good,
    /// Worth a look (propose and execute tools).
    Notice,
    /// Errors and restricted tools.
    Bad,
    /// The "what to do" label.
    Hint,
    /// Secondary text (ids, timestamps).
    Dim,
}

impl Tone {
    fn style(self) -> Style {
        match self {
            Tone::Heading => Style::new().bold(),
            Tone::Name => Style::new().cyan(),
            Tone::Good => Style::new().green(),
            Tone::Notice => Style::new().yellow(),
            Tone::Bad => Style::new().red().bold(),
            Tone::Hint => Style::new().blue().bold(),
            Tone::Dim => Style::new().dimmed(),
        }
    }
}

/// `text` in `tone`, if `stream` supports colour; `text` unchanged otherwise.
pub(crate) fn paint(text: &str, tone: Tone, stream: Stream) -> String {
    let style = tone.style();
    text.if_supports_color(stream, |text| text.style(style))
        .to_string()
}

/// What `--json` prints for an error that is not a call's (a usage or runtime error), in the
/// shape of every `--json` failure: `{"error": {"kind", "message"}}`, where `kind` is
/// [`USAGE_ERROR`] (exit code 2) or [`INTERNAL_ERROR`] (exit code 3).
pub(crate) fn failure_json(exit: Exit, message: &str) -> String {
    let kind = if exit == Exit::Usage {
        USAGE_ERROR
    } else {
        INTERNAL_ERROR
    };
    let error = serde_json::json!({ "error": { "kind": kind, "message": message } });
    // A `Value` of strings always serializes.
    to_json(&error).unwrap_or_else(|_| format!("{error}\n"))
}

/// The `kind` of a `--json` failure of the command line itself (exit code 2): a flag, its
/// value, `PARAMS_JSON`, a file named by a flag.
pub(crate) const USAGE_ERROR: &str = "usage_error";

/// The `kind` of a `--json` failure of the runtime itself (exit code 3).
pub(crate) const INTERNAL_ERROR: &str = "internal_error";

/// How an error that is not a call's (a usage or runtime error) is shown: the error and its
/// causes, one per line. Messages quote what the user gave (a flag's value, a file's content),
/// so their control characters are escaped, except the line breaks of a message that spans
/// lines (a parser's excerpt of the file, with its caret), which stay line breaks, each
/// following line indented under the first.
pub(crate) fn render_failure(error: &anyhow::Error) -> String {
    let mut text = format!(
        "{} {}\n",
        paint("error:", Tone::Bad, Stream::Stderr),
        escape_lines(&error.to_string(), "    ")
    );
    for cause in error.chain().skip(1) {
        text.push_str(&format!(
            "  caused by: {}\n",
            escape_lines(&cause.to_string(), "      ")
        ));
    }
    text
}

/// `message` with its control characters escaped line by line, its lines joined again with
/// `indent` before each one after the first.
fn escape_lines(message: &str, indent: &str) -> String {
    message
        .trim_end_matches('\n')
        .split('\n')
        .map(|line| escape_controls(line.trim_end_matches('\r')))
        .collect::<Vec<_>>()
        .join(&format!("\n{indent}"))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_failure_over_several_lines_keeps_them_and_escapes_the_rest() {
        let error = anyhow::anyhow!(
            "the config file a.toml is not valid: TOML parse error at line 2\n  |\n2 | \
             x = 1\u{1b}[2J\n  | ^\nunknown field `x`\n"
        );
        let text = render_failure(&error);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 5, "{text}");
        assert!(
            lines[0].ends_with("is not valid: TOML parse error at line 2"),
            "{text}"
        );
        assert_eq!(lines[2], "    2 | x = 1\\u{1b}[2J", "{text}");
        assert_eq!(lines[4], "    unknown field `x`", "{text}");
        assert!(!text.contains("\\n"), "no escaped line breaks: {text}");
        assert!(
            lines[1..].iter().all(|line| !line.contains('\u{1b}')),
            "the escape sequence stays escaped: {text}"
        );
    }

    #[test]
    fn success_and_failure_reports_have_the_documented_keys() {
        let result = json!({"user_id": "alice"});
        let success = JsonReport::<Value> {
            result: Some(&result),
            error: None,
            route: None,
            audit: &[],
        };
        assert_eq!(
            serde_json::to_value(&success).expect("serializes"),
            json!({"result": {"user_id": "alice"}, "audit": []})
        );
        let error = json!({"kind": "missing_context", "message": "…"});
        let failure = JsonReport {
            result: None,
            error: Some(&error),
            route: None,
            audit: &[],
        };
        let value = serde_json::to_value(&failure).expect("serializes");
        assert_eq!(value["error"]["kind"], "missing_context");
        assert!(value.get("result").is_none());
    }
}
