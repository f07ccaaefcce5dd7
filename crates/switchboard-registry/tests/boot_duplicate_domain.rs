//! Two `domain!` declarations with the same name refuse the whole registry at boot, with an
//! error naming the domain and both state types. Excluding the domain lets the rest boot.
//!
//! This binary's domain set is broken on purpose, so it is its own test file.

mod common;

use common::{domain_names, start_excluding};
use switchboard_core::{NoInput, ToolContext, ToolError, tool};
use switchboard_registry::{RegistryError, ToolRegistry};

/// One state of the `shared` domain.
#[derive(Debug, Clone, Default)]
struct FirstState;

/// Another state of the `shared` domain.
#[derive(Debug, Clone, Default)]
struct SecondState;

switchboard_core::domain! {
    /// One declaration of `shared`.
    SharedOnce { name: "shared", state: FirstState = FirstState::default }
}

switchboard_core::domain! {
    /// Another declaration of `shared`, as another crate could make it.
    SharedAgain { name: "shared", state: SecondState = SecondState::default }
}

switchboard_core::domain! {
    /// A domain declared once.
    Unique { name: "unique" }
}

/// Belongs to the domain declared once.
#[tool(domain = Unique, category = read, permission = "unique.use")]
async fn fine(_ctx: &ToolContext, _input: NoInput) -> Result<u8, ToolError> {
    Ok(1)
}

#[tokio::test]
async fn a_domain_declared_twice_refuses_the_registry() {
    let error = ToolRegistry::start()
        .await
        .expect_err("`shared` is declared twice");
    let RegistryError::DuplicateDomain {
        name,
        first,
        second,
    } = &error
    else {
        panic!("expected DuplicateDomain, got {error:?}");
    };
    assert_eq!(name, "shared");
    let mut states = [first.as_str(), second.as_str()];
    states.sort_unstable();
    assert_eq!(states, ["FirstState", "SecondState"]);
    assert!(error.to_string().contains("`shared`"), "{error}");
}

#[tokio::test]
async fn excluding_the_twice_declared_domain_lets_the_rest_boot() {
    let registry = start_excluding("shared")
        .await
        .expect("without `shared`, every domain is declared once");
    assert_eq!(domain_names(&registry), ["unique"]);
    assert_eq!(registry.list().len(), 1);
    registry.shutdown().await;
}
