//! Tests of intent parsing, routing and suggestions, with property tests for normalisation
//! and capture round-trips.

use std::collections::BTreeMap;

use proptest::prelude::*;

use super::*;

mod fixed_and_reordered;

/// A Thursday.
const TODAY: Date = jiff::civil::date(2026, 11, 26);

fn facts() -> Facts<'static> {
    Facts {
        today: TODAY,
        people: People::NoDirectory,
    }
}

/// The params `pattern` alone captures from `utterance`.
fn match_one(pattern: &IntentPattern, utterance: &str) -> Option<BTreeMap<String, String>> {
    let table = IntentTable::build([("tool", pattern.as_str())]).ok()?;
    table
        .route(utterance, &facts())
        .ok()
        .map(|matched| matched.params)
}

const WHO_AM_I: &str = "core_get_current_user";
const SHIFTS: &str = "roster_list_shifts";

fn table() -> IntentTable {
    let built = IntentTable::build([
        (WHO_AM_I, "who am i"),
        (WHO_AM_I, "current user"),
        (WHO_AM_I, "me"),
        (SHIFTS, "shifts from {from} to {to}"),
        ("roster_assign_shift", "assign {user} to shift {shift}"),
    ]);
    match built {
        Ok(table) => table,
        Err(error) => panic!("the test table must build: {error}"),
    }
}

fn route(table: &IntentTable, utterance: &str) -> IntentMatch {
    match table.route(utterance, &facts()) {
        Ok(matched) => matched,
        Err(no_match) => panic!("{utterance:?} should route: {no_match}"),
    }
}

fn params(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|&(name, value)| (name.to_owned(), value.to_owned()))
        .collect()
}

#[test]
fn who_am_i_routes_whatever_the_case_and_punctuation() {
    let table = table();
    for utterance in [
        "Who am I?",
        "WHO AM I",
        "who am i!!",
        "  who   am i  ",
        "who am i ?",
    ] {
        let matched = route(&table, utterance);
        assert_eq!(&*matched.tool, WHO_AM_I, "{utterance:?}");
        assert_eq!(matched.intent, "who am i");
        assert!(matched.params.is_empty());
    }
    assert_eq!(route(&table, "Current user.").intent, "current user");
    assert_eq!(route(&table, "me").intent, "me");
}

#[test]
fn only_whole_utterances_match() {
    let table = table();
    for utterance in ["assign me a shift", "me too", "who am i really"] {
        assert!(
            table.route(utterance, &facts()).is_err(),
            "{utterance:?} must not route"
        );
    }
}

#[test]
fn captures_keep_inner_punctuation_and_trim_sentence_punctuation() {
    let matched = route(&table(), "Shifts from 2026-11-23 to 2026-11-29?");
    assert_eq!(&*matched.tool, SHIFTS);
    assert_eq!(matched.intent, "shifts from {from} to {to}");
    assert_eq!(
        matched.params,
        params(&[("from", "2026-11-23"), ("to", "2026-11-29")])
    );
}

#[test]
fn captures_span_several_words_lazily_and_keep_their_case() {
    let table = table();
    let matched = route(&table, "shifts from next Monday to friday");
    assert_eq!(
        matched.params,
        params(&[("from", "next Monday"), ("to", "friday")])
    );

    // Lazy: the first capture stops at the first "to"; the last one takes the rest.
    let matched = route(&table, "shifts from today to next week to be sure");
    assert_eq!(
        matched.params,
        params(&[("from", "today"), ("to", "next week to be sure")])
    );

    // Words made only of punctuation are dropped, also inside captures.
    let matched = route(&table, "shifts from (monday) - to \"friday\"...");
    assert_eq!(
        matched.params,
        params(&[("from", "monday"), ("to", "friday")])
    );
}

#[test]
fn captures_need_at_least_one_word() {
    let table = table();
    assert!(table.route("shifts from to friday", &facts()).is_err());
    assert!(table.route("shifts from monday to", &facts()).is_err());
    assert!(table.route("shifts from monday to ?", &facts()).is_err());
}

