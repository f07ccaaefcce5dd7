//! Control characters in human output, made visible: `\n`, `\u{1b}`, never the raw byte.
//!
//! Human output prints values that came from elsewhere: ids, tool names and messages from an
//! audit store (which an older version, another program or a hand may have filled), the
//! arguments a person typed, error messages quoting them. A raw newline in one of them forges
//! an extra line (a whole fake row of the `audit` table), a carriage return overwrites what
//! came before, and an escape sequence (`ESC [ …`) recolours, moves the cursor or clears the
//! terminal. So every field taken from data goes through [`escape_controls`] before it is laid
//! out or painted, whatever its source; the colour the CLI adds itself is applied afterwards
//! and stays intact. `--json` output needs none of this: serde escapes every control character
//! in a JSON string.
//!
//! Escaped: the C0 controls (including tab, which would throw columns off), DEL, the C1
//! controls (U+0080 to U+009F, among them the one-character CSI), the line and paragraph
//! separators, and the bidirectional formatting characters that reorder what a terminal shows
//! ("Trojan Source"). Each becomes Rust's `char::escape_debug` form. Backslashes are not
//! escaped, so ordinary text (paths, patterns in descriptions) reads as it is.

use std::borrow::Cow;

/// `text` with every character [`needs_escaping`] replaced by its `escape_debug` form
/// (`\n`, `\t`, `\u{1b}`, `\u{85}`, `\u{202e}`); borrowed when there is none, which is the
/// usual case.
pub(crate) fn escape_controls(text: &str) -> Cow<'_, str> {
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

/// Whether `character` must not reach a terminal raw (see the module docs).
fn needs_escaping(character: char) -> bool {
    character.is_control()
        || matches!(
            character,
            // Line and paragraph separators.
            '\u{2028}' | '\u{2029}'
            // Bidirectional formatting: marks, embeddings, overrides and isolates.
            | '\u{061c}' | '\u{200e}' | '\u{200f}'
            | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_become_visible_escapes() {
        assert_eq!(escape_controls("a\nb"), "a\\nb");
        assert_eq!(escape_controls("a\r\tb\0"), "a\\r\\tb\\0");
        assert_eq!(
            escape_controls("\u{1b}[31mred\u{1b}[0m"),
            "\\u{1b}[31mred\\u{1b}[0m"
        );
        assert_eq!(escape_controls("del\u{7f}"), "del\\u{7f}");
        assert_eq!(
            escape_controls("nel\u{85} csi\u{9b}"),
            "nel\\u{85} csi\\u{9b}"
        );
        assert_eq!(
            escape_controls("ls\u{2028}ps\u{2029}"),
            "ls\\u{2028}ps\\u{2029}"
        );
        assert_eq!(escape_controls("abc\u{202e}fed"), "abc\\u{202e}fed");
    }

    #[test]
    fn ordinary_text_is_borrowed_unchanged() {
        for text in [
            "",
            "core_get_current_user",
            "Lists shifts. Café, naïve, 日本語, emoji 🙂.",
            r"C:\path\to\file and a \d+ pattern",
            "quotes \" and ' stay",
        ] {
            assert!(matches!(escape_controls(text), Cow::Borrowed(same) if same == text));
        }
    }

    #[test]
    fn escaping_twice_changes_nothing_more() {
        let once = escape_controls("a\nb\u{1b}c").into_owned();
        assert_eq!(escape_controls(&once), once);
    }
}
