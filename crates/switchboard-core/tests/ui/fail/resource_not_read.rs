// A resource is served by a read tool: `resource!` refuses any other category at compile time.
use switchboard_core::{NoInput, ToolContext, ToolError, tool};

switchboard_core::domain! {
    /// Greets people.
    pub Greet { name: "greet" }
}

/// Sends a greeting.
#[tool(domain = Greet, category = execute, permission = "greet.send")]
async fn send(_ctx: &ToolContext, _input: NoInput) -> Result<String, ToolError> {
    Ok("sent".to_owned())
}

switchboard_core::resource!(Send {
    uri: "greet://sent",
    name: "sent",
    title: "Sent",
    description: "What was sent.",
    mime_type: "text/plain",
});

fn main() {}
