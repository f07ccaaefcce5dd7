use std::rc::Rc;

use switchboard_core::{NoInput, ToolContext, ToolError, tool};

switchboard_core::domain! {
    /// Greets people.
    pub Greet { name: "greet" }
}

async fn pause() {}

/// Says hello.
#[tool(domain = Greet, category = read, permission = "greet.hello")]
async fn hello(_ctx: &ToolContext, _input: NoInput) -> Result<String, ToolError> {
    let greeting = Rc::new("hello".to_owned());
    pause().await;
    Ok(greeting.to_string())
}

fn main() {}
