//! Intent matching: which tool does an utterance mean, and with which parameters?
//!
//! Tools declare intents such as `"who am i"` or
//! `"[list|show] shifts [{from..to=this week}] [for {assignee:user}]"` (the syntax is on
//! [`IntentPattern`]). An [`IntentTable`] routes an utterance to the tool whose intent matches
//! the *whole* utterance and returns the params its captures filled. Routing is pure and
//! deterministic: no I/O, no clock, no shared state. What it needs to know about the world,
//! today's date and the caller's colleagues, comes in as [`Facts`], so the same utterance with
//! the same facts always takes the same route.
//!
//! The rules, in one place:
//! - Literal words compare case- and punctuation-insensitively: [`normalize`] lowercases, splits
//!   on whitespace and keeps only the alphanumeric characters of each word ("Who am I?" is
//!   "who am i", "who's" is "whos"); words left empty are dropped, in intents and utterances.
//! - A literal word of four letters or more also matches a word one typo away from it (one
//!   letter added, dropped, changed, or two swapped: "lsit" is "list").
//! - "the", "a", "an", "all", "any" and "please" may appear where the pattern has none.
//! - Filler that opens or closes a request ("please", "can you", "show me", "I want to see",
//!   "thanks") is set aside when the utterance as written matches nothing.
//! - A text capture spans one or more words, lazily: it ends at the first place where the rest
//!   of the intent can still match. It keeps the original case and inner punctuation
//!   ("2026-11-23"); only sentence punctuation at its two ends is trimmed.
//! - A date capture takes the longest date phrase that lets the rest match (see the `dates`
//!   module) and becomes `YYYY-MM-DD`; a user capture takes a member's id or name (see
//!   [`Person`]) and becomes the id. Typed captures never take words that are not a date or a
//!   member, so they never swallow the words that follow them.
//! - Routing reads the utterance as written, then with its filler set aside, each first with
//!   exact words and only then allowing typos. The first of these readings that matches
//!   decides; within it, the intent with more literal words wins, then the one with fewer
//!   typos, then the one with fewer captures, then the one declared first.
//! - Only when none of those matches, the same two spans are read with their words in any
//!   order ("tell me who I am" for "who am i"): exact words, readings without captures (an
//!   optional capture left out takes its default), every literal paired with a word of its
//!   own and every other word a noise word. The reading with more literal words wins; when
//!   the best ones would make different calls (another tool, other fixed values), nothing is
//!   routed.
//! - An intent's fixed values (`=> filter=low`) are params of every match of it, beside what
//!   its captures took.
//! - When none does, [`NoMatch`] ranks the tools the utterance is about (BM25 over intents,
//!   titles and descriptions) and says when one is clearly the best.
//!
//! Deliberately not done: synonyms beyond the filler words, Unicode normalisation forms (a
//! precomposed "é" and "e" plus a combining accent stay different), splitting glued words
//! ("who-am-i" is the one word "whoami"), and utterances over [`MAX_UTTERANCE_WORDS`] words,
//! which only get suggestions.

use std::{
    cmp::Reverse,
    collections::{BTreeMap, HashSet},
    fmt,
    ops::Range,
    sync::Arc,
};

use jiff::civil::Date;
use serde::{Deserialize, Serialize};

mod dates;
mod fixed;
mod matcher;
pub(crate) mod pattern;
mod people;
mod reorder;
mod suggest;
#[cfg(test)]
mod tests;
mod words;

pub use dates::{DateSpan, parse_date_phrase};
pub use pattern::{CaptureKind, IntentPattern, MAX_OPTIONAL_PARTS, PatternError};
pub use people::{People, Person};
pub use words::normalize;

use matcher::{Found, Matcher, params};
use pattern::Expansion;
use reorder::{SpanWords, matches_reordered};
use suggest::Ranker;
use words::Utterance;

/// The longest utterance routing tries to match, in words; longer ones only get suggestions.
pub const MAX_UTTERANCE_WORDS: usize = 64;

