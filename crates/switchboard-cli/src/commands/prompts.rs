//! `switchboard prompts [--json]` and `switchboard prompt NAME [--arg NAME=VALUE]...
//! [IDENTITY] [--json]`: the prompts the linked domains declare, and one rendered as a caller.
//!
//! Rendering goes through the registry with every check it makes for MCP's `prompts/get`
//! (context, permission, arguments), so what the command prints is what an MCP client of the
//! same identity would get.

use owo_colors::Stream;
use serde::Serialize;
use serde_json::{Map, Value};
use switchboard::{
    ContentBlock, EmbeddedResource, PromptDescriptor, PromptError, PromptRole, RenderedPrompt,
    ToolRegistry,
};

use crate::{
    app::Exit,
    args::{PromptArgs, PromptsArgs},
    output::{self, Tone, paint},
    render,
    table::{self, Cell},
};

/// Prints every prompt, sorted by name.
pub(super) fn list(registry: &ToolRegistry, args: &PromptsArgs) -> anyhow::Result<Exit> {
    let prompts = registry.prompts();
    if args.json {
        let rows: Vec<&PromptDescriptor> = prompts.iter().map(|prompt| &**prompt).collect();
        output::write_stdout(&output::to_json(&rows)?);
    } else {
        output::write_stdout(&table(&prompts));
    }
    Ok(Exit::Success)
}

/// The `prompts` table: name, description's summary, arguments (`*` after a required one).
fn table(prompts: &[std::sync::Arc<PromptDescriptor>]) -> String {
    let rows: Vec<Vec<Cell>> = prompts
        .iter()
        .map(|prompt| {
            let arguments: Vec<String> = prompt
                .arguments
                .iter()
                .map(|argument| {
                    if argument.required {
                        format!("{}*", argument.name)
                    } else {
                        argument.name.clone()
                    }
                })
                .collect();
            vec![
                Cell::toned(prompt.name.as_str(), Tone::Name),
                Cell::plain(render::summary(&prompt.description)),
                Cell::plain(arguments.join(", ")),
            ]
        })
        .collect();
    table::render(
        &["NAME", "DESCRIPTION", "ARGUMENTS"],
        &rows,
        "",
        Stream::Stdout,
    )
}

/// What `prompt --json` prints.
#[derive(Serialize)]
struct PromptReport<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<&'a RenderedPrompt>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<ErrorReport<'a>>,
}

#[derive(Serialize)]
struct ErrorReport<'a> {
    kind: &'a str,
    message: String,
}

/// Renders the prompt as the identity, and prints its messages (or why it was refused).
pub(super) async fn render(registry: &ToolRegistry, args: PromptArgs) -> anyhow::Result<Exit> {
    let identity = args.identity.into_identity();
    let arguments: Map<String, Value> = args
        .arguments
        .into_iter()
        .map(|(name, value)| (name, Value::String(value)))
        .collect();
    let rendered = registry
        .render_prompt(&args.prompt, &arguments, &identity.context)
        .await;
    match (rendered, args.json) {
        (Ok(rendered), true) => {
            let report = PromptReport {
                result: Some(&rendered),
                error: None,
            };
            output::write_stdout(&output::to_json(&report)?);
            Ok(Exit::Success)
        }
        (Ok(rendered), false) => {
            output::write_stdout(&messages(&rendered));
            Ok(Exit::Success)
        }
        (Err(error), true) => {
            let report = PromptReport {
                result: None,
                error: Some(ErrorReport {
                    kind: error.kind(),
                    message: error.to_string(),
                }),
            };
            output::write_stdout(&output::to_json(&report)?);
            Ok(Exit::Refused)
        }
        (Err(error), false) => {
            output::write_stderr(&refusal(&error));
            Ok(Exit::Refused)
        }
    }
}

/// Each message under its role; text as it is, other blocks described in one line.
fn messages(rendered: &RenderedPrompt) -> String {
    let mut text = String::new();
    for message in &rendered.messages {
        let role = match message.role {
            PromptRole::User => "user",
            PromptRole::Assistant => "assistant",
        };
        text.push_str(&paint(&format!("[{role}]"), Tone::Name, Stream::Stdout));
        text.push('\n');
        match &message.content {
            ContentBlock::Text { text: body } => text.push_str(body),
            ContentBlock::Image { data, mime_type } => {
                text.push_str(&format!(
                    "(image, {mime_type}, {} base64 bytes)",
                    data.len()
                ));
            }
            ContentBlock::Audio { data, mime_type } => {
                text.push_str(&format!(
                    "(audio, {mime_type}, {} base64 bytes)",
                    data.len()
                ));
            }
            ContentBlock::Resource { resource } => match resource {
                EmbeddedResource::Text {
                    uri, text: body, ..
                } => {
                    text.push_str(&format!("(resource {uri})\n{body}"));
                }
                EmbeddedResource::Blob { uri, blob, .. } => {
                    text.push_str(&format!("(resource {uri}, {} base64 bytes)", blob.len()));
                }
            },
        }
        text.push_str("\n\n");
    }
    text
}

fn refusal(error: &PromptError) -> String {
    let mut text = paint(
        &format!("refused ({})", error.kind()),
        Tone::Bad,
        Stream::Stderr,
    );
    text.push_str(": ");
    text.push_str(&error.to_string());
    text.push('\n');
    text
}
