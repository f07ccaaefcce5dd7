//! The resources that read tools serve ([`ResourceSpec`], declared with
//! `switchboard_core::resource!`): listing them, and reading one by calling its tool.
//!
//! A resource is offered to a caller when its tool is in the registry and the caller's roles
//! grant the tool's permission, so the lists differ by authorization and by nothing else. A
//! read is an `invoke` of the tool as the caller, with the URI template's variables as its
//! input: the registry checks it and writes its audit record. The tool's output becomes the
//! contents: the blocks of a tool returning `ToolContent` (text stays text; images, audio and
//! binary resources are base64 blobs), or the JSON of any other tool as text.
//!
//! Pages are resources too, with navigation on ([`crate::navigation::resources`]); the server
//! lists both and reads whichever the URI names.

use std::collections::BTreeMap;

use rmcp::{
    ErrorData,
    model::{ReadResourceResult, Resource, ResourceContents, ResourceTemplate},
};
use serde_json::{Map, Value, json};
use switchboard_core::{
    CallContext, ContentBlock, EmbeddedResource, InvokeError, ResourceSpec, Role, ToolContent,
    linked_resources,
};
use switchboard_registry::ToolRegistry;

use crate::result;

/// The resources `roles` may read from `registry`, sorted by URI.
fn offered(registry: &ToolRegistry, roles: &[Role]) -> Vec<&'static ResourceSpec> {
    let mut offered: Vec<_> = linked_resources()
        .filter(|spec| registry.find_permitted(spec.tool, roles).is_some())
        .collect();
    offered.sort_by_key(|spec| spec.uri);
    offered
}

/// Whether `registry` serves any resource to `roles`.
pub(crate) fn any(registry: &ToolRegistry, roles: &[Role]) -> bool {
    linked_resources().any(|spec| registry.find_permitted(spec.tool, roles).is_some())
}

/// The resources with a fixed URI.
pub(crate) fn list(registry: &ToolRegistry, roles: &[Role]) -> Vec<Resource> {
    offered(registry, roles)
        .into_iter()
        .filter(|spec| !spec.is_template())
        .map(|spec| {
            Resource::new(spec.uri, spec.name)
                .with_title(spec.title)
                .with_description(spec.description)
                .with_mime_type(spec.mime_type)
        })
        .collect()
}

/// The resources named by a URI template.
pub(crate) fn templates(registry: &ToolRegistry, roles: &[Role]) -> Vec<ResourceTemplate> {
    offered(registry, roles)
        .into_iter()
        .filter(|spec| spec.is_template())
        .map(|spec| {
            ResourceTemplate::new(spec.uri, spec.name)
                .with_title(spec.title)
                .with_description(spec.description)
                .with_mime_type(spec.mime_type)
        })
        .collect()
}

/// The resource `uri` names among those whose tool is registered, with its variables' values.
/// Permission is not looked at here: the read's `invoke` checks it, and audits a refusal.
pub(crate) fn find(
    registry: &ToolRegistry,
    uri: &str,
) -> Option<(&'static ResourceSpec, BTreeMap<String, String>)> {
    linked_resources()
        .filter(|spec| registry.find(spec.tool).is_some())
        .find_map(|spec| spec.match_uri(uri).map(|values| (spec, values)))
}

/// Reads `uri`, the resource `spec` with `values` for its variables, as the caller of
/// `context`. A tool failing with a `*_not_found` code is `-32002` (resource not found);
/// another refusal is `-32602` with the error's JSON.
pub(crate) async fn read(
    registry: &ToolRegistry,
    spec: &ResourceSpec,
    values: BTreeMap<String, String>,
    uri: &str,
    context: &CallContext,
) -> Result<ReadResourceResult, ErrorData> {
    let params: Map<String, Value> = values
        .into_iter()
        .map(|(name, value)| (name, Value::String(value)))
        .collect();
    match registry
        .invoke(spec.tool, Value::Object(params), context)
        .await
    {
        Ok(output) => {
            let returns_content = registry
                .find(spec.tool)
                .is_some_and(|descriptor| descriptor.returns_content());
            contents(spec, uri, output, returns_content)
                .map(ReadResourceResult::new)
                .map_err(|message| {
                    ErrorData::internal_error(message, Some(json!({"uri": uri, "tool": spec.tool})))
                })
        }
        Err(error) => {
            let data = Some(json!({"uri": uri, "error": result::error_json(&error)}));
            if is_not_found(&error) {
                Err(ErrorData::resource_not_found(error.to_string(), data))
            } else {
                Err(ErrorData::invalid_params(error.to_string(), data))
            }
        }
    }
}

