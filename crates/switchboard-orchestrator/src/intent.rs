//! Intent matching: which tool does an utterance mean, and with which parameters?
//!
//! Tools declare intents such as `"who am i"` or `"shifts from {from} to {to}"`. An
//! [`IntentTable`] routes an utterance to the tool whose intent matches the *whole* utterance
//! and returns the `{placeholder}` values it captured. This module is pure and actor-free: no
//! I/O, no regexes, no shared state, so the orchestrator actor can wrap it and tests can drive
//! it directly. It runs on every `ask`, so the utterance is normalised once per call and the
//! match loop does not allocate.
//!
//! The rules, in one place:
//! - Literal words compare case- and punctuation-insensitively: [`normalize`] lowercases, splits
//!   on whitespace and keeps only the alphanumeric characters of each word ("Who am I?" is
//!   "who am i", "who's" is "whos"); words left empty are dropped, in intents and utterances.
//! - A capture spans one or more words, lazily: it ends at the first place where the rest of
//!   the intent can still match. The captured text keeps its original case and inner
//!   punctuation ("2026-11-23"); only sentence punctuation at its two ends is trimmed, and its
//!   words are joined with single spaces.
//! - Only whole utterances match: "assign me a shift" does not match the intent "me".
//! - When several intents match, the one with more literal words wins, then the one with fewer
//!   captures, then the one declared first.
//!
//! Deliberately not done: stemming, synonyms, spelling correction (typos only show up in
//! [`NoMatch::closest`]), Unicode normalisation forms (a precomposed "é" and "e" plus a
//! combining accent stay different), and splitting glued words ("who-am-i" is the one word
//! "whoami").

use std::{
    cmp::Reverse,
    collections::{BTreeMap, HashMap, HashSet},
    fmt,
    ops::Range,
    str::FromStr,
    sync::Arc,
};

use serde::{Deserialize, Serialize};

#[cfg(test)]
mod tests;

/// Sentence punctuation trimmed from both ends of a captured value, so that
/// "shifts from monday to friday?" captures "friday". Inner punctuation is kept.
const CAPTURE_TRIM: &[char] = &[
    '?', '!', '.', ',', ';', ':', '"', '\'', '(', ')', '¿', '¡', '…', '“', '”', '‘', '’',
];

/// How many suggestions a [`NoMatch`] carries at most.
const MAX_CLOSEST: usize = 3;

/// Normalises text the way literal intent words are compared: lowercase, split on whitespace,
/// keep only the alphanumeric characters of each word, drop words left empty, and join the
/// rest with single spaces.
///
/// ```
/// assert_eq!(switchboard_orchestrator::normalize("  Who's   THERE?! "), "whos there");
/// assert_eq!(switchboard_orchestrator::normalize("¿ ... !"), "");
/// ```
pub fn normalize(text: &str) -> String {
    Utterance::tokenize(text).normalized
}

/// Appends the normalised form of one whitespace-free word to `out`.
fn push_normalized_word(out: &mut String, word: &str) {
    for character in word.chars() {
        if character.is_ascii() {
            if character.is_ascii_alphanumeric() {
                out.push(character.to_ascii_lowercase());
            }
        } else {
            // Lowercase first and filter second: "İ" lowercases to "i" plus a combining dot,
            // and only the "i" is alphanumeric. Filtering the lowercased characters is what
            // makes normalisation idempotent.
            for lowered in character.to_lowercase() {
                if lowered.is_alphanumeric() {
                    out.push(lowered);
                }
            }
        }
    }
}

/// An utterance split into words, each with its original text and its normalised form.
///
/// The normalised forms live in one buffer (which is exactly [`normalize`] of the utterance),
/// so tokenising costs two allocations however long the utterance is.
#[derive(Debug)]
struct Utterance<'u> {
    normalized: String,
    words: Vec<Word<'u>>,
}

/// One kept word of an [`Utterance`].
#[derive(Debug, Clone, Copy)]
struct Word<'u> {
    /// The word as written, punctuation and case included.
    raw: &'u str,
    /// Where the word's normalised form sits in [`Utterance::normalized`].
    normalized_start: usize,
    normalized_end: usize,
}

