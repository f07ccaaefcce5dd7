//! Strategies for the values a [`Node`] accepts, and for a value with one chosen place
//! replaced ([`at_place`]), which is how the invalid cases and the smuggled org ids are built.
//!
//! Every strategy shrinks toward small values: optional properties absent, arrays and strings
//! as short as allowed, numbers toward 0.

use std::collections::BTreeSet;

use proptest::collection::{btree_map, vec};
use proptest::prelude::{Just, Strategy, any};
use proptest::strategy::{BoxedStrategy, Union};
use serde_json::{Map, Number, Value};

use super::schema::{
    Additional, ArrayRules, JsonType, Node, NumberRules, ObjectRules, StringRules, Typed,
};

pub(super) type ValueStrategy = BoxedStrategy<Value>;

/// The default range of integers, clamped to a schema's bounds.
const SMALL: i64 = 1000;
/// How much longer than `minLength` a string may be when nothing else bounds it.
const STRING_SLACK: usize = 16;
/// How many more items than `minItems` an array may have.
const ARRAY_SLACK: usize = 4;

/// One step from a place to a place inside it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Step {
    Property(String),
    Item(usize),
    /// Into an alternative of `anyOf`/`oneOf`: the same place in the value.
    Alternative(usize),
}

/// The JSON Pointer (RFC 6901) of the place `steps` lead to.
pub(super) fn pointer(steps: &[Step]) -> String {
    let mut pointer = String::new();
    for step in steps {
        match step {
            Step::Property(name) => {
                pointer.push('/');
                pointer.push_str(&super::pointer_segment(name));
            }
            Step::Item(index) => {
                pointer.push('/');
                pointer.push_str(&index.to_string());
            }
            Step::Alternative(_) => {}
        }
    }
    pointer
}

/// Values `node` accepts; `None` when it can make none (a cut recursion, `false`).
pub(super) fn valid(node: &Node) -> Option<ValueStrategy> {
    match node {
        Node::Any => Some(any_value()),
        Node::Never | Node::Cut => None,
        Node::Choice { alternatives, .. } => union(alternatives.iter().filter_map(valid).collect()),
        Node::Typed(typed) => typed_valid(typed),
    }
}

/// A valid value of `node` whose place at `steps` is made by `leaf`; `None` when no such value
/// can be made (the path goes through a cut recursion).
pub(super) fn at_place(node: &Node, steps: &[Step], leaf: ValueStrategy) -> Option<ValueStrategy> {
    let Some((step, rest)) = steps.split_first() else {
        return Some(leaf);
    };
    match (step, node) {
        (Step::Alternative(index), Node::Choice { alternatives, .. }) => {
            at_place(alternatives.get(*index)?, rest, leaf)
        }
        (Step::Property(name), Node::Typed(typed)) => {
            let property = typed.object.property(name).unwrap_or(&Node::Any);
            let forced = at_place(property, rest, leaf)?;
            object(&typed.object, Some((name, Override::Forced(forced))))
        }
        (Step::Item(index), Node::Typed(typed)) => {
            let rules = &typed.array;
            let forced = at_place(element(rules, *index), rest, leaf)?;
            let length = rules.min_items.max(index + 1);
            array_with(rules, length, length, Some((*index, forced)))
        }
        _ => None,
    }
}

/// The schema of the item at `index`: a `prefixItems` entry, else `items` (anything when
/// `items` is `false`: that item is refused whatever it is).
pub(super) fn element(rules: &ArrayRules, index: usize) -> &Node {
    rules
        .prefix
        .get(index)
        .or(rules.items.as_deref())
        .unwrap_or(&Node::Any)
}

fn union(strategies: Vec<ValueStrategy>) -> Option<ValueStrategy> {
    match strategies.len() {
        0 => None,
        1 => strategies.into_iter().next(),
        _ => Some(Union::new(strategies).boxed()),
    }
}

fn typed_valid(typed: &Typed) -> Option<ValueStrategy> {
    if let Some(members) = &typed.members {
        return (!members.is_empty()).then(|| proptest::sample::select(members.clone()).boxed());
    }
    let number_too = typed
        .types
        .iter()
        .any(|json_type| json_type == JsonType::Number);
    let strategies = typed
        .producible_types()
        .filter(|json_type| !(number_too && *json_type == JsonType::Integer))
        .filter_map(|json_type| of_type(typed, json_type))
        .collect();
    union(strategies)
}

