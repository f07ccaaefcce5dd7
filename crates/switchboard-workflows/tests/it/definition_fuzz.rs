//! Random documents never panic validation: arbitrary JSON, and random mutations of a valid
//! definition (a field replaced by a random value, a node dropped or duplicated).

use proptest::prelude::*;
use serde_json::{Map, Value, json};
use switchboard_workflows::{load, load_str, validate};

use crate::definition_support::{example, tools};

fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        (-1e6f64..1e6).prop_map(Value::from),
        "[a-z_${}. ()0-9]{0,12}".prop_map(Value::String),
        prop_oneof![
            Just("tool"),
            Just("end"),
            Just("wait"),
            Just("foreach"),
            Just("next"),
            Just("${ input.a }"),
            Just("1s"),
            Just("roster_get_shift"),
            Just("timeout"),
        ]
        .prop_map(|text| Value::String(text.to_owned())),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::btree_map(
                prop_oneof![
                    "[a-z_]{1,8}",
                    Just("id".to_owned()),
                    Just("tool".to_owned()),
                    Just("nodes".to_owned()),
                    Just("end".to_owned()),
                    Just("next".to_owned()),
                    Just("do".to_owned()),
                    Just("foreach".to_owned()),
                    Just("max_items".to_owned()),
                    Just("workflow".to_owned()),
                    Just("params".to_owned()),
                ],
                inner,
                0..5,
            )
            .prop_map(|fields| Value::Object(fields.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// Every (pointer, value) position of a document.
fn positions(value: &Value, pointer: String, out: &mut Vec<String>) {
    out.push(pointer.clone());
    match value {
        Value::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                positions(item, format!("{pointer}/{index}"), out);
            }
        }
        Value::Object(fields) => {
            for (name, field) in fields {
                positions(
                    field,
                    format!("{pointer}/{}", name.replace('~', "~0").replace('/', "~1")),
                    out,
                );
            }
        }
        _ => {}
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn random_documents_never_panic(document in any_json()) {
        let _ = validate(&document, &tools());
        let wrapped = json!({"workflow": "w", "nodes": [document]});
        let _ = validate(&wrapped, &tools());
    }

    #[test]
    fn random_text_never_panics(text in "[a-z:{}\\[\\], \n\"'$-]{0,80}") {
        let _ = load_str(&text, &tools());
    }

    #[test]
    fn mutations_of_a_valid_definition_never_panic(
        choice in any::<prop::sample::Index>(),
        replacement in any_json(),
    ) {
        let tools = tools();
        let valid = load(&example("week_then_swap.yaml"), &tools).expect("valid");
        let mut document = (*valid.document).clone();
        let mut all = Vec::new();
        positions(&document, String::new(), &mut all);
        let pointer = choice.get(&all).clone();
        if let Some(target) = document.pointer_mut(&pointer) {
            *target = replacement;
        }
        let _ = validate(&document, &tools);
    }
}