impl<'u> Utterance<'u> {
    fn tokenize(text: &'u str) -> Self {
        let mut normalized = String::with_capacity(text.len());
        let mut words = Vec::new();
        for raw in text.split_whitespace() {
            let rollback_len = normalized.len();
            if !words.is_empty() {
                normalized.push(' ');
            }
            let normalized_start = normalized.len();
            push_normalized_word(&mut normalized, raw);
            if normalized.len() == normalized_start {
                // Nothing alphanumeric in this word ("?", "--"): drop it, separator included.
                normalized.truncate(rollback_len);
                continue;
            }
            words.push(Word {
                raw,
                normalized_start,
                normalized_end: normalized.len(),
            });
        }
        Utterance { normalized, words }
    }

    fn len(&self) -> usize {
        self.words.len()
    }

    /// The normalised form of word `index`.
    fn normalized_word(&self, index: usize) -> &str {
        let word = &self.words[index];
        // The bounds were recorded while pushing whole characters, so they are char boundaries.
        &self.normalized[word.normalized_start..word.normalized_end]
    }

    /// Whether the words starting at `start` are exactly `literals`.
    fn has_literals_at(&self, start: usize, literals: &[Box<str>]) -> bool {
        start + literals.len() <= self.len()
            && literals
                .iter()
                .enumerate()
                .all(|(offset, literal)| self.normalized_word(start + offset) == &**literal)
    }

    /// The original text of words `span`, joined with single spaces, with sentence punctuation
    /// trimmed from both ends. Never empty: every kept word has an alphanumeric character, and
    /// those are never trimmed.
    fn captured_text(&self, span: Range<usize>) -> String {
        let words = &self.words[span];
        match words {
            [] => String::new(),
            [only] => only.raw.trim_matches(CAPTURE_TRIM).to_owned(),
            [first, middle @ .., last] => {
                let first = first.raw.trim_start_matches(CAPTURE_TRIM);
                let last = last.raw.trim_end_matches(CAPTURE_TRIM);
                let capacity = first.len()
                    + last.len()
                    + middle.iter().map(|word| word.raw.len() + 1).sum::<usize>()
                    + 1;
                let mut text = String::with_capacity(capacity);
                text.push_str(first);
                for word in middle {
                    text.push(' ');
                    text.push_str(word.raw);
                }
                text.push(' ');
                text.push_str(last);
                text
            }
        }
    }
}

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
    /// A `{` without its `}`, a `}` without its `{`, or a `{` inside a placeholder.
    #[error(
        "unbalanced brace at byte {position}: a placeholder is written `{{name}}`, \
         with exactly one opening and one closing brace"
    )]
    UnbalancedBraces {
        /// Byte offset of the offending brace in the pattern.
        position: usize,
    },
    /// A placeholder name that is empty or has characters outside `[A-Za-z0-9_]`.
    #[error(
        "invalid placeholder name {name:?}: use one or more ASCII letters, digits or \
         underscores, e.g. `{{from}}`"
    )]
    BadPlaceholderName {
        /// The text between the braces.
        name: String,
    },
    /// The same placeholder name appears twice.
    #[error("placeholder `{{{name}}}` is used twice: give each capture its own name")]
    DuplicatePlaceholder {
        /// The repeated name.
        name: String,
    },
    /// Two captures with no literal word between them, so where one ends is ambiguous.
    #[error(
        "placeholders `{{{first}}}` and `{{{second}}}` have no word between them, so it is \
         ambiguous where one ends and the other begins: put a word between them, \
         e.g. `{{{first}}} to {{{second}}}`"
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
}

/// One parsed intent, such as `"shifts from {from} to {to}"`.
///
/// It is a run of normalised literal words and `{name}` captures, with at least one literal
/// word between any two captures. A pattern of captures only (`"{query}"`) is allowed and
/// matches every non-blank utterance, at the lowest priority.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IntentPattern {
    /// The pattern as declared.
    text: String,
    /// Every literal word, normalised, in order.
    literals: Vec<Box<str>>,
    /// How many literal words come before the first capture.
    leading_literals: usize,
    /// The captures in order, each with the literal words that follow it.
    captures: Vec<CaptureSlot>,
    /// Literals with each capture as `{}`: equal shapes match exactly the same utterances.
    shape: String,
    /// Literals with each capture as `{name}`: what similarity is measured against.
    display: String,
}

