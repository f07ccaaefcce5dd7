//! The `src/main.rs` of the guide's crate (`docs/embed.md`) built without default features by
//! `cargo xtask weight`: the guide's domain (`src/desk.rs`), called in-process, typed and as
//! JSON, with no orchestrator, navigation or MCP.

mod desk;

use switchboard::{CallContext, Initiator, PermissionMatrix, ToolRegistry, serde_json::json};

use desk::{CloseTicket, CloseTicketInput};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let permissions = PermissionMatrix::from_toml("[roles]\nlead = [\"desk.tickets.*\"]")?;
    let registry = ToolRegistry::builder().permissions(permissions).start().await?;
    let lead = CallContext::builder()
        .org("acme").user("lee").session("s1").correlation("c1")
        .role("lead").initiator(Initiator::Human)
        .build();
    let open = registry.invoke("desk_list_tickets", json!({"open_only": true}), &lead).await?;
    let closed = registry.call::<CloseTicket>(CloseTicketInput { number: 1 }, &lead).await?;
    println!("open tickets: {}", open["tickets"].as_array().map_or(0, Vec::len));
    println!("closed: #{} {}", closed.number, closed.title);
    registry.shutdown().await;
    Ok(())
}
