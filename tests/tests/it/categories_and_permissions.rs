//! Categories and permissions, enforced on the real roster tools.
//!
//! `read` and `propose` tools run for anyone whose roles grant the permission; `execute` tools
//! only when a human started the call; `restricted` tools only when a human started it and
//! confirmed it. The category is checked before the permission, and both before the input, so
//! a refused caller learns nothing about what its params would have done. The permission
//! matrix is configuration: a custom one changes who may call what.

use serde_json::{Value, json};
use switchboard::{
    CallContext, Category, ErrorKind, Initiator, InvokeError, PermissionMatrix, ToolRegistry,
};
use switchboard_integration_tests::{
    assignee_of, boot, boot_with, confirmed, ctx, only_audit_record, seed_week_shifts,
};

const OPEN_SHIFT: &str = "acme-2026-11-28-am";
const WEEK: &str = "2026-11-23";

fn assign_params(user_id: &str) -> Value {
    json!({"shift_id": OPEN_SHIFT, "user_id": user_id})
}

async fn assign(registry: &ToolRegistry, context: &CallContext) -> Result<Value, InvokeError> {
    registry
        .invoke("roster_assign_shift", assign_params("mark"), context)
        .await
}

async fn clear(registry: &ToolRegistry, context: &CallContext) -> Result<Value, InvokeError> {
    registry
        .invoke("roster_clear_roster", json!({"week_start": WEEK}), context)
        .await
}

/// Checks that `result` is a `category_denied` for `tool` of `category` started by `initiator`.
fn assert_category_denied(
    result: Result<Value, InvokeError>,
    tool: &str,
    category: Category,
    initiator: Initiator,
) {
    match result {
        Err(InvokeError::CategoryDenied {
            tool: denied_tool,
            category: denied_category,
            initiator: denied_initiator,
            reason,
        }) => {
            assert_eq!(denied_tool, tool);
            assert_eq!(denied_category, category);
            assert_eq!(denied_initiator, initiator);
            assert!(!reason.is_empty());
        }
        other => panic!("expected category_denied, got {other:?}"),
    }
}

#[tokio::test]
async fn staff_may_read() {
    let runtime = boot().await;
    let sam = ctx("acme", "sam", &["staff"], Initiator::Agent);

    let shifts = seed_week_shifts(&runtime.registry, &sam).await;

    assert_eq!(shifts.len(), 14);
    assert!(
        only_audit_record(&runtime.registry, &sam)
            .await
            .outcome
            .is_ok()
    );
    runtime.shutdown().await;
}

#[tokio::test]
async fn an_agent_may_propose_and_proposing_changes_nothing() {
    let runtime = boot().await;
    let registry = &runtime.registry;
    let reader = ctx("acme", "mark", &["manager"], Initiator::Human);
    let before = seed_week_shifts(registry, &reader).await;

    let agent = ctx("acme", "sam", &["staff"], Initiator::Agent);
    let proposal = registry
        .invoke(
            "roster_propose_shift_swap",
            json!({"shift_id": "acme-2026-11-23-am", "with_user": "mark", "reason": "dentist"}),
            &agent,
        )
        .await
        .expect("an agent may propose a swap");

    assert_eq!(proposal["status"], "proposed");
    assert_eq!(proposal["from_user"], "sam");
    assert_eq!(proposal["to_user"], "mark");
    let after = seed_week_shifts(registry, &reader).await;
    assert_eq!(after, before, "a proposal leaves the roster as it was");
    assert_eq!(
        assignee_of(&after, "acme-2026-11-23-am").as_deref(),
        Some("sam")
    );
    runtime.shutdown().await;
}

#[tokio::test]
async fn an_agent_may_not_execute_even_with_the_permission() {
    let runtime = boot().await;
    let registry = &runtime.registry;
    let agent = ctx("acme", "mark", &["manager"], Initiator::Agent);

    let result = assign(registry, &agent).await;

    assert_category_denied(
        result,
        "roster_assign_shift",
        Category::Execute,
        Initiator::Agent,
    );
    let shifts = seed_week_shifts(registry, &agent).await;
    assert_eq!(assignee_of(&shifts, OPEN_SHIFT), None);
    runtime.shutdown().await;
}

