//! `PARAMS_JSON`: the text of a `call`'s params, from the argument or from standard input,
//! parsed into JSON before the runtime starts.
//!
//! Text that is not JSON is a usage error (exit code 2) whose message names the line and the
//! column and points at the spot, because a shell quoting mistake is the usual cause and is
//! hard to see otherwise. Whether the JSON fits the tool is the runtime's call
//! (`invalid_input`), not this module's.

use std::io::Read;

use serde_json::Value;

use crate::app::UsageError;

/// What `-` means in place of `PARAMS_JSON`.
pub(crate) const FROM_STDIN: &str = "-";

/// Reads and parses the params: `-` reads standard input to its end.
pub(crate) fn read(argument: &str) -> Result<Value, UsageError> {
    if argument == FROM_STDIN {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .map_err(|error| {
                UsageError::new(format!(
                    "cannot read PARAMS_JSON from standard input: {error}"
                ))
            })?;
        parse(&text, "standard input")
    } else {
        parse(argument, "PARAMS_JSON")
    }
}

/// Parses `text`, reporting where it stops being JSON. `source` names where it came from.
pub(crate) fn parse(text: &str, source: &str) -> Result<Value, UsageError> {
    if text.trim().is_empty() {
        return Err(UsageError::new(format!(
            "{source} is empty: give a JSON object such as '{{}}' or '{{\"from\": \"2026-11-23\"}}'"
        )));
    }
    serde_json::from_str(text).map_err(|error| {
        let mut message = format!(
            "{source} is not valid JSON: {} (line {}, column {})",
            reason(&error),
            error.line(),
            error.column()
        );
        if let Some(pointer) = pointer_at(text, error.line(), error.column()) {
            message.push('\n');
            message.push_str(&pointer);
        }
        message.push_str(
            "\nquote the whole JSON for your shell, e.g. '{\"shift_id\": \"acme-2026-11-23-am\"}'",
        );
        UsageError::new(message)
    })
}

/// serde_json's message without its own " at line L column C" suffix (we say it once).
fn reason(error: &serde_json::Error) -> String {
    let full = error.to_string();
    match full.rfind(" at line ") {
        Some(cut) => full[..cut].to_owned(),
        None => full,
    }
}

/// The offending line (if short enough to be useful) with a caret under `column` (1-based).
fn pointer_at(text: &str, line: usize, column: usize) -> Option<String> {
    let line_text = text.lines().nth(line.checked_sub(1)?)?;
    let width = line_text.chars().count();
    if width > 120 {
        return None;
    }
    // serde_json reports column 0 for errors at the very start of a line.
    let caret_at = column.max(1).min(width + 1);
    Some(format!(
        "    {line_text}\n    {}^",
        " ".repeat(caret_at.saturating_sub(1))
    ))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn parses_json() {
        assert_eq!(
            parse(r#"{"from": "2026-11-23"}"#, "PARAMS_JSON").expect("valid"),
            json!({"from": "2026-11-23"})
        );
    }

    #[test]
    fn names_the_position_and_points_at_it() {
        let error = parse("{from: 1}", "PARAMS_JSON").expect_err("keys must be quoted");
        let message = error.to_string();
        assert!(
            message.starts_with(
                "PARAMS_JSON is not valid JSON: key must be a string (line 1, column 2)"
            ),
            "{message}"
        );
        assert!(message.contains("    {from: 1}\n     ^"), "{message}");
    }

    #[test]
    fn empty_text_is_refused_with_an_example() {
        let error = parse("  ", "standard input").expect_err("empty");
        assert!(error.to_string().starts_with("standard input is empty"));
    }
}