/// Valid values of one type of `typed`.
pub(super) fn of_type(typed: &Typed, json_type: JsonType) -> Option<ValueStrategy> {
    match json_type {
        JsonType::Null => Some(Just(Value::Null).boxed()),
        JsonType::Boolean => Some(any::<bool>().prop_map(Value::Bool).boxed()),
        JsonType::Integer => integer(&typed.number),
        JsonType::Number => union(
            [integer(&typed.number), float(&typed.number)]
                .into_iter()
                .flatten()
                .collect(),
        ),
        JsonType::String => Some(string(&typed.string)),
        JsonType::Array => {
            let rules = &typed.array;
            let most = rules.max_items.unwrap_or(usize::MAX);
            let longest = most.min(rules.min_items.saturating_add(ARRAY_SLACK));
            array_with(rules, rules.min_items, longest, None)
        }
        JsonType::Object => object(&typed.object, None),
    }
}

/// The inclusive integer bounds of `rules`.
pub(super) fn integer_bounds(rules: &NumberRules) -> (Option<i64>, Option<i64>) {
    // `as` saturates: a bound past i64's range becomes i64's end.
    let lowest = [
        rules.minimum.map(|minimum| minimum.ceil() as i64),
        rules
            .exclusive_minimum
            .map(|minimum| (minimum.floor() as i64).saturating_add(1)),
    ];
    let highest = [
        rules.maximum.map(|maximum| maximum.floor() as i64),
        rules
            .exclusive_maximum
            .map(|maximum| (maximum.ceil() as i64).saturating_sub(1)),
    ];
    (
        lowest.into_iter().flatten().max(),
        highest.into_iter().flatten().min(),
    )
}

/// A range near 0 inside `[lowest, highest]`: the default window clamped, or the end of the
/// bounds nearest to it.
fn window(lowest: Option<i64>, highest: Option<i64>) -> Option<(i64, i64)> {
    let (lowest_bound, highest_bound) = (lowest.unwrap_or(i64::MIN), highest.unwrap_or(i64::MAX));
    if lowest_bound > highest_bound {
        return None;
    }
    let (low, high) = (lowest_bound.max(-SMALL), highest_bound.min(SMALL));
    if low <= high {
        Some((low, high))
    } else if lowest_bound > SMALL {
        Some((
            lowest_bound,
            highest_bound.min(lowest_bound.saturating_add(2 * SMALL)),
        ))
    } else {
        Some((
            lowest_bound.max(highest_bound.saturating_sub(2 * SMALL)),
            highest_bound,
        ))
    }
}

fn integer(rules: &NumberRules) -> Option<ValueStrategy> {
    let (lowest, highest) = integer_bounds(rules);
    let (low, high) = window(lowest, highest)?;
    let step = match rules.multiple_of {
        None => 1,
        Some(step) if step.fract() == 0.0 && step <= 1e15 => step as i64,
        // A fractional step: the integers among its multiples are the multiples of its
        // smallest integer multiple (looked for among its first thousand multiples).
        Some(step) => (1..=1000)
            .map(|k| step * f64::from(k))
            .find(|m| m.fract() == 0.0)? as i64,
    };
    let first = low.div_euclid(step) + i64::from(low.rem_euclid(step) != 0);
    let last = high.div_euclid(step);
    let mut strategies = Vec::new();
    if first <= last {
        strategies.push((
            8,
            (first..=last)
                .prop_map(move |k| Value::from(k * step))
                .boxed(),
        ));
    } else {
        let lowest = lowest?;
        let k = lowest.div_euclid(step) + i64::from(lowest.rem_euclid(step) != 0);
        let multiple = k.checked_mul(step)?;
        if highest.is_some_and(|highest| multiple > highest) {
            return None;
        }
        strategies.push((8, Just(Value::from(multiple)).boxed()));
    }
    // The bounds and the integers where arithmetic has its edges (a division by zero, an
    // off-by-one) come up far more often than a uniform draw from the window would give them.
    let edges = [lowest, highest, Some(0), Some(1), Some(-1)];
    for (index, edge) in edges.into_iter().enumerate() {
        let Some(edge) = edge else { continue };
        let repeated = edges[..index].contains(&Some(edge));
        if !repeated && edge % step == 0 && (low..=high).contains(&edge) {
            strategies.push((1, Just(Value::from(edge)).boxed()));
        }
    }
    Some(Union::new_weighted(strategies).boxed())
}

