use switchboard_core::{NoInput, ToolContext, ToolError, tool};

switchboard_core::domain! {
    /// Greets people.
    pub Greet { name: "greet" }
}

/// Says hello.
#[tool(
    domain = Greet,
    category = read,
    permission = "greet.hello",
    name = "greet_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
)]
async fn hello(_ctx: &ToolContext, _input: NoInput) -> Result<String, ToolError> {
    Ok("hello".to_owned())
}

/// Says hello at length: its default name, `greet_<function>`, is too long.
#[tool(domain = Greet, category = read, permission = "greet.hello")]
async fn hello_with_a_function_name_long_enough_to_overflow_the_limit(
    _ctx: &ToolContext,
    _input: NoInput,
) -> Result<String, ToolError> {
    Ok("hello".to_owned())
}

switchboard_core::domain! {
    /// A domain whose name breaks the rules.
    pub Shouting { name: "SHOUTING-domain" }
}

fn main() {}
