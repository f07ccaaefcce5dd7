//! Intent patterns: parsing `"[list|show] shifts [{from..to=this week}] [for {who:user}]"`
//! into the flat word sequences an utterance is matched against.
//!
//! Optional parts are expanded when the pattern is parsed: a pattern with `k` optional parts
//! becomes `2^k` plain sequences (at most [`MAX_OPTIONAL_PARTS`] parts), so matching never has
//! to reason about brackets, and two tools whose sequences coincide are caught at boot.

use std::{
    collections::{BTreeMap, BTreeSet},
    fmt,
    str::FromStr,
};

use jiff::civil::date;

use super::{dates::parse_date_phrase, fixed, words::push_normalized_word};

#[cfg(test)]
mod tests;

/// How many optional parts one pattern may have (each one doubles the sequences to try).
pub const MAX_OPTIONAL_PARTS: usize = 5;

/// Why an intent pattern was rejected. Each message says how to fix the pattern.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PatternError {
    /// The pattern has no words (punctuation-only words do not count).
    #[error(
        "the intent pattern is empty: write at least one word, e.g. \"who am i\" \
         (words made only of punctuation do not count)"
    )]
    Empty,
    /// Every part of the pattern is optional, so it would match a blank utterance.
    #[error(
        "every part of the intent pattern is optional: keep at least one word or capture \
         outside `[...]`"
    )]
    AllOptional,
    /// A `{` without its `}`, a `}` without its `{`, or a `{` inside a placeholder.
    #[error(
        "unbalanced brace at byte {position}: a placeholder is written `{{name}}`, \
         with exactly one opening and one closing brace"
    )]
    UnbalancedBraces {
        /// Byte offset of the offending brace in the pattern.
        position: usize,
    },
    /// A `[` without its `]`, a `]` without its `[`, or a `[` inside an optional part.
    #[error(
        "unbalanced bracket at byte {position}: an optional part is written `[words]`, \
         and optional parts do not nest"
    )]
    UnbalancedBrackets {
        /// Byte offset of the offending bracket in the pattern.
        position: usize,
    },
    /// `[]`, or an optional part of punctuation only.
    #[error("an optional part at byte {position} is empty: put words or a capture inside it")]
    EmptyOptional {
        /// Byte offset of its `[`.
        position: usize,
    },
    /// More optional parts than [`MAX_OPTIONAL_PARTS`].
    #[error(
        "the pattern has {count} optional parts, more than the {MAX_OPTIONAL_PARTS} one \
         pattern may have: split it into two intents"
    )]
    TooManyOptionalParts {
        /// How many the pattern has.
        count: usize,
    },
    /// A placeholder name that is empty or has characters outside `[A-Za-z0-9_]`.
    #[error(
        "invalid placeholder name {name:?}: use one or more ASCII letters, digits or \
         underscores, e.g. `{{from}}`"
    )]
    BadPlaceholderName {
        /// The name as written.
        name: String,
    },
    /// A `:kind` other than `text`, `date` or `user`.
    #[error(
        "placeholder `{{{name}}}` has the unknown kind {kind:?}: write `{{{name}:text}}` \
         (the default), `{{{name}:date}}` or `{{{name}:user}}`"
    )]
    UnknownKind {
        /// The placeholder's name.
        name: String,
        /// The kind as written.
        kind: String,
    },
    /// A range (`{from..to}`) or a default (`=this week`) on a capture that is not a date.
    #[error(
        "placeholder `{{{name}}}` is a {kind} capture: ranges (`{{from..to}}`) and defaults \
         (`=this week`) are for dates only"
    )]
    NotADate {
        /// The placeholder's name.
        name: String,
        /// Its kind.
        kind: CaptureKind,
    },
    /// A default that is not a date phrase.
    #[error(
        "placeholder `{{{name}}}` has the default {default:?}, which is not a date phrase: \
         use one such as `today`, `this week` or `2026-11-23`"
    )]
    BadDefault {
        /// The placeholder's name.
        name: String,
        /// The default as written.
        default: String,
    },
    /// The same placeholder name appears twice.
    #[error("placeholder `{{{name}}}` is used twice: give each capture its own name")]
    DuplicatePlaceholder {
        /// The repeated name.
        name: String,
    },
    /// Two text captures with no required word between them, so where one ends is ambiguous.
    #[error(
        "placeholders `{{{first}}}` and `{{{second}}}` can meet with no word between them, \
         so it is ambiguous where one ends and the other begins: put a required word \
         between them, e.g. `{{{first}}} to {{{second}}}`"
    )]
    AdjacentPlaceholders {
        /// The earlier placeholder's name.
        first: String,
        /// The later placeholder's name.
        second: String,
    },
    /// A placeholder written inside a word, such as `x{a}`; captures take whole words.
    #[error(
        "placeholder `{{{name}}}` is glued to the text of {word:?}: captures take whole \
         words, so separate it with a space"
    )]
    GluedPlaceholder {
        /// The placeholder's name.
        name: String,
        /// The whitespace-delimited word it appears in.
        word: String,
    },
    /// A `=>` with no fixed value after it.
    #[error(
        "`=>` is followed by no fixed value: write `field=value` after it, e.g. \
         `what is low on stock => filter=low`, or remove the `=>`"
    )]
    NoFixedValues,
    /// Something after `=>` that is not `field=value`.
    #[error(
        "{item:?} after `=>` is not a fixed value: write `field=value` (a field name of ASCII \
         letters, digits or underscores), e.g. `filter=low`, `limit=5`, `all=true` or \
         `status=\"on hold\"`, separated by commas or spaces"
    )]
    BadFixedValue {
        /// The item as written.
        item: String,
    },
    /// The same field is given two fixed values.
    #[error("the field `{name}` is given two fixed values after `=>`: keep one")]
    DuplicateFixedValue {
        /// The field's name.
        name: String,
    },
    /// A field both captured and given a fixed value.
    #[error(
        "the field `{name}` is both captured (`{{{name}}}`) and given a fixed value after `=>`: \
         an intent either reads a field from the utterance or sets it, so keep one"
    )]
    FixedAndCaptured {
        /// The field's name.
        name: String,
    },
}

