//! Routing tests of fixed values (`=> field=value`) and of words in another order, with a
//! property test that any order of a capture-free intent's words routes to it.

use proptest::prelude::*;

use super::*;

#[test]
fn fixed_values_are_params_of_every_match() {
    const STOCK: &str = "stock_list";
    let table = built(&[
        (STOCK, "what is low on stock => filter=low"),
        (STOCK, "what is {filter} on stock"),
        (STOCK, "top {limit} items => sort=score, all=true"),
    ]);
    for utterance in [
        "what is low on stock",
        "What is LOW on stock?",
        "can you tell me what is low on stock",
    ] {
        let matched = route(&table, utterance);
        assert_eq!(
            matched.intent, "what is low on stock => filter=low",
            "{utterance:?}"
        );
        assert_eq!(
            matched.params,
            params(&[("filter", "low")]),
            "{utterance:?}"
        );
    }
    assert_eq!(
        route(&table, "what is out on stock").params,
        params(&[("filter", "out")])
    );
    assert_eq!(
        route(&table, "top 5 items").params,
        params(&[("all", "true"), ("limit", "5"), ("sort", "score")])
    );
}

#[test]
fn readings_that_coincide_must_set_the_same_fixed_values() {
    let conflicting = IntentTable::build([
        ("stock", "what is low [on stock] => filter=low"),
        ("stock", "what is low => filter=out"),
    ]);
    match conflicting {
        Err(error @ BuildError::ConflictingFixedValues { .. }) => {
            let message = error.to_string();
            assert!(message.contains("\"what is low\""), "{message}");
            assert!(message.contains("filter=out"), "{message}");
        }
        other => panic!("expected conflicting fixed values, got {other:?}"),
    }
    // The same words and values twice are one intent; different tools conflict as ever.
    let table = built(&[
        ("stock", "low stock => filter=low"),
        ("stock", "Low stock! => filter=low"),
    ]);
    assert_eq!(table.len(), 1);
    assert!(matches!(
        IntentTable::build([("stock", "low stock => filter=low"), ("other", "low stock")]),
        Err(BuildError::ConflictingIntent { .. })
    ));
}

#[test]
fn reordered_words_route_after_every_reading_in_order() {
    let table = built(&[
        (WHO_AM_I, "who am i"),
        (WHO_AM_I, "me"),
        (SHIFTS, "[list|show] shifts [{from..to=this week}]"),
        ("assign", "assign {user} to shift {shift}"),
    ]);
    for utterance in [
        "tell me who I am",
        "I am who?",
        "am I who",
        "who I am please",
    ] {
        let matched = route(&table, utterance);
        assert_eq!(&*matched.tool, WHO_AM_I, "{utterance:?}");
        assert_eq!(matched.intent, "who am i");
    }
    // A reading whose captures are left out may be reordered; it takes their defaults.
    assert_eq!(&*route(&table, "all the shifts, show").tool, SHIFTS);
    assert_eq!(
        route(&table, "shifts list").params,
        params(&[("from", "2026-11-23"), ("to", "2026-11-29")])
    );
    for utterance in [
        "who am",
        "who am i really",
        "I am who really",
        "shifts list next week",
        "shifts, list them all",
        "to shift x1 assign sam",
        "shfits list",
    ] {
        assert!(
            table.route(utterance, &facts()).is_err(),
            "{utterance:?} must not route"
        );
    }
}

#[test]
fn a_reading_in_order_beats_a_reordered_one() {
    let table = built(&[("in_order", "i am who"), (WHO_AM_I, "who am i")]);
    assert_eq!(&*route(&table, "i am who").tool, "in_order");
    assert_eq!(&*route(&table, "who am i").tool, WHO_AM_I);
    // Even with a typo: "list" is one letter from "lost", and in order.
    let table = built(&[("reordered", "shifts list"), ("typo", "lost shifts")]);
    assert_eq!(&*route(&table, "list shifts").tool, "typo");
}

#[test]
fn reordered_words_that_fit_two_calls_route_nowhere() {
    let table = built(&[("one", "i am who"), ("two", "who am i")]);
    let Err(no_match) = table.route("am who i", &facts()) else {
        panic!("\"am who i\" reads as both intents reordered")
    };
    assert!(!no_match.closest.is_empty(), "{no_match:?}");
    // More words of the intent win: "all" is a word of one, and noise to the other.
    let table = built(&[("some", "list shifts"), ("every", "list all shifts")]);
    assert_eq!(&*route(&table, "all shifts list").tool, "every");
    // Two intents of one tool with the same fixed values make the same call.
    let table = built(&[("one", "a b c"), ("one", "c b a"), ("two", "x")]);
    assert_eq!(&*route(&table, "b a c").tool, "one");
    let table = built(&[("one", "a b c => v=1"), ("one", "c b a => v=2")]);
    assert!(table.route("b a c", &facts()).is_err());
}

proptest! {
    #[test]
    fn any_order_of_a_capture_free_intents_words_routes_to_it(
        words in prop::collection::vec(literal_word(), 1..=6)
            .prop_flat_map(|words| (Just(words.clone()), Just(words).prop_shuffle())),
        other in prop::collection::vec(literal_word(), 1..=3),
    ) {
        let (pattern_words, utterance_words) = words;
        let pattern = pattern_words.join(" ");
        let other_pattern = format!("{} zz0", other.join(" "));
        let table = IntentTable::build([("tool", pattern.as_str()), ("other", &other_pattern)]);
        prop_assert!(table.is_ok(), "{:?}", table);
        if let Ok(table) = table {
            let utterance = utterance_words.join(" ");
            let matched = table.route(&utterance, &facts());
            prop_assert_eq!(matched.map(|matched| matched.tool).ok(), Some(Arc::from("tool")));
        }
    }

}
