//! Nullable types as `anyOf`, not as a `type` array.
//!
//! schemars describes `Option<T>` of an inline type as `{"type": ["string", "null"], …}`.
//! That is legal JSON Schema, but several MCP clients read `type` as a single string and then
//! reject the tool or drop the constraint, and the MCP Inspector warns about every such schema.
//! So a derived schema says the same thing with one type per schema:
//!
//! ```json
//! {"description": "…", "anyOf": [{"type": "string", "maxLength": 500}, {"type": "null"}]}
//! ```
//!
//! The meaning stays exactly the same. Only the keywords that constrain values of one type
//! (`maxLength`, `minimum`, `items`, `properties`, `required`, …) move into the typed branch:
//! they never constrain a `null`, so moving them changes nothing. Every other keyword stays
//! where it was, because it applies to `null` as well (`enum`, `const`, `$ref`, `allOf`, …) or
//! constrains nothing (annotations: `description`, `title`, `default`, `examples`,
//! `deprecated`, …). A schema that already has an `anyOf` keeps it, and the new one joins
//! `allOf`. A schema with `unevaluatedProperties` or `unevaluatedItems` is left alone: those
//! see what the keywords next to them evaluated, so moving them could change what they allow.
//!
//! `$ref`'d types are already `anyOf` in schemars' output, and `type` arrays of other shapes
//! (two types neither of which is `null`) are not generated for tools, so both are left as
//! they are.

use schemars::Schema;
use serde_json::{Map, Value, json};

/// The keywords that constrain only values of one type (JSON Schema 2020-12, Validation
/// sections 6.2 to 6.5 and 8, Core section 10.3.1 and 10.3.2), hence never a `null`.
const TYPE_SPECIFIC: [&str; 29] = [
    // Numbers.
    "multipleOf",
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    // Strings.
    "maxLength",
    "minLength",
    "pattern",
    "format",
    "contentEncoding",
    "contentMediaType",
    "contentSchema",
    // Arrays.
    "items",
    "prefixItems",
    "contains",
    "maxContains",
    "minContains",
    "maxItems",
    "minItems",
    "uniqueItems",
    // Objects.
    "properties",
    "patternProperties",
    "additionalProperties",
    "propertyNames",
    "required",
    "maxProperties",
    "minProperties",
    "dependentRequired",
    "dependentSchemas",
];

/// Keywords whose result depends on their neighbours' (see the module docs).
const UNEVALUATED: [&str; 2] = ["unevaluatedProperties", "unevaluatedItems"];

/// Rewrites `schema`'s `type: [T, "null"]` as `anyOf: [{type: T, …}, {type: "null"}]`. Only
/// this schema object: wrap it in `schemars::transform::RecursiveTransform` for its
/// subschemas.
pub(super) fn split_nullable_type(schema: &mut Schema) {
    let Some(object) = schema.as_object_mut() else {
        return;
    };
    let Some(other_type) = nullable_type(object) else {
        return;
    };
    if UNEVALUATED
        .iter()
        .any(|keyword| object.contains_key(*keyword))
    {
        return;
    }
    let mut typed = Map::new();
    typed.insert("type".to_owned(), Value::String(other_type));
    for keyword in TYPE_SPECIFIC {
        if let Some(value) = object.remove(keyword) {
            typed.insert(keyword.to_owned(), value);
        }
    }
    object.remove("type");
    let branches = json!([Value::Object(typed), {"type": "null"}]);
    if object.contains_key("anyOf") {
        let all_of = object
            .entry("allOf")
            .or_insert_with(|| Value::Array(Vec::new()));
        if let Value::Array(all_of) = all_of {
            all_of.push(json!({ "anyOf": branches }));
        }
    } else {
        object.insert("anyOf".to_owned(), branches);
    }
}

