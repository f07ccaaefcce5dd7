//! Tool outputs made of content blocks (text, images, audio, embedded resources) instead of
//! JSON for a program to read.
//!
//! Most tools return a typed struct: MCP clients get it as `structuredContent` (checked against
//! the tool's `outputSchema`) plus the same JSON as text. A tool whose answer is a picture, a
//! sound or a document returns [`ToolContent`] instead. Its JSON is `{"content": [blocks]}`,
//! each block already in the MCP shape (`{"type": "image", "data", "mimeType"}`, ...), and its
//! output schema carries the marker [`CONTENT_SCHEMA_MARKER`]. That marker, not the shape of a
//! value, is what tells the MCP server to answer with the blocks themselves and no
//! `structuredContent`, and tells [`ToolDescriptor::mcp`](crate::ToolDescriptor::mcp) to leave
//! `outputSchema` out; so an ordinary tool whose output happens to have a `content` field is
//! never mistaken for one. A run-time tool opts in by using `schema_of::<ToolContent>()` as its
//! output schema. In-process callers get the JSON, and can deserialize it into [`ToolContent`].
//!
//! Binary data (`data`, `blob`) is base64, as in MCP.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The output-schema key that marks a tool as returning [`ToolContent`].
pub const CONTENT_SCHEMA_MARKER: &str = "x-switchboard-content";

/// A tool output made of content blocks (text, images, audio, embedded resources), in order.
///
/// Return it from a tool whose answer is for a person or a model to look at rather than JSON
/// for a program: MCP clients then get exactly these blocks, and no `structuredContent` (the
/// tool's `tools/list` entry declares no `outputSchema`). The output schema of this type
/// carries [`CONTENT_SCHEMA_MARKER`], which is how the MCP server knows; a run-time tool opts
/// in by using this type's schema as its output schema. In-process callers get the JSON,
/// `{"content": [blocks]}`, each block in the MCP shape; binary data is base64.
///
/// ```
/// use switchboard_core::{ContentBlock, ToolContent};
///
/// let answer = ToolContent::text("The floor plan:")
///     .with(ContentBlock::image("iVBORw0KGgo...", "image/png"));
/// let json = serde_json::to_value(&answer).unwrap();
/// assert_eq!(json["content"][1]["mimeType"], "image/png");
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(extend("x-switchboard-content" = true))]
pub struct ToolContent {
    /// The blocks, in the order the client should show them.
    pub content: Vec<ContentBlock>,
}

impl ToolContent {
    /// Content made of `blocks`.
    pub fn new(blocks: impl IntoIterator<Item = ContentBlock>) -> Self {
        Self {
            content: blocks.into_iter().collect(),
        }
    }

    /// One text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self::new([ContentBlock::text(text)])
    }

    /// Appends a block.
    #[must_use]
    pub fn with(mut self, block: ContentBlock) -> Self {
        self.content.push(block);
        self
    }
}

/// One block of content, serialised exactly as an MCP `ContentBlock`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentBlock {
    /// Text for the model (and the human) to read.
    Text {
        /// The text.
        text: String,
    },
    /// An image.
    Image {
        /// The image bytes, base64.
        data: String,
        /// Its media type, e.g. `image/png`.
        #[serde(rename = "mimeType")]
        mime_type: String,
    },
    /// A sound.
    Audio {
        /// The audio bytes, base64.
        data: String,
        /// Its media type, e.g. `audio/wav`.
        #[serde(rename = "mimeType")]
        mime_type: String,
    },
    /// A resource (a document, a record) embedded whole.
    Resource {
        /// The resource.
        resource: EmbeddedResource,
    },
}

impl ContentBlock {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        ContentBlock::Text { text: text.into() }
    }

    /// An image block from base64 `data` of media type `mime_type`.
    pub fn image(data: impl Into<String>, mime_type: impl Into<String>) -> Self {
        ContentBlock::Image {
            data: data.into(),
            mime_type: mime_type.into(),
        }
    }

    /// An audio block from base64 `data` of media type `mime_type`.
    pub fn audio(data: impl Into<String>, mime_type: impl Into<String>) -> Self {
        ContentBlock::Audio {
            data: data.into(),
            mime_type: mime_type.into(),
        }
    }

    /// An embedded text resource: `text` of media type `mime_type`, identified by `uri`.
    pub fn text_resource(
        uri: impl Into<String>,
        mime_type: impl Into<String>,
        text: impl Into<String>,
    ) -> Self {
        ContentBlock::Resource {
            resource: EmbeddedResource::Text {
                uri: uri.into(),
                mime_type: Some(mime_type.into()),
                text: text.into(),
            },
        }
    }

    /// An embedded binary resource: base64 `blob` of media type `mime_type`, identified by
    /// `uri`.
    pub fn blob_resource(
        uri: impl Into<String>,
        mime_type: impl Into<String>,
        blob: impl Into<String>,
    ) -> Self {
        ContentBlock::Resource {
            resource: EmbeddedResource::Blob {
                uri: uri.into(),
                mime_type: Some(mime_type.into()),
                blob: blob.into(),
            },
        }
    }
}

/// The contents of an embedded resource: text or a base64 blob, as MCP's `ResourceContents`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum EmbeddedResource {
    /// A text resource.
    Text {
        /// The resource's URI.
        uri: String,
        /// Its media type, e.g. `text/plain`.
        #[serde(rename = "mimeType", default, skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
        /// The text.
        text: String,
    },
    /// A binary resource.
    Blob {
        /// The resource's URI.
        uri: String,
        /// Its media type, e.g. `application/pdf`.
        #[serde(rename = "mimeType", default, skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
        /// The bytes, base64.
        blob: String,
    },
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::schema::schema_of;

    #[test]
    fn blocks_serialise_in_the_mcp_shape() {
        let content = ToolContent::text("hello")
            .with(ContentBlock::image("iVBO", "image/png"))
            .with(ContentBlock::audio("UklG", "audio/wav"))
            .with(ContentBlock::text_resource(
                "test://doc",
                "text/plain",
                "body",
            ))
            .with(ContentBlock::blob_resource(
                "test://bin",
                "application/pdf",
                "JVBE",
            ));
        let value = serde_json::to_value(&content).expect("serialises");
        assert_eq!(
            value,
            json!({"content": [
                {"type": "text", "text": "hello"},
                {"type": "image", "data": "iVBO", "mimeType": "image/png"},
                {"type": "audio", "data": "UklG", "mimeType": "audio/wav"},
                {"type": "resource", "resource":
                    {"uri": "test://doc", "mimeType": "text/plain", "text": "body"}},
                {"type": "resource", "resource":
                    {"uri": "test://bin", "mimeType": "application/pdf", "blob": "JVBE"}},
            ]})
        );
        let back: ToolContent = serde_json::from_value(value).expect("deserialises");
        assert_eq!(back, content);
    }

    #[test]
    fn the_schema_carries_the_marker() {
        let schema = schema_of::<ToolContent>().to_value();
        assert_eq!(schema[CONTENT_SCHEMA_MARKER], json!(true), "{schema}");
    }
}
