//! Fixed values: params an intent sets whatever the utterance says, written after `=>`
//! (`"what is low on stock => filter=low"`, `"top five => sort=score, limit=5"`).
//!
//! They are parsed here, once, with the rest of the pattern, and kept as text: the intent
//! table knows no schemas. The orchestrator types each one by the tool's input schema when it
//! builds its routes, exactly as it types captured words, and refuses one that does not fit.

use std::collections::BTreeMap;

use super::pattern::PatternError;

/// What separates the words of an intent from its fixed values.
pub(crate) const ARROW: &str = "=>";

/// Splits a pattern at its first `=>` outside `{...}`: the words, and the fixed values'
/// text if there is an arrow.
pub(crate) fn split(pattern: &str) -> (&str, Option<&str>) {
    let mut depth = 0usize;
    for (position, character) in pattern.char_indices() {
        match character {
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            '=' if depth == 0 && pattern[position..].starts_with(ARROW) => {
                return (
                    &pattern[..position],
                    Some(&pattern[position + ARROW.len()..]),
                );
            }
            _ => {}
        }
    }
    (pattern, None)
}

/// Parses `field=value, field=value` (commas, spaces or both between them). A value is a run
/// of characters up to the next space or comma, or a double-quoted string that may hold both
/// (`status="on hold"`).
pub(crate) fn parse(text: &str) -> Result<BTreeMap<Box<str>, Box<str>>, PatternError> {
    let mut fixed = BTreeMap::new();
    let is_separator = |character: char| character.is_whitespace() || character == ',';
    let mut rest = text.trim_start_matches(is_separator);
    if rest.is_empty() {
        return Err(PatternError::NoFixedValues);
    }
    while !rest.is_empty() {
        let item_end = rest.find(is_separator).unwrap_or(rest.len());
        let bad_item = || PatternError::BadFixedValue {
            item: rest[..item_end].to_owned(),
        };
        let Some((name, after_equals)) = rest.split_once('=') else {
            return Err(bad_item());
        };
        let valid_name = !name.is_empty()
            && name
                .bytes()
                .all(|byte| byte.is_ascii_alphanumeric() || byte == b'_');
        if !valid_name {
            return Err(bad_item());
        }
        let (value, after_value) = match after_equals.strip_prefix('"') {
            Some(quoted) => {
                let Some(close) = quoted.find('"') else {
                    return Err(PatternError::BadFixedValue {
                        item: rest.to_owned(),
                    });
                };
                let after = &quoted[close + 1..];
                if after.chars().next().is_some_and(|next| !is_separator(next)) {
                    return Err(bad_item());
                }
                (&quoted[..close], after)
            }
            None => {
                let end = after_equals
                    .find(is_separator)
                    .unwrap_or(after_equals.len());
                if end == 0 {
                    return Err(bad_item());
                }
                (&after_equals[..end], &after_equals[end..])
            }
        };
        if fixed.insert(name.into(), value.into()).is_some() {
            return Err(PatternError::DuplicateFixedValue {
                name: name.to_owned(),
            });
        }
        rest = after_value.trim_start_matches(is_separator);
    }
    Ok(fixed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(text: &str) -> Vec<(String, String)> {
        match parse(text) {
            Ok(fixed) => fixed
                .into_iter()
                .map(|(name, value)| (name.into(), value.into()))
                .collect(),
            Err(error) => panic!("{text:?} should parse: {error}"),
        }
    }

    fn pairs(expected: &[(&str, &str)]) -> Vec<(String, String)> {
        expected
            .iter()
            .map(|&(name, value)| (name.to_owned(), value.to_owned()))
            .collect()
    }

    #[test]
    fn the_arrow_splits_words_from_fixed_values_outside_braces_only() {
        assert_eq!(
            split("what is low on stock => filter=low"),
            ("what is low on stock ", Some(" filter=low"))
        );
        assert_eq!(split("who am i"), ("who am i", None));
        // A `=>` inside a capture belongs to it (and is refused there as a bad default).
        assert_eq!(split("list [{from=>x}]"), ("list [{from=>x}]", None));
        assert_eq!(split("a=>b=>c"), ("a", Some("b=>c")));
    }

    #[test]
    fn values_are_separated_by_commas_or_spaces_and_may_be_quoted() {
        assert_eq!(parsed(" filter=low"), pairs(&[("filter", "low")]));
        assert_eq!(
            parsed("filter=low, limit=5 all=true"),
            pairs(&[("all", "true"), ("filter", "low"), ("limit", "5")])
        );
        assert_eq!(
            parsed("status=\"on hold, late\",note=x"),
            pairs(&[("note", "x"), ("status", "on hold, late")])
        );
        assert_eq!(parsed("empty=\"\""), pairs(&[("empty", "")]));
        // Only the first `=` separates the name: the value may hold more.
        assert_eq!(parsed("query=a=b"), pairs(&[("query", "a=b")]));
    }

    #[test]
    fn malformed_values_are_refused_naming_the_item() {
        let bad = |item: &str| PatternError::BadFixedValue {
            item: item.to_owned(),
        };
        assert_eq!(parse(""), Err(PatternError::NoFixedValues));
        assert_eq!(parse(" , "), Err(PatternError::NoFixedValues));
        assert_eq!(parse("filter"), Err(bad("filter")));
        assert_eq!(parse("filter low"), Err(bad("filter")));
        assert_eq!(parse("=low"), Err(bad("=low")));
        assert_eq!(parse("fil-ter=low"), Err(bad("fil-ter=low")));
        assert_eq!(parse("filter= low"), Err(bad("filter=")));
        assert_eq!(parse("filter=\"low"), Err(bad("filter=\"low")));
        assert_eq!(parse("filter=\"low\"x"), Err(bad("filter=\"low\"x")));
        assert_eq!(
            parse("filter=low filter=out"),
            Err(PatternError::DuplicateFixedValue {
                name: "filter".to_owned()
            })
        );
    }
}
