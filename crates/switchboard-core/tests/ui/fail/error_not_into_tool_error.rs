use switchboard_core::{NoInput, ToolContext, tool};

/// Says hello.
#[tool(domain = "greet", category = read, permission = "greet.hello")]
async fn hello(_ctx: &ToolContext, _input: NoInput) -> Result<String, String> {
    Ok("hello".to_owned())
}

fn main() {}
