use switchboard_core::{NoInput, ToolContext, ToolError, tool};

switchboard_core::domain! {
    /// Greets people.
    pub Greet { name: "greet" }
}

pub struct Greeting {
    pub text: String,
}

/// Says hello.
#[tool(domain = Greet, category = read, permission = "greet.hello")]
async fn hello(_ctx: &ToolContext, _input: NoInput) -> Result<Greeting, ToolError> {
    Ok(Greeting {
        text: "hello".to_owned(),
    })
}

fn main() {}