/// One `{name}` in an [`IntentPattern`].
#[derive(Debug, Clone, PartialEq, Eq)]
struct CaptureSlot {
    name: Box<str>,
    /// The literal words between this capture and the next one (or the end), as indexes into
    /// [`IntentPattern::literals`]. Empty only for a capture that ends the pattern.
    following_literals: Range<usize>,
}

/// A piece of a pattern while parsing.
enum Segment<'p> {
    Literal(String),
    Capture(&'p str),
}

impl IntentPattern {
    /// Parses an intent pattern: literal words and `{name}` captures, separated by whitespace.
    ///
    /// A placeholder may touch punctuation (`"what is {thing}?"`) but not letters or digits
    /// (`"x{a}"` is an error), since captures take whole words.
    pub fn parse(pattern: &str) -> Result<Self, PatternError> {
        check_braces(pattern)?;

        let mut segments = Vec::new();
        for word in pattern.split_whitespace() {
            segments.extend(parse_word(word)?);
        }
        if segments.is_empty() {
            return Err(PatternError::Empty);
        }

        let mut seen_names: Vec<&str> = Vec::new();
        let mut previous_capture: Option<&str> = None;
        for segment in &segments {
            match *segment {
                Segment::Literal(_) => previous_capture = None,
                Segment::Capture(name) => {
                    if let Some(first) = previous_capture {
                        return Err(PatternError::AdjacentPlaceholders {
                            first: first.to_owned(),
                            second: name.to_owned(),
                        });
                    }
                    if seen_names.contains(&name) {
                        return Err(PatternError::DuplicatePlaceholder {
                            name: name.to_owned(),
                        });
                    }
                    seen_names.push(name);
                    previous_capture = Some(name);
                }
            }
        }

        let mut literals: Vec<Box<str>> = Vec::new();
        let mut captures: Vec<CaptureSlot> = Vec::new();
        let mut leading_literals = 0;
        let mut shape_words: Vec<&str> = Vec::with_capacity(segments.len());
        let mut display_words: Vec<String> = Vec::with_capacity(segments.len());
        for segment in &segments {
            match segment {
                Segment::Literal(word) => {
                    literals.push(word.as_str().into());
                    match captures.last_mut() {
                        Some(capture) => capture.following_literals.end = literals.len(),
                        None => leading_literals = literals.len(),
                    }
                    shape_words.push(word);
                    display_words.push(word.clone());
                }
                Segment::Capture(name) => {
                    captures.push(CaptureSlot {
                        name: (*name).into(),
                        following_literals: literals.len()..literals.len(),
                    });
                    shape_words.push("{}");
                    display_words.push(format!("{{{name}}}"));
                }
            }
        }

        Ok(IntentPattern {
            text: pattern.to_owned(),
            literals,
            leading_literals,
            captures,
            shape: shape_words.join(" "),
            display: display_words.join(" "),
        })
    }