/// How many suggestions a [`NoMatch`] carries at most.
const MAX_CLOSEST: usize = 3;

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
    /// Two different tools declared intents that read the same way (after normalisation, with
    /// captures compared by position, not by name), so an utterance could not tell them apart.
    #[error(
        "tools `{existing_tool}` and `{tool}` both accept {shape:?} (`{existing_tool}` through \
         {existing_pattern:?}, `{tool}` through {pattern:?}): an utterance can route to only \
         one tool, so reword or remove one of them"
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
        /// The reading both accept, captures as `{}`.
        shape: String,
    },
    /// One tool declared two intents that read the same way but set different fixed values,
    /// so an utterance could not tell which values to send.
    #[error(
        "tool `{tool}` accepts {shape:?} through both {existing_pattern:?} and {pattern:?}, \
         which set different fixed values: an utterance can send only one set, so reword \
         one of them or give them the same values"
    )]
    ConflictingFixedValues {
        /// The tool.
        tool: Arc<str>,
        /// The intent declared first, as declared.
        existing_pattern: String,
        /// The intent declared second, as declared.
        pattern: String,
        /// The reading both accept, captures as `{}`.
        shape: String,
    },
}

/// What routing needs to know about the world: today's date, and who the caller's
/// colleagues are.
#[derive(Debug, Clone, Copy)]
pub struct Facts<'a> {
    /// The day date phrases are relative to ("tomorrow", "friday").
    pub today: Date,
    /// Who a `{name:user}` capture may name.
    pub people: People<'a>,
}

/// Every declared intent, ready to route utterances to tools.
///
/// Building checks all patterns up front, so routing cannot fail for a bad declaration. The
/// table is immutable and cheap to share (`Send + Sync`); rebuild it when tools change.
#[derive(Debug, Default)]
pub struct IntentTable {
    /// Deduplicated entries in declaration order.
    entries: Vec<IntentEntry>,
    /// Ranks tools for an utterance that matches nothing; `None` for an empty table.
    ranker: Option<Ranker>,
}

#[derive(Debug, Clone)]
struct IntentEntry {
    tool: Arc<str>,
    pattern: IntentPattern,
}

impl IntentEntry {
    /// Whether a match of `pattern` for `tool` calls what a match of this entry calls: the
    /// same tool with the same fixed values.
    fn same_call(&self, tool: &Arc<str>, pattern: &IntentPattern) -> bool {
        self.tool == *tool && self.pattern.fixed == pattern.fixed
    }
}

impl IntentTable {
    /// Builds a table from `(tool name, intent pattern)` pairs, ranking suggestions by the
    /// intents alone; [`build_described`](Self::build_described) adds each tool's title and
    /// description.
    pub fn build<I, T, P>(routes: I) -> Result<Self, BuildError>
    where
        I: IntoIterator<Item = (T, P)>,
        T: Into<Arc<str>>,
        P: AsRef<str>,
    {
        Self::build_described(routes, std::iter::empty::<(Arc<str>, String)>())
    }

    /// Builds a table from `(tool name, intent pattern)` pairs, with `(tool name, text)` pairs
    /// (titles, descriptions) that make suggestions for unmatched utterances more relevant.
    ///
    /// Fails on the first pattern that does not parse, and when two different tools declare
    /// intents that read the same way. A tool declaring the same intent twice is fine: the
    /// later copy is dropped.
    pub fn build_described<I, T, P, D, N, X>(routes: I, descriptions: D) -> Result<Self, BuildError>
    where
        I: IntoIterator<Item = (T, P)>,
        T: Into<Arc<str>>,
        P: AsRef<str>,
        D: IntoIterator<Item = (N, X)>,
        N: AsRef<str>,
        X: AsRef<str>,
    {
        let parsed = routes.into_iter().map(|(tool, pattern_text)| {
            let tool: Arc<str> = tool.into();
            let pattern_text = pattern_text.as_ref();
            match IntentPattern::parse(pattern_text) {
                Ok(pattern) => Ok((tool, pattern)),
                Err(reason) => Err(BuildError::InvalidPattern {
                    tool,
                    pattern: pattern_text.to_owned(),
                    reason,
                }),
            }
        });
        Self::build_parsed(parsed, descriptions)
    }

    /// Like [`build_described`](Self::build_described), from patterns already parsed (by a
    /// caller that checked them against something else first); fails only when two different
    /// tools declare intents that read the same way.
    pub fn from_patterns<I, T, D, N, X>(routes: I, descriptions: D) -> Result<Self, BuildError>
    where
        I: IntoIterator<Item = (T, IntentPattern)>,
        T: Into<Arc<str>>,
        D: IntoIterator<Item = (N, X)>,
        N: AsRef<str>,
        X: AsRef<str>,
    {
        let parsed = routes
            .into_iter()
            .map(|(tool, pattern)| Ok((tool.into(), pattern)));
        Self::build_parsed(parsed, descriptions)
    }