fn float(rules: &NumberRules) -> Option<ValueStrategy> {
    if rules.multiple_of.is_some() {
        // Only the integer multiples: a float multiple may not round-trip exactly.
        return None;
    }
    let lowest = [rules.minimum, rules.exclusive_minimum]
        .into_iter()
        .flatten()
        .reduce(f64::max);
    let highest = [rules.maximum, rules.exclusive_maximum]
        .into_iter()
        .flatten()
        .reduce(f64::min);
    let small = SMALL as f64;
    let mut low = lowest.unwrap_or(-small).max(-small);
    let mut high = highest.unwrap_or(small).min(small);
    if low > high {
        (low, high) = match (lowest, highest) {
            (Some(lowest), _) if lowest > small => (lowest, highest.unwrap_or(lowest + small)),
            (_, Some(highest)) => (lowest.unwrap_or(highest - small), highest),
            _ => return None,
        };
    }
    if low > high {
        return None;
    }
    let (exclusive_low, exclusive_high) = (rules.exclusive_minimum, rules.exclusive_maximum);
    Some(
        (low..=high)
            .prop_filter("inside the exclusive bounds", move |float| {
                exclusive_low.is_none_or(|bound| *float > bound)
                    && exclusive_high.is_none_or(|bound| *float < bound)
            })
            .prop_filter_map("a finite number", |float| {
                Number::from_f64(float).map(Value::Number)
            })
            .boxed(),
    )
}

/// Strings within the length bounds, by `format` or `pattern` when the generator knows them.
pub(super) fn string(rules: &StringRules) -> ValueStrategy {
    let shortest = rules.min_length;
    let longest = rules
        .max_length
        .unwrap_or(usize::MAX)
        .min(shortest.saturating_add(STRING_SLACK))
        .max(shortest);
    let shaped = match (rules.format.as_deref(), rules.pattern.as_deref()) {
        (Some(format), _) if known_format(format) => Some(formatted(format)),
        (_, Some(pattern)) => proptest::string::string_regex(&ecma_to_rust(pattern))
            .ok()
            .map(|strategy| strategy.prop_map(Value::String).boxed()),
        _ => None,
    };
    match shaped {
        None => plain_string(shortest, longest),
        Some(strategy) if shortest == 0 && rules.max_length.is_none() => strategy,
        Some(strategy) => {
            let most = rules.max_length.unwrap_or(usize::MAX);
            strategy
                .prop_filter("within the length bounds", move |value| {
                    let length = value.as_str().map_or(0, |text| text.chars().count());
                    (shortest..=most).contains(&length)
                })
                .boxed()
        }
    }
}

/// Strings of `shortest..=longest` characters, mostly printable ASCII.
pub(super) fn plain_string(shortest: usize, longest: usize) -> ValueStrategy {
    let character = Union::new_weighted(vec![
        (9, proptest::char::range(' ', '~').boxed()),
        (
            1,
            proptest::char::ranges(
                vec!['¡'..='ÿ', 'Ā'..='ž', 'α'..='ω', '一'..='龥', '😀'..='🙏'].into(),
            )
            .boxed(),
        ),
    ]);
    // The shortest string allowed (often the empty one) is an edge worth more than its share
    // of a uniform draw of lengths.
    Union::new_weighted(vec![
        (1, vec(character.clone(), shortest..=shortest)),
        (6, vec(character, shortest..=longest.max(shortest))),
    ])
    .prop_map(|characters| Value::String(characters.into_iter().collect()))
    .boxed()
}

fn known_format(format: &str) -> bool {
    matches!(
        format,
        "date" | "date-time" | "time" | "uuid" | "email" | "uri" | "url" | "ipv4" | "hostname"
    )
}

