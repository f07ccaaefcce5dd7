//! A tool whose domain type shares a declared domain's name but not its state refuses the
//! registry at boot, naming the tool, where it is defined and the domain: the check that keeps
//! every call's context of the state type its tool expects.
//!
//! `domain!` defines each domain type once, so only a hand-written `Domain` impl can do this.
//! This binary's tool set is broken on purpose, so it is its own test file.

mod common;

use common::{names, start_excluding};
use switchboard_core::{Domain, NoInput, Tool, ToolContext, ToolError, tool};
use switchboard_registry::{RegistryError, ToolRegistry};

switchboard_core::domain! {
    /// The declared domain.
    Counter { name: "counter", state: u64 = u64::default }
}

/// Belongs to the declared domain.
#[tool(domain = Counter, category = read, permission = "counter.read")]
async fn read(ctx: &ToolContext<u64>, _input: NoInput) -> Result<u64, ToolError> {
    Ok(*ctx.state())
}

/// A domain type that borrows `counter`'s name with another state.
struct Impostor;

impl Domain for Impostor {
    const NAME: &'static str = "counter";
    type State = String;
}

/// Expects `counter` to hold a `String`.
#[tool(domain = Impostor, category = read, permission = "counter.read", name = "counter_text")]
async fn text(ctx: &ToolContext<String>, _input: NoInput) -> Result<String, ToolError> {
    Ok(ctx.state().clone())
}

#[tokio::test]
async fn a_tool_expecting_another_state_than_its_domains_refuses_the_registry() {
    let error = ToolRegistry::start()
        .await
        .expect_err("`counter_text` expects a String");
    let RegistryError::DomainStateMismatch {
        tool,
        location,
        domain,
    } = &error
    else {
        panic!("expected DomainStateMismatch, got {error:?}");
    };
    assert_eq!(tool, "counter_text");
    assert_eq!(domain, "counter");
    assert_eq!(location, &Text::SPEC.location.to_string());
    assert!(error.to_string().contains("domain!"), "{error}");
}

#[tokio::test]
async fn excluding_the_domain_lets_the_rest_boot() {
    let registry = start_excluding("counter")
        .await
        .expect("without `counter`, nothing is left to mismatch");
    assert!(!names(&registry.list()).contains(&"counter_read"));
    registry.shutdown().await;
}