    /// The table of `routes`, in order, stopping at the first error among them or the first
    /// conflict.
    fn build_parsed<D, N, X>(
        routes: impl Iterator<Item = Result<(Arc<str>, IntentPattern), BuildError>>,
        descriptions: D,
    ) -> Result<Self, BuildError>
    where
        D: IntoIterator<Item = (N, X)>,
        N: AsRef<str>,
        X: AsRef<str>,
    {
        let mut entries: Vec<IntentEntry> = Vec::new();
        // Tools usually declare several intents; share one `Arc` per tool name.
        let mut tool_names: HashSet<Arc<str>> = HashSet::new();

        for route in routes {
            let (tool, pattern) = route?;
            let tool = match tool_names.get(&tool) {
                Some(existing) => Arc::clone(existing),
                None => {
                    tool_names.insert(Arc::clone(&tool));
                    tool
                }
            };
            let is_repeat = entries.iter().any(|entry| {
                entry.same_call(&tool, &pattern) && entry.pattern.expansions == pattern.expansions
            });
            if is_repeat {
                continue;
            }
            // Readings may coincide only where they make the same call.
            for existing in entries
                .iter()
                .filter(|entry| !entry.same_call(&tool, &pattern))
            {
                let Some(shape) = existing.pattern.overlap(&pattern) else {
                    continue;
                };
                let existing_pattern = existing.pattern.as_str().to_owned();
                let pattern = pattern.as_str().to_owned();
                return Err(if existing.tool == tool {
                    BuildError::ConflictingFixedValues {
                        tool,
                        existing_pattern,
                        pattern,
                        shape,
                    }
                } else {
                    BuildError::ConflictingIntent {
                        existing_tool: Arc::clone(&existing.tool),
                        existing_pattern,
                        tool,
                        pattern,
                        shape,
                    }
                });
            }
            entries.push(IntentEntry { tool, pattern });
        }

        let ranker = (!entries.is_empty()).then(|| Ranker::new(documents(&entries, descriptions)));
        Ok(IntentTable { entries, ranker })
    }

    /// Routes an utterance to the best-matching intent (see the module docs for the rules).
    pub fn route(&self, utterance: &str, facts: &Facts<'_>) -> Result<IntentMatch, NoMatch> {
        let words = Utterance::tokenize(utterance);
        let no_match = |needs_people| NoMatch {
            utterance: utterance.to_owned(),
            closest: Vec::new(),
            clear_best: false,
            needs_people,
        };
        if words.len() == 0 {
            return Err(no_match(false));
        }
        if words.len() <= MAX_UTTERANCE_WORDS {
            // As written, then with the filler set aside; exact words before typos.
            let whole = 0..words.len();
            let trimmed = words.without_filler();
            let retry = (trimmed != whole && !trimmed.is_empty()).then_some(trimmed);
            let spans: Vec<Range<usize>> = std::iter::once(whole).chain(retry).collect();
            for allow_typos in [false, true] {
                for span in &spans {
                    let mut matcher = Matcher {
                        words: &words,
                        end: span.end,
                        facts,
                        needs_people: false,
                        allow_typos,
                    };
                    let best = self.best_match(&mut matcher, span.start);
                    if matcher.needs_people {
                        return Err(no_match(true));
                    }
                    if let Some((entry, expansion, found)) = best {
                        return Ok(IntentMatch {
                            tool: Arc::clone(&entry.tool),
                            intent: entry.pattern.as_str().to_owned(),
                            params: params(&entry.pattern, expansion, &found, &words, facts.today),
                        });
                    }
                }
            }
            // Last, the same words in another order: exact words, capture-free readings, and
            // only when the best of them make one call.
            for span in &spans {
                match self.best_reordered(&words, span.clone()) {
                    Reordered::One(entry, expansion) => {
                        tracing::debug!(tool = %entry.tool, intent = entry.pattern.as_str(), "routed with the words reordered");
                        return Ok(IntentMatch {
                            tool: Arc::clone(&entry.tool),
                            intent: entry.pattern.as_str().to_owned(),
                            params: params(
                                &entry.pattern,
                                expansion,
                                &Found::default(),
                                &words,
                                facts.today,
                            ),
                        });
                    }
                    Reordered::Ambiguous => {
                        tracing::debug!(
                            "the words reordered read as intents of different calls; not routed"
                        );
                        break;
                    }
                    Reordered::Nothing => {}
                }
            }
        }
        let (closest, clear_best) = self.closest(&words.normalized);
        Err(NoMatch {
            closest,
            clear_best,
            ..no_match(false)
        })
    }

