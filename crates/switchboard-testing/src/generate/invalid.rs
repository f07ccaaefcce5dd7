//! The ways a schema can be broken: one case per reachable place and per rule there, each a
//! valid value with only that place broken, so a refusal can be attributed to it.
//!
//! Inside an `anyOf`/`oneOf` alternative a broken value might still match another alternative;
//! a case whose value is of a type another alternative accepts is left out.

use proptest::prelude::{Just, Strategy};
use serde_json::{Value, json};

use super::schema::{Additional, JsonType, Node, Typed, Types};
use super::valid::{
    Override, Step, ValueStrategy, array_with, at_place, element, object, plain_string, pointer,
};
use super::{Invalid, pointer_segment};

/// The key an object with `additionalProperties: false` is sent and must refuse.
const UNKNOWN_KEY: &str = "unexpected_field";
/// Values of each type, in the order a wrong-type value is chosen from.
fn wrong_type_candidates() -> [Value; 7] {
    [
        json!("wrong type"),
        json!(7),
        json!(0.5),
        json!(true),
        json!([]),
        json!({}),
        Value::Null,
    ]
}

/// A case before it is attached to the whole value: the place, and what is put there.
pub(super) struct Found {
    pub(super) kind: Invalid,
    pub(super) path: String,
    pub(super) strategy: ValueStrategy,
}

pub(super) fn cases(root: &Node) -> Vec<Found> {
    let mut walker = Walker {
        root,
        found: Vec::new(),
    };
    walker.walk(root, &mut Vec::new(), None);
    walker.found
}

struct Walker<'root> {
    root: &'root Node,
    found: Vec<Found>,
}

