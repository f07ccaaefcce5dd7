//! Doc comments as prose: the lines of each paragraph joined with spaces, so that text wrapped
//! at 100 columns in the source reads as prose to an agent, in a tool's description and in the
//! descriptions of its schemas.
//!
//! `#[tool]` (in `switchboard-macros`) unwraps a tool's doc comment when it expands, and
//! `schema_of` unwraps the field docs schemars copies into a schema. A proc-macro crate cannot
//! depend on this one (this one re-exports it), so it includes this file as a module of its
//! own (`#[path]`): one algorithm, compiled into both.

/// Joins the lines of each paragraph with spaces, so that a doc comment wrapped at 100 columns
/// in the source reads as prose to an agent. Blank lines, list items and code fences keep their
/// line breaks.
pub(crate) fn unwrap_paragraphs(lines: &[String]) -> String {
    let mut text = String::new();
    let mut in_fence = false;
    let mut previous_blank = true;
    for line in lines {
        let trimmed = line.trim_start();
        let fence = trimmed.starts_with("```");
        let starts_block = trimmed.is_empty()
            || fence
            || in_fence
            || trimmed.starts_with("- ")
            || trimmed.starts_with("* ")
            || trimmed
                .split_once(". ")
                .is_some_and(|(n, _)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
        if text.is_empty() {
            // Leading blank lines are dropped.
        } else if trimmed.is_empty() {
            if !previous_blank {
                text.push('\n');
            }
        } else if starts_block || previous_blank {
            text.push('\n');
        } else {
            text.push(' ');
        }
        if !trimmed.is_empty() || in_fence {
            text.push_str(if in_fence { line } else { trimmed });
        }
        if fence {
            in_fence = !in_fence;
        }
        previous_blank = (trimmed.is_empty() && !in_fence) || fence;
    }
    text.trim().to_owned()
}

/// [`unwrap_paragraphs`] of `text`'s lines.
pub(crate) fn unwrap(text: &str) -> String {
    let lines: Vec<String> = text.lines().map(str::to_owned).collect();
    unwrap_paragraphs(&lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn joins_wrapped_lines_and_keeps_paragraphs() {
        assert_eq!(
            unwrap("Lists shifts,\nsorted by date.\n\nAt most 31 days."),
            "Lists shifts, sorted by date.\n\nAt most 31 days."
        );
        assert_eq!(unwrap("\nOne line.\n"), "One line.");
    }

    #[test]
    fn keeps_lists_and_code_fences() {
        assert_eq!(unwrap("Modes:\n- a\n- b"), "Modes:\n- a\n- b");
        assert_eq!(
            unwrap("Steps:\n1. first\n2. second"),
            "Steps:\n1. first\n2. second"
        );
        assert_eq!(
            unwrap("Run:\n```\nx\ny\n```\nDone."),
            "Run:\n```\nx\ny\n```\nDone."
        );
    }
}
