//! Guards resources served by read tools: reading one is a call of a read tool that takes the
//! URI's variables.
//!
//! Architecture Invariant: every linked resource (`switchboard_core::resource!`) names a linked
//! tool of category read (the macro checks the category at compile time; this checks the name
//! against the linked tools), and each `{variable}` of its URI template is a field of that
//! tool's input, so a read passes the URI's values to the tool under their own names. URIs are
//! unique, so a URI names one resource.

use std::collections::BTreeSet;

use serde_json::Value;
use switchboard_core::{Category, linked_resources, linked_tools};

#[test]
fn every_resource_is_a_read_tool_taking_its_uris_variables() {
    let mut offenders = Vec::new();
    let mut uris = BTreeSet::new();
    let mut checked = 0;
    for resource in linked_resources() {
        checked += 1;
        let uri = resource.uri;
        if !uris.insert(uri) {
            offenders.push(format!("{uri}: declared twice"));
        }
        let Some(entry) = linked_tools().find(|entry| entry.spec.name == resource.tool) else {
            offenders.push(format!(
                "{uri}: names `{}`, which is not a linked tool",
                resource.tool
            ));
            continue;
        };
        if entry.spec.category != Category::Read {
            offenders.push(format!("{uri}: `{}` is not a read tool", resource.tool));
        }
        let schema = (entry.input_schema)().to_value();
        let properties = schema.get("properties").and_then(Value::as_object);
        for variable in resource.variables() {
            if !properties.is_some_and(|properties| properties.contains_key(variable)) {
                offenders.push(format!(
                    "{uri}: `{}` has no input field `{variable}` for the URI to bind",
                    resource.tool
                ));
            }
        }
    }
    assert!(checked > 0, "the conformance domain declares resources");
    assert!(
        offenders.is_empty(),
        "resources that cannot be read:\n  - {}",
        offenders.join("\n  - ")
    );
}
