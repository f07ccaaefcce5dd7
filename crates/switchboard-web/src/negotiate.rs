//! Content negotiation: what a request's `Accept` header asks of a page.
//!
//! A page has two representations, HTML and markdown. The media ranges of `Accept` are
//! weighed by their `q` (RFC 9110 §12.5.1): the most specific range that matches a
//! representation gives its weight, the heavier one wins, and HTML wins a tie, so `*/*` and a
//! missing header are HTML. A header that matches neither (or only with `q=0`) is answered
//! `406 Not Acceptable`.

/// A page's representation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    /// `text/html`.
    Html,
    /// `text/markdown`, the page's [`PageView::markdown`](switchboard_navigation::PageView::markdown).
    Markdown,
}

/// The `Content-Type` of markdown answers.
pub(crate) const MARKDOWN_TYPE: &str = "text/markdown; charset=utf-8";
/// The `Content-Type` of HTML answers.
pub(crate) const HTML_TYPE: &str = "text/html; charset=utf-8";

/// The representation `accept` asks for; `None` when it asks for neither.
pub(crate) fn negotiate(accept: Option<&str>) -> Option<Format> {
    let Some(accept) = accept.map(str::trim).filter(|text| !text.is_empty()) else {
        return Some(Format::Html);
    };
    let html = weight(accept, &["text/html", "application/xhtml+xml"]);
    let markdown = weight(accept, &["text/markdown"]);
    match (html, markdown) {
        (html, markdown) if html <= 0.0 && markdown <= 0.0 => None,
        (html, markdown) if markdown > html => Some(Format::Markdown),
        _ => Some(Format::Html),
    }
}

/// The weight `accept` gives to the first of `types`: that of the most specific matching
/// range (exact, then `text/*`, then `*/*`), 0 when none matches.
fn weight(accept: &str, types: &[&str]) -> f32 {
    let mut best: Option<(u8, f32)> = None;
    for range in accept.split(',') {
        let mut parts = range.split(';');
        let media = parts.next().unwrap_or_default().trim().to_ascii_lowercase();
        let quality = parts
            .filter_map(|param| param.trim().strip_prefix("q="))
            .find_map(|value| value.trim().parse::<f32>().ok())
            .unwrap_or(1.0);
        let specificity = if types.contains(&media.as_str()) {
            3
        } else if media == "text/*" && types.iter().any(|kind| kind.starts_with("text/")) {
            2
        } else if media == "*/*" {
            1
        } else {
            continue;
        };
        if best.is_none_or(|(seen, _)| specificity > seen) {
            best = Some((specificity, quality));
        }
    }
    best.map_or(0.0, |(_, quality)| quality)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_is_the_default_and_wins_ties() {
        for accept in [
            None,
            Some(""),
            Some("*/*"),
            Some("text/*"),
            Some("text/html"),
            Some("text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"),
            Some("text/markdown, text/html"),
        ] {
            assert_eq!(negotiate(accept), Some(Format::Html), "{accept:?}");
        }
    }

    #[test]
    fn markdown_when_it_weighs_more() {
        for accept in [
            "text/markdown",
            "text/markdown; charset=utf-8",
            "text/html;q=0.5, text/markdown",
            "text/markdown, */*;q=0.1",
            "TEXT/MARKDOWN",
        ] {
            assert_eq!(negotiate(Some(accept)), Some(Format::Markdown), "{accept}");
        }
    }

    #[test]
    fn neither_is_not_acceptable() {
        for accept in ["application/json", "image/png, text/plain", "text/html;q=0"] {
            assert_eq!(negotiate(Some(accept)), None, "{accept}");
        }
    }
}