impl Walker<'_> {
    /// Records a case at the place `steps` lead to (`path` when the broken place is a key
    /// inside it), if a value reaching that place can be made.
    fn record(&mut self, kind: Invalid, steps: &[Step], path: String, leaf: Option<ValueStrategy>) {
        let Some(leaf) = leaf else { return };
        if let Some(strategy) = at_place(self.root, steps, leaf) {
            self.found.push(Found {
                kind,
                path,
                strategy,
            });
        }
    }

    /// `others`: the types the sibling alternatives accept when `node` is one alternative of
    /// a choice (`None` for a place of its own).
    fn walk(&mut self, node: &Node, steps: &mut Vec<Step>, others: Option<&Types>) {
        match node {
            Node::Any | Node::Never | Node::Cut => {}
            Node::Choice { alternatives, .. } => {
                if others.is_none() {
                    self.wrong_type(node, steps);
                }
                let members: Option<Vec<Value>> = alternatives
                    .iter()
                    .map(|alternative| alternative.typed().and_then(|typed| typed.members.clone()))
                    .try_fold(Vec::new(), |mut all, members| {
                        all.extend(members?);
                        Some(all)
                    });
                if let Some(members) = members {
                    let accepted = node.accepted_types().unwrap_or_else(Types::all);
                    let leaf = outside(&members, &accepted, others);
                    self.record(Invalid::OutOfRange, steps, pointer(steps), leaf);
                }
                for (index, alternative) in alternatives.iter().enumerate() {
                    let mut sibling_types = Types::default();
                    for (other_index, other) in alternatives.iter().enumerate() {
                        if other_index == index {
                            continue;
                        }
                        let types = other.accepted_types().unwrap_or_else(Types::all);
                        for json_type in types.iter() {
                            sibling_types.insert(json_type);
                        }
                    }
                    if let Some(others) = others {
                        for json_type in others.iter() {
                            sibling_types.insert(json_type);
                        }
                    }
                    steps.push(Step::Alternative(index));
                    self.walk(alternative, steps, Some(&sibling_types));
                    steps.pop();
                }
            }
            Node::Typed(typed) => {
                if others.is_none() && typed.declared {
                    self.wrong_type(node, steps);
                }
                let open =
                    |json_type: JsonType| others.is_none_or(|others| !others.accepts(json_type));
                if let Some(members) = &typed.members {
                    let leaf = outside(members, &typed.types, others);
                    self.record(Invalid::OutOfRange, steps, pointer(steps), leaf);
                    return;
                }
                if typed.types.accepts(JsonType::Integer) && open(JsonType::Integer) {
                    self.numbers(typed, steps);
                }
                if typed.types.accepts(JsonType::String) && open(JsonType::String) {
                    self.strings(typed, steps);
                }
                if typed.types.accepts(JsonType::Array) {
                    if open(JsonType::Array) {
                        self.array_lengths(typed, steps);
                    }
                    self.items(typed, steps);
                }
                if typed.types.accepts(JsonType::Object) {
                    self.object(typed, steps);
                }
            }
        }
    }

    fn wrong_type(&mut self, node: &Node, steps: &[Step]) {
        let Some(accepted) = node.accepted_types() else {
            return;
        };
        let wrong = wrong_type_candidates().into_iter().find(|candidate| {
            let json_type = JsonType::of(candidate);
            // 0.5 is refused by an integer-only place, but not by a number one.
            !accepted.accepts(json_type)
        });
        let leaf = wrong.map(|value| Just(value).boxed());
        self.record(Invalid::WrongType, steps, pointer(steps), leaf);
    }

    fn numbers(&mut self, typed: &Typed, steps: &[Step]) {
        let rules = &typed.number;
        let path = pointer(steps);
        // Below a lower bound: `floor(bound) - d` (under `minimum`), `floor(bound) + 1 - d`
        // (at or under `exclusiveMinimum`), d from 1 to 100; above an upper bound likewise.
        let cases = [
            (rules.minimum, 0, -1),
            (rules.exclusive_minimum, 1, -1),
            (rules.maximum, 0, 1),
            (rules.exclusive_maximum, -1, 1),
        ];
        for (bound, shift, direction) in cases {
            let Some(bound) = bound.filter(|bound| bound.abs() < 9e15) else {
                continue;
            };
            let base = if direction < 0 {
                bound.floor()
            } else {
                bound.ceil()
            } as i64
                + shift;
            let leaf =
                (1_i64..=100).prop_map(move |distance| Value::from(base + direction * distance));
            self.record(Invalid::OutOfRange, steps, path.clone(), Some(leaf.boxed()));
        }
    }

    fn strings(&mut self, typed: &Typed, steps: &[Step]) {
        let rules = &typed.string;
        let path = pointer(steps);
        if rules.min_length > 0 {
            let leaf = plain_string(0, rules.min_length - 1);
            self.record(Invalid::OutOfRange, steps, path.clone(), Some(leaf));
        }
        if let Some(longest) = rules.max_length.filter(|longest| *longest < usize::MAX / 2) {
            let leaf = plain_string(longest + 1, longest + 8);
            self.record(Invalid::OutOfRange, steps, path, Some(leaf));
        }
    }

    fn array_lengths(&mut self, typed: &Typed, steps: &[Step]) {
        let rules = &typed.array;
        let path = pointer(steps);
        if rules.min_items > 0 {
            let leaf = array_with(rules, 0, rules.min_items - 1, None);
            self.record(Invalid::OutOfRange, steps, path.clone(), leaf);
        }
        // With `items: false`, an item past `prefixItems` is refused at its own place too.
        let longest_free = match rules.items {
            Some(_) => usize::MAX,
            None => rules.prefix.len(),
        };
        if let Some(most) = rules
            .max_items
            .filter(|most| *most < 1000 && *most < longest_free)
        {
            let leaf = array_with(rules, most + 1, (most + 3).min(longest_free), None);
            self.record(Invalid::OutOfRange, steps, path, leaf);
        }
    }

    fn items(&mut self, typed: &Typed, steps: &mut Vec<Step>) {
        let rules = &typed.array;
        let mut indexes: Vec<usize> = (0..rules.prefix.len()).collect();
        if rules.items.is_some() {
            indexes.push(rules.prefix.len());
        }
        for index in indexes {
            steps.push(Step::Item(index));
            self.walk(element(rules, index), steps, None);
            steps.pop();
        }
    }

    fn object(&mut self, typed: &Typed, steps: &mut Vec<Step>) {
        let rules = &typed.object;
        let here = pointer(steps);
        for name in &rules.required {
            let leaf = object(rules, Some((name, Override::Omitted)));
            let path = format!("{here}/{}", pointer_segment(name));
            self.record(Invalid::MissingField, steps, path, leaf);
        }
        if matches!(rules.additional, Additional::Forbidden) {
            let mut key = UNKNOWN_KEY.to_owned();
            while rules.property(&key).is_some() {
                key.push('_');
            }
            let path = format!("{here}/{}", pointer_segment(&key));
            let leaf = object(rules, None).map(|strategy| {
                strategy
                    .prop_map(move |mut value| {
                        if let Some(map) = value.as_object_mut() {
                            map.insert(key.clone(), json!("surprise"));
                        }
                        value
                    })
                    .boxed()
            });
            self.record(Invalid::UnknownField, steps, path, leaf);
        }
        for (name, property) in &rules.properties {
            steps.push(Step::Property(name.clone()));
            self.walk(property, steps, None);
            steps.pop();
        }
    }
}

/// A value that is none of `members`, of one of `types` when one can be found, and of no type
/// the sibling alternatives (`others`) accept.
fn outside(members: &[Value], types: &Types, others: Option<&Types>) -> Option<ValueStrategy> {
    let candidates = [
        json!("not one of them"),
        json!(""),
        json!(987_654_321),
        json!(-987_654_321),
        json!(0.25),
        json!(true),
        json!(false),
        Value::Null,
    ];
    let fresh = |candidate: &&Value| {
        let json_type = JsonType::of(candidate);
        !members.contains(candidate) && others.is_none_or(|others| !others.accepts(json_type))
    };
    let same_type = candidates
        .iter()
        .filter(fresh)
        .find(|candidate| types.accepts(JsonType::of(candidate)));
    let chosen = same_type.or_else(|| candidates.iter().find(fresh))?;
    Some(Just(chosen.clone()).boxed())
}
