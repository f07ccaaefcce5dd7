//! Tenant isolation through the real runtime: a caller acting for one organisation can never
//! see or change another organisation's data, and cannot even learn whether it exists.
//!
//! The organisation always comes from the call context: tools never take it from params (the
//! registry refuses an `org_id` anywhere in them), and every output that names an organisation
//! names the caller's.

use std::collections::BTreeSet;

use jiff::{
    ToSpan,
    civil::{Date, date},
};
use proptest::prelude::*;
use serde_json::{Value, json};
use switchboard::{ErrorKind, Initiator, InvokeError, ToolError, ToolRegistry};
use switchboard_integration_tests::{
    assignee_of, audit_records, boot, confirmed, ctx, only_audit_record, recorrelated,
    seed_week_shifts, shift_range,
};

fn shift_ids(shifts: &[Value]) -> BTreeSet<String> {
    shifts
        .iter()
        .map(|shift| shift["id"].as_str().expect("a shift has an id").to_owned())
        .collect()
}

/// The `ToolError` of a `tool_failed` outcome; fails the test on anything else.
fn tool_error(result: Result<Value, InvokeError>) -> ToolError {
    match result {
        Err(InvokeError::ToolFailed { error, .. }) => error,
        other => panic!("expected tool_failed, got {other:?}"),
    }
}

async fn assign(
    registry: &ToolRegistry,
    context: &switchboard::CallContext,
    shift_id: &str,
    user_id: &str,
) -> Result<Value, InvokeError> {
    registry
        .invoke(
            "roster_assign_shift",
            json!({"shift_id": shift_id, "user_id": user_id}),
            context,
        )
        .await
}

#[tokio::test]
async fn each_org_lists_only_its_own_shifts() {
    let runtime = boot().await;
    let acme = ctx("acme", "sam", &["staff"], Initiator::Agent);
    let globex = ctx("globex", "sue", &["staff"], Initiator::Agent);

    let acme_shifts = seed_week_shifts(&runtime.registry, &acme).await;
    let globex_shifts = seed_week_shifts(&runtime.registry, &globex).await;

    assert_eq!(acme_shifts.len(), 14);
    assert_eq!(globex_shifts.len(), 14);
    assert!(acme_shifts.iter().all(|shift| shift["org_id"] == "acme"));
    assert!(
        globex_shifts
            .iter()
            .all(|shift| shift["org_id"] == "globex")
    );
    let acme_ids = shift_ids(&acme_shifts);
    let globex_ids = shift_ids(&globex_shifts);
    assert!(
        acme_ids.is_disjoint(&globex_ids),
        "shared ids: {:?}",
        acme_ids.intersection(&globex_ids).collect::<Vec<_>>()
    );

    // An organisation nobody seeded sees nothing, rather than someone else's roster.
    let initech = ctx("initech", "ian", &["staff"], Initiator::Agent);
    assert!(
        seed_week_shifts(&runtime.registry, &initech)
            .await
            .is_empty()
    );
    runtime.shutdown().await;
}

#[tokio::test]
async fn another_orgs_shift_is_not_found_exactly_like_a_missing_one() {
    let runtime = boot().await;
    let registry = &runtime.registry;
    let mark = ctx("acme", "mark", &["manager"], Initiator::Human);
    let hank = ctx("globex", "hank", &["manager"], Initiator::Human);
    let globex_before = seed_week_shifts(registry, &hank).await;

    let foreign_id = "globex-2026-11-24-am";
    let missing_id = "acme-1999-01-01-am";
    let foreign = tool_error(assign(registry, &mark, foreign_id, "sam").await);
    let missing = tool_error(assign(registry, &mark, missing_id, "sam").await);

    assert_eq!(foreign.code(), "shift_not_found");
    assert_eq!(missing.code(), "shift_not_found");
    // The only difference is the id the caller typed in: nothing says the shift exists elsewhere.
    assert_eq!(
        foreign.message().replace(foreign_id, "<id>"),
        missing.message().replace(missing_id, "<id>")
    );

    // Globex's roster is untouched, and both refusals are audited against acme.
    assert_eq!(seed_week_shifts(registry, &hank).await, globex_before);
    let records = audit_records(registry, &mark).await;
    assert_eq!(records.len(), 2);
    for record in records {
        assert_eq!(record.outcome.as_str(), "tool_failed");
        assert_eq!(record.org_id.as_ref().map(|id| id.as_str()), Some("acme"));
    }
    runtime.shutdown().await;
}

#[tokio::test]
async fn another_orgs_user_is_not_a_member() {
    let runtime = boot().await;
    let registry = &runtime.registry;
    let mark = ctx("acme", "mark", &["manager"], Initiator::Human);
    let shift_id = "acme-2026-11-28-am";
    let before = seed_week_shifts(registry, &mark).await;

    let error = tool_error(assign(registry, &mark, shift_id, "sue").await);

    assert_eq!(error.code(), "unknown_member");
    let after = seed_week_shifts(registry, &mark).await;
    assert_eq!(after, before);
    assert_eq!(assignee_of(&after, shift_id), None);
    runtime.shutdown().await;
}

