//! Tool parameters mirrored into HTTP headers (`x-mcp-header`, MCP's SEP-2243).
//!
//! A tool input field may ask that MCP clients also send its value as an HTTP header, so that a
//! gateway or load balancer in front of the server can route or meter on it without reading the
//! body: a field annotated `x-mcp-header: "Region"` travels as `Mcp-Param-Region` on every
//! `tools/call` over Streamable HTTP (protocol 2026-07-28 and later). The server checks the
//! header against the body and refuses a call where they disagree, so nothing in front of it can
//! be told one thing while the tool is told another.
//!
//! A tool author declares it on the field, with schemars' `extend`:
//!
//! ```
//! # use schemars::JsonSchema;
//! # use serde::Deserialize;
//! #[derive(Deserialize, JsonSchema)]
//! struct Input {
//!     /// Where the data lives.
//!     #[schemars(extend("x-mcp-header" = "Region"))]
//!     region: String,
//! }
//! let schema = switchboard_core::schema::schema_of::<Input>().to_value();
//! let headers = switchboard_core::schema::header_parameters(&schema).unwrap();
//! assert_eq!(headers[0].header, "Region");
//! assert_eq!(headers[0].path, ["region"]);
//! ```
//!
//! [`header_parameters`] holds the annotations to the rules clients apply (a client drops a tool
//! whose annotations break them): each sits on a property reached from the root through
//! `properties` alone, names an HTTP token unique among the tool's headers (ignoring case), and
//! annotates a `string`, `integer` or `boolean` property (so not an `Option<T>`, whose schema is
//! an `anyOf`; a field with `#[serde(default)]` is optional and keeps its type). The registry
//! refuses a tool that breaks them when it starts.

use serde_json::Value;

/// The schema keyword that mirrors a property into an HTTP header.
pub const MCP_HEADER: &str = "x-mcp-header";

/// One input property a client also sends as the HTTP header `Mcp-Param-{header}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeaderParameter {
    /// The property names from the input's root to the property.
    pub path: Vec<String>,
    /// The header's name without its `Mcp-Param-` prefix.
    pub header: String,
}

/// The header parameters `input_schema` declares, in schema order, or why the annotations
/// cannot be used (the rules are those MCP clients apply: SEP-2243).
pub fn header_parameters(input_schema: &Value) -> Result<Vec<HeaderParameter>, String> {
    let mut found = Vec::new();
    collect(input_schema.get("properties"), &mut Vec::new(), &mut found)?;
    if count_annotations(input_schema) != found.len() {
        return Err(format!(
            "`{MCP_HEADER}` may only annotate a property reached from the root through \
             `properties` alone (not the root, an array item, a `$defs` entry or an `anyOf` \
             branch)"
        ));
    }
    let mut seen = std::collections::HashSet::new();
    for parameter in &found {
        if !seen.insert(parameter.header.to_ascii_lowercase()) {
            return Err(format!(
                "two properties declare the header `{}` (header names ignore case)",
                parameter.header
            ));
        }
    }
    Ok(found)
}

fn collect(
    properties: Option<&Value>,
    path: &mut Vec<String>,
    found: &mut Vec<HeaderParameter>,
) -> Result<(), String> {
    let Some(Value::Object(properties)) = properties else {
        return Ok(());
    };
    for (name, property) in properties {
        path.push(name.clone());
        if let Some(header) = property.get(MCP_HEADER) {
            found.push(checked(path, property, header)?);
        }
        collect(property.get("properties"), path, found)?;
        path.pop();
    }
    Ok(())
}

fn checked(path: &[String], property: &Value, header: &Value) -> Result<HeaderParameter, String> {
    let at = path.join(".");
    let Some(header) = header.as_str() else {
        return Err(format!("property `{at}`: `{MCP_HEADER}` must be a string"));
    };
    if header.is_empty() || !header.chars().all(is_token_char) {
        return Err(format!(
            "property `{at}`: `{MCP_HEADER}` `{header}` is not an HTTP header name (use \
             letters, digits and !#$%&'*+-.^_`|~)"
        ));
    }
    match property.get("type").and_then(Value::as_str) {
        Some("string" | "integer" | "boolean") => Ok(HeaderParameter {
            path: path.to_vec(),
            header: header.to_owned(),
        }),
        _ => Err(format!(
            "property `{at}`: a header parameter must be a string, an integer or a boolean \
             (an `Option` is not: give the field `#[serde(default)]` instead)"
        )),
    }
}

/// How many `x-mcp-header` keys `schema` holds anywhere, data (`default`, `enum`, …) aside.
fn count_annotations(schema: &Value) -> usize {
    match schema {
        Value::Object(map) => map
            .iter()
            .map(|(key, value)| match key.as_str() {
                MCP_HEADER => 1,
                "default" | "const" | "enum" | "examples" => 0,
                _ => count_annotations(value),
            })
            .sum(),
        Value::Array(items) => items.iter().map(count_annotations).sum(),
        _ => 0,
    }
}

/// RFC 9110's `tchar`: what a header name is made of.
fn is_token_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn schema(properties: Value) -> Value {
        json!({"type": "object", "properties": properties})
    }

    #[test]
    fn finds_top_level_and_nested_header_parameters() {
        let found = header_parameters(&schema(json!({
            "region": {"type": "string", "x-mcp-header": "Region"},
            "plain": {"type": "string"},
            "target": {"type": "object", "properties": {
                "count": {"type": "integer", "x-mcp-header": "Count"}
            }}
        })))
        .expect("valid");
        assert_eq!(
            found,
            vec![
                HeaderParameter {
                    path: vec!["region".into()],
                    header: "Region".into()
                },
                HeaderParameter {
                    path: vec!["target".into(), "count".into()],
                    header: "Count".into()
                },
            ]
        );
        assert_eq!(header_parameters(&schema(json!({}))), Ok(Vec::new()));
    }

    #[test]
    fn refuses_what_clients_refuse() {
        let refused =
            |properties: Value| header_parameters(&schema(properties)).expect_err("refused");
        assert!(
            refused(json!({"a": {"type": "string", "x-mcp-header": "Has Space"}}))
                .contains("not an HTTP header name")
        );
        assert!(
            refused(json!({"a": {"type": "string", "x-mcp-header": ""}}))
                .contains("not an HTTP header name")
        );
        assert!(
            refused(json!({"a": {"type": "string", "x-mcp-header": 3}}))
                .contains("must be a string")
        );
        assert!(
            refused(json!({"a": {"type": "array", "x-mcp-header": "A"}}))
                .contains("must be a string, an integer")
        );
        assert!(
            refused(
                json!({"a": {"anyOf": [{"type": "string"}, {"type": "null"}], "x-mcp-header": "A"}})
            )
            .contains("must be a string, an integer")
        );
        assert!(
            refused(json!({
                "a": {"type": "string", "x-mcp-header": "Same"},
                "b": {"type": "string", "x-mcp-header": "same"}
            }))
            .contains("two properties")
        );
        assert!(
            refused(
                json!({"a": {"type": "array", "items": {"type": "string", "x-mcp-header": "I"}}})
            )
            .contains("through `properties` alone")
        );
        let at_root = json!({"type": "object", "x-mcp-header": "Root", "properties": {}});
        assert!(header_parameters(&at_root).is_err());
    }

    #[test]
    fn an_annotation_in_data_is_not_one() {
        let found = header_parameters(&schema(json!({
            "a": {"type": "object", "default": {"x-mcp-header": "NotOne"}}
        })));
        assert_eq!(found, Ok(Vec::new()));
    }
}