#[tokio::test]
async fn a_human_manager_may_execute_and_the_next_read_sees_it() {
    let runtime = boot().await;
    let registry = &runtime.registry;
    let mark = ctx("acme", "mark", &["manager"], Initiator::Human);

    let assigned = assign(registry, &mark)
        .await
        .expect("a human manager may assign a shift");

    assert_eq!(assigned["id"], OPEN_SHIFT);
    assert_eq!(assigned["assignee"], "mark");
    let shifts = seed_week_shifts(registry, &mark).await;
    assert_eq!(assignee_of(&shifts, OPEN_SHIFT).as_deref(), Some("mark"));
    runtime.shutdown().await;
}

#[tokio::test]
async fn a_human_without_the_permission_may_not_execute() {
    let runtime = boot().await;
    let registry = &runtime.registry;
    let sam = ctx("acme", "sam", &["staff"], Initiator::Human);

    let error = assign(registry, &sam)
        .await
        .expect_err("staff may not assign");

    assert_eq!(
        error,
        InvokeError::PermissionDenied {
            tool: "roster_assign_shift".to_owned(),
            permission: "roster.shifts.assign".to_owned(),
            roles: vec!["staff".into()],
        }
    );
    let record = only_audit_record(registry, &sam).await;
    assert_eq!(record.outcome.as_str(), "permission_denied");
    assert_eq!(record.output_hash, None);
    let shifts = seed_week_shifts(registry, &sam).await;
    assert_eq!(assignee_of(&shifts, OPEN_SHIFT), None);
    runtime.shutdown().await;
}

#[tokio::test]
async fn restricted_needs_a_human_and_a_confirmation() {
    let runtime = boot().await;
    let registry = &runtime.registry;

    let unconfirmed_human = ctx("acme", "alice", &["admin"], Initiator::Human);
    assert_category_denied(
        clear(registry, &unconfirmed_human).await,
        "roster_clear_roster",
        Category::Restricted,
        Initiator::Human,
    );

    let confirmed_agent = confirmed(ctx("acme", "alice", &["admin"], Initiator::Agent));
    assert_category_denied(
        clear(registry, &confirmed_agent).await,
        "roster_clear_roster",
        Category::Restricted,
        Initiator::Agent,
    );

    // Neither refusal touched the roster.
    let reader = ctx("acme", "sam", &["staff"], Initiator::Agent);
    let shifts = seed_week_shifts(registry, &reader).await;
    assert_eq!(
        assignee_of(&shifts, "acme-2026-11-23-am").as_deref(),
        Some("sam")
    );

    let confirmed_human = confirmed(ctx("acme", "alice", &["admin"], Initiator::Human));
    let cleared = clear(registry, &confirmed_human)
        .await
        .expect("a confirmed human admin may clear the week");
    assert_eq!(cleared["cleared"], 8);
    let shifts = seed_week_shifts(registry, &reader).await;
    assert!(shifts.iter().all(|shift| shift["assignee"].is_null()));

    for (context, outcome) in [
        (&unconfirmed_human, "category_denied"),
        (&confirmed_agent, "category_denied"),
        (&confirmed_human, "ok"),
    ] {
        let record = only_audit_record(registry, context).await;
        assert_eq!(record.outcome.as_str(), outcome);
        assert_eq!(record.category, Some(Category::Restricted));
    }
    runtime.shutdown().await;
}

#[tokio::test]
async fn a_confirmation_does_not_stand_in_for_a_permission() {
    let runtime = boot().await;
    // A manager's roles do not grant `roster.roster.clear`, confirmed or not.
    let mark = confirmed(ctx("acme", "mark", &["manager"], Initiator::Human));

    let error = clear(&runtime.registry, &mark)
        .await
        .expect_err("only admins may clear");

    assert_eq!(error.kind(), ErrorKind::PermissionDenied);
    runtime.shutdown().await;
}

