//! Booting the registry from the tools linked into this binary: the catalogue it publishes
//! (`list`, `list_by_category`, `list_by_domain`, `list_permitted`, `find`), leaving a domain out
//! with `exclude_domain` (which `excludes_domain` then reports), and a permission matrix read from a TOML file on disk.
//!
//! The refusals at boot (duplicate names, unknown domains, `org_id` in a nested input) each need
//! a binary whose whole tool set is broken, so they live in their own `boot_*.rs` files.

mod common;

use std::{path::PathBuf, sync::Arc, time::Duration};

use common::{domain_names, human_context, names, start, start_excluding, start_with_permissions};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use switchboard_core::{
    Category, ErrorKind, NoInput, Role, ToolContext, ToolError, ToolInput, ToolOrigin, tool,
};
use switchboard_registry::{PermissionMatrix, PermissionsError, RegistryConfig};
use validator::Validate;

switchboard_core::domain! {
    /// The first test domain.
    Alpha { name: "alpha" }
}

switchboard_core::domain! {
    /// The second test domain.
    Beta { name: "beta" }
}

switchboard_core::domain! {
    /// A domain the tests leave out.
    Gamma { name: "gamma" }
}

/// What to look up.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, Validate, ToolInput)]
struct LookupInput {
    /// The key.
    #[validate(length(min = 1))]
    key: String,
}

/// Looks a key up.
#[tool(domain = Alpha, category = read, permission = "alpha.read", timeout_ms = 1500)]
async fn lookup(_ctx: &ToolContext, input: LookupInput) -> Result<String, ToolError> {
    Ok(input.key)
}

/// Suggests a change.
#[tool(domain = Alpha, category = propose, permission = "alpha.suggest")]
async fn suggest(_ctx: &ToolContext, _input: NoInput) -> Result<String, ToolError> {
    Ok("suggested".to_owned())
}

/// Applies a change.
#[tool(domain = Beta, category = execute, permission = "beta.apply")]
async fn apply(_ctx: &ToolContext, _input: NoInput) -> Result<String, ToolError> {
    Ok("applied".to_owned())
}

/// Erases everything.
#[tool(domain = Beta, category = restricted, permission = "beta.erase")]
async fn erase(_ctx: &ToolContext, _input: NoInput) -> Result<String, ToolError> {
    Ok("erased".to_owned())
}

/// Reads what beta holds.
#[tool(domain = Beta, category = read, permission = "beta.read")]
async fn inspect(_ctx: &ToolContext, _input: NoInput) -> Result<String, ToolError> {
    Ok("inspected".to_owned())
}

/// Reads what gamma holds.
#[tool(domain = Gamma, category = read, permission = "gamma.read")]
async fn survey(_ctx: &ToolContext, _input: NoInput) -> Result<String, ToolError> {
    Ok("surveyed".to_owned())
}

#[tokio::test]
async fn the_catalogue_is_sorted_and_filtered_correctly() {
    let registry = start(RegistryConfig::default()).await;
    let all = [
        "alpha_lookup",
        "alpha_suggest",
        "beta_apply",
        "beta_erase",
        "beta_inspect",
        "gamma_survey",
    ];
    assert_eq!(names(&registry.list()), all);
    assert_eq!(
        names(&registry.list_by_category(Category::Read)),
        ["alpha_lookup", "beta_inspect", "gamma_survey"]
    );
    assert_eq!(
        names(&registry.list_by_category(Category::Propose)),
        ["alpha_suggest"]
    );
    assert_eq!(
        names(&registry.list_by_category(Category::Execute)),
        ["beta_apply"]
    );
    assert_eq!(
        names(&registry.list_by_category(Category::Restricted)),
        ["beta_erase"]
    );
    assert_eq!(
        names(&registry.list_by_domain("beta")),
        ["beta_apply", "beta_erase", "beta_inspect"]
    );
    assert!(registry.list_by_domain("delta").is_empty());
    assert_eq!(domain_names(&registry), ["alpha", "beta", "gamma"]);

    let lookup = registry
        .find("alpha_lookup")
        .expect("alpha_lookup is registered");
    assert_eq!(lookup.domain, "alpha");
    assert_eq!(lookup.category, Category::Read);
    assert_eq!(lookup.permission, "alpha.read");
    assert_eq!(lookup.description, "Looks a key up.");
    assert_eq!(lookup.timeout, Some(Duration::from_millis(1500)));
    assert_eq!(lookup.input_schema["type"], "object");
    assert_eq!(lookup.input_schema["required"], json!(["key"]));
    match &lookup.origin {
        ToolOrigin::Linked { location } => {
            assert!(
                location.starts_with("crates/switchboard-registry/tests/boot.rs:")
                    || location.starts_with("tests/boot.rs:"),
                "{location}"
            );
        }
        other => panic!("a #[tool] is linked, not {other:?}"),
    }
    assert!(registry.find("alpha_lookupp").is_none());
    assert!(registry.find("").is_none());
    assert_eq!(registry.similar_names("alpha_lookupp"), ["alpha_lookup"]);
    registry.shutdown().await;
}

