//! The generator checked against jsonschema (formats validated): every valid value validates,
//! every invalid value is refused at the place its case names, and the smuggled org ids sit
//! where they say, in otherwise valid params.

use std::collections::BTreeSet;

use proptest::test_runner::{Config, TestCaseError, TestRunner};
use serde_json::{Value, json};

use super::smuggle::{SPELLINGS, small_value};
use super::{InputSpace, Invalid};

const CASES: u32 = 64;

fn validator(schema: &Value) -> jsonschema::Validator {
    jsonschema::options()
        .should_validate_formats(true)
        .build(schema)
        .unwrap_or_else(|error| panic!("the test schema compiles: {error}\n{schema:#}"))
}

fn runner(cases: u32) -> TestRunner {
    TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    })
}

fn check_valid(name: &str, schema: &Value, cases: u32) {
    let validator = validator(schema);
    let space = InputSpace::new(schema);
    let outcome = runner(cases).run(&space.valid(), |value| {
        let errors: Vec<String> = validator
            .iter_errors(&value)
            .map(|error| format!("{}: {error}", error.instance_path()))
            .collect();
        if errors.is_empty() {
            Ok(())
        } else {
            Err(TestCaseError::fail(format!("{value} refused: {errors:?}")))
        }
    });
    if let Err(failure) = outcome {
        panic!("{name}: a valid value: {failure}");
    }
}

/// Whether `ancestor` is a proper prefix of `pointer`, segment-wise.
fn is_ancestor(ancestor: &str, pointer: &str) -> bool {
    pointer.len() > ancestor.len()
        && pointer.starts_with(ancestor)
        && pointer.as_bytes().get(ancestor.len()) == Some(&b'/')
}

fn parent(pointer: &str) -> &str {
    pointer.rfind('/').map_or("", |slash| &pointer[..slash])
}

