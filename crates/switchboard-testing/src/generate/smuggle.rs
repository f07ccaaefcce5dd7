//! Where an `org_id` can be slipped into a tool's params: every place the schema lets an object
//! have a key, under every spelling the runtime reads as an org id.

use std::collections::BTreeSet;

use proptest::prelude::{Just, Strategy};
use proptest::strategy::ValueTree;
use proptest::test_runner::TestRunner;
use serde_json::{Map, Value};

use super::Smuggled;
use super::pointer_segment;
use super::schema::{JsonType, Node};
use super::valid::{Override, Step, ValueStrategy, at_place, element, object, pointer};

/// The spellings of an org id the runtime refuses in params; the first is the canonical one.
pub(super) const SPELLINGS: [&str; 5] = ["org_id", "orgId", "org-id", "OrgID", "ORG_ID"];

/// How many shrinking steps are taken toward a small value around the smuggled key.
const SIMPLIFY_STEPS: usize = 512;

pub(super) fn smuggled(root: &Node, org: &str) -> Vec<Smuggled> {
    let mut places = Vec::new();
    object_places(root, &mut Vec::new(), &mut places);
    let mut done = BTreeSet::new();
    let mut cases = Vec::new();
    for steps in places {
        let here = pointer(&steps);
        if done.contains(&here) {
            continue;
        }
        let Some(place) = node_at(root, &steps) else {
            continue;
        };
        let Some(rules) = place.typed().map(|typed| &typed.object) else {
            continue;
        };
        let mut built = Vec::new();
        for spelling in SPELLINGS {
            let forced = Override::Forced(Just(Value::String(org.to_owned())).boxed());
            let Some(leaf) = object(rules, Some((spelling, forced))) else {
                break;
            };
            let Some(strategy) = at_place(root, &steps, leaf) else {
                break;
            };
            let Some(params) = small_value(&strategy) else {
                break;
            };
            built.push(Smuggled {
                label: label(&here, spelling),
                params,
                path: format!("{here}/{}", pointer_segment(spelling)),
            });
        }
        if built.len() == SPELLINGS.len() {
            done.insert(here);
            cases.extend(built);
        }
    }
    if !done.contains("") {
        // The params themselves, even when the schema does not describe an object.
        let top_level = SPELLINGS.iter().map(|spelling| {
            let mut params = Map::new();
            params.insert((*spelling).to_owned(), Value::String(org.to_owned()));
            Smuggled {
                label: label("", spelling),
                params: Value::Object(params),
                path: format!("/{}", pointer_segment(spelling)),
            }
        });
        cases.splice(0..0, top_level);
    }
    cases
}

fn label(here: &str, spelling: &str) -> String {
    let place = if here.is_empty() {
        "top level".to_owned()
    } else {
        format!("in {here}")
    };
    if spelling == SPELLINGS[0] {
        place
    } else {
        format!("{place}, spelled {spelling}")
    }
}

/// The steps to every place that accepts an object, in schema order.
fn object_places(node: &Node, steps: &mut Vec<Step>, places: &mut Vec<Vec<Step>>) {
    match node {
        Node::Choice { alternatives, .. } => {
            for (index, alternative) in alternatives.iter().enumerate() {
                steps.push(Step::Alternative(index));
                object_places(alternative, steps, places);
                steps.pop();
            }
        }
        Node::Typed(typed) if typed.members.is_none() => {
            if typed.types.accepts(JsonType::Object) {
                places.push(steps.clone());
                for (name, property) in &typed.object.properties {
                    steps.push(Step::Property(name.clone()));
                    object_places(property, steps, places);
                    steps.pop();
                }
            }
            if typed.types.accepts(JsonType::Array) {
                let rules = &typed.array;
                let last = rules.prefix.len() + usize::from(rules.items.is_some());
                for index in 0..last {
                    steps.push(Step::Item(index));
                    object_places(element(rules, index), steps, places);
                    steps.pop();
                }
            }
        }
        _ => {}
    }
}

fn node_at<'node>(node: &'node Node, steps: &[Step]) -> Option<&'node Node> {
    let Some((step, rest)) = steps.split_first() else {
        return Some(node);
    };
    let next = match (step, node) {
        (Step::Alternative(index), Node::Choice { alternatives, .. }) => {
            alternatives.get(*index)?
        }
        (Step::Property(name), Node::Typed(typed)) => typed.object.property(name)?,
        (Step::Item(index), Node::Typed(typed)) => element(&typed.array, *index),
        _ => return None,
    };
    node_at(next, rest)
}

/// A small value of `strategy`: the first one a deterministic runner draws, shrunk as far as
/// it goes.
pub(super) fn small_value(strategy: &ValueStrategy) -> Option<Value> {
    let mut runner = TestRunner::deterministic();
    let mut tree = strategy.new_tree(&mut runner).ok()?;
    for _ in 0..SIMPLIFY_STEPS {
        if !tree.simplify() {
            break;
        }
    }
    Some(tree.current())
}