/// Whether the tool said that what it reads is not there.
fn is_not_found(error: &InvokeError) -> bool {
    matches!(error, InvokeError::ToolFailed { error, .. } if error.code().ends_with("_not_found"))
}

/// The contents of `uri` made of a tool's `output`: its blocks when it returns content, else
/// its JSON as text. `Err` names what in the output could not be read.
fn contents(
    spec: &ResourceSpec,
    uri: &str,
    output: Value,
    returns_content: bool,
) -> Result<Vec<ResourceContents>, String> {
    if !returns_content {
        let text = output.to_string();
        return Ok(vec![
            ResourceContents::text(text, uri).with_mime_type(spec.mime_type),
        ]);
    }
    let content: ToolContent = serde_json::from_value(output).map_err(|error| {
        format!(
            "the tool `{}` returned content that is not content blocks: {error}",
            spec.tool
        )
    })?;
    Ok(content
        .content
        .into_iter()
        .map(|block| match block {
            ContentBlock::Text { text } => {
                ResourceContents::text(text, uri).with_mime_type(spec.mime_type)
            }
            ContentBlock::Image { data, mime_type } | ContentBlock::Audio { data, mime_type } => {
                ResourceContents::blob(data, uri).with_mime_type(mime_type)
            }
            ContentBlock::Resource {
                resource:
                    EmbeddedResource::Text {
                        mime_type, text, ..
                    },
            } => ResourceContents::text(text, uri)
                .with_mime_type(mime_type.as_deref().unwrap_or(spec.mime_type)),
            ContentBlock::Resource {
                resource:
                    EmbeddedResource::Blob {
                        mime_type, blob, ..
                    },
            } => ResourceContents::blob(blob, uri)
                .with_mime_type(mime_type.as_deref().unwrap_or(spec.mime_type)),
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use switchboard_core::SourceLocation;

    use super::*;

    const SPEC: ResourceSpec = ResourceSpec {
        uri: "test://doc",
        name: "doc",
        title: "Doc",
        description: "A document.",
        mime_type: "text/plain",
        tool: "read_doc",
        location: SourceLocation {
            file: file!(),
            line: line!(),
        },
    };

    fn json_of(contents: &[ResourceContents]) -> Value {
        serde_json::to_value(contents).expect("contents serialise")
    }

    #[test]
    fn json_outputs_are_text_of_the_declared_type() {
        let read = contents(&SPEC, "test://doc", json!({"id": "1"}), false).expect("contents");
        assert_eq!(
            json_of(&read),
            json!([{"uri": "test://doc", "mimeType": "text/plain", "text": "{\"id\":\"1\"}"}])
        );
    }

    #[test]
    fn blocks_become_text_or_blobs() {
        let output = serde_json::to_value(
            ToolContent::text("hello")
                .with(ContentBlock::image("iVBO", "image/png"))
                .with(ContentBlock::blob_resource(
                    "x://y",
                    "application/pdf",
                    "JVBE",
                )),
        )
        .expect("content serialises");
        let read = contents(&SPEC, "test://doc", output, true).expect("contents");
        assert_eq!(
            json_of(&read),
            json!([
                {"uri": "test://doc", "mimeType": "text/plain", "text": "hello"},
                {"uri": "test://doc", "mimeType": "image/png", "blob": "iVBO"},
                {"uri": "test://doc", "mimeType": "application/pdf", "blob": "JVBE"},
            ])
        );
    }

    #[test]
    fn content_that_is_not_blocks_is_an_error_naming_the_tool() {
        let error =
            contents(&SPEC, "test://doc", json!({"content": 3}), true).expect_err("not blocks");
        assert!(error.contains("`read_doc`"), "{error}");
    }
}
