//! Suggestions for an utterance that matches no intent: which tools it is most likely about.
//!
//! Edit distance between the utterance and each pattern ranked "swap shift" first for "what
//! shifts are there", because the strings happen to be close. Relevance is a word-overlap
//! question, so tools are ranked with BM25 (the `bm25` crate, with English stemming and stop
//! words) over one document per tool: its intents, title and description. Before ranking, a
//! short table adds the word a question implies ("what", "show" → "list"; "who" → "user"), so
//! a question about shifts finds the tool that lists them. The implied words only rank: a tool
//! qualifies as a suggestion by sharing a word the person actually wrote.
//!
//! An utterance of stop words only ("who am") shares no ranked words with any tool; those fall
//! back to edit distance against each intent's example, so a near miss still gets a hint.

use std::sync::Arc;

use bm25::{Language, SearchEngine, SearchEngineBuilder};

/// Words a question implies, added to the query before ranking.
const IMPLIED_WORDS: &[(&str, &str)] = &[
    ("what", "list"),
    ("which", "list"),
    ("show", "list"),
    ("see", "list"),
    ("view", "list"),
    ("display", "list"),
    ("who", "user"),
    ("whom", "user"),
];

/// How far ahead of the runner-up the best tool must score to be "clearly the best".
const CLEAR_LEAD: f64 = 1.5;

/// One tool's suggestion: a score and the index of its intent closest to the utterance.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Suggestion {
    pub(crate) tool: Arc<str>,
    pub(crate) score: f64,
}

/// The ranking index over every tool's text.
pub(crate) struct Ranker {
    engine: SearchEngine<u32>,
    tools: Vec<Arc<str>>,
}

impl std::fmt::Debug for Ranker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ranker")
            .field("tools", &self.tools)
            .finish_non_exhaustive()
    }
}

impl Ranker {
    /// Indexes one document per tool.
    pub(crate) fn new(documents: Vec<(Arc<str>, String)>) -> Self {
        let (tools, texts): (Vec<Arc<str>>, Vec<String>) = documents.into_iter().unzip();
        let engine = SearchEngineBuilder::<u32>::with_corpus(Language::English, texts).build();
        Self { engine, tools }
    }

    /// The tools `normalized_utterance` is about, best first, with whether the first is clearly
    /// ahead of the rest. Empty when it shares no ranked word with any tool.
    pub(crate) fn rank(&self, normalized_utterance: &str) -> (Vec<Suggestion>, bool) {
        let mut query = normalized_utterance.to_owned();
        for word in normalized_utterance.split(' ') {
            if let Some((_, implied)) = IMPLIED_WORDS.iter().find(|(said, _)| *said == word) {
                query.push(' ');
                query.push_str(implied);
            }
        }
        // Implied words rank, but only what was said qualifies: a tool that shares no word
        // the person wrote is not a suggestion, however well it matches "list".
        let qualified: Vec<u32> = self
            .engine
            .search(normalized_utterance, None)
            .into_iter()
            .filter(|result| result.score > 0.0)
            .map(|result| result.document.id)
            .collect();
        let mut results: Vec<(f64, usize)> = self
            .engine
            .search(&query, None)
            .into_iter()
            .filter(|result| result.score > 0.0 && qualified.contains(&result.document.id))
            .map(|result| (f64::from(result.score), result.document.id as usize))
            .collect();
        // Best first; equal scores in declaration order, so the answer is deterministic.
        results.sort_by(|left, right| right.0.total_cmp(&left.0).then(left.1.cmp(&right.1)));
        let clear = match results.as_slice() {
            [only] => only.0 > 0.0,
            [best, second, ..] => best.0 >= second.0 * CLEAR_LEAD,
            [] => false,
        };
        let suggestions = results
            .into_iter()
            .map(|(score, index)| Suggestion {
                tool: Arc::clone(&self.tools[index]),
                score,
            })
            .collect();
        (suggestions, clear)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ranker() -> Ranker {
        Ranker::new(vec![
            (
                "roster_list_shifts".into(),
                "list shifts. List shifts. Lists your organisation's shifts between two days."
                    .to_owned(),
            ),
            (
                "roster_propose_shift_swap".into(),
                "swap shift with. Propose a shift swap. Proposes handing one of your \
                 organisation's shifts to another member."
                    .to_owned(),
            ),
            (
                "core_get_current_user".into(),
                "who am i. me. Who am I. Returns the calling user.".to_owned(),
            ),
        ])
    }

    #[test]
    fn a_question_about_shifts_ranks_the_listing_tool_first_and_clearly() {
        let (suggestions, clear) = ranker().rank("what shifts are there");
        assert_eq!(
            &*suggestions[0].tool, "roster_list_shifts",
            "{suggestions:?}"
        );
        assert!(clear, "{suggestions:?}");
    }

    #[test]
    fn a_word_two_tools_share_is_not_a_clear_lead() {
        let (suggestions, clear) = ranker().rank("shift");
        assert_eq!(suggestions.len(), 2, "{suggestions:?}");
        assert!(!clear, "{suggestions:?}");
    }

    #[test]
    fn unrelated_words_rank_nothing() {
        let (suggestions, clear) = ranker().rank("fire everyone");
        assert!(suggestions.is_empty() && !clear);
    }
}