/// What a capture accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CaptureKind {
    /// One or more words, as few as let the rest of the pattern match.
    Text,
    /// A date phrase (see the `dates` module docs), handed to the tool as `YYYY-MM-DD`.
    Date,
    /// A member of the caller's organisation, by id or name, handed to the tool as the id.
    User,
}

impl fmt::Display for CaptureKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CaptureKind::Text => "text",
            CaptureKind::Date => "date",
            CaptureKind::User => "user",
        })
    }
}

/// One `{...}` of a pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Capture {
    /// The param it fills (for a range, with the first day).
    pub(crate) name: Box<str>,
    /// For a range `{from..to}`, the param filled with the last day.
    pub(crate) last_name: Option<Box<str>>,
    pub(crate) kind: CaptureKind,
    /// The date phrase used when the optional part holding the capture is left out.
    pub(crate) default: Option<Box<str>>,
}

/// One step of an expanded pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Item {
    /// A literal word, or several alternatives (`list|show`), normalised.
    Literal(Box<[Box<str>]>),
    /// The capture at this index of [`IntentPattern::captures`].
    Capture(usize),
}

/// One way to read a pattern: some optional parts kept, the others left out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Expansion {
    pub(crate) items: Vec<Item>,
    /// Captures whose optional part is left out.
    pub(crate) omitted: Vec<usize>,
    /// How many literal words it has.
    pub(crate) literals: usize,
    /// Literals (first alternative) with each capture as `{name}`: the example shown to
    /// people.
    pub(crate) display: String,
}

/// One parsed intent, such as `"[list|show] shifts [for {who:user}]"`.
///
/// The syntax, word by word:
/// - a literal word, compared after normalisation; `list|show` accepts either word;
/// - `{name}` captures text, `{name:date}` a date phrase, `{name:user}` a member of the
///   caller's organisation; `{first..last}` captures one date phrase into two params, its
///   first and last day (a day, or Monday and Sunday of a week phrase);
/// - `[...]` is an optional part; a date capture inside one may name a default date phrase,
///   `{from..to=this week}`, used when the part is left out;
/// - after `=>`, fixed values: params every match sets, `field=value` separated by commas or
///   spaces (`"what is low on stock => filter=low, limit=5"`; quote a value that holds spaces
///   or commas, `status="on hold"`). A field is either captured or fixed, not both.
///
/// Two text captures must have a required word between them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IntentPattern {
    /// The pattern as declared.
    text: String,
    pub(crate) captures: Vec<Capture>,
    /// The fixed values after `=>`, by field, as written.
    pub(crate) fixed: BTreeMap<Box<str>, Box<str>>,
    /// Every reading, the one keeping every optional part first.
    pub(crate) expansions: Vec<Expansion>,
    /// How a person would say it (see [`IntentPattern::example`]).
    example: String,
}

