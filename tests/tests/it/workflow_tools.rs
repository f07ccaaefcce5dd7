//! The sample-domain tools the example workflows are built from, called through the real
//! registry step by step, the way a workflow run calls them.
//!
//! The shift swap saga reads two shifts, assigns each to the other's assignee, and undoes the
//! first assignment when the second fails; assigning to someone who is not a member is the
//! failure it demonstrates (`unknown_member`). Onboarding adds a person to the directory and the
//! roster, gives them the open shifts of a week, and posts a welcome notice.

use serde_json::{Value, json};
use switchboard::{CallContext, Category, Initiator, InvokeError, ToolError, ToolRegistry};
use switchboard_integration_tests::{
    SEED_WEEK_END, SEED_WEEK_START, boot, ctx, recorrelated, seed_week_shifts, shift_range,
};

const SHIFT_A: &str = "acme-2026-11-23-am";
const SHIFT_B: &str = "acme-2026-11-23-pm";

/// The `ToolError` of a `tool_failed` outcome; fails the test on anything else.
fn tool_error(result: Result<Value, InvokeError>) -> ToolError {
    match result {
        Err(InvokeError::ToolFailed { error, .. }) => error,
        other => panic!("expected tool_failed, got {other:?}"),
    }
}

async fn call(
    registry: &ToolRegistry,
    tool: &str,
    params: Value,
    context: &CallContext,
) -> Result<Value, InvokeError> {
    registry.invoke(tool, params, context).await
}

async fn assign(
    registry: &ToolRegistry,
    context: &CallContext,
    shift_id: &str,
    user_id: &str,
) -> Result<Value, InvokeError> {
    let params = json!({"shift_id": shift_id, "user_id": user_id});
    call(registry, "roster_assign_shift", params, context).await
}

#[tokio::test]
async fn a_failed_second_assignment_is_compensated_by_reassigning_the_first() {
    let runtime = boot().await;
    let registry = &runtime.registry;
    let mark = ctx("acme", "mark", &["manager"], Initiator::Human);
    let before = seed_week_shifts(registry, &mark).await;

    let shift_a = call(
        registry,
        "roster_get_shift",
        json!({"shift_id": SHIFT_A}),
        &mark,
    )
    .await
    .expect("reads shift A");
    let shift_b = call(
        registry,
        "roster_get_shift",
        json!({"shift_id": SHIFT_B}),
        &mark,
    )
    .await
    .expect("reads shift B");
    assert_eq!(shift_a["assignee"], "sam");
    assert_eq!(shift_b["assignee"], "mark");

    assign(registry, &mark, SHIFT_A, "mark")
        .await
        .expect("the first assignment succeeds");
    // The second step names someone who is not on acme's roster (she works for globex).
    let error = tool_error(assign(registry, &mark, SHIFT_B, "gina").await);
    assert_eq!(error.code(), "unknown_member");
    assign(registry, &mark, SHIFT_A, "sam")
        .await
        .expect("the compensation gives shift A back to sam");

    assert_eq!(seed_week_shifts(registry, &mark).await, before);
    runtime.shutdown().await;
}

#[tokio::test]
async fn assigning_an_open_shift_is_compensated_by_unassigning_it() {
    let runtime = boot().await;
    let registry = &runtime.registry;
    let mark = ctx("acme", "mark", &["manager"], Initiator::Human);
    let before = seed_week_shifts(registry, &mark).await;
    let open_shift = "acme-2026-11-28-am";

    assign(registry, &mark, open_shift, "sam")
        .await
        .expect("assigns the open shift");
    let params = json!({"shift_id": open_shift});
    let unassigned = call(registry, "roster_unassign_shift", params.clone(), &mark)
        .await
        .expect("unassigns");
    assert_eq!(unassigned["id"], open_shift);
    assert_eq!(unassigned.get("assignee"), None);
    assert_eq!(seed_week_shifts(registry, &mark).await, before);

    // Undoing an assignment is the power to make one: staff may do neither.
    let sam = ctx("acme", "sam", &["staff"], Initiator::Human);
    let refused = call(registry, "roster_unassign_shift", params, &sam).await;
    assert!(
        matches!(refused, Err(InvokeError::PermissionDenied { ref permission, .. }) if permission == "roster.shifts.assign"),
        "{refused:?}"
    );
    runtime.shutdown().await;
}

