use switchboard_core::{NoInput, ToolContext, ToolError, tool};

#[derive(Clone, Default)]
pub struct GreetState {
    pub greeted: u64,
}

#[derive(Clone, Default)]
pub struct LedgerState {
    pub entries: u64,
}

switchboard_core::domain! {
    /// Greets people.
    pub Greet { name: "greet", state: GreetState = GreetState::default }
}

switchboard_core::domain! {
    /// Keeps accounts.
    pub Ledger { name: "ledger", state: LedgerState = LedgerState::default }
}

switchboard_core::domain! {
    /// Keeps nothing.
    pub Echo { name: "echo" }
}

/// A greeting tool that reads the ledger's state.
#[tool(domain = Greet, category = read, permission = "greet.count")]
async fn count(ctx: &ToolContext<LedgerState>, _input: NoInput) -> Result<u64, ToolError> {
    Ok(ctx.state().entries)
}

/// A tool of a domain without state that expects some.
#[tool(domain = Echo, category = read, permission = "echo.count")]
async fn tally(ctx: &ToolContext<GreetState>, _input: NoInput) -> Result<u64, ToolError> {
    Ok(ctx.state().greeted)
}

/// A gate that reads the ledger, for a tool of `greet`.
async fn gate(ctx: &ToolContext<LedgerState>, _input: &NoInput) -> Result<(), ToolError> {
    let _ = ctx.state().entries;
    Ok(())
}

/// Says hello.
#[tool(domain = Greet, category = read, permission = "greet.hello")]
async fn hello(_ctx: &ToolContext<GreetState>, _input: NoInput) -> Result<String, ToolError> {
    Ok("hello".to_owned())
}

switchboard_core::tool_policy! {
    tool: Hello,
    gate: gate,
}

fn main() {}