fn formatted(format: &str) -> ValueStrategy {
    let date = (2000_u32..=2100, 1_u32..=12, 1_u32..=31).prop_map(|(year, month, day)| {
        let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
        let days = match month {
            2 if leap => 29,
            2 => 28,
            4 | 6 | 9 | 11 => 30,
            _ => 31,
        };
        format!("{year:04}-{month:02}-{:02}", day.min(days))
    });
    let time = (0_u32..24, 0_u32..60, 0_u32..60)
        .prop_map(|(hour, minute, second)| format!("{hour:02}:{minute:02}:{second:02}Z"));
    let text = match format {
        "date" => date.boxed(),
        "date-time" => (date, time)
            .prop_map(|(date, time)| format!("{date}T{time}"))
            .boxed(),
        "time" => time.boxed(),
        "uuid" => proptest::array::uniform16(any::<u8>())
            .prop_map(|mut bytes| {
                bytes[6] = (bytes[6] & 0x0f) | 0x40;
                bytes[8] = (bytes[8] & 0x3f) | 0x80;
                let hex: String = bytes.iter().map(|byte| format!("{byte:02x}")).collect();
                format!(
                    "{}-{}-{}-{}-{}",
                    &hex[0..8],
                    &hex[8..12],
                    &hex[12..16],
                    &hex[16..20],
                    &hex[20..32]
                )
            })
            .boxed(),
        "email" => "[a-z]{1,8}@[a-z]{1,8}\\.(com|org|net)".boxed(),
        "uri" | "url" => "https://[a-z]{1,10}\\.example(/[a-z0-9]{1,8}){0,2}".boxed(),
        "ipv4" => proptest::array::uniform4(any::<u8>())
            .prop_map(|[a, b, c, d]| format!("{a}.{b}.{c}.{d}"))
            .boxed(),
        _ => "[a-z]{1,10}(\\.[a-z]{1,10}){0,2}".boxed(),
    };
    text.prop_map(Value::String).boxed()
}

/// An ECMAScript `pattern` in the syntax proptest's regex generator reads, with ECMAScript's
/// meaning where the two differ: `\d`, `\w`, `\s` are ASCII, `.` stops at any line terminator.
///
/// A leading `^` and trailing `$` are dropped (proptest cannot generate anchors): a string the
/// rest matches whole matches the anchored pattern too.
pub(super) fn ecma_to_rust(pattern: &str) -> String {
    let pattern = pattern.strip_prefix('^').unwrap_or(pattern);
    let pattern = match pattern.strip_suffix('$') {
        Some(stripped) if !stripped.ends_with('\\') => stripped,
        _ => pattern,
    };
    let mut rust = String::with_capacity(pattern.len());
    let mut characters = pattern.chars();
    let mut in_class = false;
    while let Some(character) = characters.next() {
        match character {
            '\\' => match characters.next() {
                Some(class @ ('d' | 'w' | 's')) => {
                    let members = match class {
                        'd' => "0-9",
                        'w' => "A-Za-z0-9_",
                        _ => " \\t\\n\\r\\x0B\\x0C",
                    };
                    if in_class {
                        rust.push_str(members);
                    } else {
                        rust.push('[');
                        rust.push_str(members);
                        rust.push(']');
                    }
                }
                Some(escaped) => {
                    rust.push('\\');
                    rust.push(escaped);
                }
                None => rust.push_str("\\\\"),
            },
            '[' if !in_class => {
                in_class = true;
                rust.push('[');
            }
            ']' if in_class => {
                in_class = false;
                rust.push(']');
            }
            '.' if !in_class => rust.push_str("[^\\n\\r\\u{2028}\\u{2029}]"),
            other => rust.push(other),
        }
    }
    rust
}

/// How a place's own property is made, instead of the usual way.
pub(super) enum Override {
    Forced(ValueStrategy),
    Omitted,
}