#[test]
fn middle_blocks_find_a_later_occurrence_when_the_tail_needs_it() {
    let pattern = parsed("{x} b c");
    assert_eq!(
        match_one(&pattern, "1 b 2 b c"),
        Some(params(&[("x", "1 b 2")]))
    );
    let pattern = parsed("a {x} b {y} c");
    assert_eq!(
        match_one(&pattern, "a 1 b 2 b 3 c"),
        Some(params(&[("x", "1"), ("y", "2 b 3")]))
    );
    assert_eq!(match_one(&pattern, "a 1 b c"), None);
}

fn parsed(pattern: &str) -> IntentPattern {
    match IntentPattern::parse(pattern) {
        Ok(parsed) => parsed,
        Err(error) => panic!("{pattern:?} should parse: {error}"),
    }
}

#[test]
fn literal_patterns_beat_capture_patterns() {
    let built = IntentTable::build([
        ("show_anything", "show {what}"),
        ("catch_all", "{anything}"),
        ("show_my_shifts", "show my shifts"),
        ("show_shifts_of", "show {who} shifts"),
    ]);
    let table = match built {
        Ok(table) => table,
        Err(error) => panic!("{error}"),
    };
    assert_eq!(&*route(&table, "show my shifts").tool, "show_my_shifts");
    assert_eq!(&*route(&table, "show Ann's shifts").tool, "show_shifts_of");
    assert_eq!(
        route(&table, "show Ann's shifts").params,
        params(&[("who", "Ann's")])
    );
    assert_eq!(&*route(&table, "show the weather").tool, "show_anything");
    assert_eq!(&*route(&table, "hello").tool, "catch_all");
}

#[test]
fn equal_priorities_are_broken_by_declaration_order() {
    let first = IntentTable::build([("left", "{a} to b"), ("right", "a to {b}")]);
    let second = IntentTable::build([("right", "a to {b}"), ("left", "{a} to b")]);
    let (Ok(first), Ok(second)) = (first, second) else {
        panic!("both tables must build")
    };
    assert_eq!(&*route(&first, "a to b").tool, "left");
    assert_eq!(&*route(&second, "a to b").tool, "right");
}

#[test]
fn two_tools_with_the_same_intent_conflict() {
    let built = IntentTable::build([("one", "Who am I?"), ("two", "who am i")]);
    match built {
        Err(BuildError::ConflictingIntent {
            existing_tool,
            tool,
            existing_pattern,
            pattern,
            shape,
        }) => {
            assert_eq!(shape, "who am i");
            assert_eq!((&*existing_tool, &*tool), ("one", "two"));
            assert_eq!(
                (existing_pattern.as_str(), pattern.as_str()),
                ("Who am I?", "who am i")
            );
        }
        other => panic!("expected a conflict, got {other:?}"),
    }

    // Captures are compared by position, not by name.
    let built = IntentTable::build([
        ("one", "shifts from {a} to {b}"),
        ("two", "shifts from {x} to {y}"),
    ]);
    let Err(error) = built else {
        panic!("expected a conflict")
    };
    let message = error.to_string();
    assert!(
        message.contains("`one`") && message.contains("`two`"),
        "{message}"
    );
}

#[test]
fn the_same_tool_may_repeat_an_intent() {
    let built = IntentTable::build([
        (String::from(WHO_AM_I), "who am i"),
        (String::from(WHO_AM_I), "Who am I?"),
        (String::from(WHO_AM_I), "me"),
    ]);
    let Ok(table) = built else {
        panic!("repeats by one tool are fine")
    };
    let listed: Vec<(&str, &str)> = table
        .intents()
        .map(|(tool, intent)| (&**tool, intent))
        .collect();
    assert_eq!(listed, [(WHO_AM_I, "who am i"), (WHO_AM_I, "me")]);
    assert_eq!(table.len(), 2);
    // One tool name is one shared allocation.
    let tools: Vec<&Arc<str>> = table.intents().map(|(tool, _)| tool).collect();
    assert!(Arc::ptr_eq(tools[0], tools[1]));
}