    /// The best (entry, expansion, found) for words `start..matcher.end`, by the priority in
    /// the module docs.
    fn best_match<'t>(
        &'t self,
        matcher: &mut Matcher<'_, '_>,
        start: usize,
    ) -> Option<(&'t IntentEntry, &'t Expansion, Found)> {
        // (more literals, fewer typos, fewer captures): smaller is better.
        type Priority = (Reverse<usize>, usize, usize);
        let mut best: Option<(Priority, &IntentEntry, &Expansion, Found)> = None;
        for entry in &self.entries {
            for expansion in &entry.pattern.expansions {
                let mut found = Found::default();
                if !matcher.matches(&expansion.items, &entry.pattern, start, &mut found) {
                    continue;
                }
                let key = (Reverse(expansion.literals), found.typos, found.values.len());
                // Strictly better only: ties keep the one declared first.
                if best.as_ref().is_none_or(|(best_key, ..)| key < *best_key) {
                    best = Some((key, entry, expansion, found));
                }
            }
        }
        best.map(|(_, entry, expansion, found)| (entry, expansion, found))
    }

    /// The capture-free reading whose words, in another order, are words `span`: the one with
    /// the most literal words, the first declared among those that make the same call, and
    /// [`Reordered::Ambiguous`] when the best of them make different calls.
    fn best_reordered(&self, words: &Utterance<'_>, span: Range<usize>) -> Reordered<'_> {
        let span = SpanWords::new(words, span);
        let mut best: Option<(&IntentEntry, &Expansion)> = None;
        let mut ambiguous = false;
        for entry in &self.entries {
            for expansion in &entry.pattern.expansions {
                if !matches_reordered(&expansion.items, &span) {
                    continue;
                }
                match best {
                    Some((best_entry, best_expansion))
                        if best_expansion.literals >= expansion.literals =>
                    {
                        let tie = best_expansion.literals == expansion.literals;
                        if tie && !best_entry.same_call(&entry.tool, &entry.pattern) {
                            ambiguous = true;
                        }
                    }
                    _ => {
                        best = Some((entry, expansion));
                        ambiguous = false;
                    }
                }
            }
        }
        match best {
            None => Reordered::Nothing,
            Some(_) if ambiguous => Reordered::Ambiguous,
            Some((entry, expansion)) => Reordered::One(entry, expansion),
        }
    }

    /// The tools a normalised utterance is most likely about, each with its first intent, and
    /// whether the first tool is clearly the best.
    fn closest(&self, normalized_utterance: &str) -> (Vec<ClosestIntent>, bool) {
        let Some(ranker) = &self.ranker else {
            return (Vec::new(), false);
        };
        let (ranked, clear_best) = ranker.rank(normalized_utterance);
        if !ranked.is_empty() {
            let closest = ranked
                .into_iter()
                .take(MAX_CLOSEST)
                .filter_map(|suggestion| {
                    // A tool's first intent is the one it leads with.
                    let entry = self
                        .entries
                        .iter()
                        .find(|entry| entry.tool == suggestion.tool)?;
                    Some(ClosestIntent::new(entry, suggestion.score))
                })
                .collect();
            return (closest, clear_best);
        }
        // Nothing shares a ranked word (an utterance of stop words): fall back to edit distance.
        let mut scored: Vec<(f64, usize)> = self
            .entries
            .iter()
            .enumerate()
            .map(|(index, entry)| (similarity(normalized_utterance, entry), index))
            .filter(|&(score, _)| score >= MIN_SIMILARITY)
            .collect();
        scored.sort_by(|left, right| right.0.total_cmp(&left.0).then(left.1.cmp(&right.1)));
        // One suggestion per tool: its closest intent.
        let mut closest: Vec<ClosestIntent> = Vec::new();
        for (score, index) in scored {
            let entry = &self.entries[index];
            if closest.len() < MAX_CLOSEST && !closest.iter().any(|c| c.tool == entry.tool) {
                closest.push(ClosestIntent::new(entry, score));
            }
        }
        (closest, false)
    }

    /// Every `(tool, intent pattern)` pair, deduplicated, in declaration order.
    pub fn intents(&self) -> impl ExactSizeIterator<Item = (&Arc<str>, &str)> + '_ {
        self.entries
            .iter()
            .map(|entry| (&entry.tool, entry.pattern.as_str()))
    }

    /// Whether some intent has a `{name:user}` capture.
    pub fn has_user_captures(&self) -> bool {
        self.entries.iter().any(|entry| {
            entry
                .pattern
                .captures
                .iter()
                .any(|capture| capture.kind == CaptureKind::User)
        })
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

/// What an utterance's words, reordered, match.
enum Reordered<'t> {
    /// No capture-free reading.
    Nothing,
    /// The best reading, which every reading as good makes the same call as.
    One(&'t IntentEntry, &'t Expansion),
    /// Readings as good as each other that make different calls.
    Ambiguous,
}