#[tokio::test]
async fn onboarding_adds_a_member_gives_them_the_open_shifts_and_welcomes_them() {
    let runtime = boot().await;
    let registry = &runtime.registry;
    let mark = ctx("acme", "mark", &["manager"], Initiator::Human);
    let nina = json!({"user_id": "nina", "name": "Nina Novak"});

    let mut directory_entry = nina.clone();
    directory_entry["roles"] = json!(["staff"]);
    let added = call(registry, "core_add_member", directory_entry.clone(), &mark)
        .await
        .expect("adds nina to the directory");
    assert_eq!(added["org_id"], "acme");
    // The same call again is a retry and gets the first answer back; a new call is refused.
    let retried = call(registry, "core_add_member", directory_entry.clone(), &mark)
        .await
        .expect("a retry returns the first answer");
    assert_eq!(retried, added);
    let again = recorrelated(mark.clone());
    let duplicate = tool_error(call(registry, "core_add_member", directory_entry, &again).await);
    assert_eq!(duplicate.code(), "member_exists");
    let users = call(registry, "core_list_users", json!({}), &mark)
        .await
        .expect("lists users");
    assert!(
        users["users"]
            .as_array()
            .is_some_and(|users| users.iter().any(|user| user["user_id"] == "nina"))
    );

    let mut roster_entry = nina;
    roster_entry["role"] = json!("staff");
    call(registry, "roster_add_member", roster_entry.clone(), &mark)
        .await
        .expect("puts nina on the roster");
    let duplicate = tool_error(call(registry, "roster_add_member", roster_entry, &again).await);
    assert_eq!(duplicate.code(), "member_exists");

    let mut open_week = shift_range(SEED_WEEK_START, SEED_WEEK_END);
    open_week["open_only"] = json!(true);
    let open = call(registry, "roster_list_shifts", open_week.clone(), &mark)
        .await
        .expect("lists the open shifts");
    let open_ids: Vec<String> = open["shifts"]
        .as_array()
        .expect("a list of shifts")
        .iter()
        .map(|shift| shift["id"].as_str().expect("an id").to_owned())
        .collect();
    assert_eq!(open_ids.len(), 6, "{open_ids:?}");
    for shift_id in &open_ids {
        assign(registry, &mark, shift_id, "nina")
            .await
            .expect("nina is on the roster");
    }
    let still_open = call(registry, "roster_list_shifts", open_week, &mark)
        .await
        .expect("lists the open shifts");
    assert_eq!(still_open["shifts"], json!([]));

    let welcome = json!({"text": "Welcome to the team, Nina!"});
    let notice = call(registry, "roster_post_notice", welcome, &mark)
        .await
        .expect("posts the welcome notice");
    assert_eq!(notice["author"], "mark");
    let sam = ctx("acme", "sam", &["staff"], Initiator::Agent);
    let board = call(registry, "roster_list_notices", json!({}), &sam)
        .await
        .expect("staff read the board");
    assert_eq!(board["notices"], json!([notice]));
    runtime.shutdown().await;
}

#[tokio::test]
async fn the_new_writes_are_execute_tools_for_managers() {
    let runtime = boot().await;
    let registry = &runtime.registry;
    let welcome = json!({"text": "Welcome!"});

    // An agent acting alone may not execute, even as a manager.
    let agent = ctx("acme", "mark", &["manager"], Initiator::Agent);
    let refused = call(registry, "roster_post_notice", welcome.clone(), &agent).await;
    assert!(
        matches!(
            refused,
            Err(InvokeError::CategoryDenied {
                category: Category::Execute,
                ..
            })
        ),
        "{refused:?}"
    );
    // Staff hold none of the new write permissions.
    let sam = ctx("acme", "sam", &["staff"], Initiator::Human);
    let member = json!({"user_id": "nina", "name": "Nina Novak", "roles": ["staff"]});
    for (tool, params, permission) in [
        ("roster_post_notice", welcome, "roster.notices.post"),
        ("core_add_member", member, "core.users.add"),
        (
            "roster_add_member",
            json!({"user_id": "nina", "name": "Nina Novak", "role": "staff"}),
            "roster.members.add",
        ),
    ] {
        let refused = call(registry, tool, params, &sam).await;
        assert!(
            matches!(refused, Err(InvokeError::PermissionDenied { permission: ref denied, .. }) if denied == permission),
            "{tool}: {refused:?}"
        );
    }
    runtime.shutdown().await;
}
