//! The `format`s a derived schema may carry: JSON Schema 2020-12's own, and no others.
//!
//! schemars annotates some Rust types with formats from outside the 2020-12 vocabulary:
//! OpenAPI's integer and float widths (`int32`, `uint64`, `double`, …) and names of its own for
//! types 2020-12 has no format for (`partial-time` for a time of day, `partial-date-time`,
//! `zoned-date-time`, `ip`). 2020-12 tells validators to let an unknown format pass, but
//! clients are stricter than that: Ajv, which TypeScript MCP clients validate with, throws on an
//! unknown format unless told not to, and the MCP Inspector logs a warning for each one in every
//! schema on every `tools/list`. So the schemas derived for tools keep only the vocabulary's
//! formats, and a fixed-width integer format becomes the bounds it stands for (`int32` →
//! `minimum` and `maximum`), which every validator enforces, ours included. What the other
//! formats said is for the field's description to say (`HH:MM:SS`).
//!
//! Schemas of tools registered at run time are served as their owner gave them.

use schemars::Schema;
use serde_json::Value;

/// The formats JSON Schema 2020-12 defines (Validation, section 7.3): the only ones a derived
/// schema carries.
pub const STANDARD_FORMATS: [&str; 19] = [
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

/// Drops `schema`'s format if 2020-12 does not define it, putting a fixed-width integer
/// format's range in its place (bounds already present are kept). Only this schema object:
/// wrap it in `schemars::transform::RecursiveTransform` for its subschemas.
pub(crate) fn keep_standard_formats(schema: &mut Schema) {
    let Some(object) = schema.as_object_mut() else {
        return;
    };
    let Some(format) = object.get("format").and_then(Value::as_str) else {
        return;
    };
    if STANDARD_FORMATS.contains(&format) {
        return;
    }
    let bounds = integer_bounds(format);
    object.remove("format");
    if let Some((minimum, maximum)) = bounds {
        object.entry("minimum").or_insert(minimum.into());
        object.entry("maximum").or_insert(maximum.into());
    }
}

/// The range of a fixed-width integer format narrower than 64 bits. The 64- and 128-bit and
/// pointer-width ones get none: their bounds are beyond what a JSON number carries exactly in
/// most clients, and schemars already gives the unsigned ones `minimum: 0`.
fn integer_bounds(format: &str) -> Option<(i64, i64)> {
    Some(match format {
        "int8" => (i8::MIN.into(), i8::MAX.into()),
        "int16" => (i16::MIN.into(), i16::MAX.into()),
        "int32" => (i32::MIN.into(), i32::MAX.into()),
        "uint8" => (0, u8::MAX.into()),
        "uint16" => (0, u16::MAX.into()),
        "uint32" => (0, u32::MAX.into()),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use schemars::JsonSchema;
    use serde_json::json;

    use super::*;
    use crate::schema::schema_of;

    /// Every `format` anywhere in `value`, as (JSON Pointer of its schema, format).
    fn formats(value: &Value, path: &str, found: &mut Vec<(String, String)>) {
        match value {
            Value::Object(map) => {
                if let Some(Value::String(format)) = map.get("format") {
                    found.push((path.to_owned(), format.clone()));
                }
                for (key, child) in map {
                    formats(child, &format!("{path}/{key}"), found);
                }
            }
            Value::Array(items) => {
                for (index, child) in items.iter().enumerate() {
                    formats(child, &format!("{path}/{index}"), found);
                }
            }
            _ => {}
        }
    }

    #[derive(JsonSchema)]
    #[allow(dead_code, reason = "only its schema is used")]
    struct Everything {
        small: i8,
        count: u32,
        total: u64,
        signed: i32,
        big: i64,
        ratio: f64,
        at: jiff::Timestamp,
        day: jiff::civil::Date,
        time_of_day: jiff::civil::Time,
        times: Vec<jiff::civil::Time>,
        maybe: Option<u16>,
        nested: Nested,
    }

    #[derive(JsonSchema)]
    #[allow(dead_code, reason = "only its schema is used")]
    struct Nested {
        when: jiff::civil::DateTime,
        id: uuid_like::Id,
    }

    mod uuid_like {
        /// A string schema with a standard format, written by hand.
        pub(super) struct Id;

        impl schemars::JsonSchema for Id {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                "Id".into()
            }

            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                schemars::json_schema!({ "type": "string", "format": "uuid" })
            }
        }
    }

    #[test]
    fn derived_schemas_carry_only_standard_formats() {
        let schema = schema_of::<Everything>().to_value();
        let mut found = Vec::new();
        formats(&schema, "", &mut found);
        for (path, format) in &found {
            assert!(
                STANDARD_FORMATS.contains(&format.as_str()),
                "non-standard format `{format}` at {path}"
            );
        }
        // The standard ones survive, nested and in `$defs` too.
        let kept: Vec<&str> = found.iter().map(|(_, format)| format.as_str()).collect();
        assert!(kept.contains(&"date-time") && kept.contains(&"date") && kept.contains(&"uuid"));
    }

    #[test]
    fn integer_widths_become_bounds() {
        let schema = schema_of::<Everything>().to_value();
        let properties = &schema["properties"];
        assert_eq!(
            properties["signed"],
            json!({"type": "integer", "minimum": i32::MIN, "maximum": i32::MAX})
        );
        assert_eq!(
            properties["count"],
            json!({"type": "integer", "minimum": 0, "maximum": u32::MAX})
        );
        assert_eq!(
            properties["small"],
            json!({"type": "integer", "minimum": i8::MIN, "maximum": i8::MAX})
        );
        // No bound for 64 bits; the unsigned keep schemars' `minimum: 0`.
        assert_eq!(
            properties["total"],
            json!({"type": "integer", "minimum": 0})
        );
        assert_eq!(properties["big"], json!({"type": "integer"}));
        assert_eq!(properties["ratio"], json!({"type": "number"}));
        // A time of day keeps its type, not schemars' `partial-time`.
        assert_eq!(properties["time_of_day"], json!({"type": "string"}));
        assert_eq!(
            properties["times"],
            json!({"type": "array", "items": {"type": "string"}})
        );
    }

    #[test]
    fn bounds_already_given_are_kept() {
        let mut schema =
            schemars::json_schema!({"type": "integer", "format": "int32", "minimum": 1});
        keep_standard_formats(&mut schema);
        assert_eq!(
            schema.to_value(),
            json!({"type": "integer", "minimum": 1, "maximum": i32::MAX})
        );
    }

    #[test]
    fn a_property_named_format_is_not_a_format() {
        #[derive(JsonSchema)]
        #[allow(dead_code, reason = "only its schema is used")]
        struct Export {
            /// The file format.
            format: String,
        }
        let schema = schema_of::<Export>().to_value();
        assert_eq!(schema["properties"]["format"]["type"], json!("string"));
        assert_eq!(schema["required"], json!(["format"]));
    }
}
