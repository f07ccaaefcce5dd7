use switchboard_core::{NoInput, ToolError, tool};

switchboard_core::domain! {
    /// Greets people.
    pub Greet { name: "greet" }
}

/// Says hello.
#[tool(domain = Greet, category = read, permission = "greet.hello")]
async fn hello(_input: NoInput) -> Result<String, ToolError> {
    Ok("hello".to_owned())
}

fn main() {}
