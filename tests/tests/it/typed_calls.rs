//! Typed calls (`registry.call::<Marker>(input, &ctx)`), as Rust services make them, against
//! the JSON calls agents make (`registry.invoke(name, params, &ctx)`).
//!
//! A typed call skips JSON but nothing else: it gets the same checks, the same validation
//! errors, and an audit record with the same input hash as the equivalent JSON call, so the
//! audit trail cannot tell the two apart.

use jiff::civil::date;
use serde_json::json;
use switchboard::{
    CallContext, Category, ErrorKind, FieldError, Initiator, InvokeError, NoInput, Switchboard,
    audit::{AuditRecord, digest_json},
};
use switchboard_domain_directory::{CurrentUser, GetCurrentUser};
use switchboard_domain_roster::{
    AssignShift, AssignShiftInput, ListShifts, ListShiftsInput, ShiftList,
};
use switchboard_integration_tests::{boot, ctx, only_audit_record, recorrelated};

/// Makes the same call twice, typed and as JSON, under two correlation ids, and returns both
/// audit records (typed first).
async fn typed_and_json_records(
    runtime: &Switchboard,
    typed: &CallContext,
    json: &CallContext,
) -> (AuditRecord, AuditRecord) {
    (
        only_audit_record(&runtime.registry, typed).await,
        only_audit_record(&runtime.registry, json).await,
    )
}

/// The fields of two records of the same call that must agree, whichever way it was made.
fn assert_same_call(typed: &AuditRecord, json: &AuditRecord) {
    assert_eq!(typed.tool, json.tool);
    assert_eq!(typed.domain, json.domain);
    assert_eq!(typed.category, json.category);
    assert_eq!(typed.org_id, json.org_id);
    assert_eq!(typed.user_id, json.user_id);
    assert_eq!(typed.session_id, json.session_id);
    assert_eq!(typed.outcome, json.outcome);
    assert_eq!(
        typed.input_hash, json.input_hash,
        "a typed call and the equivalent JSON call must hash their input alike"
    );
    assert_eq!(typed.output_hash, json.output_hash);
    assert_ne!(typed.correlation_id, json.correlation_id);
}

#[tokio::test]
async fn get_current_user_typed_matches_its_json_call() {
    let runtime = boot().await;
    let typed_ctx = ctx("acme", "mark", &["manager"], Initiator::Agent);
    let json_ctx = recorrelated(typed_ctx.clone());

    let user: CurrentUser = runtime
        .registry
        .call::<GetCurrentUser>(NoInput {}, &typed_ctx)
        .await
        .expect("a typed call of a read tool succeeds");
    let json_user = runtime
        .registry
        .invoke("core_get_current_user", json!({}), &json_ctx)
        .await
        .expect("the JSON call succeeds");

    assert_eq!(
        user,
        CurrentUser {
            user_id: "mark".to_owned(),
            name: Some("Mark Mendez".to_owned()),
            roles: vec!["manager".to_owned()],
            org_id: "acme".to_owned(),
        }
    );
    assert_eq!(serde_json::to_value(&user).expect("serializes"), json_user);
    let (typed, json) = typed_and_json_records(&runtime, &typed_ctx, &json_ctx).await;
    assert_same_call(&typed, &json);
    assert_eq!(
        typed.input_hash,
        Some(digest_json(&json!({})).expect("JSON has a digest"))
    );
    assert!(typed.outcome.is_ok());
    runtime.shutdown().await;
}

#[tokio::test]
async fn list_shifts_typed_matches_its_json_call() {
    let runtime = boot().await;
    let typed_ctx = ctx("globex", "sue", &["staff"], Initiator::Agent);
    let json_ctx = recorrelated(typed_ctx.clone());
    let input = ListShiftsInput {
        from: date(2026, 11, 23),
        to: date(2026, 11, 25),
        assignee: None,
        open_only: false,
    };

    let listed: ShiftList = runtime
        .registry
        .call::<ListShifts>(input, &typed_ctx)
        .await
        .expect("a typed listing succeeds");
    // The JSON an agent (or the orchestrator's "shifts from … to …" intent) sends: the optional
    // `assignee` is simply left out.
    let json_listed = runtime
        .registry
        .invoke(
            "roster_list_shifts",
            json!({"from": "2026-11-23", "to": "2026-11-25"}),
            &json_ctx,
        )
        .await
        .expect("the JSON listing succeeds");

    assert_eq!(listed.shifts.len(), 6);
    assert!(listed.shifts.iter().all(|shift| shift.org_id == "globex"));
    assert_eq!(
        serde_json::to_value(&listed).expect("serializes"),
        json_listed
    );
    // Both calls decode to the same `ListShiftsInput`, so the audit trail must not tell them
    // apart: an omitted optional field and `None` are the same input.
    let (typed, json) = typed_and_json_records(&runtime, &typed_ctx, &json_ctx).await;
    assert_same_call(&typed, &json);
    runtime.shutdown().await;
}

