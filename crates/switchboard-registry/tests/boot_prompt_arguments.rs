//! Prompt arguments are strings on the wire: a prompt whose arguments' type has a number (or
//! any other property that is not a string) stops the registry's start, with the prompt and
//! the argument named.
//!
//! This binary's prompt set is broken on purpose, so it is its own test file.

mod common;

use schemars::JsonSchema;
use serde::Deserialize;
use switchboard_core::{Prompt, PromptMessage, PromptSpec, ToolContext, ToolError};
use switchboard_registry::{RegistryError, ToolRegistry};

switchboard_core::domain! {
    /// Holds a prompt whose argument is a number.
    Counting { name: "counting" }
}

#[derive(Deserialize, JsonSchema)]
struct CountArgs {
    /// How many.
    count: u32,
}

struct CountTo;

impl Prompt for CountTo {
    type Domain = Counting;
    type Args = CountArgs;
    const SPEC: PromptSpec = switchboard_core::prompt_spec! {
        domain: Counting,
        name: "count_to",
        description: "Counts.",
        permission: "counting.read",
    };

    async fn render(_ctx: &ToolContext, args: CountArgs) -> Result<Vec<PromptMessage>, ToolError> {
        Ok(vec![PromptMessage::user_text(format!(
            "Count to {}.",
            args.count
        ))])
    }
}

switchboard_core::prompt!(CountTo);

#[tokio::test]
async fn a_prompt_argument_that_is_no_string_stops_the_start() {
    let refused = ToolRegistry::start()
        .await
        .expect_err("a number cannot be a prompt argument");
    let message = refused.to_string();
    assert!(
        matches!(&refused, RegistryError::InvalidPrompt { prompt, .. } if prompt == "counting_count_to"),
        "{message}"
    );
    assert!(
        message.contains("`count`")
            && message.contains("`integer`")
            && message.contains("strings on the wire"),
        "{message}"
    );
    // Without the domain, its prompt is not looked at.
    common::start_excluding("counting")
        .await
        .expect("the rest starts without it");
}