#[test]
fn build_names_the_tool_and_pattern_of_a_bad_intent() {
    let built = IntentTable::build([(WHO_AM_I, "who am i"), ("broken_tool", "shifts from {from")]);
    match built {
        Err(error @ BuildError::InvalidPattern { .. }) => {
            let message = error.to_string();
            assert!(message.contains("broken_tool"), "{message}");
            assert!(message.contains("shifts from {from"), "{message}");
            assert!(message.contains("unbalanced brace"), "{message}");
        }
        other => panic!("expected an invalid pattern, got {other:?}"),
    }
}

#[test]
fn patterns_expose_their_text_and_placeholders() {
    let pattern = parsed("Shifts from {from} to {to}?");
    assert_eq!(pattern.as_str(), "Shifts from {from} to {to}?");
    assert_eq!(pattern.to_string(), "Shifts from {from} to {to}?");
    assert_eq!(pattern.placeholders().collect::<Vec<_>>(), ["from", "to"]);
    assert_eq!(
        pattern
            .overlap(&parsed("shifts from {a} to {b}"))
            .as_deref(),
        Some("shifts from {} to {}")
    );
    assert_eq!(pattern.example(), "shifts from {from} to {to}");
    assert_eq!("who am i".parse::<IntentPattern>(), Ok(parsed("who am i")));
    // Punctuation may touch a placeholder.
    assert_eq!(
        match_one(&parsed("what is {thing}?"), "What is love?"),
        Some(params(&[("thing", "love")]))
    );
}

#[test]
fn near_misses_suggest_the_closest_intents() {
    let Err(no_match) = table().route("who am", &facts()) else {
        panic!("\"who am\" must not route")
    };
    assert_eq!(no_match.utterance, "who am");
    assert!(no_match.closest.len() <= 3 && !no_match.closest.is_empty());
    assert_eq!(no_match.closest[0].intent, "who am i");
    assert_eq!(&*no_match.closest[0].tool, WHO_AM_I);
    assert!(
        no_match
            .closest
            .windows(2)
            .all(|pair| pair[0].score >= pair[1].score)
    );

    let message = no_match.to_string();
    assert!(
        message.starts_with(
            "no intent matches \"who am\"; closest: \"who am i\" (core_get_current_user)"
        ),
        "{message}"
    );
}

#[test]
fn blank_utterances_have_no_suggestions() {
    for utterance in ["", "   ", "?!", " ... "] {
        let Err(no_match) = table().route(utterance, &facts()) else {
            panic!("{utterance:?} must not route")
        };
        assert!(no_match.closest.is_empty(), "{utterance:?}");
    }
    let Err(no_match) = table().route(" ", &facts()) else {
        panic!("blank must not route")
    };
    assert_eq!(
        no_match.to_string(),
        "no intent matches a blank utterance: say what you want to do"
    );
}

#[test]
fn an_empty_table_matches_nothing() {
    let table = IntentTable::default();
    assert!(table.is_empty());
    let Err(no_match) = table.route("who am i", &facts()) else {
        panic!("nothing to match")
    };
    assert!(no_match.closest.is_empty());
    assert_eq!(no_match.to_string(), "no intent matches \"who am i\"");
}

#[test]
fn results_serialize() {
    let matched = route(&table(), "shifts from monday to friday");
    let json = serde_json::to_value(&matched).unwrap_or_default();
    assert_eq!(json["tool"], SHIFTS);
    assert_eq!(json["params"]["from"], "monday");
    let round_trip: Result<IntentMatch, _> = serde_json::from_value(json);
    assert_eq!(round_trip.ok(), Some(matched));
}

#[test]
fn tables_are_shareable_across_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<IntentTable>();
    assert_send_sync::<IntentMatch>();
    assert_send_sync::<NoMatch>();
    assert_send_sync::<BuildError>();
}

