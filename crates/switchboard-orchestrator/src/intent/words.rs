//! Words: how utterances and pattern words are normalised and split, and which opening and
//! closing phrases are filler.
//!
//! An utterance is tokenised once per `ask`, keeping each word's original text (captures hand
//! it on as written) next to its normalised form (literal words compare on that).

use std::ops::Range;

/// Phrases that open a request without changing it, normalised, longest first.
const LEADING_FILLER: &[&[&str]] = &[
    &["i", "would", "like", "to", "see"],
    &["i", "would", "like", "to"],
    &["i", "want", "to", "see"],
    &["id", "like", "to", "see"],
    &["i", "would", "like"],
    &["i", "want", "to"],
    &["id", "like", "to"],
    &["let", "me", "see"],
    &["can", "you"],
    &["could", "you"],
    &["would", "you"],
    &["will", "you"],
    &["can", "i"],
    &["could", "i"],
    &["show", "me"],
    &["tell", "me"],
    &["give", "me"],
    &["i", "want"],
    &["id", "like"],
    &["please"],
    &["pls"],
    &["hey"],
    &["hi"],
    &["ok"],
    &["okay"],
    &["just"],
    &["see"],
];

/// Phrases that close a request without changing it, normalised.
const TRAILING_FILLER: &[&[&str]] = &[
    &["thank", "you"],
    &["thanks"],
    &["please"],
    &["pls"],
    &["now"],
];

/// Sentence punctuation trimmed from both ends of a captured value, so that
/// "shifts from monday to friday?" captures "friday". Inner punctuation is kept.
const CAPTURE_TRIM: &[char] = &[
    '?', '!', '.', ',', ';', ':', '"', '\'', '(', ')', '¿', '¡', '…', '“', '”', '‘', '’',
];

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
pub(crate) fn push_normalized_word(out: &mut String, word: &str) {
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
pub(crate) struct Utterance<'u> {
    pub(crate) normalized: String,
    pub(crate) words: Vec<Word<'u>>,
}

/// One kept word of an [`Utterance`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct Word<'u> {
    /// The word as written, punctuation and case included.
    pub(crate) raw: &'u str,
    /// Where the word's normalised form sits in [`Utterance::normalized`].
    normalized_start: usize,
    normalized_end: usize,
}

impl<'u> Utterance<'u> {
    pub(crate) fn tokenize(text: &'u str) -> Self {
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

    pub(crate) fn len(&self) -> usize {
        self.words.len()
    }

    /// The normalised form of word `index`.
    pub(crate) fn normalized_word(&self, index: usize) -> &str {
        let word = &self.words[index];
        // The bounds were recorded while pushing whole characters, so they are char boundaries.
        &self.normalized[word.normalized_start..word.normalized_end]
    }

    /// The original text of words `span`, joined with single spaces, with sentence punctuation
    /// trimmed from both ends. Never empty: every kept word has an alphanumeric character, and
    /// those are never trimmed.
    pub(crate) fn captured_text(&self, span: Range<usize>) -> String {
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

impl Utterance<'_> {
    /// The words left once opening and closing filler is set aside ("can you … please").
    pub(crate) fn without_filler(&self) -> Range<usize> {
        let mut start = 0;
        let mut end = self.len();
        let phrase_at = |at: usize, phrase: &[&str]| {
            phrase
                .iter()
                .enumerate()
                .all(|(offset, word)| self.normalized_word(at + offset) == *word)
        };
        'leading: loop {
            for phrase in LEADING_FILLER {
                if start + phrase.len() < end && phrase_at(start, phrase) {
                    start += phrase.len();
                    continue 'leading;
                }
            }
            break;
        }
        'trailing: loop {
            for phrase in TRAILING_FILLER {
                if start + phrase.len() < end && phrase_at(end - phrase.len(), phrase) {
                    end -= phrase.len();
                    continue 'trailing;
                }
            }
            break;
        }
        start..end
    }
}

impl Utterance<'_> {
    /// The normalised form of words `span`, joined with single spaces.
    pub(crate) fn normalized_span(&self, span: Range<usize>) -> &str {
        let start = self.words[span.start].normalized_start;
        let end = self.words[span.end - 1].normalized_end;
        &self.normalized[start..end]
    }
}
