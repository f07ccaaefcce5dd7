//! Reordered readings: an utterance made of every word of a capture-free reading, in another
//! order ("who i am" for "who am i").
//!
//! Routing tries this only after every reading in the pattern's own order failed, and only
//! with exact words, so it never changes a route that exists without it. A reading with a
//! capture is never matched out of order: where a capture ends is decided by the words around
//! it, and out of order there are none to decide by.
//!
//! "Every word" is a perfect pairing: each literal of the reading is paired with a word of its
//! own that it accepts (`list|show` accepts either), and every word left unpaired is a noise
//! word ("the", "all", …). Alternatives can overlap ("list|show" beside "show"), so the pairing
//! is a bipartite matching (Kuhn's augmenting paths), not a greedy scan.

use std::ops::Range;

use super::{matcher::NOISE_WORDS, pattern::Item, words::Utterance};

/// An utterance's words in a span, normalised, ready to be compared with readings in any order.
pub(crate) struct SpanWords<'u> {
    said: Vec<&'u str>,
    /// How many of them are not noise words.
    required: usize,
}

impl<'u> SpanWords<'u> {
    pub(crate) fn new(words: &'u Utterance<'u>, span: Range<usize>) -> Self {
        let said: Vec<&str> = span.map(|at| words.normalized_word(at)).collect();
        let required = said.iter().filter(|word| !is_noise(word)).count();
        Self { said, required }
    }
}

/// Whether `word` (normalised) may appear where a reading has no word.
fn is_noise(word: &str) -> bool {
    NOISE_WORDS.contains(&word)
}

/// Whether the words of `span` are exactly the literals of `items` in some order, plus noise
/// words. `false` when `items` holds a capture.
pub(crate) fn matches_reordered(items: &[Item], span: &SpanWords<'_>) -> bool {
    let said = &span.said;
    let fits = items.iter().all(|item| matches!(item, Item::Literal(_)))
        && said.len() >= items.len()
        && span.required <= items.len();
    if !fits {
        return false;
    }
    let literals: Vec<&[Box<str>]> = items
        .iter()
        .filter_map(|item| match item {
            Item::Literal(alternatives) => Some(&**alternatives),
            Item::Capture(_) => None,
        })
        .collect();
    let mut pairing = Pairing {
        accepts: &|literal: usize, word: usize| {
            literals[literal]
                .iter()
                .any(|alternative| **alternative == *said[word])
        },
        literal_of_word: vec![None; said.len()],
        word_of_literal: vec![None; literals.len()],
    };
    // Pair every word that is not noise first, then every literal: an augmenting path keeps
    // the words and literals already paired paired, so the first phase's words stay covered.
    let words_paired = (0..said.len())
        .filter(|&word| !is_noise(said[word]))
        .all(|word| {
            let mut visited = vec![false; literals.len()];
            pairing.pair_word(word, &mut visited)
        });
    words_paired
        && (0..literals.len()).all(|literal| {
            pairing.word_of_literal[literal].is_some() || {
                let mut visited = vec![false; said.len()];
                pairing.pair_literal(literal, &mut visited)
            }
        })
}

/// A matching between a reading's literals and an utterance's words, grown by augmenting paths.
struct Pairing<'a> {
    /// Whether literal `.0` accepts word `.1`.
    accepts: &'a dyn Fn(usize, usize) -> bool,
    literal_of_word: Vec<Option<usize>>,
    word_of_literal: Vec<Option<usize>>,
}

impl Pairing<'_> {
    /// Pairs `word` with a literal, re-pairing others along the way; `visited` marks literals.
    fn pair_word(&mut self, word: usize, visited: &mut [bool]) -> bool {
        for literal in 0..self.word_of_literal.len() {
            if visited[literal] || !(self.accepts)(literal, word) {
                continue;
            }
            visited[literal] = true;
            let free = match self.word_of_literal[literal] {
                None => true,
                Some(other_word) => self.pair_word(other_word, visited),
            };
            if free {
                self.word_of_literal[literal] = Some(word);
                self.literal_of_word[word] = Some(literal);
                return true;
            }
        }
        false
    }

    /// Pairs `literal` with a word, re-pairing others along the way; `visited` marks words.
    fn pair_literal(&mut self, literal: usize, visited: &mut [bool]) -> bool {
        for word in 0..self.literal_of_word.len() {
            if visited[word] || !(self.accepts)(literal, word) {
                continue;
            }
            visited[word] = true;
            let free = match self.literal_of_word[word] {
                None => true,
                Some(other_literal) => self.pair_literal(other_literal, visited),
            };
            if free {
                self.literal_of_word[word] = Some(literal);
                self.word_of_literal[literal] = Some(word);
                return true;
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::intent::IntentPattern;

    /// Whether `utterance`, whole, is the first reading of `pattern` reordered.
    fn reordered(pattern: &str, utterance: &str) -> bool {
        let pattern = match IntentPattern::parse(pattern) {
            Ok(pattern) => pattern,
            Err(error) => panic!("{pattern:?} should parse: {error}"),
        };
        let words = Utterance::tokenize(utterance);
        let span = SpanWords::new(&words, 0..words.len());
        matches_reordered(&pattern.expansions[0].items, &span)
    }

    #[test]
    fn every_word_in_any_order_and_nothing_else_but_noise() {
        assert!(reordered("who am i", "who I am"));
        assert!(reordered("who am i", "I am who?"));
        assert!(reordered("who am i", "who am i"));
        assert!(reordered("who am i", "the who I am"));
        assert!(!reordered("who am i", "who am"), "a word is missing");
        assert!(!reordered("who am i", "who I am really"), "a word is extra");
        assert!(!reordered("who am i", "who I I am"), "a word is extra");
        assert!(!reordered("who am i", "who I im"), "no typos out of order");
    }

    #[test]
    fn repeated_words_each_need_a_word_of_their_own() {
        assert!(reordered("a to a", "to a a"));
        assert!(!reordered("a to a", "a to"));
    }

    #[test]
    fn overlapping_alternatives_are_paired_by_matching_not_greedily() {
        // Greedy pairing would give "show" to `list|show` and leave `show` without a word.
        assert!(reordered("list|show show", "show list"));
        assert!(reordered("list|show show", "show show"));
        assert!(!reordered("list|show show", "list list"));
        // A noise word that a literal accepts may be paired or left over.
        assert!(reordered("all shifts", "shifts all"));
        assert!(reordered("all|every shifts", "shifts every the"));
    }

    #[test]
    fn readings_with_captures_are_never_reordered() {
        assert!(!reordered("shifts for {who}", "for sam shifts"));
        assert!(!reordered("shifts for {who}", "shifts for sam"));
    }
}
