//! Aligned columns for human output (`tools`, audit records).
//!
//! A cell's text is made printable when the cell is made ([`escape_controls`]): a newline or an
//! escape sequence in a stored value cannot add a row or repaint the terminal. Widths are
//! measured on that text and padding is added before colour, so our own escape codes never
//! throw the columns off. The last column is not padded, so long descriptions do not leave
//! trailing spaces.

use owo_colors::Stream;

use crate::{
    escape::escape_controls,
    output::{Tone, paint},
};

/// One cell: its text, and optionally a tone to paint it in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Cell {
    text: String,
    tone: Option<Tone>,
}

impl Cell {
    /// A plain cell; control characters in `text` are escaped.
    pub(crate) fn plain(text: impl Into<String>) -> Self {
        Self {
            text: printable(text.into()),
            tone: None,
        }
    }

    /// A cell painted in `tone`; control characters in `text` are escaped.
    pub(crate) fn toned(text: impl Into<String>, tone: Tone) -> Self {
        Self {
            text: printable(text.into()),
            tone: Some(tone),
        }
    }
}

/// `text` with its control characters escaped, reusing the string when there are none.
fn printable(text: String) -> String {
    match escape_controls(&text) {
        std::borrow::Cow::Borrowed(_) => text,
        std::borrow::Cow::Owned(escaped) => escaped,
    }
}

/// Renders `headers` and `rows` as aligned columns separated by two spaces, each line starting
/// with `indent`, for `stream`.
pub(crate) fn render(headers: &[&str], rows: &[Vec<Cell>], indent: &str, stream: Stream) -> String {
    let columns = headers.len();
    let mut widths: Vec<usize> = headers.iter().map(|header| width(header)).collect();
    for row in rows {
        for (index, cell) in row.iter().enumerate().take(columns) {
            widths[index] = widths[index].max(width(&cell.text));
        }
    }
    let mut text = String::new();
    let header_cells: Vec<Cell> = headers
        .iter()
        .map(|header| Cell::toned(*header, Tone::Heading))
        .collect();
    for row in std::iter::once(&header_cells).chain(rows) {
        text.push_str(indent);
        let last = row.len().min(columns).saturating_sub(1);
        for (index, cell) in row.iter().enumerate().take(columns) {
            let padded = if index == last {
                cell.text.clone()
            } else {
                let padding = widths[index] - width(&cell.text);
                format!("{}{}  ", cell.text, " ".repeat(padding))
            };
            match cell.tone {
                // Paint the text only, so trailing padding carries no escape codes.
                Some(tone) => {
                    let trimmed = padded.trim_end();
                    text.push_str(&paint(trimmed, tone, stream));
                    text.push_str(&padded[trimmed.len()..]);
                }
                None => text.push_str(&padded),
            }
        }
        text.push('\n');
    }
    text
}

fn width(text: &str) -> usize {
    text.chars().count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligns_columns_and_leaves_the_last_unpadded() {
        let rows = vec![
            vec![Cell::plain("core_get_current_user"), Cell::plain("read")],
            vec![
                Cell::plain("roster_clear_roster"),
                Cell::plain("restricted"),
            ],
        ];
        // `cargo test` in a terminal would otherwise colour the headers.
        owo_colors::set_override(false);
        let text = render(&["NAME", "CATEGORY"], &rows, "", Stream::Stdout);
        assert_eq!(
            text,
            "NAME                   CATEGORY\n\
             core_get_current_user  read\n\
             roster_clear_roster    restricted\n"
        );
    }

    #[test]
    fn a_control_character_in_a_cell_cannot_add_a_row_or_repaint() {
        let rows = vec![
            vec![Cell::plain("c1\n42  forged"), Cell::toned("ok", Tone::Good)],
            vec![Cell::plain("\u{1b}[2J"), Cell::toned("x\ty", Tone::Good)],
        ];
        owo_colors::set_override(false);
        let text = render(&["ID", "OUTCOME"], &rows, "", Stream::Stdout);
        assert_eq!(
            text,
            "ID              OUTCOME\n\
             c1\\n42  forged  ok\n\
             \\u{1b}[2J       x\\ty\n"
        );
    }
}
