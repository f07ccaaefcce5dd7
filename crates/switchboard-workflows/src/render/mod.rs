//! Drawing a workflow and a run of it: the text tree `workflow show` prints, and the Graphviz
//! (`dot`) and Mermaid (`flowchart TD`) pictures of `--format dot|mermaid`.
//!
//! The renderers live here rather than in the command line because they need only a
//! [`Definition`] and what a store holds about a run ([`RunRecord`], [`StepRecord`]s), so every
//! front end (the CLI, a web page) draws a run the same way. Each is a pure function returning
//! a `String`: nothing is printed, nothing is read from a terminal, and a snapshot test pins the
//! output.
//!
//! Everything a run recorded is untrusted text: an error message comes from a tool, which may
//! quote whatever a server sent, and an expression or a description comes from a file. So every
//! such string is made printable first ([`printable`]: control characters become visible
//! escapes, as the CLI's own output does) and then escaped for the format it lands in
//! ([`dot_label`], [`mermaid_label`]): a quote cannot close a label, a newline cannot start a
//! statement, and `<script>` stays text. Node ids are checked by validation
//! (`[a-z0-9_]`), but they are escaped all the same, since the renderers also draw
//! definitions built by hand.

mod dot;
mod graph;
mod mermaid;
mod status;
mod text;

use std::borrow::Cow;
use std::fmt;
use std::str::FromStr;

use crate::definition::Definition;
use crate::store::{RunRecord, StepRecord};

/// What a definition or a run is drawn as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum GraphFormat {
    /// An indented tree of the nodes in block order, with each node's state: for a terminal.
    #[default]
    Text,
    /// A Graphviz `digraph` (`dot -Tsvg`).
    Dot,
    /// A Mermaid `flowchart TD` (renders in Markdown on GitHub and GitLab).
    Mermaid,
}

impl GraphFormat {
    /// The format's name, as `--format` spells it: `text`, `dot` or `mermaid`.
    pub const fn as_str(self) -> &'static str {
        match self {
            GraphFormat::Text => "text",
            GraphFormat::Dot => "dot",
            GraphFormat::Mermaid => "mermaid",
        }
    }
}

impl fmt::Display for GraphFormat {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.as_str())
    }
}

/// A format name that is not `text`, `dot` or `mermaid`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown graph format `{0}`: use `text`, `dot` or `mermaid`")]
pub struct UnknownGraphFormat(pub String);

impl FromStr for GraphFormat {
    type Err = UnknownGraphFormat;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        match name {
            "text" => Ok(GraphFormat::Text),
            "dot" => Ok(GraphFormat::Dot),
            "mermaid" => Ok(GraphFormat::Mermaid),
            other => Err(UnknownGraphFormat(other.to_owned())),
        }
    }
}

/// What a rendering shows beyond the graph and the states.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RenderOptions {
    /// Show each step's output (text format only; one line, truncated). Hidden by default:
    /// outputs are large and may hold what the reader has no need to see.
    pub show_outputs: bool,
}

/// A definition alone, with no run: its nodes, kinds and edges (`workflow show FILE`).
pub fn render_definition(definition: &Definition, format: GraphFormat) -> String {
    render(definition, None, format, RenderOptions::default())
}

/// A run of `definition`: the graph with each node's state taken from `steps` (a run's steps,
/// in any order), and a header with the run's id, workflow, state, times and input.
pub fn render_run(
    definition: &Definition,
    run: &RunRecord,
    steps: &[StepRecord],
    format: GraphFormat,
) -> String {
    render_run_with(definition, run, steps, format, RenderOptions::default())
}

/// [`render_run`], with options.
pub fn render_run_with(
    definition: &Definition,
    run: &RunRecord,
    steps: &[StepRecord],
    format: GraphFormat,
    options: RenderOptions,
) -> String {
    let run = status::RunView::new(run, steps);
    render(definition, Some(&run), format, options)
}

fn render(
    definition: &Definition,
    run: Option<&status::RunView<'_>>,
    format: GraphFormat,
    options: RenderOptions,
) -> String {
    match format {
        GraphFormat::Text => text::render(definition, run, options),
        GraphFormat::Dot => dot::render(definition, run),
        GraphFormat::Mermaid => mermaid::render(definition, run),
    }
}

/// `text` with every control character replaced by its `escape_debug` form (`\n`, `\u{1b}`),
/// as are the line separators and the bidirectional formatting characters that reorder what a
/// terminal shows; borrowed when there is none. Backslashes stay as they are.
pub fn printable(text: &str) -> Cow<'_, str> {
    if !text.chars().any(needs_escaping) {
        return Cow::Borrowed(text);
    }
    let mut escaped = String::with_capacity(text.len() + 8);
    for character in text.chars() {
        if needs_escaping(character) {
            escaped.extend(character.escape_debug());
        } else {
            escaped.push(character);
        }
    }
    Cow::Owned(escaped)
}

fn needs_escaping(character: char) -> bool {
    character.is_control()
        || matches!(
            character,
            '\u{2028}' | '\u{2029}'
                | '\u{061c}' | '\u{200e}' | '\u{200f}'
                | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
        )
}

/// `text` made printable and fit for the inside of a double-quoted Graphviz string: `\` and `"`
/// are backslash-escaped, and `&`, `<` and `>` become the character entities Graphviz reads in
/// a label (so the text stays text even where a label is later read as HTML).
pub fn dot_label(text: &str) -> String {
    let text = printable(text);
    let mut escaped = String::with_capacity(text.len() + 8);
    for character in text.chars() {
        match character {
            '\\' => escaped.push_str("\\\\"),
            '"' => escaped.push_str("\\\""),
            '&' => escaped.push_str("&amp;"),
            '<' => escaped.push_str("&lt;"),
            '>' => escaped.push_str("&gt;"),
            other => escaped.push(other),
        }
    }
    escaped
}

/// `text` made printable and fit for the inside of a Mermaid `"…"` label: the characters
/// Mermaid's grammar or its HTML labels would read (`"`, `#`, `&`, `<`, `>`, `|`, a backtick)
/// become Mermaid's `#…;` entity codes, so a quote cannot close the label, `-->` is not an
/// edge, and `<script>` is text.
pub fn mermaid_label(text: &str) -> String {
    let text = printable(text);
    let mut escaped = String::with_capacity(text.len() + 8);
    for character in text.chars() {
        match character {
            '#' => escaped.push_str("#35;"),
            '"' => escaped.push_str("#quot;"),
            '&' => escaped.push_str("#amp;"),
            '<' => escaped.push_str("#lt;"),
            '>' => escaped.push_str("#gt;"),
            '|' => escaped.push_str("#124;"),
            '`' => escaped.push_str("#96;"),
            other => escaped.push(other),
        }
    }
    escaped
}

/// `text` on one printable line of at most `max_chars` characters, ending in `…` when cut.
pub(crate) fn one_line(text: &str, max_chars: usize) -> String {
    let joined = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let printable = printable(&joined);
    if printable.chars().count() <= max_chars {
        return printable.into_owned();
    }
    let mut cut: String = printable
        .chars()
        .take(max_chars.saturating_sub(1))
        .collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests;
