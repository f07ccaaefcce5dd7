use switchboard_core::{NoInput, ToolContext, ToolError, tool};

#[tool(domain = "greet", category = read, permission = "greet.hello")]
async fn hello(_ctx: &ToolContext, _input: NoInput) -> Result<String, ToolError> {
    Ok("hello".to_owned())
}

fn main() {}