#[test]
fn normalisation_examples() {
    assert_eq!(normalize("Who am I?"), "who am i");
    assert_eq!(normalize("who's"), "whos");
    assert_eq!(
        normalize("  ÉCOLE   Straße -- 2026-11-23 "),
        "école straße 20261123"
    );
    assert_eq!(normalize("İ"), "i");
}

fn built(routes: &[(&str, &str)]) -> IntentTable {
    match IntentTable::build(routes.iter().copied()) {
        Ok(table) => table,
        Err(error) => panic!("the table must build: {error}"),
    }
}

fn people() -> Vec<Person> {
    [("sam", "Sam Stone"), ("mark", "Mark Mendez")]
        .map(|(user_id, name)| Person {
            user_id: user_id.to_owned(),
            name: name.to_owned(),
        })
        .to_vec()
}

#[test]
fn optional_parts_and_alternatives_expand_into_every_reading() {
    let table = built(&[(SHIFTS, "[list|show] shifts [on] [{from..to=this week}]")]);
    let this_week = params(&[("from", "2026-11-23"), ("to", "2026-11-29")]);
    for utterance in ["list shifts", "Show shifts", "shifts", "shifts this week"] {
        assert_eq!(route(&table, utterance).params, this_week, "{utterance:?}");
    }
    assert_eq!(
        route(&table, "list shifts on friday").params,
        params(&[("from", "2026-11-27"), ("to", "2026-11-27")])
    );
    assert!(
        table.route("list on", &facts()).is_err(),
        "`shifts` is required"
    );
    let pattern = parsed("[list|show] shifts [on] [{from..to=this week}] [for {who:user}]");
    assert_eq!(pattern.expansions.len(), 16);
    assert_eq!(pattern.example(), "list shifts this week");
    assert_eq!(
        pattern.placeholders().collect::<Vec<_>>(),
        ["from", "to", "who"]
    );
}

#[test]
fn typed_captures_never_swallow_the_words_after_them() {
    let table = built(&[(
        SHIFTS,
        "shifts from {from:date} to {to:date} [for {assignee:user}]",
    )]);
    let people = people();
    let facts = Facts {
        today: TODAY,
        people: People::Known(&people),
    };
    let matched = table.route("shifts from 2026-11-23 to 2026-11-29 for Sam Stone", &facts);
    assert_eq!(
        matched.map(|matched| matched.params).ok(),
        Some(params(&[
            ("from", "2026-11-23"),
            ("to", "2026-11-29"),
            ("assignee", "sam")
        ]))
    );
    // Somebody who is not a colleague is not a user: nothing matches.
    assert!(
        table
            .route("shifts from monday to friday for bob", &facts)
            .is_err()
    );
}

#[test]
fn user_captures_ask_for_people_only_when_reached() {
    let table = built(&[
        (WHO_AM_I, "who am i"),
        ("assign", "assign {shift} to {who:user}"),
    ]);
    let not_loaded = Facts {
        today: TODAY,
        people: People::NotLoaded,
    };
    assert!(table.route("who am i", &not_loaded).is_ok());
    let Err(no_match) = table.route("assign x1 to sam", &not_loaded) else {
        panic!("people are needed")
    };
    assert!(no_match.needs_people);
    // Without a directory, one word is taken as an id, verbatim.
    let matched = route(&table, "assign x1 to Sam");
    assert_eq!(matched.params, params(&[("shift", "x1"), ("who", "Sam")]));
    assert!(table.route("assign x1 to Sam Stone", &facts()).is_err());
    assert!(table.has_user_captures());
}