    /// The pattern as it was declared.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The capture names, in the order they appear.
    pub fn placeholders(&self) -> impl ExactSizeIterator<Item = &str> + '_ {
        self.captures.iter().map(|capture| &*capture.name)
    }

    /// Matches a whole utterance against this pattern alone, returning the captured values by
    /// placeholder name. [`IntentTable::route`] is the way to choose among many patterns.
    pub fn match_utterance(&self, utterance: &str) -> Option<BTreeMap<String, String>> {
        let utterance = Utterance::tokenize(utterance);
        let mut spans = Vec::with_capacity(self.captures.len());
        self.match_words(&utterance, &mut spans)
            .then(|| self.captured_params(&utterance, &spans))
    }

    /// Whether the whole utterance matches; on success `spans` holds each capture's word range.
    ///
    /// Captures never touch each other, so the pattern is `head (capture block)* [capture]`
    /// where every block is a non-empty run of literal words. Placing each block at its
    /// earliest possible position is optimal (the capture after it then has the most room),
    /// which makes this one left-to-right pass with no backtracking, and makes captures lazy.
    fn match_words(&self, utterance: &Utterance<'_>, spans: &mut Vec<Range<usize>>) -> bool {
        spans.clear();
        let word_count = utterance.len();
        // Every literal takes one word and every capture at least one.
        if word_count < self.literals.len() + self.captures.len() {
            return false;
        }
        if !utterance.has_literals_at(0, &self.literals[..self.leading_literals]) {
            return false;
        }
        let Some((last_capture, middle_captures)) = self.captures.split_last() else {
            return word_count == self.leading_literals;
        };

        let trailing = &self.literals[last_capture.following_literals.clone()];
        let trailing_start = word_count - trailing.len();
        if !utterance.has_literals_at(trailing_start, trailing) {
            return false;
        }

        let mut cursor = self.leading_literals;
        for capture in middle_captures {
            let block = &self.literals[capture.following_literals.clone()];
            // The block starts after at least one captured word and must leave at least one
            // word for the last capture before the trailing literals.
            let first_start = cursor + 1;
            let Some(last_start) = trailing_start.checked_sub(block.len() + 1) else {
                return false;
            };
            let Some(block_start) =
                (first_start..=last_start).find(|&start| utterance.has_literals_at(start, block))
            else {
                return false;
            };
            spans.push(cursor..block_start);
            cursor = block_start + block.len();
        }
        if cursor >= trailing_start {
            return false;
        }
        spans.push(cursor..trailing_start);
        true
    }

    fn captured_params(
        &self,
        utterance: &Utterance<'_>,
        spans: &[Range<usize>],
    ) -> BTreeMap<String, String> {
        self.captures
            .iter()
            .zip(spans)
            .map(|(capture, span)| {
                (
                    capture.name.to_string(),
                    utterance.captured_text(span.clone()),
                )
            })
            .collect()
    }

    /// Priority when several patterns match: more literal words first, then fewer captures.
    fn priority(&self) -> (Reverse<usize>, usize) {
        (Reverse(self.literals.len()), self.captures.len())
    }
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

/// Checks that braces pair up and that every placeholder has a valid name. Afterwards every
/// `{` is followed by a name and a `}`, with no whitespace in between.
fn check_braces(pattern: &str) -> Result<(), PatternError> {
    let mut open_at: Option<usize> = None;
    for (position, character) in pattern.char_indices() {
        match (character, open_at) {
            ('{', None) => open_at = Some(position),
            ('{', Some(_)) | ('}', None) => {
                return Err(PatternError::UnbalancedBraces { position });
            }
            ('}', Some(start)) => {
                let name = &pattern[start + 1..position];
                let is_valid = !name.is_empty()
                    && name
                        .bytes()
                        .all(|byte| byte.is_ascii_alphanumeric() || byte == b'_');
                if !is_valid {
                    return Err(PatternError::BadPlaceholderName {
                        name: name.to_owned(),
                    });
                }
                open_at = None;
            }
            _ => {}
        }
    }
    match open_at {
        Some(position) => Err(PatternError::UnbalancedBraces { position }),
        None => Ok(()),
    }
}

/// Parses one whitespace-delimited word of a pattern whose braces are already checked.
/// Returns `None` for a word that normalises to nothing.
fn parse_word(word: &str) -> Result<Option<Segment<'_>>, PatternError> {
    let mut glued_text = String::new();
    let mut names: Vec<&str> = Vec::new();
    let mut rest = word;
    while let Some(open) = rest.find('{') {
        push_normalized_word(&mut glued_text, &rest[..open]);
        let after_open = &rest[open + 1..];
        let Some(close) = after_open.find('}') else {
            // Unreachable after `check_braces`; treat the remainder as text to stay total.
            rest = after_open;
            continue;
        };
        names.push(&after_open[..close]);
        rest = &after_open[close + 1..];
    }
    push_normalized_word(&mut glued_text, rest);

    match names.as_slice() {
        [] if glued_text.is_empty() => Ok(None),
        [] => Ok(Some(Segment::Literal(glued_text))),
        [name, ..] if !glued_text.is_empty() => Err(PatternError::GluedPlaceholder {
            name: (*name).to_owned(),
            word: word.to_owned(),
        }),
        [name] => Ok(Some(Segment::Capture(name))),
        [first, second, ..] => Err(PatternError::AdjacentPlaceholders {
            first: (*first).to_owned(),
            second: (*second).to_owned(),
        }),
    }
}

