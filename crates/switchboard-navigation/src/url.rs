//! URLs and routes: turning what an agent or a browser sends into a page and its parameters,
//! and refusing what could reach somewhere it should not.
//!
//! A URL here is only a path (`/roster/shifts/acme-2026-11-24-am`); a query string or a
//! fragment is ignored. Each segment is percent-decoded once, and then refused if it is empty
//! (`//`), a dot segment (`.`, `..`, also when encoded as `%2e%2e`), contains a slash or a
//! backslash (also when encoded), a control character, or is longer than
//! [`MAX_SEGMENT_LEN`] bytes. Pages never touch a file system, so these checks are about not
//! surprising anyone: a URL names one page, written one way.

use std::collections::BTreeMap;

use percent_encoding::percent_decode_str;

use crate::error::NavError;

/// The longest URL accepted, in bytes.
pub const MAX_URL_LEN: usize = 2048;
/// The longest path segment accepted, in bytes, after decoding.
pub const MAX_SEGMENT_LEN: usize = 128;

/// The decoded segments of a URL's path; empty for `/`.
pub(crate) fn segments(url: &str) -> Result<Vec<String>, NavError> {
    let refuse = |reason: &str| NavError::BadUrl {
        url: truncated(url),
        reason: reason.to_owned(),
    };
    if url.len() > MAX_URL_LEN {
        return Err(refuse(&format!("it is longer than {MAX_URL_LEN} bytes")));
    }
    let path = url.split(['?', '#']).next().unwrap_or_default();
    let Some(path) = path.strip_prefix('/') else {
        return Err(refuse(
            "a page URL is a path that starts with `/`, such as `/me`",
        ));
    };
    // One trailing slash is the same page: `/roster/` is `/roster`.
    let path = path.strip_suffix('/').unwrap_or(path);
    if path.is_empty() {
        return Ok(Vec::new());
    }
    path.split('/')
        .map(|raw| {
            if raw.is_empty() {
                return Err(refuse("it has an empty segment (`//`)"));
            }
            let decoded = percent_decode_str(raw)
                .decode_utf8()
                .map_err(|_| refuse("a segment is not UTF-8 once decoded"))?;
            if decoded == "." || decoded == ".." {
                return Err(refuse("it has a `.` or `..` segment"));
            }
            if decoded.contains(['/', '\\']) {
                return Err(refuse("a segment holds an encoded `/` or `\\`"));
            }
            if decoded.chars().any(char::is_control) {
                return Err(refuse("a segment holds a control character"));
            }
            if decoded.len() > MAX_SEGMENT_LEN {
                return Err(refuse(&format!(
                    "a segment is longer than {MAX_SEGMENT_LEN} bytes"
                )));
            }
            Ok(decoded.into_owned())
        })
        .collect()
}

/// A URL cut to a length fit for an error message or a log line, with `…` where it was cut.
pub fn truncated(url: &str) -> String {
    const SHOWN: usize = 120;
    match url.char_indices().nth(SHOWN) {
        Some((end, _)) => format!("{}…", &url[..end]),
        None => url.to_owned(),
    }
}

/// One `/`-separated piece of a route.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Literal(String),
    Param(String),
}

/// A parsed route such as `/roster/shifts/{shift_id}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    text: &'static str,
    pieces: Vec<Piece>,
}

/// Why a declared route does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the route {route:?} is not valid: {reason}")]
pub struct RouteError {
    /// The route as declared.
    pub route: String,
    /// What is wrong with it.
    pub reason: String,
}