#[tokio::test]
async fn list_shifts_typed_with_every_field_matches_its_json_call() {
    let runtime = boot().await;
    let typed_ctx = ctx("acme", "sam", &["staff"], Initiator::Agent);
    let json_ctx = recorrelated(typed_ctx.clone());
    let input = ListShiftsInput {
        from: date(2026, 11, 23),
        to: date(2026, 11, 29),
        assignee: Some("sam".to_owned()),
        open_only: false,
    };

    let listed = runtime
        .registry
        .call::<ListShifts>(input, &typed_ctx)
        .await
        .expect("a typed listing succeeds");
    runtime
        .registry
        .invoke(
            "roster_list_shifts",
            json!({"from": "2026-11-23", "to": "2026-11-29", "assignee": "sam"}),
            &json_ctx,
        )
        .await
        .expect("the JSON listing succeeds");

    // Sam works the five weekday mornings.
    assert_eq!(listed.shifts.len(), 5);
    assert!(
        listed
            .shifts
            .iter()
            .all(|shift| shift.assignee.as_deref() == Some("sam"))
    );
    let (typed, json) = typed_and_json_records(&runtime, &typed_ctx, &json_ctx).await;
    assert_same_call(&typed, &json);
    runtime.shutdown().await;
}

#[tokio::test]
async fn typed_validation_errors_are_invalid_input_like_json_ones() {
    let runtime = boot().await;
    let typed_ctx = ctx("acme", "sam", &["staff"], Initiator::Agent);
    let json_ctx = recorrelated(typed_ctx.clone());
    let reversed = ListShiftsInput {
        from: date(2026, 11, 25),
        to: date(2026, 11, 23),
        assignee: None,
        open_only: false,
    };

    let typed_error = runtime
        .registry
        .call::<ListShifts>(reversed, &typed_ctx)
        .await
        .expect_err("to < from is invalid");
    let json_error = runtime
        .registry
        .invoke(
            "roster_list_shifts",
            json!({"from": "2026-11-25", "to": "2026-11-23", "assignee": null}),
            &json_ctx,
        )
        .await
        .expect_err("to < from is invalid");

    assert_eq!(typed_error.kind(), ErrorKind::InvalidInput);
    assert_eq!(
        typed_error,
        InvokeError::InvalidInput {
            tool: "roster_list_shifts".to_owned(),
            errors: vec![FieldError::new(
                "",
                "`to` (2026-11-23) is before `from` (2026-11-25); give the earlier day as `from`"
            )],
        }
    );
    assert_eq!(typed_error, json_error);
    let (typed, json) = typed_and_json_records(&runtime, &typed_ctx, &json_ctx).await;
    assert_same_call(&typed, &json);
    assert_eq!(typed.outcome.as_str(), "invalid_input");
    assert_eq!(typed.output_hash, None);
    runtime.shutdown().await;
}

#[tokio::test]
async fn typed_calls_get_the_same_category_and_permission_checks() {
    let runtime = boot().await;
    let registry = &runtime.registry;
    let input = || AssignShiftInput {
        shift_id: "acme-2026-11-28-am".to_owned(),
        user_id: "sam".to_owned(),
    };

    let agent = ctx("acme", "mark", &["manager"], Initiator::Agent);
    let error = registry
        .call::<AssignShift>(input(), &agent)
        .await
        .expect_err("an agent may not execute");
    assert_eq!(error.kind(), ErrorKind::CategoryDenied);

    let staff = ctx("acme", "sam", &["staff"], Initiator::Human);
    let error = registry
        .call::<AssignShift>(input(), &staff)
        .await
        .expect_err("staff may not assign");
    assert_eq!(error.kind(), ErrorKind::PermissionDenied);

    let manager = ctx("acme", "mark", &["manager"], Initiator::Human);
    let shift = registry
        .call::<AssignShift>(input(), &manager)
        .await
        .expect("a human manager may assign");
    assert_eq!(shift.assignee.as_deref(), Some("sam"));
    assert_eq!(shift.org_id, "acme");

    for (context, outcome) in [
        (&agent, "category_denied"),
        (&staff, "permission_denied"),
        (&manager, "ok"),
    ] {
        let record = only_audit_record(registry, context).await;
        assert_eq!(record.outcome.as_str(), outcome);
        assert_eq!(record.category, Some(Category::Execute));
        assert_eq!(&*record.tool, "roster_assign_shift");
    }
    runtime.shutdown().await;
}

#[tokio::test]
async fn a_typed_call_with_an_incomplete_context_is_refused_and_audited() {
    let runtime = boot().await;
    let mut context = ctx("acme", "sam", &["staff"], Initiator::Agent);
    context.org_id = None;
    context.session_id = None;

    let error = runtime
        .registry
        .call::<GetCurrentUser>(NoInput {}, &context)
        .await
        .expect_err("the context lacks org_id and session_id");

    assert_eq!(
        error,
        InvokeError::MissingContext {
            fields: vec!["org_id", "session_id"]
        }
    );
    let record = only_audit_record(&runtime.registry, &context).await;
    assert_eq!(record.outcome.as_str(), "missing_context");
    assert_eq!(record.org_id, None);
    runtime.shutdown().await;
}

#[tokio::test]
async fn large_params_and_small_ones_hash_the_same_way() {
    // A JSON call digests small params itself and hands large ones to the audit writer; the
    // record cannot tell which.
    let runtime = boot().await;
    for note_len in [10, 10_000] {
        let context = ctx("acme", "mark", &["manager"], Initiator::Agent);
        let params = json!({
            "from": "2026-11-23",
            "to": "2026-11-25",
            "note": "x".repeat(note_len),
        });
        let refused = runtime
            .registry
            .invoke("roster_list_shifts", params.clone(), &context)
            .await;
        assert!(refused.is_err(), "`note` is not a parameter of the tool");
        let record = only_audit_record(&runtime.registry, &context).await;
        assert_eq!(
            record.input_hash,
            Some(digest_json(&params).expect("JSON has a digest")),
            "note of {note_len} bytes"
        );
    }
    runtime.shutdown().await;
}
