use switchboard_core::{NoInput, ToolContext, ToolError, tool};

switchboard_core::domain! {
    /// Greets people.
    pub Greet { name: "greet" }
}

/// Says hello.
#[tool(domain = Greet, categroy = read, permission = "greet.hello")]
async fn hello(_ctx: &ToolContext, _input: NoInput) -> Result<String, ToolError> {
    Ok("hello".to_owned())
}

fn main() {}
