use std::rc::Rc;

use switchboard_core::{NoInput, ToolContext, ToolError, tool};

async fn pause() {}

/// Says hello.
#[tool(domain = "greet", category = read, permission = "greet.hello")]
async fn hello(_ctx: &ToolContext, _input: NoInput) -> Result<String, ToolError> {
    let greeting = Rc::new("hello".to_owned());
    pause().await;
    Ok(greeting.to_string())
}

fn main() {}