#[tokio::test]
async fn clearing_a_week_clears_only_the_callers_org() {
    let runtime = boot().await;
    let registry = &runtime.registry;
    let alice = confirmed(ctx("acme", "alice", &["admin"], Initiator::Human));
    let gina = ctx("globex", "gina", &["admin"], Initiator::Human);
    let globex_before = seed_week_shifts(registry, &gina).await;
    assert!(
        globex_before
            .iter()
            .any(|shift| !shift["assignee"].is_null()),
        "the seed assigns some globex shifts"
    );

    let cleared = registry
        .invoke(
            "roster_clear_roster",
            json!({"week_start": "2026-11-23"}),
            &alice,
        )
        .await
        .expect("a confirmed human admin may clear a week");

    // Five weekday mornings and the Monday, Wednesday and Friday evenings were assigned.
    assert_eq!(
        cleared,
        json!({"org_id": "acme", "week_start": "2026-11-23", "cleared": 8})
    );
    let acme_after = seed_week_shifts(registry, &alice).await;
    assert!(acme_after.iter().all(|shift| shift["assignee"].is_null()));
    assert_eq!(seed_week_shifts(registry, &gina).await, globex_before);
    runtime.shutdown().await;
}

#[tokio::test]
async fn the_current_user_is_looked_up_only_in_the_callers_org() {
    let runtime = boot().await;
    // `gina` exists, but in globex: calling as acme must not reveal her name.
    let context = ctx("acme", "gina", &["admin"], Initiator::Human);

    let user = runtime
        .registry
        .invoke("core_get_current_user", json!({}), &context)
        .await
        .expect("anyone with a role may ask who they are");

    assert_eq!(
        user,
        json!({"user_id": "gina", "roles": ["admin"], "org_id": "acme"})
    );
    runtime.shutdown().await;
}

#[tokio::test]
async fn every_output_names_the_org_of_the_context() {
    let runtime = boot().await;
    let registry = &runtime.registry;
    for (org_id, admin) in [("acme", "alice"), ("globex", "gina")] {
        let context = confirmed(ctx(org_id, admin, &["admin"], Initiator::Human));

        let user = registry
            .invoke("core_get_current_user", json!({}), &context)
            .await
            .expect("reads the current user");
        assert_eq!(user["org_id"], org_id);

        let own_shift = format!("{org_id}-2026-11-29-pm");
        let assigned = assign(registry, &context, &own_shift, admin)
            .await
            .expect("an admin assigns a shift of their own org to themselves");
        assert_eq!(assigned["org_id"], org_id);
        assert_eq!(assigned["assignee"], admin);

        let proposal = registry
            .invoke(
                "roster_propose_shift_swap",
                json!({"shift_id": own_shift, "with_user": admin}),
                &context,
            )
            .await;
        // Already assigned to them by the call above: the proposal is refused, in their org.
        assert_eq!(tool_error(proposal).code(), "already_assigned");

        let cleared = registry
            .invoke(
                "roster_clear_roster",
                json!({"week_start": "2026-11-23"}),
                &context,
            )
            .await
            .expect("a confirmed admin clears the week");
        assert_eq!(cleared["org_id"], org_id);

        // Four calls under one correlation id, each audited against the context's org.
        let records = audit_records(registry, &context).await;
        assert_eq!(records.len(), 4, "{records:#?}");
        assert!(records.iter().all(|record| {
            record
                .org_id
                .as_ref()
                .is_some_and(|id| id.as_str() == org_id)
        }));
    }
    runtime.shutdown().await;
}

#[tokio::test]
async fn an_org_id_in_params_is_refused_at_any_depth() {
    let runtime = boot().await;
    let registry = &runtime.registry;
    let sam = ctx("acme", "sam", &["staff"], Initiator::Agent);

    for (params, path) in [
        (
            json!({"from": "2026-11-23", "to": "2026-11-29", "org_id": "globex"}),
            "/org_id",
        ),
        (
            json!({"from": "2026-11-23", "to": "2026-11-29", "filter": [{"orgId": "globex"}]}),
            "/filter/0/orgId",
        ),
    ] {
        let context = recorrelated(sam.clone());
        let error = registry
            .invoke("roster_list_shifts", params, &context)
            .await
            .expect_err("an org_id in params is refused");
        assert_eq!(error.kind(), ErrorKind::OrgIdNotAllowed);
        assert_eq!(
            error,
            InvokeError::OrgIdNotAllowed {
                path: path.to_owned()
            }
        );
        let record = only_audit_record(registry, &context).await;
        assert_eq!(record.outcome.as_str(), "org_id_not_allowed");
    }
    runtime.shutdown().await;
}

#[test]
fn any_range_lists_only_the_callers_shifts_within_it() {
    let tokio_runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("a tokio runtime starts");
    let runtime = tokio_runtime.block_on(boot());
    let orgs = ["acme", "globex", "initech"];
    // Ranges of 1 to 31 days starting up to two weeks either side of the seeded week.
    let strategy = (0..orgs.len(), -14_i64..=14, 0_i64..31);

    proptest!(ProptestConfig::with_cases(64), |((org_index, offset, length) in strategy)| {
        let org_id = orgs[org_index];
        let from: Date = date(2026, 11, 23)
            .checked_add(offset.days())
            .expect("the offset stays within jiff's range");
        let to: Date = from.checked_add(length.days()).expect("and so does the length");
        let context = ctx(org_id, "someone", &["staff"], Initiator::Agent);
        let listed = tokio_runtime
            .block_on(runtime.registry.invoke("roster_list_shifts", shift_range(from, to), &context))
            .expect("a range of at most 31 days is valid");
        for shift in listed["shifts"].as_array().expect("a shifts array") {
            prop_assert_eq!(&shift["org_id"], org_id);
            let day: Date = shift["date"]
                .as_str()
                .and_then(|text| text.parse().ok())
                .expect("a shift has a date");
            prop_assert!((from..=to).contains(&day), "{} outside {}..={}", day, from, to);
        }
    });
    tokio_runtime.block_on(runtime.shutdown());
}
