//! The whole chain, end to end: an utterance reaches the Orchestrator, which routes it to a
//! tool through the ToolRegistry; the tool runs in its domain, and the call leaves exactly one
//! audit record under the caller's correlation id.
//!
//! A routing failure (`no_route`) invokes nothing and so leaves no record; a routed call that
//! the registry refuses (`invalid_input`) is still audited.

use jiff::civil::{Date, date};
use serde_json::json;
use switchboard::{
    AskError, Category, ErrorKind, Initiator, InvokeError,
    audit::{Outcome, digest_json},
};
use switchboard_integration_tests::{audit_records, boot, ctx, is_hex_digest, only_audit_record};

#[tokio::test]
async fn who_am_i_is_routed_run_and_audited_once() {
    let runtime = boot().await;
    let context = ctx("acme", "alice", &["admin"], Initiator::Human);

    let answer = runtime
        .orchestrator
        .ask("Who am I?", &context)
        .await
        .expect("\"Who am I?\" routes to a tool that succeeds");

    assert_eq!(answer.route.tool, "core_get_current_user");
    assert_eq!(answer.route.tier, 1);
    assert!(
        answer.route.cost.abs() < f64::EPSILON,
        "a pattern match is free"
    );
    assert_eq!(answer.route.intent.as_deref(), Some("who am i"));
    assert_eq!(answer.result["user_id"], "alice");
    assert_eq!(answer.result["org_id"], "acme");
    assert_eq!(answer.result["name"], "Alice Archer");
    assert_eq!(answer.result["roles"], json!(["admin"]));

    let record = only_audit_record(&runtime.registry, &context).await;
    assert_eq!(&*record.tool, "core_get_current_user");
    assert_eq!(record.domain.as_deref(), Some("core"));
    assert_eq!(record.category, Some(Category::Read));
    assert_eq!(record.outcome, Outcome::Ok);
    assert_eq!(record.outcome.as_str(), "ok");
    let input_hash = record.input_hash.expect("the params have a digest");
    assert!(is_hex_digest(&input_hash.to_hex()), "{record:?}");
    assert_eq!(
        input_hash,
        digest_json(&answer.route.params).expect("JSON has a digest")
    );
    let output_hash = record
        .output_hash
        .expect("a successful call has an output hash");
    assert!(is_hex_digest(&output_hash.to_hex()));
    assert_eq!(
        output_hash,
        digest_json(&answer.result).expect("JSON has a digest")
    );
    assert_eq!(record.session_id, context.session_id);
    assert_eq!(record.correlation_id, context.correlation_id);
    assert_eq!(record.org_id, context.org_id);
    assert_eq!(record.user_id, context.user_id);
    assert_eq!(record.initiator, Initiator::Human);
    runtime.shutdown().await;
}

#[tokio::test]
async fn a_parameterised_intent_passes_its_captures_as_params() {
    let runtime = boot().await;
    let context = ctx("acme", "mark", &["manager"], Initiator::Human);

    let answer = runtime
        .orchestrator
        .ask("shifts from 2026-11-23 to 2026-11-25", &context)
        .await
        .expect("the shift listing intent routes and succeeds");

    assert_eq!(answer.route.tool, "roster_list_shifts");
    assert_eq!(answer.route.tier, 1);
    assert_eq!(
        answer.route.params,
        json!({"from": "2026-11-23", "to": "2026-11-25"})
    );
    let shifts = answer.result["shifts"]
        .as_array()
        .expect("a shift list has a `shifts` array");
    // Two shifts (am, pm) on each of the three days.
    assert_eq!(shifts.len(), 6, "{shifts:#?}");
    let (from, to) = (date(2026, 11, 23), date(2026, 11, 25));
    for shift in shifts {
        assert_eq!(shift["org_id"], "acme", "{shift}");
        let day: Date = shift["date"]
            .as_str()
            .and_then(|text| text.parse().ok())
            .expect("a shift's date is YYYY-MM-DD");
        assert!((from..=to).contains(&day), "{day} is outside {from}..={to}");
    }

    let record = only_audit_record(&runtime.registry, &context).await;
    assert_eq!(&*record.tool, "roster_list_shifts");
    assert_eq!(record.outcome, Outcome::Ok);
    assert_eq!(
        record.input_hash,
        Some(digest_json(&answer.route.params).expect("JSON has a digest"))
    );
    assert_eq!(
        record.output_hash,
        Some(digest_json(&answer.result).expect("JSON has a digest"))
    );
    assert_eq!(record.session_id, context.session_id);
    runtime.shutdown().await;
}