/// Every value of every invalid case is refused, and each error is where the case says: at
/// its path (a wrong type, a bound), at the object holding it (a missing or unknown field:
/// `required` and `additionalProperties` are the object's keywords), or at an `anyOf`/`oneOf`
/// above it (which reports the place where none of its alternatives matched).
fn check_invalid(name: &str, schema: &Value, cases: u32) -> usize {
    let validator = validator(schema);
    let space = InputSpace::new(schema);
    let invalid = space.invalid();
    for case in &invalid {
        let expected = match case.kind {
            Invalid::MissingField | Invalid::UnknownField => parent(&case.path).to_owned(),
            Invalid::WrongType | Invalid::OutOfRange => case.path.clone(),
        };
        let outcome = runner(cases).run(&case.strategy, |value| {
            let errors: Vec<(String, &'static str, String)> = validator
                .iter_errors(&value)
                .map(|error| {
                    let keyword = match error.kind() {
                        jsonschema::error::ValidationErrorKind::AnyOf { .. } => "anyOf",
                        jsonschema::error::ValidationErrorKind::OneOfNotValid { .. }
                        | jsonschema::error::ValidationErrorKind::OneOfMultipleValid { .. } => {
                            "oneOf"
                        }
                        _ => "",
                    };
                    (
                        error.instance_path().as_str().to_owned(),
                        keyword,
                        error.to_string(),
                    )
                })
                .collect();
            if errors.is_empty() {
                return Err(TestCaseError::fail(format!("{value} accepted")));
            }
            for (at, keyword, message) in &errors {
                let combinator_above = !keyword.is_empty() && is_ancestor(at, &expected);
                if *at != expected && !combinator_above {
                    return Err(TestCaseError::fail(format!(
                        "{value} refused at {at:?} ({message}), expected at {expected:?}"
                    )));
                }
            }
            Ok(())
        });
        if let Err(failure) = outcome {
            panic!(
                "{name}: {} at {:?}: {failure}",
                case.kind.as_str(),
                case.path
            );
        }
    }
    invalid.len()
}

/// Realistic schemas, shaped as schemars 1.x writes them.
fn sample_schemas() -> Vec<(&'static str, Value)> {
    vec![
        (
            "nested objects and dates",
            json!({
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "title": "ListShiftsInput",
                "type": "object",
                "additionalProperties": false,
                "properties": {
                    "range": { "$ref": "#/$defs/DateRange", "description": "Which days." },
                    "filter": {
                        "type": "object",
                        "properties": {
                            "assignee": { "anyOf": [ { "type": "string", "minLength": 1, "maxLength": 64 }, { "type": "null" } ] },
                            "open_only": { "type": "boolean" }
                        }
                    }
                },
                "required": ["range"],
                "$defs": {
                    "DateRange": {
                        "type": "object",
                        "additionalProperties": false,
                        "properties": {
                            "from": { "type": "string", "format": "date" },
                            "to": { "type": "string", "format": "date" }
                        },
                        "required": ["from", "to"]
                    }
                }
            }),
        ),
        (
            "arrays of referenced objects",
            json!({
                "type": "object",
                "properties": {
                    "members": {
                        "type": "array",
                        "items": { "$ref": "#/$defs/Member" },
                        "minItems": 1,
                        "maxItems": 5
                    },
                    "labels": { "type": "array", "items": { "type": "string", "maxLength": 8 }, "uniqueItems": true }
                },
                "required": ["members"],
                "$defs": {
                    "Member": {
                        "type": "object",
                        "properties": {
                            "user_id": { "type": "string", "minLength": 1, "maxLength": 64 },
                            "roles": { "type": "array", "items": { "type": "string" }, "minItems": 1, "maxItems": 8 }
                        },
                        "required": ["user_id", "roles"]
                    }
                }
            }),
        ),
        (
            "enums",
            json!({
                "type": "object",
                "properties": {
                    "shift": { "$ref": "#/$defs/Shift" },
                    "priority": { "type": "string", "enum": ["low", "normal", "high"] },
                    "version": { "const": 2 },
                    "level": { "anyOf": [ { "$ref": "#/$defs/Shift" }, { "type": "null" } ] }
                },
                "required": ["shift", "priority"],
                "$defs": {
                    "Shift": {
                        "oneOf": [
                            { "type": "string", "const": "am", "description": "The morning." },
                            { "type": "string", "const": "pm", "description": "The afternoon." }
                        ]
                    }
                }
            }),
        ),
        (
            "options and unsigned integers",
            json!({
                "type": "object",
                "properties": {
                    "limit": { "type": ["integer", "null"], "format": "uint32", "minimum": 0 },
                    "page": { "type": "integer", "format": "uint8", "minimum": 0, "maximum": 255 },
                    "reason": { "type": ["string", "null"], "maxLength": 500 },
                    "owner": { "anyOf": [ { "$ref": "#/$defs/Owner" }, { "type": "null" } ] }
                },
                "$defs": {
                    "Owner": { "type": "object", "properties": { "id": { "type": "string" } }, "required": ["id"] }
                }
            }),
        ),
        (
            "formats",
            json!({
                "type": "object",
                "properties": {
                    "at": { "type": "string", "format": "date-time" },
                    "day": { "type": "string", "format": "date" },
                    "id": { "type": "string", "format": "uuid" },
                    "email": { "type": "string", "format": "email" },
                    "link": { "type": "string", "format": "uri" },
                    "colour": { "type": "string", "format": "a-format-nobody-knows" }
                },
                "required": ["at", "day", "id", "email", "link", "colour"]
            }),
        ),
        (
            "patterns",
            json!({
                "type": "object",
                "properties": {
                    "slug": { "type": "string", "pattern": "^[a-z][a-z0-9-]{0,30}$" },
                    "month": { "type": "string", "pattern": "^\\d{4}-\\d{2}$" },
                    "code": { "type": "string", "pattern": "^[A-Z]{3}$", "minLength": 3, "maxLength": 3 },
                    "word": { "type": "string", "pattern": "^\\w+\\s\\w+$" }
                },
                "required": ["slug", "month", "code", "word"]
            }),
        ),
        (
            "numeric bounds",
            json!({
                "type": "object",
                "properties": {
                    "max_bytes": { "type": "integer", "minimum": 1, "maximum": 1_048_576 },
                    "ratio": { "type": "number", "exclusiveMinimum": 0, "maximum": 1 },
                    "step": { "type": "integer", "multipleOf": 5, "minimum": 10, "maximum": 100 },
                    "big": { "type": "integer", "minimum": 100_000 },
                    "temperature": { "type": "number", "minimum": -40.5, "exclusiveMaximum": 60 }
                },
                "required": ["max_bytes", "ratio", "step", "big", "temperature"]
            }),
        ),
        (
            "closed objects and maps",
            json!({
                "type": "object",
                "additionalProperties": false,
                "properties": {
                    "settings": { "type": "object", "additionalProperties": { "type": "integer", "minimum": 0 } },
                    "meta": { "type": "object", "additionalProperties": false, "properties": { "note": { "type": "string" } } },
                    "free": { "type": "object" }
                }
            }),
        ),
        (
            "tagged enum",
            json!({
                "type": "object",
                "properties": {
                    "action": {
                        "oneOf": [
                            {
                                "type": "object",
                                "properties": {
                                    "kind": { "type": "string", "const": "notify" },
                                    "text": { "type": "string", "minLength": 1, "maxLength": 200 }
                                },
                                "required": ["kind", "text"]
                            },
                            {
                                "type": "object",
                                "properties": {
                                    "kind": { "type": "string", "const": "move" },
                                    "days": { "type": "integer", "minimum": 1, "maximum": 7 }
                                },
                                "required": ["kind", "days"]
                            }
                        ]
                    }
                },
                "required": ["action"]
            }),
        ),
        (
            "recursion",
            json!({
                "$ref": "#/$defs/Node",
                "$defs": {
                    "Node": {
                        "type": "object",
                        "properties": {
                            "name": { "type": "string" },
                            "children": { "type": "array", "items": { "$ref": "#/$defs/Node" } },
                            "next": { "anyOf": [ { "$ref": "#/$defs/Node" }, { "type": "null" } ] }
                        },
                        "required": ["name", "children"]
                    }
                }
            }),
        ),
        (
            "tuples and allOf",
            json!({
                "type": "object",
                "allOf": [ { "$ref": "#/definitions/Base" } ],
                "properties": {
                    "pair": {
                        "type": "array",
                        "prefixItems": [ { "type": "integer", "minimum": 0 }, { "type": "string", "format": "date" } ],
                        "items": false,
                        "minItems": 2,
                        "maxItems": 2
                    }
                },
                "required": ["pair"],
                "definitions": {
                    "Base": { "type": "object", "properties": { "id": { "type": "string", "minLength": 2 } }, "required": ["id"] }
                }
            }),
        ),
    ]
}

#[test]
fn valid_values_validate() {
    for (name, schema) in sample_schemas() {
        check_valid(name, &schema, CASES);
    }
}

#[test]
fn invalid_values_are_refused_where_their_case_says() {
    for (name, schema) in sample_schemas() {
        let count = check_invalid(name, &schema, CASES);
        assert!(count > 0, "{name}: no invalid cases");
    }
}

#[test]
fn invalid_cases_cover_every_kind_where_it_applies() {
    let schema = json!({
        "type": "object",
        "additionalProperties": false,
        "properties": {
            "name": { "type": "string", "minLength": 1, "maxLength": 10 },
            "count": { "type": "integer", "minimum": 0, "maximum": 5 },
            "range": { "$ref": "#/$defs/Range" },
            "tags": { "type": "array", "items": { "type": "string" }, "maxItems": 3 },
            "mode": { "enum": ["a", "b"] },
            "note": { "type": ["string", "null"] },
            "a/b~c": { "type": "boolean" },
            "shift": { "anyOf": [ { "enum": ["am", "pm"] }, { "type": "null" } ] }
        },
        "required": ["name", "range"],
        "$defs": {
            "Range": {
                "type": "object",
                "properties": { "from": { "type": "string", "format": "date" } },
                "required": ["from"]
            }
        }
    });
    let mut found: Vec<(Invalid, String)> = InputSpace::new(&schema)
        .invalid()
        .into_iter()
        .map(|case| (case.kind, case.path))
        .collect();
    found.sort();
    let mut expected: Vec<(Invalid, String)> = [
        (Invalid::WrongType, ""),
        (Invalid::MissingField, "/name"),
        (Invalid::MissingField, "/range"),
        (Invalid::UnknownField, "/unexpected_field"),
        (Invalid::WrongType, "/name"),
        (Invalid::OutOfRange, "/name"),
        (Invalid::OutOfRange, "/name"),
        (Invalid::WrongType, "/count"),
        (Invalid::OutOfRange, "/count"),
        (Invalid::OutOfRange, "/count"),
        (Invalid::WrongType, "/range"),
        (Invalid::MissingField, "/range/from"),
        (Invalid::WrongType, "/range/from"),
        (Invalid::WrongType, "/tags"),
        (Invalid::OutOfRange, "/tags"),
        (Invalid::WrongType, "/tags/0"),
        (Invalid::WrongType, "/mode"),
        (Invalid::OutOfRange, "/mode"),
        (Invalid::WrongType, "/note"),
        (Invalid::WrongType, "/a~1b~0c"),
        (Invalid::WrongType, "/shift"),
        (Invalid::OutOfRange, "/shift"),
    ]
    .into_iter()
    .map(|(kind, path)| (kind, path.to_owned()))
    .collect();
    expected.sort();
    assert_eq!(found, expected);
    check_invalid("every kind", &schema, CASES);
}

#[test]
fn valid_values_shrink_to_the_required_properties_at_their_smallest() {
    let schema = json!({
        "type": "object",
        "properties": {
            "name": { "type": "string", "minLength": 2 },
            "count": { "type": "integer", "minimum": -50 },
            "tags": { "type": "array", "items": { "type": "string" } },
            "note": { "type": "string" }
        },
        "required": ["name", "count", "tags"]
    });
    let smallest = small_value(&InputSpace::new(&schema).valid()).expect("a value");
    assert_eq!(smallest["count"], json!(0), "{smallest}");
    assert_eq!(smallest["tags"], json!([]), "{smallest}");
    assert_eq!(
        smallest["name"].as_str().map(|name| name.chars().count()),
        Some(2),
        "{smallest}"
    );
    assert!(smallest.get("note").is_none(), "{smallest}");
}

#[test]
fn org_ids_are_smuggled_at_every_place_an_object_can_have_a_key() {
    let schema = json!({
        "type": "object",
        "additionalProperties": false,
        "properties": {
            "filter": { "type": "object", "properties": { "text": { "type": "string", "minLength": 1 } }, "required": ["text"] },
            "items": { "type": "array", "items": { "$ref": "#/$defs/Item" } },
            "owner": { "anyOf": [ { "$ref": "#/$defs/Owner" }, { "type": "null" } ] },
            "count": { "type": "integer" }
        },
        "required": ["filter"],
        "$defs": {
            "Item": { "type": "object", "properties": { "tags": { "type": "array", "items": { "type": "string" } } } },
            "Owner": { "type": "object", "properties": { "id": { "type": "string" } }, "required": ["id"] }
        }
    });
    let smuggled = InputSpace::new(&schema).org_id_smuggled("acme");
    let found: BTreeSet<&str> = smuggled.iter().map(|case| case.path.as_str()).collect();
    let expected: BTreeSet<String> = ["", "/filter", "/items/0", "/owner"]
        .iter()
        .flat_map(|place| {
            SPELLINGS
                .iter()
                .map(move |spelling| format!("{place}/{spelling}"))
        })
        .collect();
    assert_eq!(found, expected.iter().map(String::as_str).collect());
    assert_eq!(
        smuggled.len(),
        expected.len(),
        "one case per place and spelling"
    );
    let labels: BTreeSet<&str> = smuggled.iter().map(|case| case.label.as_str()).collect();
    for label in [
        "top level",
        "top level, spelled orgId",
        "in /filter",
        "in /items/0, spelled ORG_ID",
    ] {
        assert!(labels.contains(label), "{label} in {labels:?}");
    }
    let validator = validator(&schema);
    for case in &smuggled {
        assert_eq!(
            case.params.pointer(&case.path),
            Some(&json!("acme")),
            "{}",
            case.label
        );
        let mut without = case.params.clone();
        let (holder, key) = case.path.rsplit_once('/').expect("a key");
        without
            .pointer_mut(holder)
            .and_then(Value::as_object_mut)
            .and_then(|object| object.remove(key))
            .expect("the smuggled key");
        assert!(
            validator.is_valid(&without),
            "{}: the rest is valid: {without}",
            case.label
        );
    }
}

#[test]
fn org_ids_are_smuggled_at_the_top_level_of_a_schema_with_no_properties() {
    for schema in [
        json!({ "type": "object", "additionalProperties": false }),
        json!(true),
        json!(42),
    ] {
        let smuggled = InputSpace::new(&schema).org_id_smuggled("acme");
        let paths: Vec<&str> = smuggled.iter().map(|case| case.path.as_str()).collect();
        assert_eq!(
            paths,
            ["/org_id", "/orgId", "/org-id", "/OrgID", "/ORG_ID"],
            "{schema}"
        );
        assert_eq!(smuggled[0].params, json!({ "org_id": "acme" }));
    }
}

#[test]
fn garbage_schemas_still_yield_values() {
    let garbage = [
        json!(42),
        json!(false),
        json!([1, 2]),
        json!({ "type": "nonsense" }),
        json!({ "type": [] }),
        json!({ "minimum": "zero", "maxLength": -3, "properties": 7, "required": "x" }),
        json!({ "$ref": "#/$defs/Nowhere" }),
        json!({ "$ref": "https://example.invalid/schema.json" }),
        json!({ "$ref": "#" }),
        json!({ "$defs": { "A": { "$ref": "#/$defs/A" } }, "$ref": "#/$defs/A" }),
        json!({
            "type": "object",
            "properties": { "x": { "$ref": "#/$defs/Loop" } },
            "required": ["x"],
            "$defs": { "Loop": { "type": "object", "properties": { "next": { "$ref": "#/$defs/Loop" } }, "required": ["next"] } }
        }),
        json!({ "allOf": [ { "type": "string" }, { "type": "integer" } ] }),
        json!({ "anyOf": [] }),
    ];
    for schema in garbage {
        let space = InputSpace::new(&schema);
        let values = std::cell::Cell::new(0);
        runner(16)
            .run(&space.valid(), |_| {
                values.set(values.get() + 1);
                Ok(())
            })
            .unwrap_or_else(|failure| panic!("{schema}: {failure}"));
        assert!(values.get() > 0, "{schema}");
        for case in space.invalid() {
            small_value(&case.strategy);
        }
        assert!(
            space.org_id_smuggled("acme").len() >= SPELLINGS.len(),
            "{schema}"
        );
    }
}

#[test]
fn a_pattern_the_generator_cannot_read_falls_back_to_strings() {
    let schema = json!({ "type": "string", "pattern": "^(?<=a)b$" });
    let value = small_value(&InputSpace::new(&schema).valid()).expect("a value");
    assert!(value.is_string(), "{value}");
}

#[test]
fn the_sample_tools_schemas() {
    let reference: Value =
        serde_json::from_str(include_str!("../../../../docs/reference/tools.json"))
            .expect("docs/reference/tools.json is JSON");
    let tools = reference["tools"].as_array().expect("a list of tools");
    assert!(tools.len() >= 15, "{} tools", tools.len());
    for tool in tools {
        let name = tool["name"].as_str().expect("a name");
        let schema = &tool["input_schema"];
        check_valid(name, schema, 32);
        let count = check_invalid(name, schema, 16);
        assert!(count > 0, "{name}: at least the top level's wrong type");
    }
}