/// Objects `rules` accept: the required properties, some of the optional ones, and extra
/// keys where `additionalProperties` gives them a schema (or the object is a free-form map).
pub(super) fn object(rules: &ObjectRules, over: Option<(&str, Override)>) -> Option<ValueStrategy> {
    let mut entries: Vec<BoxedStrategy<Option<(String, Value)>>> = Vec::new();
    let (override_name, mut override_how) = match over {
        Some((name, how)) => (Some(name.to_owned()), Some(how)),
        None => (None, None),
    };
    let mut names: Vec<&str> = rules
        .properties
        .iter()
        .map(|(name, _)| name.as_str())
        .collect();
    names.extend(
        rules
            .required
            .iter()
            .map(String::as_str)
            .filter(|name| rules.property(name).is_none()),
    );
    if let Some(name) = &override_name
        && !names.contains(&name.as_str())
    {
        names.push(name);
    }
    for name in names {
        let key = name.to_owned();
        if override_name.as_deref() == Some(name) {
            match override_how.take() {
                Some(Override::Forced(strategy)) => {
                    entries.push(
                        strategy
                            .prop_map(move |value| Some((key.clone(), value)))
                            .boxed(),
                    );
                }
                Some(Override::Omitted) | None => {}
            }
            continue;
        }
        let node = match (rules.property(name), &rules.additional) {
            (Some(node), _) => node,
            (None, Additional::Schema(node)) => node,
            (None, _) => &Node::Any,
        };
        let required = rules.required.contains(name);
        match (valid(node), required) {
            (Some(strategy), true) => {
                entries.push(
                    strategy
                        .prop_map(move |value| Some((key.clone(), value)))
                        .boxed(),
                );
            }
            (Some(strategy), false) => entries.push(
                proptest::option::of(strategy)
                    .prop_map(move |value| value.map(|value| (key.clone(), value)))
                    .boxed(),
            ),
            (None, true) => return None,
            (None, false) => {}
        }
    }
    let extra = match &rules.additional {
        Additional::Schema(node) => valid(node),
        Additional::Allowed if rules.properties.is_empty() && rules.required.is_empty() => {
            Some(any_value())
        }
        _ => None,
    };
    let known: BTreeSet<String> = rules
        .properties
        .iter()
        .map(|(name, _)| name.clone())
        .collect();
    let extras = match extra {
        Some(values) => btree_map(
            "[a-z]{1,6}".prop_map(|key| format!("extra_{key}")),
            values,
            0..=2,
        )
        .prop_map(move |extras| {
            extras
                .into_iter()
                .filter(|(key, _)| !known.contains(key))
                .collect::<Vec<_>>()
        })
        .boxed(),
        None => Just(Vec::new()).boxed(),
    };
    Some(
        (entries, extras)
            .prop_map(|(entries, extras)| {
                let mut map = Map::new();
                map.extend(extras);
                map.extend(entries.into_iter().flatten());
                Value::Object(map)
            })
            .boxed(),
    )
}

/// Arrays of `shortest..=longest` items (more when `forced` is further on), the item at
/// `forced`'s index made by its strategy.
pub(super) fn array_with(
    rules: &ArrayRules,
    shortest: usize,
    longest: usize,
    forced: Option<(usize, ValueStrategy)>,
) -> Option<ValueStrategy> {
    let forced_index = forced.as_ref().map(|(index, _)| *index);
    let head_length = rules
        .prefix
        .len()
        .min(longest)
        .max(forced_index.map_or(0, |index| index + 1));
    let mut forced = forced.map(|(_, strategy)| strategy);
    let mut head = Vec::with_capacity(head_length);
    for index in 0..head_length {
        let strategy = match (forced_index == Some(index), forced.take()) {
            (true, Some(strategy)) => strategy,
            (_, taken) => {
                forced = taken;
                valid(element(rules, index))?
            }
        };
        head.push(strategy);
    }
    let tail_shortest = shortest.saturating_sub(head_length);
    let tail_longest = longest.saturating_sub(head_length).max(tail_shortest);
    let tail_item = element(rules, head_length.max(rules.prefix.len()));
    let tail = match valid(tail_item) {
        Some(item) if tail_longest > 0 => vec(item, tail_shortest..=tail_longest).boxed(),
        _ if tail_shortest == 0 => Just(Vec::new()).boxed(),
        _ => return None,
    };
    let unique = rules.unique;
    let arrays = (head, tail).prop_map(move |(mut head, tail)| {
        head.extend(tail);
        if unique {
            let mut seen = Vec::with_capacity(head.len());
            head.retain(|item| {
                let fresh = !seen.contains(item);
                if fresh {
                    seen.push(item.clone());
                }
                fresh
            });
        }
        Value::Array(head)
    });
    Some(if unique {
        arrays
            .prop_filter("enough distinct items", move |array| {
                array.as_array().map_or(0, Vec::len) >= shortest
            })
            .boxed()
    } else {
        arrays.boxed()
    })
}

/// Small JSON values of any type, at most two levels deep; object keys are lowercase letters,
/// never an org-id spelling.
pub(super) fn any_value() -> ValueStrategy {
    let leaf = Union::new(vec![
        Just(Value::Null).boxed(),
        any::<bool>().prop_map(Value::Bool).boxed(),
        (-SMALL..=SMALL).prop_map(Value::from).boxed(),
        plain_string(0, 8),
    ])
    .boxed();
    Union::new_weighted(vec![
        (6, leaf.clone()),
        (1, vec(leaf.clone(), 0..=3).prop_map(Value::Array).boxed()),
        (
            1,
            btree_map("[a-z]{1,6}", leaf, 0..=3)
                .prop_map(|map| Value::Object(map.into_iter().collect()))
                .boxed(),
        ),
    ])
    .boxed()
}
