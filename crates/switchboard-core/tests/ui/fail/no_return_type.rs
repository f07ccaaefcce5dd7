use switchboard_core::{NoInput, ToolContext, tool};

switchboard_core::domain! {
    /// Greets people.
    pub Greet { name: "greet" }
}

/// Says hello.
#[tool(domain = Greet, category = read, permission = "greet.hello")]
async fn hello(_ctx: &ToolContext, _input: NoInput) {}

fn main() {}