#[test]
fn typos_filler_and_noise_words_are_forgiven() {
    let table = built(&[(SHIFTS, "list shifts"), (WHO_AM_I, "who am i")]);
    for utterance in [
        "lsit shifts",
        "list shfits",
        "please list the shifts",
        "can you list all shifts please",
        "list shifts, thanks",
        "I would like to list the shifts",
    ] {
        assert_eq!(&*route(&table, utterance).tool, SHIFTS, "{utterance:?}");
    }
    // A typo in each word is forgiven; two in one word, or one in a short word, are not.
    assert_eq!(&*route(&table, "lsit shfits").tool, SHIFTS);
    assert!(table.route("lsti shifts", &facts()).is_err());
    assert!(table.route("who an i", &facts()).is_err());
    // Filler alone is not a request.
    assert!(table.route("please", &facts()).is_err());
}

#[test]
fn an_exact_reading_beats_one_with_a_typo() {
    let table = built(&[("near", "lost shifts"), (SHIFTS, "list shifts")]);
    assert_eq!(&*route(&table, "list shifts").tool, SHIFTS);
    assert_eq!(&*route(&table, "lost shifts").tool, "near");
}

#[test]
fn readings_of_two_tools_that_coincide_conflict() {
    let built = IntentTable::build([("one", "[list] shifts"), ("two", "list|show shifts")]);
    match built {
        Err(BuildError::ConflictingIntent { shape, .. }) => assert_eq!(shape, "list shifts"),
        other => panic!("expected a conflict, got {other:?}"),
    }
}

#[test]
fn a_clearly_relevant_tool_is_named_and_a_vague_one_is_not() {
    let table = IntentTable::build_described(
        [
            (SHIFTS, "[list] shifts [{from..to=this week}]"),
            ("swap", "swap shift {shift} with {who:user}"),
        ],
        [
            (SHIFTS, "List shifts. Lists your organisation's shifts."),
            (
                "swap",
                "Propose a shift swap. Hands a shift to someone else.",
            ),
        ],
    )
    .unwrap_or_default();
    let Err(no_match) = table.route("what shifts are there", &facts()) else {
        panic!("a question is not an intent")
    };
    assert_eq!(
        no_match.did_you_mean().map(|best| best.example.as_str()),
        Some("list shifts this week")
    );
    assert!(
        no_match
            .to_string()
            .contains("did you mean \"list shifts this week\"")
    );
    let Err(no_match) = table.route("about a shift", &facts()) else {
        panic!("a shift is not an intent")
    };
    assert!(no_match.did_you_mean().is_none(), "{no_match:?}");
    assert_eq!(no_match.closest.len(), 2);
}

/// A literal word: lowercase letters only, so it never equals a capture word (those contain
/// a digit), which keeps lazy captures from stopping early.
fn literal_word() -> impl Strategy<Value = String> {
    "[a-z]{1,6}"
}

/// A capture value: one to three words of letters and digits with inner dashes.
fn capture_value() -> impl Strategy<Value = Vec<String>> {
    prop::collection::vec(
        "[a-zA-Z]{0,3}[0-9][a-zA-Z0-9]{0,3}(-[a-zA-Z0-9]{1,4}){0,2}",
        1..=3,
    )
}

/// The pieces of a generated pattern: leading literals, then captures each followed by a
/// non-empty literal block, then maybe one final capture.
type PatternPieces = (
    Vec<String>,
    Vec<(Vec<String>, Vec<String>)>,
    Option<Vec<String>>,
);

fn pattern_pieces() -> impl Strategy<Value = PatternPieces> {
    (
        prop::collection::vec(literal_word(), 0..=2),
        prop::collection::vec(
            (
                capture_value(),
                prop::collection::vec(literal_word(), 1..=2),
            ),
            0..=3,
        ),
        prop::option::of(capture_value()),
    )
}

