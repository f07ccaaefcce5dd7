use switchboard_core::{NoInput, ToolContext, ToolError, tool};

pub struct Greeting {
    pub text: String,
}

/// Says hello.
#[tool(domain = "greet", category = read, permission = "greet.hello")]
async fn hello(_ctx: &ToolContext, _input: NoInput) -> Result<Greeting, ToolError> {
    Ok(Greeting {
        text: "hello".to_owned(),
    })
}

fn main() {}