/// Edit-distance suggestions below this similarity are noise, not hints.
const MIN_SIMILARITY: f64 = 0.3;

/// Normalised Levenshtein similarity between an utterance and an intent's shortest example.
fn similarity(normalized_utterance: &str, entry: &IntentEntry) -> f64 {
    strsim::normalized_levenshtein(normalized_utterance, entry.pattern.example())
}

/// One ranking document per tool, in first-declaration order: its intents' examples, then
/// its descriptions.
fn documents<D, N, X>(entries: &[IntentEntry], descriptions: D) -> Vec<(Arc<str>, String)>
where
    D: IntoIterator<Item = (N, X)>,
    N: AsRef<str>,
    X: AsRef<str>,
{
    let mut documents: Vec<(Arc<str>, String)> = Vec::new();
    for entry in entries {
        let text = entry
            .pattern
            .expansions
            .iter()
            .map(|expansion| expansion.display.as_str())
            .max_by_key(|display| display.len())
            .unwrap_or_default();
        match documents.iter_mut().find(|(tool, _)| *tool == entry.tool) {
            Some((_, document)) => {
                document.push_str(". ");
                document.push_str(text);
            }
            None => documents.push((Arc::clone(&entry.tool), text.to_owned())),
        }
    }
    for (tool, text) in descriptions {
        if let Some((_, document)) = documents
            .iter_mut()
            .find(|(name, _)| &**name == tool.as_ref())
        {
            document.push_str(". ");
            document.push_str(text.as_ref());
        }
    }
    documents
}

/// An utterance routed to a tool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IntentMatch {
    /// The tool to call.
    pub tool: Arc<str>,
    /// The intent pattern that matched, as declared.
    pub intent: String,
    /// The params the captures filled (dates as `YYYY-MM-DD`, users as ids), the defaults of
    /// the optional parts left out, and the intent's fixed values, all as text; empty for an
    /// intent without captures or fixed values.
    pub params: BTreeMap<String, String>,
}

/// No intent matches an utterance; carries the closest intents so the caller can rephrase.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NoMatch {
    /// The utterance, as given.
    pub utterance: String,
    /// Up to three intents, one per tool, of the tools the utterance is most likely about,
    /// best first; empty for a blank utterance.
    pub closest: Vec<ClosestIntent>,
    /// Whether the first of `closest` is clearly more relevant than the others (worth a
    /// "did you mean").
    pub clear_best: bool,
    /// Routing reached a `{name:user}` capture with [`People::NotLoaded`]: load the caller's
    /// colleagues and route again. `closest` is empty then.
    #[serde(skip)]
    pub needs_people: bool,
}

impl NoMatch {
    /// The suggestion worth a "did you mean", when one is clearly the best.
    pub fn did_you_mean(&self) -> Option<&ClosestIntent> {
        self.closest.first().filter(|_| self.clear_best)
    }
}

/// An intent of a tool the utterance is likely about.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClosestIntent {
    /// The tool that declared the intent.
    pub tool: Arc<str>,
    /// The intent pattern, as declared.
    pub intent: String,
    /// The shortest way to say it, captures as `{name}` ("list shifts").
    pub example: String,
    /// Relevance, higher is closer: the tool's BM25 score, or for an utterance of stop words
    /// only, the normalised edit similarity in `(0, 1]`.
    pub score: f64,
}

impl ClosestIntent {
    fn new(entry: &IntentEntry, score: f64) -> Self {
        Self {
            tool: Arc::clone(&entry.tool),
            intent: entry.pattern.as_str().to_owned(),
            example: entry.pattern.example().to_owned(),
            score,
        }
    }
}

impl fmt::Display for NoMatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.utterance.trim().is_empty() {
            return f.write_str("no intent matches a blank utterance: say what you want to do");
        }
        write!(f, "no intent matches {:?}", self.utterance)?;
        if let Some(best) = self.did_you_mean() {
            return write!(f, "; did you mean {:?} ({})?", best.example, best.tool);
        }
        for (position, closest) in self.closest.iter().enumerate() {
            let separator = if position == 0 { "; closest: " } else { ", " };
            write!(f, "{separator}{:?} ({})", closest.example, closest.tool)?;
        }
        Ok(())
    }
}

impl std::error::Error for NoMatch {}