#[tokio::test]
async fn a_routed_call_with_invalid_captures_is_refused_and_audited() {
    let runtime = boot().await;
    let context = ctx("acme", "mark", &["manager"], Initiator::Human);

    let error = runtime
        .orchestrator
        .ask("shifts from 2026-11-25 to 2026-11-23", &context)
        .await
        .expect_err("a reversed range is invalid input");

    assert_eq!(error.kind(), ErrorKind::InvalidInput);
    let AskError::Invoke { route, error } = error else {
        panic!("expected the routed call to fail, got {error:?}");
    };
    assert_eq!(route.tool, "roster_list_shifts");
    assert_eq!(
        route.params,
        json!({"from": "2026-11-25", "to": "2026-11-23"})
    );
    let InvokeError::InvalidInput { tool, errors } = &error else {
        panic!("expected invalid_input, got {error:?}");
    };
    assert_eq!(tool, "roster_list_shifts");
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(
        errors[0].path, "",
        "a cross-field rule applies to the params as a whole"
    );
    assert!(
        errors[0].reason.contains("is before `from`"),
        "{}",
        errors[0].reason
    );

    let record = only_audit_record(&runtime.registry, &context).await;
    assert_eq!(&*record.tool, "roster_list_shifts");
    assert_eq!(record.outcome, Outcome::Error(ErrorKind::InvalidInput));
    assert_eq!(record.outcome.as_str(), "invalid_input");
    assert_eq!(
        record.input_hash,
        Some(digest_json(&route.params).expect("JSON has a digest"))
    );
    assert_eq!(record.output_hash, None);
    runtime.shutdown().await;
}

#[tokio::test]
async fn an_unroutable_utterance_names_the_closest_intents_and_calls_nothing() {
    let runtime = boot().await;
    let context = ctx("acme", "alice", &["admin"], Initiator::Human);

    let error = runtime
        .orchestrator
        .ask("who are you", &context)
        .await
        .expect_err("no intent matches");

    assert_eq!(error.kind(), ErrorKind::NoRoute);
    assert_eq!(error.route(), None);
    let AskError::NoRoute {
        utterance, closest, ..
    } = &error
    else {
        panic!("expected no_route, got {error:?}");
    };
    assert_eq!(utterance, "who are you");
    assert!(!closest.is_empty(), "a near miss has closest intents");
    assert!(closest.len() <= 3, "{closest:?}");
    assert!(
        closest
            .iter()
            .any(|near| near.intent == "who am i" && &*near.tool == "core_get_current_user"),
        "{closest:?}"
    );
    assert!(
        closest
            .windows(2)
            .all(|pair| pair[0].score >= pair[1].score),
        "closest intents come best first: {closest:?}"
    );
    assert!(
        error.to_string().contains("\"who am i\""),
        "the message suggests a rephrasing: {error}"
    );

    // Nothing was invoked, so nothing was audited, for this caller or at all.
    assert!(audit_records(&runtime.registry, &context).await.is_empty());
    assert_eq!(
        runtime
            .registry
            .audit()
            .settled_stats()
            .await
            .store
            .appended,
        0
    );
    runtime.shutdown().await;
}

#[tokio::test]
async fn each_ask_under_one_correlation_id_adds_one_record() {
    let runtime = boot().await;
    let context = ctx("globex", "sue", &["staff"], Initiator::Agent);

    runtime
        .orchestrator
        .ask("whoami", &context)
        .await
        .expect("staff may read the current user");
    runtime
        .orchestrator
        .ask("list shifts from 2026-11-28 to 2026-11-29", &context)
        .await
        .expect("staff may read shifts");
    let unrouted = runtime
        .orchestrator
        .ask("nothing matches this", &context)
        .await
        .expect_err("the utterance has no route");
    assert_eq!(unrouted.kind(), ErrorKind::NoRoute);

    let records = audit_records(&runtime.registry, &context).await;
    let tools: Vec<&str> = records.iter().map(|record| &*record.tool).collect();
    assert_eq!(tools, ["core_get_current_user", "roster_list_shifts"]);
    assert!(records.iter().all(|record| record.outcome.is_ok()));
    assert!(
        records
            .iter()
            .all(|record| record.initiator == Initiator::Agent)
    );
    assert!(records[0].id < records[1].id, "oldest first");
    runtime.shutdown().await;
}