/// A piece of a pattern while parsing, tagged with the optional part it sits in.
#[derive(Debug)]
struct Piece {
    item: Item,
    group: Option<usize>,
}

impl IntentPattern {
    /// Parses an intent pattern (see the type docs for the syntax).
    pub fn parse(pattern: &str) -> Result<Self, PatternError> {
        let (words, fixed_text) = fixed::split(pattern);
        let (pieces, captures, group_count) = scan(words)?;
        if pieces.is_empty() {
            return Err(PatternError::Empty);
        }
        if pieces.iter().all(|piece| piece.group.is_some()) {
            return Err(PatternError::AllOptional);
        }
        if group_count > MAX_OPTIONAL_PARTS {
            return Err(PatternError::TooManyOptionalParts { count: group_count });
        }
        let mut seen = BTreeSet::new();
        for name in captures
            .iter()
            .flat_map(|capture| std::iter::once(&capture.name).chain(&capture.last_name))
        {
            if !seen.insert(name) {
                return Err(PatternError::DuplicatePlaceholder {
                    name: name.to_string(),
                });
            }
        }
        let fixed = fixed_text
            .map(fixed::parse)
            .transpose()?
            .unwrap_or_default();
        if let Some(name) = fixed.keys().find(|name| seen.contains(name)) {
            return Err(PatternError::FixedAndCaptured {
                name: name.to_string(),
            });
        }

        let expansions = (0..1usize << group_count)
            .map(|left_out| expand(&pieces, &captures, left_out))
            .collect::<Result<Vec<_>, _>>()?;
        let example = example(&pieces, &captures);
        Ok(IntentPattern {
            text: pattern.to_owned(),
            captures,
            fixed,
            expansions,
            example,
        })
    }

    /// The pattern as it was declared.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The params the captures fill, in the order they appear (a range names two).
    pub fn placeholders(&self) -> impl Iterator<Item = &str> + '_ {
        self.captures
            .iter()
            .flat_map(|capture| std::iter::once(&*capture.name).chain(capture.last_name.as_deref()))
    }

    /// The fixed values declared after `=>`, `(field, value as written)`, by field name.
    pub fn fixed_values(&self) -> impl Iterator<Item = (&str, &str)> + '_ {
        self.fixed.iter().map(|(name, value)| (&**name, &**value))
    }

    /// How a person would say it, for suggestions: the required words, optional words before
    /// the first required one, and the defaults of optional dates, each literal as its first
    /// alternative and each other capture as `{name}`. `"list shifts this week"` for
    /// `"[list|show] shifts [on] [{from..to=this week}] [for {who:user}]"`.
    pub fn example(&self) -> &str {
        &self.example
    }

    /// A reading both patterns accept, if any, as literal words and `{}` for captures: the
    /// same number of items, captures at the same places, and at each literal place a word
    /// both accept.
    pub(crate) fn overlap(&self, other: &IntentPattern) -> Option<String> {
        self.expansions.iter().find_map(|mine| {
            other
                .expansions
                .iter()
                .find_map(|theirs| common_reading(&mine.items, &theirs.items))
        })
    }
}

/// The reading two item sequences share, if they share one.
fn common_reading(left: &[Item], right: &[Item]) -> Option<String> {
    if left.len() != right.len() {
        return None;
    }
    let words = left
        .iter()
        .zip(right)
        .map(|pair| match pair {
            (Item::Capture(_), Item::Capture(_)) => Some("{}".to_owned()),
            (Item::Literal(mine), Item::Literal(theirs)) => mine
                .iter()
                .find(|word| theirs.contains(word))
                .map(ToString::to_string),
            _ => None,
        })
        .collect::<Option<Vec<String>>>()?;
    Some(words.join(" "))
}

impl fmt::Display for IntentPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl FromStr for IntentPattern {
    type Err = PatternError;

    fn from_str(pattern: &str) -> Result<Self, Self::Err> {
        IntentPattern::parse(pattern)
    }
}