impl Route {
    /// Parses a route: `/`, then literal segments and `{name}` parameters.
    pub fn parse(text: &'static str) -> Result<Self, RouteError> {
        let error = |reason: &str| RouteError {
            route: text.to_owned(),
            reason: reason.to_owned(),
        };
        let Some(path) = text.strip_prefix('/') else {
            return Err(error("a route starts with `/`"));
        };
        if path.is_empty() {
            return Ok(Self {
                text,
                pieces: Vec::new(),
            });
        }
        let mut names: Vec<&str> = Vec::new();
        let pieces = path
            .split('/')
            .map(|segment| {
                if let Some(name) = segment.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
                    let valid = !name.is_empty()
                        && name
                            .bytes()
                            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'_');
                    if !valid || names.contains(&name) {
                        return Err(error(&format!(
                            "`{{{name}}}` is not a fresh parameter name of [A-Za-z0-9_]"
                        )));
                    }
                    names.push(name);
                    Ok(Piece::Param(name.to_owned()))
                } else if !segment.is_empty()
                    && segment
                        .bytes()
                        .all(|byte| byte.is_ascii_alphanumeric() || b"-_.".contains(&byte))
                    && segment != "."
                    && segment != ".."
                {
                    Ok(Piece::Literal(segment.to_owned()))
                } else {
                    Err(error(&format!(
                        "the segment {segment:?} is neither a word of [A-Za-z0-9-_.] nor a `{{name}}`"
                    )))
                }
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self { text, pieces })
    }

    /// The route as declared.
    pub fn as_str(&self) -> &'static str {
        self.text
    }

    /// The parameter names, in order.
    pub fn params(&self) -> impl Iterator<Item = &str> {
        self.pieces.iter().filter_map(|piece| match piece {
            Piece::Param(name) => Some(name.as_str()),
            Piece::Literal(_) => None,
        })
    }

    /// The parameters `segments` give this route, if they match it.
    pub(crate) fn matches(&self, segments: &[String]) -> Option<BTreeMap<String, String>> {
        if segments.len() != self.pieces.len() {
            return None;
        }
        let mut params = BTreeMap::new();
        for (piece, segment) in self.pieces.iter().zip(segments) {
            match piece {
                Piece::Literal(literal) if literal == segment => {}
                Piece::Literal(_) => return None,
                Piece::Param(name) => {
                    params.insert(name.clone(), segment.clone());
                }
            }
        }
        Some(params)
    }

    /// How many literal segments it has: a more literal route wins over a parameter.
    pub(crate) fn literal_count(&self) -> usize {
        self.pieces
            .iter()
            .filter(|piece| matches!(piece, Piece::Literal(_)))
            .count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decoded(url: &str) -> Result<Vec<String>, String> {
        segments(url).map_err(|error| error.to_string())
    }

    #[test]
    fn decodes_plain_and_encoded_segments() {
        assert_eq!(decoded("/"), Ok(vec![]));
        assert_eq!(decoded("/me"), Ok(vec!["me".to_owned()]));
        assert_eq!(
            decoded("/roster/shifts/acme-2026-11-24-am/?x=1#top"),
            Ok(vec!["roster", "shifts", "acme-2026-11-24-am"]
                .into_iter()
                .map(str::to_owned)
                .collect())
        );
        assert_eq!(decoded("/a%20b"), Ok(vec!["a b".to_owned()]));
    }

    #[test]
    fn refuses_traversal_and_tricks() {
        for url in [
            "me",
            "",
            "//me",
            "/roster//shifts",
            "/roster/../me",
            "/roster/./me",
            "/roster/%2e%2e/me",
            "/roster/%2E%2E",
            "/roster/a%2fb",
            "/roster/a%5cb",
            "/roster/%00",
            "/roster/%ff",
        ] {
            assert!(segments(url).is_err(), "{url:?} must be refused");
        }
        let long = format!("/{}", "a".repeat(MAX_SEGMENT_LEN + 1));
        assert!(segments(&long).is_err());
        let longer = format!("/{}", "a/".repeat(MAX_URL_LEN));
        assert!(segments(&longer).is_err());
    }

    #[test]
    fn routes_match_whole_paths_and_name_their_parameters() {
        let route = Route::parse("/roster/shifts/{shift_id}").expect("valid");
        let path = |url: &str| segments(url).expect("valid url");
        assert_eq!(
            route.matches(&path("/roster/shifts/x1")),
            Some(BTreeMap::from([("shift_id".to_owned(), "x1".to_owned())]))
        );
        assert_eq!(route.matches(&path("/roster/shifts")), None);
        assert_eq!(route.matches(&path("/roster/shifts/x1/more")), None);
        assert_eq!(route.params().collect::<Vec<_>>(), ["shift_id"]);
        assert_eq!(
            Route::parse("/").expect("root").matches(&[]),
            Some(BTreeMap::new())
        );
    }

    #[test]
    fn bad_routes_are_refused() {
        for route in ["me", "/a//b", "/{}", "/{a}/{a}", "/a b", "/{a-b}", "/.."] {
            assert!(Route::parse(route).is_err(), "{route:?}");
        }
    }
}