proptest! {
    #[test]
    fn normalisation_is_idempotent(text in any::<String>()) {
        let once = normalize(&text);
        prop_assert_eq!(normalize(&once), once.clone());
    }

    #[test]
    fn patterns_capture_exactly_the_substituted_values(
        (head, groups, tail) in pattern_pieces(),
        shout in any::<bool>(),
    ) {
        let mut pattern_words: Vec<String> = Vec::new();
        let mut utterance_words: Vec<String> = Vec::new();
        let mut expected = BTreeMap::new();
        let literal_in_utterance =
            |word: &String| if shout { word.to_uppercase() } else { word.clone() };

        pattern_words.extend(head.iter().cloned());
        utterance_words.extend(head.iter().map(literal_in_utterance));
        let captures = groups
            .iter()
            .map(|(value, block)| (value, block.as_slice()))
            .chain(tail.iter().map(|value| (value, &[][..])));
        for (index, (value, block)) in captures.enumerate() {
            let name = format!("c{index}");
            pattern_words.push(format!("{{{name}}}"));
            utterance_words.extend(value.iter().cloned());
            expected.insert(name, value.join(" "));
            pattern_words.extend(block.iter().cloned());
            utterance_words.extend(block.iter().map(literal_in_utterance));
        }
        if pattern_words.is_empty() {
            // Nothing to declare (the empty pattern has its own test); not worth a reject.
            return Ok(());
        }

        let pattern_text = pattern_words.join(" ");
        let utterance = format!("{}?", utterance_words.join("  "));
        let pattern = IntentPattern::parse(&pattern_text);
        prop_assert!(pattern.is_ok(), "{:?} should parse: {:?}", pattern_text, pattern);
        if let Ok(pattern) = pattern {
            prop_assert_eq!(match_one(&pattern, &utterance), Some(expected.clone()));
        }

        let table = IntentTable::build([("tool", pattern_text.as_str())]);
        prop_assert!(table.is_ok());
        if let Ok(table) = table {
            let matched = table.route(&utterance, &facts());
            prop_assert_eq!(matched.map(|matched| matched.params).ok(), Some(expected));
        }
    }

    #[test]
    fn route_never_panics(utterance in any::<String>()) {
        let table = table();
        if let Err(no_match) = table.route(&utterance, &facts()) {
            prop_assert!(no_match.closest.len() <= 3);
            let _message = no_match.to_string();
        }
    }

    #[test]
    fn typed_routing_never_panics(utterance in "[a-z0-9 ./,-]{0,40}|.{0,40}") {
        let table = built(&[
            (SHIFTS, "[list|show] shifts [on] [{from..to=this week}] [for {who:user}]"),
            ("swap", "swap shift {shift} with {who:user} [because {reason}]"),
        ]);
        let people = people();
        let facts = Facts { today: TODAY, people: People::Known(&people) };
        if let Err(no_match) = table.route(&utterance, &facts) {
            prop_assert!(no_match.closest.len() <= 3);
            prop_assert!(!no_match.needs_people);
        }
    }

    #[test]
    fn any_real_day_written_either_way_is_captured_as_iso(
        day in 0i32..20_000,
        day_first in any::<bool>(),
    ) {
        let Ok(first) = jiff::civil::date(1990, 1, 1).checked_add(jiff::Span::new().days(day)) else {
            return Ok(());
        };
        let written = if day_first {
            format!("{:02}/{:02}/{}", first.day(), first.month(), first.year())
        } else {
            first.to_string()
        };
        let table = built(&[(SHIFTS, "shifts from {from:date} to {to:date}")]);
        let matched = table.route(&format!("shifts from {written} to {written}"), &facts());
        prop_assert_eq!(
            matched.map(|matched| matched.params).ok(),
            Some(params(&[("from", &first.to_string()), ("to", &first.to_string())]))
        );
    }

    #[test]
    fn parse_never_panics(pattern in any::<String>()) {
        if let Ok(parsed) = IntentPattern::parse(&pattern) {
            let _listed = parsed.placeholders().count();
        }
    }

    #[test]
    fn parse_never_panics_on_brace_heavy_patterns(pattern in "[a-c{} _?-]{0,12}") {
        if let Ok(parsed) = IntentPattern::parse(&pattern) {
            let _matched = match_one(&parsed, &pattern);
        }
    }
}