#[tokio::test]
async fn list_permitted_follows_the_matrix() {
    let matrix = PermissionMatrix::from_toml(
        "[roles]\nreader = [\"alpha.read\", \"beta.read\", \"gamma.*\"]\nboss = [\"*\"]\n",
    )
    .expect("a valid matrix");
    let registry = start_with_permissions(matrix).await;
    assert_eq!(
        names(&registry.list_permitted(&[Role::from("reader")])),
        ["alpha_lookup", "beta_inspect", "gamma_survey"]
    );
    assert_eq!(
        names(&registry.list_permitted(&[Role::from("boss")])).len(),
        6
    );
    assert!(registry.list_permitted(&[Role::from("nobody")]).is_empty());
    assert!(registry.list_permitted(&[]).is_empty());
    // One tool by name answers as the list does, for every tool and every set of roles.
    let role_sets: [&[Role]; 4] = [
        &[Role::from("reader")],
        &[Role::from("boss")],
        &[Role::from("nobody"), Role::from("reader")],
        &[],
    ];
    for roles in role_sets {
        let permitted = registry.list_permitted(roles);
        let listed = names(&permitted);
        for tool in registry.list() {
            let found = registry.find_permitted(&tool.name, roles);
            assert_eq!(
                found.is_some(),
                listed.contains(&&*tool.name),
                "{} for {roles:?}",
                tool.name
            );
            assert!(found.is_none_or(|found| Arc::ptr_eq(&found, &tool)));
        }
        assert!(registry.find_permitted("alpha_lookupp", roles).is_none());
    }
    registry.shutdown().await;
}

#[tokio::test]
async fn an_excluded_domain_and_its_tools_are_left_out() {
    let registry = start_excluding("gamma")
        .await
        .expect("the test tools are well formed");
    assert_eq!(
        names(&registry.list()),
        [
            "alpha_lookup",
            "alpha_suggest",
            "beta_apply",
            "beta_erase",
            "beta_inspect"
        ]
    );
    assert!(registry.list_by_domain("gamma").is_empty());
    assert!(registry.find("gamma_survey").is_none());
    assert!(
        registry
            .domains()
            .iter()
            .all(|status| status.name != "gamma")
    );
    assert!(registry.domain_actor("gamma").is_none());
    assert!(registry.excludes_domain("gamma"));
    assert!(!registry.excludes_domain("alpha"), "served");
    assert!(
        !registry.excludes_domain("delta"),
        "never linked, so never left out"
    );

    let error = registry
        .invoke(
            "gamma_survey",
            json!({}),
            &human_context("excluded", "admin"),
        )
        .await
        .expect_err("an excluded tool does not exist");
    assert_eq!(error.kind(), ErrorKind::ToolNotFound);

    // The other domains serve as usual.
    let found = registry
        .invoke(
            "alpha_lookup",
            json!({ "key": "k" }),
            &human_context("kept", "admin"),
        )
        .await
        .expect("alpha is kept");
    assert_eq!(found, json!("k"));
    registry.shutdown().await;
}

/// A file in this test's scratch directory, unique to `name`.
fn scratch_file(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("boot-{}-{name}", std::process::id()))
}

#[tokio::test]
async fn a_permission_matrix_is_read_from_a_toml_file() {
    let path = scratch_file("permissions.toml");
    std::fs::write(
        &path,
        "# Test matrix.\n[roles]\nreader = [\"alpha.read\", \"beta.*\"]\nsuggester = [\"alpha.suggest\"]\n",
    )
    .expect("the scratch directory is writable");
    let matrix = PermissionMatrix::from_file(&path).expect("a valid matrix file");
    let _ = std::fs::remove_file(&path);

    assert!(matrix.allows(&[Role::from("reader")], "beta.erase"));
    assert!(!matrix.allows(&[Role::from("reader")], "alpha.suggest"));
    assert_eq!(
        matrix.roles().map(Role::as_str).collect::<Vec<_>>(),
        ["reader", "suggester"]
    );

    let registry = start_with_permissions(matrix).await;
    let found = registry
        .invoke(
            "alpha_lookup",
            json!({ "key": "k" }),
            &human_context("reader-ok", "reader"),
        )
        .await
        .expect("the file grants alpha.read to readers");
    assert_eq!(found, json!("k"));
    let error = registry
        .invoke(
            "alpha_suggest",
            json!({}),
            &human_context("reader-denied", "reader"),
        )
        .await
        .expect_err("the file grants readers no alpha.suggest");
    assert_eq!(error.kind(), ErrorKind::PermissionDenied);
    // The built-in matrix is not in force: its `admin` role is unknown here.
    let error = registry
        .invoke(
            "alpha_lookup",
            json!({ "key": "k" }),
            &human_context("admin-denied", "admin"),
        )
        .await
        .expect_err("the file does not know admins");
    assert_eq!(error.kind(), ErrorKind::PermissionDenied);
    registry.shutdown().await;
}

#[test]
fn a_missing_permission_file_names_its_path() {
    let path = scratch_file("no-such-permissions.toml");
    let error = PermissionMatrix::from_file(&path).expect_err("the file does not exist");
    assert!(matches!(error, PermissionsError::Read { .. }), "{error:?}");
    let message = error.to_string();
    assert!(message.contains(&path.display().to_string()), "{message}");
    assert!(
        std::error::Error::source(&error).is_some(),
        "the I/O error is kept as the source"
    );
}

#[test]
fn a_malformed_permission_file_is_refused_with_the_reason() {
    let path = scratch_file("bad-permissions.toml");
    std::fs::write(&path, "[roles]\nreader = [\"alpha..read\"]\n").expect("writable");
    let error = PermissionMatrix::from_file(&path).expect_err("the pattern is malformed");
    let _ = std::fs::remove_file(&path);
    assert!(
        matches!(error, PermissionsError::Pattern { .. }),
        "{error:?}"
    );
    assert!(error.to_string().contains("`alpha..read`"), "{error}");

    let path = scratch_file("not-toml.toml");
    std::fs::write(&path, "roles = [").expect("writable");
    let error = PermissionMatrix::from_file(&path).expect_err("not TOML");
    let _ = std::fs::remove_file(&path);
    assert!(matches!(error, PermissionsError::Parse(_)), "{error:?}");
}
