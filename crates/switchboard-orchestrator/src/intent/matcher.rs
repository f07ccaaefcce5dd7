//! Matching one utterance against one expanded pattern, with backtracking over how many
//! words each capture takes.
//!
//! Text captures try the fewest words first (lazy), date and user captures the most (a date
//! phrase or a full name), and the first reading that lets the rest of the pattern match wins.
//! Patterns are a handful of items and utterances at most [`MAX_UTTERANCE_WORDS`](super::MAX_UTTERANCE_WORDS) words, so
//! plain recursion is enough.

use std::{collections::BTreeMap, ops::Range};

use jiff::civil::Date;

use super::{
    CaptureKind, DateSpan, Facts, IntentPattern, People,
    dates::{MAX_DATE_WORDS, parse_date_phrase},
    pattern::{Capture, Expansion, Item},
    people::{self, MAX_NAME_WORDS},
    words::Utterance,
};

/// Words that may appear anywhere a pattern has none ("list all the shifts").
pub(crate) const NOISE_WORDS: &[&str] = &["the", "a", "an", "all", "any", "please"];

/// A match in progress: what each capture took, and how many literal words were typos.
#[derive(Debug, Default)]
pub(crate) struct Found {
    pub(crate) values: Vec<(usize, CaptureValue)>,
    pub(crate) typos: usize,
}

#[derive(Debug, Clone)]
pub(crate) enum CaptureValue {
    Text(Range<usize>),
    Date(DateSpan),
    User(String),
}

/// Matches one utterance's words `start..end` against expansions.
pub(crate) struct Matcher<'w, 'f> {
    pub(crate) words: &'w Utterance<'w>,
    pub(crate) end: usize,
    pub(crate) facts: &'f Facts<'f>,
    /// Set when a user capture was reached while the people were not loaded.
    pub(crate) needs_people: bool,
    /// Whether a literal word may match a word one typo away. Routing tries without first, so
    /// a typo never changes where a capture ends when an exact reading exists.
    pub(crate) allow_typos: bool,
}

impl Matcher<'_, '_> {
    /// Whether `items` match words `word..self.end` exactly; `found` collects the captures.
    /// Backtracks over capture lengths; patterns are short, and utterances are capped at
    /// [`MAX_UTTERANCE_WORDS`](super::MAX_UTTERANCE_WORDS).
    pub(crate) fn matches(
        &mut self,
        items: &[Item],
        pattern: &IntentPattern,
        word: usize,
        found: &mut Found,
    ) -> bool {
        let Some((item, rest)) = items.split_first() else {
            // Noise words may close the utterance.
            return (word..self.end)
                .all(|at| NOISE_WORDS.contains(&self.words.normalized_word(at)));
        };
        if word >= self.end {
            return false;
        }
        match item {
            Item::Literal(alternatives) => {
                let said = self.words.normalized_word(word);
                if let Some(is_typo) = literal_matches(alternatives, said, self.allow_typos) {
                    found.typos += usize::from(is_typo);
                    if self.matches(rest, pattern, word + 1, found) {
                        return true;
                    }
                    found.typos -= usize::from(is_typo);
                }
                NOISE_WORDS.contains(&said) && self.matches(items, pattern, word + 1, found)
            }
            Item::Capture(index) => {
                let longest = self.end - word;
                match pattern.captures[*index].kind {
                    CaptureKind::Text => (word + 1..=self.end).any(|end| {
                        self.try_value(
                            rest,
                            pattern,
                            end,
                            found,
                            *index,
                            CaptureValue::Text(word..end),
                        )
                    }),
                    CaptureKind::Date => (1..=longest.min(MAX_DATE_WORDS)).rev().any(|count| {
                        let raw: Vec<&str> = self.words.words[word..word + count]
                            .iter()
                            .map(|w| w.raw)
                            .collect();
                        parse_date_phrase(&raw, self.facts.today).is_some_and(|span| {
                            self.try_value(
                                rest,
                                pattern,
                                word + count,
                                found,
                                *index,
                                CaptureValue::Date(span),
                            )
                        })
                    }),
                    CaptureKind::User => match self.facts.people {
                        People::NotLoaded => {
                            self.needs_people = true;
                            false
                        }
                        People::NoDirectory => {
                            let id = self.words.captured_text(word..word + 1);
                            self.try_value(
                                rest,
                                pattern,
                                word + 1,
                                found,
                                *index,
                                CaptureValue::User(id),
                            )
                        }
                        People::Known(people) => {
                            (1..=longest.min(MAX_NAME_WORDS)).rev().any(|count| {
                                let said = self.words.normalized_span(word..word + count);
                                people::resolve(said, people).is_some_and(|user_id| {
                                    let value = CaptureValue::User(user_id.to_owned());
                                    self.try_value(
                                        rest,
                                        pattern,
                                        word + count,
                                        found,
                                        *index,
                                        value,
                                    )
                                })
                            })
                        }
                    },
                }
            }
        }
    }

    /// Records `value` for capture `index` and matches `rest` from `next`; undoes it on failure.
    fn try_value(
        &mut self,
        rest: &[Item],
        pattern: &IntentPattern,
        next: usize,
        found: &mut Found,
        index: usize,
        value: CaptureValue,
    ) -> bool {
        found.values.push((index, value));
        if self.matches(rest, pattern, next, found) {
            return true;
        }
        found.values.pop();
        false
    }
}

/// Whether `said` is one of `alternatives`: `Some(false)` exactly, `Some(true)` one typo away
/// (words of four letters or more), `None` otherwise.
fn literal_matches(alternatives: &[Box<str>], said: &str, allow_typos: bool) -> Option<bool> {
    if alternatives.iter().any(|literal| &**literal == said) {
        return Some(false);
    }
    if !allow_typos {
        return None;
    }
    let is_typo = alternatives.iter().any(|literal| {
        literal.chars().count() >= 4
            && said.chars().count() >= 4
            && strsim::damerau_levenshtein(literal, said) == 1
    });
    is_typo.then_some(true)
}

/// The params a match fills: the pattern's fixed values, captured values, and the defaults of
/// captures left out.
pub(crate) fn params(
    pattern: &IntentPattern,
    expansion: &Expansion,
    found: &Found,
    words: &Utterance<'_>,
    today: Date,
) -> BTreeMap<String, String> {
    let mut params: BTreeMap<String, String> = pattern
        .fixed
        .iter()
        .map(|(name, value)| (name.to_string(), value.to_string()))
        .collect();
    let mut put_dates = |capture: &Capture, span: DateSpan| {
        params.insert(capture.name.to_string(), span.first.to_string());
        if let Some(last_name) = &capture.last_name {
            params.insert(last_name.to_string(), span.last.to_string());
        }
    };
    for &index in &expansion.omitted {
        let capture = &pattern.captures[index];
        if let Some(default) = &capture.default {
            let default_words: Vec<&str> = default.split_whitespace().collect();
            if let Some(span) = parse_date_phrase(&default_words, today) {
                put_dates(capture, span);
            }
        }
    }
    let mut texts = BTreeMap::new();
    for (index, value) in &found.values {
        let capture = &pattern.captures[*index];
        match value {
            CaptureValue::Date(span) => put_dates(capture, *span),
            CaptureValue::Text(span) => {
                texts.insert(capture.name.to_string(), words.captured_text(span.clone()));
            }
            CaptureValue::User(user_id) => {
                texts.insert(capture.name.to_string(), user_id.clone());
            }
        }
    }
    params.extend(texts);
    params
}
