use switchboard_core::{NoInput, ToolError, tool};

/// Says hello.
#[tool(domain = "greet", category = read, permission = "greet.hello")]
async fn hello(_ctx: &String, _input: NoInput) -> Result<String, ToolError> {
    Ok("hello".to_owned())
}

fn main() {}
