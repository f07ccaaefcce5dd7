//! A tool naming a domain no linked crate declares refuses the registry at boot, with an error
//! naming the tool, where it is defined, the missing domain and the domains that do exist.
//! Excluding the missing domain leaves the tool out and lets the rest boot.
//!
//! `domain!` both defines a domain type and registers it, so only a hand-written `Domain`
//! impl can leave a domain unregistered.
//!
//! This binary's tool set is broken on purpose, so it is its own test file.

mod common;

use common::{names, start_excluding};
use switchboard_core::{Domain, NoInput, Tool, ToolContext, ToolError, tool};
use switchboard_registry::{RegistryError, ToolRegistry};

switchboard_core::domain! {
    /// The one declared domain.
    Somewhere { name: "somewhere" }
}

/// Belongs to a declared domain.
#[tool(domain = Somewhere, category = read, permission = "somewhere.use")]
async fn here(_ctx: &ToolContext, _input: NoInput) -> Result<u8, ToolError> {
    Ok(1)
}

/// A domain type that no `domain!` registers.
struct Nowhere;

impl Domain for Nowhere {
    const NAME: &'static str = "nowhere";
    type State = ();
}

/// Names a domain nobody declares.
#[tool(domain = Nowhere, category = read, permission = "nowhere.use")]
async fn lost(_ctx: &ToolContext, _input: NoInput) -> Result<u8, ToolError> {
    Ok(0)
}

#[tokio::test]
async fn a_tool_of_an_undeclared_domain_refuses_the_registry() {
    let error = ToolRegistry::start()
        .await
        .expect_err("`nowhere` is not declared");
    let RegistryError::UnknownDomain {
        tool,
        location,
        domain,
        known,
    } = &error
    else {
        panic!("expected UnknownDomain, got {error:?}");
    };
    assert_eq!(tool, "nowhere_lost");
    assert_eq!(domain, "nowhere");
    assert_eq!(location, &Lost::SPEC.location.to_string());
    assert!(
        location.contains("tests/boot_unknown_domain.rs:"),
        "{location}"
    );
    assert_eq!(known, "somewhere");
    let message = error.to_string();
    assert!(
        message.contains("`nowhere`") && message.contains("domain!"),
        "{message}"
    );
}

#[tokio::test]
async fn excluding_the_undeclared_domain_lets_the_rest_boot() {
    let registry = start_excluding("nowhere")
        .await
        .expect("without `nowhere_lost`, every tool has its domain");
    let tools = registry.list();
    assert_eq!(names(&tools), ["somewhere_here"]);
    registry.shutdown().await;
}
