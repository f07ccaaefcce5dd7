//! Tests of pattern parsing: every error, and that each says how to fix the pattern.

use super::*;

fn parse_error(pattern: &str) -> PatternError {
    match IntentPattern::parse(pattern) {
        Ok(parsed) => panic!("{pattern:?} should not parse, got {parsed:?}"),
        Err(error) => error,
    }
}

#[test]
fn every_pattern_error() {
    assert_eq!(parse_error(""), PatternError::Empty);
    assert_eq!(parse_error("   "), PatternError::Empty);
    assert_eq!(parse_error("? !"), PatternError::Empty);

    assert_eq!(
        parse_error("shifts from {from"),
        PatternError::UnbalancedBraces { position: 12 }
    );
    assert_eq!(
        parse_error("shifts }"),
        PatternError::UnbalancedBraces { position: 7 }
    );
    assert_eq!(
        parse_error("{a{b}}"),
        PatternError::UnbalancedBraces { position: 2 }
    );

    for (pattern, name) in [
        ("x {}", ""),
        ("x {a-b}", "a-b"),
        ("x {a b}", "a b"),
        ("x {é}", "é"),
    ] {
        assert_eq!(
            parse_error(pattern),
            PatternError::BadPlaceholderName {
                name: name.to_owned()
            }
        );
    }

    assert_eq!(
        parse_error("from {day} to {day}"),
        PatternError::DuplicatePlaceholder {
            name: "day".to_owned()
        }
    );

    let adjacent = PatternError::AdjacentPlaceholders {
        first: "a".to_owned(),
        second: "b".to_owned(),
    };
    assert_eq!(parse_error("{a} {b}"), adjacent);
    assert_eq!(parse_error("x {a}{b}"), adjacent);
    // A punctuation-only word between captures does not separate them.
    assert_eq!(parse_error("{a} - {b}"), adjacent);

    assert_eq!(
        parse_error("x{a}"),
        PatternError::GluedPlaceholder {
            name: "a".to_owned(),
            word: "x{a}".to_owned()
        }
    );
    assert_eq!(
        parse_error("show {who}'s shifts"),
        PatternError::GluedPlaceholder {
            name: "who".to_owned(),
            word: "{who}'s".to_owned()
        }
    );
}

#[test]
fn pattern_errors_say_how_to_fix_them() {
    assert!(parse_error("{a} {b}").to_string().contains("`{a} to {b}`"));
    assert!(parse_error("x {}").to_string().contains("`{from}`"));
    assert!(
        parse_error("x{a}")
            .to_string()
            .contains("separate it with a space")
    );
}

#[test]
fn typed_pattern_errors_say_how_to_fix_them() {
    assert_eq!(parse_error("[list]"), PatternError::AllOptional);
    assert_eq!(
        parse_error("list [shifts"),
        PatternError::UnbalancedBrackets { position: 5 }
    );
    assert_eq!(
        parse_error("list [a [b]]"),
        PatternError::UnbalancedBrackets { position: 8 }
    );
    assert_eq!(
        parse_error("list ]"),
        PatternError::UnbalancedBrackets { position: 5 }
    );
    assert_eq!(
        parse_error("list [?]"),
        PatternError::EmptyOptional { position: 5 }
    );
    assert_eq!(
        parse_error("a [b] [c] [d] [e] [f] [g]"),
        PatternError::TooManyOptionalParts { count: 6 }
    );
    assert_eq!(
        parse_error("on {day:weekday}"),
        PatternError::UnknownKind {
            name: "day".to_owned(),
            kind: "weekday".to_owned()
        }
    );
    assert_eq!(
        parse_error("for {who..whom:user}"),
        PatternError::NotADate {
            name: "who".to_owned(),
            kind: CaptureKind::User
        }
    );
    assert_eq!(
        parse_error("list [{from:date=someday}]"),
        PatternError::BadDefault {
            name: "from".to_owned(),
            default: "someday".to_owned()
        }
    );
    assert_eq!(
        parse_error("from {a..a}"),
        PatternError::DuplicatePlaceholder {
            name: "a".to_owned()
        }
    );
    // Two text captures meet when the optional word between them is left out.
    assert_eq!(
        parse_error("{a} [to] {b}"),
        PatternError::AdjacentPlaceholders {
            first: "a".to_owned(),
            second: "b".to_owned()
        }
    );
    // A date next to text is fine: the date phrase decides where it ends.
    assert!(IntentPattern::parse("remind {what} {when:date}").is_ok());
    assert!(
        parse_error("on {day:weekday}")
            .to_string()
            .contains("`{day:date}`")
    );
}

#[test]
fn fixed_values_follow_the_arrow() {
    let pattern = match IntentPattern::parse("what is low on stock => filter=low, limit=5") {
        Ok(pattern) => pattern,
        Err(error) => panic!("should parse: {error}"),
    };
    assert_eq!(
        pattern.fixed_values().collect::<Vec<_>>(),
        [("filter", "low"), ("limit", "5")]
    );
    // The arrow and what follows are no words of the intent, and no placeholders.
    assert_eq!(pattern.example(), "what is low on stock");
    assert_eq!(pattern.placeholders().count(), 0);
    assert_eq!(
        pattern.as_str(),
        "what is low on stock => filter=low, limit=5"
    );
    // A fixed value beside captures of other fields.
    let pattern = IntentPattern::parse("stock of {item} => filter=all");
    assert_eq!(
        pattern.map(|pattern| pattern
            .placeholders()
            .map(str::to_owned)
            .collect::<Vec<_>>()),
        Ok(vec!["item".to_owned()])
    );
}

#[test]
fn fixed_value_errors_say_how_to_fix_them() {
    assert_eq!(parse_error("low stock =>"), PatternError::NoFixedValues);
    assert_eq!(parse_error("=> filter=low"), PatternError::Empty);
    assert_eq!(
        parse_error("low stock => filter"),
        PatternError::BadFixedValue {
            item: "filter".to_owned()
        }
    );
    assert_eq!(
        parse_error("low stock => filter=low filter=out"),
        PatternError::DuplicateFixedValue {
            name: "filter".to_owned()
        }
    );
    assert_eq!(
        parse_error("stock that is {filter} => filter=low"),
        PatternError::FixedAndCaptured {
            name: "filter".to_owned()
        }
    );
    assert_eq!(
        parse_error("shifts [{from..to=this week}] => to=2026-11-29"),
        PatternError::FixedAndCaptured {
            name: "to".to_owned()
        }
    );
    assert!(
        parse_error("low stock => filter")
            .to_string()
            .contains("`filter=low`")
    );
    assert!(
        parse_error("{filter} stock => filter=low")
            .to_string()
            .contains("keep one")
    );
}