/// Splits a pattern into literal and capture pieces, checking brackets, braces and captures.
/// Returns the pieces, the captures, and how many optional parts there are.
fn scan(pattern: &str) -> Result<(Vec<Piece>, Vec<Capture>, usize), PatternError> {
    let mut pieces: Vec<Piece> = Vec::new();
    let mut captures: Vec<Capture> = Vec::new();
    let mut group_count = 0;
    // The open optional part: its index and the byte offset of its `[`.
    let mut open_group: Option<(usize, usize)> = None;
    let mut word = String::new();
    let mut characters = pattern.char_indices().peekable();

    let flush = |word: &mut String, pieces: &mut Vec<Piece>, group: Option<usize>| {
        let alternatives: Vec<Box<str>> = word
            .split('|')
            .filter_map(|alternative| {
                let mut normalized = String::new();
                push_normalized_word(&mut normalized, alternative);
                (!normalized.is_empty()).then(|| normalized.into_boxed_str())
            })
            .collect();
        word.clear();
        if !alternatives.is_empty() {
            pieces.push(Piece {
                item: Item::Literal(alternatives.into_boxed_slice()),
                group,
            });
        }
    };

    while let Some((position, character)) = characters.next() {
        let group = open_group.map(|(index, _)| index);
        match character {
            '[' => {
                flush(&mut word, &mut pieces, group);
                if open_group.is_some() {
                    return Err(PatternError::UnbalancedBrackets { position });
                }
                open_group = Some((group_count, position));
                group_count += 1;
            }
            ']' => {
                flush(&mut word, &mut pieces, group);
                let Some((index, start)) = open_group.take() else {
                    return Err(PatternError::UnbalancedBrackets { position });
                };
                if !pieces.iter().any(|piece| piece.group == Some(index)) {
                    return Err(PatternError::EmptyOptional { position: start });
                }
            }
            '{' => {
                let glued_before = word.chars().any(char::is_alphanumeric);
                flush(&mut word, &mut pieces, group);
                let mut spec = String::new();
                let mut closed = false;
                for (inner_position, inner) in characters.by_ref() {
                    match inner {
                        '}' => {
                            closed = true;
                            break;
                        }
                        '{' => {
                            return Err(PatternError::UnbalancedBraces {
                                position: inner_position,
                            });
                        }
                        other => spec.push(other),
                    }
                }
                if !closed {
                    return Err(PatternError::UnbalancedBraces { position });
                }
                let capture = parse_capture(&spec)?;
                let rest_of_word = characters.peek().map_or("", |&(next, _)| {
                    let rest = &pattern[next..];
                    let end = rest
                        .find(|c: char| c.is_whitespace() || matches!(c, '[' | ']' | '{'))
                        .unwrap_or(rest.len());
                    &rest[..end]
                });
                let glued_after = rest_of_word.chars().any(char::is_alphanumeric);
                if glued_before || glued_after {
                    return Err(PatternError::GluedPlaceholder {
                        name: capture.name.to_string(),
                        word: word_around(pattern, position).to_owned(),
                    });
                }
                pieces.push(Piece {
                    item: Item::Capture(captures.len()),
                    group,
                });
                captures.push(capture);
            }
            '}' => return Err(PatternError::UnbalancedBraces { position }),
            whitespace if whitespace.is_whitespace() => {
                flush(&mut word, &mut pieces, group);
            }
            other => word.push(other),
        }
    }
    if let Some((_, position)) = open_group {
        return Err(PatternError::UnbalancedBrackets { position });
    }
    flush(&mut word, &mut pieces, None);
    Ok((pieces, captures, group_count))
}

/// See [`IntentPattern::example`].
fn example(pieces: &[Piece], captures: &[Capture]) -> String {
    let mut words: Vec<String> = Vec::new();
    let mut seen_required = false;
    for piece in pieces {
        let group_has_capture = |group: usize| {
            pieces
                .iter()
                .any(|other| other.group == Some(group) && matches!(other.item, Item::Capture(_)))
        };
        match (&piece.item, piece.group) {
            (Item::Literal(alternatives), None) => {
                seen_required = true;
                words.push(alternatives[0].to_string());
            }
            (Item::Capture(index), None) => {
                seen_required = true;
                words.push(format!("{{{}}}", captures[*index].name));
            }
            (Item::Literal(alternatives), Some(group))
                if !seen_required && !group_has_capture(group) =>
            {
                words.push(alternatives[0].to_string());
            }
            (Item::Capture(index), Some(_)) => {
                if let Some(default) = &captures[*index].default {
                    words.push(default.to_string());
                }
            }
            _ => {}
        }
    }
    words.join(" ")
}