/// `T` if `object`'s `type` is `[T, "null"]` or `["null", T]`, with `T` another type.
fn nullable_type(object: &Map<String, Value>) -> Option<String> {
    let Some(Value::Array(types)) = object.get("type") else {
        return None;
    };
    match types.as_slice() {
        [Value::String(first), Value::String(second)] => match (first.as_str(), second.as_str()) {
            ("null", "null") => None,
            (other, "null") | ("null", other) => Some(other.to_owned()),
            _ => None,
        },
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use schemars::JsonSchema;
    use serde_json::json;

    use super::*;
    use crate::schema::schema_of;

    fn split(value: Value) -> Value {
        let mut schema = Schema::try_from(value).expect("an object schema");
        split_nullable_type(&mut schema);
        schema.to_value()
    }

    /// Every `type` array anywhere in `value`, as the JSON Pointer of its schema.
    fn type_arrays(value: &Value, path: &str, found: &mut Vec<String>) {
        match value {
            Value::Object(map) => {
                if matches!(map.get("type"), Some(Value::Array(_))) {
                    found.push(path.to_owned());
                }
                for (key, child) in map {
                    type_arrays(child, &format!("{path}/{key}"), found);
                }
            }
            Value::Array(items) => {
                for (index, child) in items.iter().enumerate() {
                    type_arrays(child, &format!("{path}/{index}"), found);
                }
            }
            _ => {}
        }
    }

    #[test]
    fn type_keywords_move_into_the_typed_branch_and_annotations_stay() {
        assert_eq!(
            split(json!({
                "description": "Why.",
                "title": "Reason",
                "default": null,
                "examples": ["late"],
                "deprecated": false,
                "type": ["string", "null"],
                "maxLength": 500,
                "minLength": 1,
                "pattern": "^[a-z]+$",
            })),
            json!({
                "description": "Why.",
                "title": "Reason",
                "default": null,
                "examples": ["late"],
                "deprecated": false,
                "anyOf": [
                    {"type": "string", "maxLength": 500, "minLength": 1, "pattern": "^[a-z]+$"},
                    {"type": "null"},
                ],
            })
        );
        assert_eq!(
            split(json!({"type": ["null", "integer"], "minimum": 0, "maximum": 9})),
            json!({"anyOf": [{"type": "integer", "minimum": 0, "maximum": 9}, {"type": "null"}]})
        );
    }

    #[test]
    fn keywords_that_apply_to_null_stay_outside() {
        assert_eq!(
            split(json!({"type": ["string", "null"], "enum": ["a", "b", null]})),
            json!({"enum": ["a", "b", null], "anyOf": [{"type": "string"}, {"type": "null"}]})
        );
        assert_eq!(
            split(json!({
                "type": ["object", "null"],
                "anyOf": [{"required": ["a"]}, {"required": ["b"]}],
            })),
            json!({
                "anyOf": [{"required": ["a"]}, {"required": ["b"]}],
                "allOf": [{"anyOf": [{"type": "object"}, {"type": "null"}]}],
            })
        );
    }

    #[test]
    fn other_schemas_are_left_alone() {
        for schema in [
            json!({"type": "string"}),
            json!({"type": ["string", "integer"]}),
            json!({"type": ["null", "null"]}),
            json!({"type": ["string"]}),
            json!({"type": ["object", "null"], "unevaluatedProperties": false}),
            json!({"anyOf": [{"$ref": "#/$defs/Shift"}, {"type": "null"}]}),
        ] {
            assert_eq!(split(schema.clone()), schema);
        }
    }

    #[derive(JsonSchema)]
    #[allow(dead_code, reason = "only its schema is used")]
    struct Optional {
        /// A reason.
        #[schemars(length(max = 500))]
        reason: Option<String>,
        count: Option<u16>,
        tags: Option<Vec<Option<String>>>,
        inner: Option<Inner>,
        plain: String,
    }

    #[derive(JsonSchema)]
    #[allow(dead_code, reason = "only its schema is used")]
    struct Inner {
        note: Option<String>,
    }

    #[test]
    fn derived_schemas_have_no_type_arrays() {
        let schema = schema_of::<Optional>().to_value();
        let mut found = Vec::new();
        type_arrays(&schema, "", &mut found);
        assert!(found.is_empty(), "type arrays at {found:?} in {schema:#}");
        let properties = &schema["properties"];
        assert_eq!(
            properties["reason"],
            json!({
                "description": "A reason.",
                "anyOf": [{"type": "string", "maxLength": 500}, {"type": "null"}],
            })
        );
        // A width's bounds (from `keep_standard_formats`) go into the branch too.
        assert_eq!(
            properties["count"],
            json!({"anyOf": [
                {"type": "integer", "minimum": 0, "maximum": u16::MAX},
                {"type": "null"},
            ]})
        );
        assert_eq!(
            properties["tags"],
            json!({"anyOf": [
                {"type": "array", "items": {"anyOf": [{"type": "string"}, {"type": "null"}]}},
                {"type": "null"},
            ]})
        );
        assert_eq!(properties["plain"], json!({"type": "string"}));
    }
}