/// Why an [`IntentTable`] could not be built. Each message names the tools involved.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// A tool declared a pattern that does not parse.
    #[error("tool `{tool}` declares the invalid intent {pattern:?}: {reason}")]
    InvalidPattern {
        /// The tool that declared the pattern.
        tool: Arc<str>,
        /// The pattern as declared.
        pattern: String,
        /// What is wrong with it.
        reason: PatternError,
    },
    /// Two different tools declared the same intent (after normalisation, with captures
    /// compared by position, not by name), so an utterance could not tell them apart.
    #[error(
        "tools `{existing_tool}` and `{tool}` both declare the intent {pattern:?} \
         (`{existing_tool}` as {existing_pattern:?}): an utterance can route to only one \
         tool, so reword or remove one of them"
    )]
    ConflictingIntent {
        /// The tool that declared the intent first.
        existing_tool: Arc<str>,
        /// Its pattern, as declared.
        existing_pattern: String,
        /// The tool that declared it again.
        tool: Arc<str>,
        /// Its pattern, as declared.
        pattern: String,
    },
}

/// Every declared intent, ready to route utterances to tools.
///
/// Building checks all patterns up front, so routing cannot fail for a bad declaration. The
/// table is immutable and cheap to share (`Send + Sync`); rebuild it when tools change.
#[derive(Debug, Clone, Default)]
pub struct IntentTable {
    /// Deduplicated entries in declaration order.
    entries: Vec<IntentEntry>,
    /// Indexes into `entries`, highest priority first, so the first match wins.
    match_order: Vec<usize>,
    /// The most captures any pattern has, to size the span buffer once.
    max_captures: usize,
}

#[derive(Debug, Clone)]
struct IntentEntry {
    tool: Arc<str>,
    pattern: IntentPattern,
}

impl IntentTable {
    /// Builds a table from `(tool name, intent pattern)` pairs.
    ///
    /// Fails on the first pattern that does not parse, and when two different tools declare
    /// the same intent. A tool declaring the same intent twice is fine: the later copy is
    /// dropped (with its placeholder names, if they differ).
    pub fn build<I, T, P>(routes: I) -> Result<Self, BuildError>
    where
        I: IntoIterator<Item = (T, P)>,
        T: Into<Arc<str>>,
        P: AsRef<str>,
    {
        let mut entries: Vec<IntentEntry> = Vec::new();
        let mut entry_by_shape: HashMap<String, usize> = HashMap::new();
        // Tools usually declare several intents; share one `Arc` per tool name.
        let mut tool_names: HashSet<Arc<str>> = HashSet::new();

        for (tool, pattern_text) in routes {
            let tool: Arc<str> = tool.into();
            let tool = match tool_names.get(&tool) {
                Some(existing) => Arc::clone(existing),
                None => {
                    tool_names.insert(Arc::clone(&tool));
                    tool
                }
            };
            let pattern_text = pattern_text.as_ref();
            let pattern = IntentPattern::parse(pattern_text).map_err(|reason| {
                BuildError::InvalidPattern {
                    tool: Arc::clone(&tool),
                    pattern: pattern_text.to_owned(),
                    reason,
                }
            })?;

            if let Some(&existing_index) = entry_by_shape.get(&pattern.shape) {
                let existing = &entries[existing_index];
                if existing.tool == tool {
                    continue;
                }
                return Err(BuildError::ConflictingIntent {
                    existing_tool: Arc::clone(&existing.tool),
                    existing_pattern: existing.pattern.text.clone(),
                    tool,
                    pattern: pattern.text,
                });
            }
            entry_by_shape.insert(pattern.shape.clone(), entries.len());
            entries.push(IntentEntry { tool, pattern });
        }

        let mut match_order: Vec<usize> = (0..entries.len()).collect();
        // A stable sort: equal priorities keep declaration order.
        match_order.sort_by_key(|&index| entries[index].pattern.priority());
        let max_captures = entries
            .iter()
            .map(|entry| entry.pattern.captures.len())
            .max()
            .unwrap_or(0);

        Ok(IntentTable {
            entries,
            match_order,
            max_captures,
        })
    }

