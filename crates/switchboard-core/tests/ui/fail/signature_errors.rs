// Every tool function of the wrong shape is reported at the part that is wrong, each on its own.
use switchboard_core::{NoInput, ToolContext, ToolError, tool};

switchboard_core::domain! {
    /// Greets people.
    pub Greet { name: "greet" }
}

/// Says hello.
#[tool(domain = Greet, category = read, permission = "greet.hello")]
async fn context_by_value(_ctx: ToolContext, _input: NoInput) -> Result<String, ToolError> {
    Ok("hello".to_owned())
}

/// Says hello.
#[tool(domain = Greet, category = read, permission = "greet.hello")]
async fn extra_argument(_ctx: &ToolContext, _input: NoInput, _loud: bool) -> Result<String, ToolError> {
    Ok("hello".to_owned())
}

/// Says hello.
#[tool(domain = Greet, category = read, permission = "greet.hello")]
async fn input_by_reference(_ctx: &ToolContext, _input: &NoInput) -> Result<String, ToolError> {
    Ok("hello".to_owned())
}

/// Says hello.
#[tool(domain = Greet, category = read, permission = "greet.hello")]
async fn missing_context(_input: NoInput) -> Result<String, ToolError> {
    Ok("hello".to_owned())
}

/// Says hello.
#[tool(domain = Greet, category = read, permission = "greet.hello")]
async fn missing_input(_ctx: &ToolContext) -> Result<String, ToolError> {
    Ok("hello".to_owned())
}

/// Says hello.
#[tool(domain = Greet, category = read, permission = "greet.hello")]
async fn no_return_type(_ctx: &ToolContext, _input: NoInput) {}

/// Says hello.
#[tool(domain = Greet, category = read, permission = "greet.hello")]
fn not_async(_ctx: &ToolContext, _input: NoInput) -> Result<String, ToolError> {
    Ok("hello".to_owned())
}

/// Says hello.
#[tool(domain = Greet, category = read, permission = "greet.hello")]
async fn wrong_context_type(_ctx: &String, _input: NoInput) -> Result<String, ToolError> {
    Ok("hello".to_owned())
}

#[tool(domain = Greet, category = read, permission = "greet.hello")]
async fn missing_doc_comment(_ctx: &ToolContext, _input: NoInput) -> Result<String, ToolError> {
    Ok("hello".to_owned())
}

fn main() {}
