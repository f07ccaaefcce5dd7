//! A one-tool MCP server over stdio with plain rmcp: the peer an embedder of Switchboard would
//! otherwise pick, built beside the guide's crate by `cargo xtask weight`.

use rmcp::{
    ServiceExt,
    handler::server::wrapper::{Json, Parameters},
    schemars, tool, tool_router,
};
use serde::{Deserialize, Serialize};

/// The server: it keeps no state.
#[derive(Debug, Clone, Default)]
struct Echo;

/// The tool's input.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct EchoInput {
    /// What to echo back.
    text: String,
}

/// The tool's output.
#[derive(Debug, Serialize, schemars::JsonSchema)]
struct Echoed {
    /// The text, echoed.
    text: String,
}

#[tool_router(server_handler)]
impl Echo {
    /// Echoes the text back.
    #[tool(name = "echo")]
    fn echo(&self, Parameters(input): Parameters<EchoInput>) -> Json<Echoed> {
        Json(Echoed { text: input.text })
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let service = Echo.serve(rmcp::transport::stdio()).await?;
    service.waiting().await?;
    Ok(())
}