    /// Routes an utterance to the best-matching intent (see the module docs for the rules).
    pub fn route(&self, utterance: &str) -> Result<IntentMatch, NoMatch> {
        let words = Utterance::tokenize(utterance);
        if words.len() == 0 {
            return Err(NoMatch {
                utterance: utterance.to_owned(),
                closest: Vec::new(),
            });
        }
        let mut spans = Vec::with_capacity(self.max_captures);
        for &index in &self.match_order {
            let entry = &self.entries[index];
            if entry.pattern.match_words(&words, &mut spans) {
                return Ok(IntentMatch {
                    tool: Arc::clone(&entry.tool),
                    intent: entry.pattern.text.clone(),
                    params: entry.pattern.captured_params(&words, &spans),
                });
            }
        }
        Err(NoMatch {
            utterance: utterance.to_owned(),
            closest: self.closest(&words.normalized),
        })
    }

    /// The up to [`MAX_CLOSEST`] intents most similar to a normalised utterance, best first.
    fn closest(&self, normalized_utterance: &str) -> Vec<ClosestIntent> {
        let mut scored: Vec<(f64, usize)> = self
            .entries
            .iter()
            .enumerate()
            .map(|(index, entry)| {
                let score =
                    strsim::normalized_levenshtein(normalized_utterance, &entry.pattern.display);
                (score, index)
            })
            .filter(|&(score, _)| score > 0.0)
            .collect();
        // Best score first; equal scores in declaration order.
        scored.sort_by(|left, right| right.0.total_cmp(&left.0).then(left.1.cmp(&right.1)));
        scored
            .into_iter()
            .take(MAX_CLOSEST)
            .map(|(score, index)| {
                let entry = &self.entries[index];
                ClosestIntent {
                    tool: Arc::clone(&entry.tool),
                    intent: entry.pattern.text.clone(),
                    score,
                }
            })
            .collect()
    }

    /// Every `(tool, intent pattern)` pair, deduplicated, in declaration order.
    pub fn intents(&self) -> impl ExactSizeIterator<Item = (&Arc<str>, &str)> + '_ {
        self.entries
            .iter()
            .map(|entry| (&entry.tool, entry.pattern.as_str()))
    }

    /// How many intents the table holds, after deduplication.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the table holds no intents (every utterance is then a [`NoMatch`]).
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// An utterance routed to a tool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IntentMatch {
    /// The tool to call.
    pub tool: Arc<str>,
    /// The intent pattern that matched, as declared.
    pub intent: String,
    /// The captured values, by placeholder name; empty for an intent without captures.
    pub params: BTreeMap<String, String>,
}

/// No intent matches an utterance; carries the closest intents so the caller can rephrase.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NoMatch {
    /// The utterance, as given.
    pub utterance: String,
    /// Up to three intents most similar to the utterance, best first; empty for a blank
    /// utterance.
    pub closest: Vec<ClosestIntent>,
}

/// An intent similar to an utterance that matched nothing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClosestIntent {
    /// The tool that declared the intent.
    pub tool: Arc<str>,
    /// The intent pattern, as declared.
    pub intent: String,
    /// Similarity in `(0, 1]`: normalised Levenshtein between the normalised utterance and
    /// the normalised intent, captures written as `{name}`.
    pub score: f64,
}

impl fmt::Display for NoMatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.utterance.trim().is_empty() {
            return f.write_str("no intent matches a blank utterance: say what you want to do");
        }
        write!(f, "no intent matches {:?}", self.utterance)?;
        for (position, closest) in self.closest.iter().enumerate() {
            let separator = if position == 0 { "; closest: " } else { ", " };
            write!(f, "{separator}{:?} ({})", closest.intent, closest.tool)?;
        }
        Ok(())
    }
}

impl std::error::Error for NoMatch {}
