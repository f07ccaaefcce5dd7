//! Form schemas: what SEP-1034 and SEP-1330 ask of them, and what a form cannot hold.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::*;

fn default_name() -> String {
    "John Doe".to_owned()
}

fn default_age() -> i64 {
    30
}

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Status {
    Active,
    Inactive,
}

#[derive(Deserialize, JsonSchema)]
enum Size {
    /// Small
    S,
    /// Large
    L,
}

#[expect(dead_code, reason = "only its schema is read")]
#[derive(Deserialize, JsonSchema)]
struct Profile {
    /// Your name.
    #[serde(default = "default_name")]
    name: String,
    #[serde(default = "default_age")]
    age: i64,
    #[schemars(email)]
    email: Option<String>,
    status: Status,
    size: Size,
    sizes: Vec<Size>,
    statuses: Vec<Status>,
    verified: bool,
}

#[test]
fn a_struct_becomes_a_flat_form_with_defaults_and_both_kinds_of_enum() {
    let schema = form_schema::<Profile>().expect("a form");
    assert_eq!(
        schema,
        json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "Your name.", "default": "John Doe"},
                "age": {"type": "integer", "default": 30},
                "email": {"type": "string", "format": "email"},
                "status": {"type": "string", "enum": ["active", "inactive"]},
                "size": {"type": "string", "oneOf": [
                    {"const": "S", "title": "Small"}, {"const": "L", "title": "Large"}]},
                "sizes": {"type": "array", "items": {"anyOf": [
                    {"const": "S", "title": "Small"}, {"const": "L", "title": "Large"}]}},
                "statuses": {"type": "array", "items": {"type": "string", "enum": ["active", "inactive"]}},
                "verified": {"type": "boolean"}
            },
            "required": ["status", "size", "sizes", "statuses", "verified"]
        })
    );
}

#[test]
fn a_nested_object_is_refused_naming_the_property() {
    #[expect(dead_code, reason = "only its schema is read")]
    #[derive(Deserialize, JsonSchema)]
    struct Inner {
        x: i64,
    }
    #[expect(dead_code, reason = "only its schema is read")]
    #[derive(Deserialize, JsonSchema)]
    struct Outer {
        inner: Inner,
    }
    let error = form_schema::<Outer>().expect_err("not flat");
    assert_eq!(error.type_name, "Outer");
    assert!(error.reason.contains("property `inner`"), "{error}");
}

#[test]
fn a_list_of_free_text_and_a_non_struct_are_refused() {
    #[expect(dead_code, reason = "only its schema is read")]
    #[derive(Deserialize, JsonSchema)]
    struct Tags {
        tags: Vec<String>,
    }
    let error = form_schema::<Tags>().expect_err("free-text list");
    assert!(error.reason.contains("list of enum choices"), "{error}");
    let error = form_schema::<String>().expect_err("not a struct");
    assert!(error.reason.contains("named fields"), "{error}");
}