/// The whitespace-delimited word of `pattern` around byte `position`.
fn word_around(pattern: &str, position: usize) -> &str {
    let start = pattern[..position]
        .rfind(char::is_whitespace)
        .map_or(0, |at| at + 1);
    let end = pattern[position..]
        .find(char::is_whitespace)
        .map_or(pattern.len(), |at| position + at);
    &pattern[start..end]
}

/// Parses the inside of `{...}`: `name`, `first..last`, then `:kind`, then `=default`.
fn parse_capture(spec: &str) -> Result<Capture, PatternError> {
    let (head, default) = match spec.split_once('=') {
        Some((head, default)) => (head, Some(default.trim())),
        None => (spec, None),
    };
    let (names, kind) = match head.split_once(':') {
        Some((names, kind)) => (names, Some(kind)),
        None => (head, None),
    };
    let (name, last_name) = match names.split_once("..") {
        Some((first, last)) => (first, Some(last)),
        None => (names, None),
    };
    for name in std::iter::once(name).chain(last_name) {
        let valid = !name.is_empty()
            && name
                .bytes()
                .all(|byte| byte.is_ascii_alphanumeric() || byte == b'_');
        if !valid {
            return Err(PatternError::BadPlaceholderName {
                name: name.to_owned(),
            });
        }
    }
    let kind = match kind {
        None if last_name.is_some() || default.is_some() => CaptureKind::Date,
        None | Some("text") => CaptureKind::Text,
        Some("date") => CaptureKind::Date,
        Some("user") => CaptureKind::User,
        Some(other) => {
            return Err(PatternError::UnknownKind {
                name: name.to_owned(),
                kind: other.to_owned(),
            });
        }
    };
    if kind != CaptureKind::Date && (last_name.is_some() || default.is_some()) {
        return Err(PatternError::NotADate {
            name: name.to_owned(),
            kind,
        });
    }
    if let Some(default) = default {
        // Any day will do: the check is whether the words form a date phrase at all.
        let words: Vec<&str> = default.split_whitespace().collect();
        if parse_date_phrase(&words, date(2000, 1, 3)).is_none() {
            return Err(PatternError::BadDefault {
                name: name.to_owned(),
                default: default.to_owned(),
            });
        }
    }
    Ok(Capture {
        name: name.into(),
        last_name: last_name.map(Into::into),
        kind,
        default: default.map(Into::into),
    })
}

/// The reading that leaves out the optional parts whose bits are set in `left_out`.
fn expand(
    pieces: &[Piece],
    captures: &[Capture],
    left_out: usize,
) -> Result<Expansion, PatternError> {
    let is_kept = |piece: &&Piece| piece.group.is_none_or(|group| left_out & (1 << group) == 0);
    let items: Vec<Item> = pieces
        .iter()
        .filter(is_kept)
        .map(|piece| piece.item.clone())
        .collect();
    let omitted = pieces
        .iter()
        .filter(|piece| !is_kept(piece))
        .filter_map(|piece| match piece.item {
            Item::Capture(index) => Some(index),
            Item::Literal(_) => None,
        })
        .collect();

    let mut display = Vec::with_capacity(items.len());
    let mut previous_text: Option<&str> = None;
    for item in &items {
        match item {
            Item::Literal(alternatives) => {
                display.push(alternatives[0].to_string());
                previous_text = None;
            }
            Item::Capture(index) => {
                let capture = &captures[*index];
                if let (Some(first), CaptureKind::Text) = (previous_text, capture.kind) {
                    return Err(PatternError::AdjacentPlaceholders {
                        first: first.to_owned(),
                        second: capture.name.to_string(),
                    });
                }
                previous_text = (capture.kind == CaptureKind::Text).then_some(&*capture.name);
                display.push(format!("{{{}}}", capture.name));
            }
        }
    }
    let literals = items
        .iter()
        .filter(|item| matches!(item, Item::Literal(_)))
        .count();
    Ok(Expansion {
        items,
        omitted,
        literals,
        display: display.join(" "),
    })
}