#[tokio::test]
async fn refusals_do_not_reveal_what_is_wrong_with_the_input() {
    let runtime = boot().await;
    let registry = &runtime.registry;
    let invalid = json!({"shift_id": "", "user_id": 42, "extra": true});

    // Without the permission: permission_denied, not invalid_input.
    let sam = ctx("acme", "sam", &["staff"], Initiator::Human);
    let error = registry
        .invoke("roster_assign_shift", invalid.clone(), &sam)
        .await
        .expect_err("refused");
    assert_eq!(error.kind(), ErrorKind::PermissionDenied);
    let rendered = serde_json::to_string(&error).expect("errors serialize");
    for detail in ["shift_id", "user_id", "extra", "/"] {
        assert!(
            !rendered.contains(detail),
            "`{detail}` leaked into the refusal: {rendered}"
        );
    }

    // As an agent: category_denied, not invalid_input.
    let agent = ctx("acme", "mark", &["manager"], Initiator::Agent);
    let error = registry
        .invoke("roster_assign_shift", invalid.clone(), &agent)
        .await
        .expect_err("refused");
    assert_eq!(error.kind(), ErrorKind::CategoryDenied);

    // A caller allowed to run the tool gets every input error.
    let mark = ctx("acme", "mark", &["manager"], Initiator::Human);
    let error = registry
        .invoke("roster_assign_shift", invalid, &mark)
        .await
        .expect_err("invalid");
    let InvokeError::InvalidInput { errors, .. } = &error else {
        panic!("expected invalid_input, got {error:?}");
    };
    assert!(errors.len() >= 2, "{errors:?}");
    runtime.shutdown().await;
}

#[tokio::test]
async fn a_custom_permission_matrix_changes_who_may_call_what() {
    let permissions = PermissionMatrix::from_toml(
        r#"
        [roles]
        admin = ["*"]
        # Managers may read and propose, but no longer assign.
        manager = ["core.*", "roster.shifts.read", "roster.swaps.*"]
        # Staff may assign shifts.
        staff = ["core.users.read", "roster.shifts.read", "roster.shifts.assign"]
        "#,
    )
    .expect("the matrix parses");
    let runtime = boot_with(ToolRegistry::builder().permissions(permissions)).await;
    let registry = &runtime.registry;

    let sam = ctx("acme", "sam", &["staff"], Initiator::Human);
    let assigned = assign(registry, &sam)
        .await
        .expect("the custom matrix lets staff assign");
    assert_eq!(assigned["assignee"], "mark");

    let mark = ctx("acme", "mark", &["manager"], Initiator::Human);
    let error = assign(registry, &mark)
        .await
        .expect_err("the custom matrix no longer lets managers assign");
    assert_eq!(error.kind(), ErrorKind::PermissionDenied);

    // Staff lost `roster.swaps.propose` in this matrix.
    let error = registry
        .invoke(
            "roster_propose_shift_swap",
            json!({"shift_id": OPEN_SHIFT, "with_user": "sam"}),
            &sam,
        )
        .await
        .expect_err("staff may no longer propose");
    assert_eq!(error.kind(), ErrorKind::PermissionDenied);

    // The matrix changes permissions, never categories: an agent still may not execute.
    let agent = ctx("acme", "sam", &["staff"], Initiator::Agent);
    assert_category_denied(
        assign(registry, &agent).await,
        "roster_assign_shift",
        Category::Execute,
        Initiator::Agent,
    );
    runtime.shutdown().await;
}

#[tokio::test]
async fn a_caller_without_roles_may_call_nothing() {
    let runtime = boot().await;
    let nobody = ctx("acme", "sam", &[], Initiator::Human);

    let error = runtime
        .registry
        .invoke("core_get_current_user", json!({}), &nobody)
        .await
        .expect_err("no role grants anything");

    assert_eq!(error.kind(), ErrorKind::PermissionDenied);
    runtime.shutdown().await;
}
