//! A property the tool's input does not take: each is refused on its own, at its own JSON
//! Pointer (`/titel`, `/items/0/nmae`), naming the field probably meant, and the call is
//! audited as `invalid_input`.
//!
//! The `shelf` domain and its tool are defined here, for these tests.

use crate::common::{invoke_with, only_record_of, start};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use switchboard_audit::Outcome;
use switchboard_core::{ErrorKind, InvokeError, ToolContext, ToolError, ToolInput, tool};
use switchboard_registry::{RegistryConfig, ToolRegistry};
use validator::Validate;

switchboard_core::domain! {
    /// Books on shelves, for the unknown-field tests.
    Shelf { name: "shelf" }
}

/// A copy of a book.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, Validate)]
#[serde(deny_unknown_fields)]
struct Copy {
    /// Who owns the copy.
    name: String,
}

/// A book to shelve.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, Validate, ToolInput)]
#[serde(deny_unknown_fields)]
struct Shelving {
    /// The book's title.
    title: String,
    /// Its copies.
    #[serde(default)]
    items: Vec<Copy>,
}

/// Shelves a book and says how many copies it has.
#[tool(domain = Shelf, category = read, permission = "shelf.use")]
async fn add_book(_ctx: &ToolContext, input: Shelving) -> Result<usize, ToolError> {
    Ok(input.items.len())
}

/// The paths and reasons of a call refused as `invalid_input`, as the caller gets them.
async fn refusal(
    registry: &ToolRegistry,
    params: Value,
    correlation: &str,
) -> Vec<(String, String)> {
    let error = invoke_with(registry, "shelf_add_book", params, correlation)
        .await
        .expect_err("the params name a field the tool does not take");
    let InvokeError::InvalidInput { tool, errors } = &error else {
        panic!("expected invalid_input, got {error:?}");
    };
    assert_eq!(tool, "shelf_add_book");
    assert_eq!(
        only_record_of(registry, correlation).await.outcome,
        Outcome::Error(ErrorKind::InvalidInput)
    );
    errors
        .iter()
        .map(|error| (error.path.clone(), error.reason.clone()))
        .collect()
}

#[tokio::test]
async fn a_misspelled_top_level_field_is_refused_at_its_own_path() {
    let registry = start(RegistryConfig::default()).await;
    assert_eq!(
        refusal(&registry, json!({"titel": "x"}), "unknown-top").await,
        [
            (String::new(), "\"title\" is a required property".to_owned()),
            (
                "/titel".to_owned(),
                "unknown field `titel`; did you mean `title`?".to_owned()
            ),
        ]
    );
    registry.shutdown().await;
}

#[tokio::test]
async fn a_misspelled_nested_field_is_refused_at_its_own_path() {
    let registry = start(RegistryConfig::default()).await;
    assert_eq!(
        refusal(
            &registry,
            json!({"title": "Dune", "items": [{"name": "ada"}, {"nmae": "bo", "name": "bo"}]}),
            "unknown-nested",
        )
        .await,
        [(
            "/items/1/nmae".to_owned(),
            "unknown field `nmae`; did you mean `name`?".to_owned()
        )]
    );
    registry.shutdown().await;
}

#[tokio::test]
async fn every_unknown_field_gets_an_error_of_its_own() {
    let registry = start(RegistryConfig::default()).await;
    assert_eq!(
        refusal(
            &registry,
            json!({"title": "Dune", "colour": "red", "tilte": "Dune"}),
            "unknown-several",
        )
        .await,
        [
            (
                "/colour".to_owned(),
                "unknown field `colour`; the fields here are `items`, `title`".to_owned()
            ),
            (
                "/tilte".to_owned(),
                "unknown field `tilte`; did you mean `title`?".to_owned()
            ),
        ]
    );
    // The message the caller reads names each path.
    let error = invoke_with(
        &registry,
        "shelf_add_book",
        json!({"title": "Dune", "items": [{"nmae": "bo", "name": "bo"}]}),
        "unknown-message",
    )
    .await
    .expect_err("refused");
    assert!(
        error
            .to_string()
            .contains("/items/0/nmae: unknown field `nmae`; did you mean `name`?"),
        "{error}"
    );
    registry.shutdown().await;
}
