//! The dispatch path, seen from a caller: what `invoke` and `call` return, and what the audit
//! trail holds, when a tool panics, runs past its timeout, is dropped by its caller, waits for
//! its domain's bulkhead, or is handed invalid typed input.
//!
//! The tools here are defined for these tests. The tests assert behaviour, never durations;
//! each wait is bounded by a generous limit that only turns a hang into a failure.

use std::{
    collections::BTreeMap,
    sync::{
        LazyLock,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use crate::common::{
    PATIENCE, actor_id, admin_context, domain_status, invoke, join_calls, only_record_of,
    records_of, spawn_calls, start, wait_until,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use switchboard_audit::{AuditQuery, Outcome};
use switchboard_core::{
    ErrorKind, FieldError, InvokeError, NoInput, ToolContext, ToolError, ToolInput, tool,
};
use switchboard_registry::RegistryConfig;
use tokio::sync::{Notify, Semaphore};
use validator::Validate;

mod bulkhead;

switchboard_core::domain! {
    /// Tools that panic, and one that never does.
    Faulty { name: "faulty" }
}

switchboard_core::domain! {
    /// Tools that take their time.
    Slow { name: "slow" }
}

switchboard_core::domain! {
    /// A bulkhead of two (set in the test's `RegistryConfig`).
    Pair { name: "pair" }
}

switchboard_core::domain! {
    /// A bulkhead of eight (set in the test's `RegistryConfig`).
    Octet { name: "octet" }
}

switchboard_core::domain! {
    /// A bulkhead of one (set in the test's `RegistryConfig`).
    Single { name: "single" }
}

switchboard_core::domain! {
    /// A tool with `validator` rules, for typed calls.
    Forms { name: "forms" }
}

/// Always panics, with a formatted message.
#[tool(domain = Faulty, category = read, permission = "faulty.use")]
async fn blow_fuse(_ctx: &ToolContext, _input: NoInput) -> Result<String, ToolError> {
    panic!("the fuse blew at {} amps", 13)
}

/// Always answers `fine`.
#[tool(domain = Faulty, category = read, permission = "faulty.use")]
async fn answer(_ctx: &ToolContext, _input: NoInput) -> Result<String, ToolError> {
    Ok("fine".to_owned())
}

/// Sleeps ten seconds, under a timeout of its own of 50 ms.
#[tool(domain = Slow, category = read, permission = "slow.use", timeout_ms = 50)]
async fn nap_briefly(_ctx: &ToolContext, _input: NoInput) -> Result<String, ToolError> {
    tokio::time::sleep(Duration::from_secs(10)).await;
    Ok("woke up".to_owned())
}

/// Sleeps ten seconds, under whatever timeout the registry is configured with.
#[tool(domain = Slow, category = read, permission = "slow.use")]
async fn nap(_ctx: &ToolContext, _input: NoInput) -> Result<String, ToolError> {
    tokio::time::sleep(Duration::from_secs(10)).await;
    Ok("woke up".to_owned())
}

/// Sleeps 100 ms, under a generous timeout of its own of 10 s.
#[tool(domain = Slow, category = read, permission = "slow.use", timeout_ms = 10000)]
async fn doze(_ctx: &ToolContext, _input: NoInput) -> Result<String, ToolError> {
    tokio::time::sleep(Duration::from_millis(100)).await;
    Ok("rested".to_owned())
}

/// Blocks its thread for 100 ms before its first await, then sleeps 30 ms, under a timeout of
/// its own of 50 ms.
#[tool(domain = Slow, category = read, permission = "slow.use", timeout_ms = 50)]
async fn block_then_sleep(_ctx: &ToolContext, _input: NoInput) -> Result<String, ToolError> {
    std::thread::sleep(Duration::from_millis(100));
    tokio::time::sleep(Duration::from_millis(30)).await;
    Ok("finished late".to_owned())
}

/// The mutating twin of `slow_block_then_sleep`: it runs in a task of its own, which the same
/// timeout covers.
#[tool(domain = Slow, category = execute, permission = "slow.use", timeout_ms = 50)]
async fn block_then_sleep_mutating(
    _ctx: &ToolContext,
    _input: NoInput,
) -> Result<String, ToolError> {
    std::thread::sleep(Duration::from_millis(100));
    tokio::time::sleep(Duration::from_millis(30)).await;
    Ok("finished late".to_owned())
}

/// Signalled by `slow_linger` once it runs.
static LINGER_STARTED: LazyLock<Notify> = LazyLock::new(Notify::new);

/// Says it started, then sleeps ten seconds (its caller drops it before then).
#[tool(domain = Slow, category = read, permission = "slow.use")]
async fn linger(_ctx: &ToolContext, _input: NoInput) -> Result<String, ToolError> {
    LINGER_STARTED.notify_one();
    tokio::time::sleep(Duration::from_secs(10)).await;
    Ok("still here".to_owned())
}

/// Signalled by `slow_dawdle` once it runs.
static DAWDLE_STARTED: LazyLock<Notify> = LazyLock::new(Notify::new);

/// Says it started, then sleeps ten seconds (its task is aborted before then).
#[tool(domain = Slow, category = read, permission = "slow.use")]
async fn dawdle(_ctx: &ToolContext, _input: NoInput) -> Result<String, ToolError> {
    DAWDLE_STARTED.notify_one();
    tokio::time::sleep(Duration::from_secs(10)).await;
    Ok("still here".to_owned())
}

/// How to reach the person booking.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, Validate)]
struct Contact {
    /// An email address.
    #[validate(email)]
    email: String,
}

/// A booking request.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, Validate, ToolInput)]
struct Booking {
    /// Who books.
    #[validate(length(min = 1, max = 8))]
    name: String,
    /// How many seats.
    #[validate(range(min = 1, max = 10))]
    seats: u32,
    /// How to reach them.
    #[validate(nested)]
    contact: Contact,
}

/// Books seats and says how many.
#[tool(domain = Forms, category = read, permission = "forms.book")]
async fn book(_ctx: &ToolContext, input: Booking) -> Result<u32, ToolError> {
    Ok(input.seats)
}

/// An output whose `Serialize` impl fails, as a user's may.
#[derive(Debug, Clone, PartialEq, JsonSchema)]
struct Opaque {
    /// How many seats.
    seats: u32,
}

impl Serialize for Opaque {
    fn serialize<S: serde::Serializer>(&self, _serializer: S) -> Result<S::Ok, S::Error> {
        Err(serde::ser::Error::custom("opaque values stay opaque"))
    }
}

/// Books seats and answers with a value that cannot be serialized.
#[tool(domain = Forms, category = read, permission = "forms.book")]
async fn book_opaquely(_ctx: &ToolContext, input: Booking) -> Result<Opaque, ToolError> {
    Ok(Opaque { seats: input.seats })
}

/// An input that deserializes but whose `Serialize` impl fails, as a user's may.
#[derive(Debug, Deserialize, JsonSchema, Validate, ToolInput)]
struct OpaqueTicket {
    /// The ticket.
    ticket: String,
}

impl Serialize for OpaqueTicket {
    fn serialize<S: serde::Serializer>(&self, _serializer: S) -> Result<S::Ok, S::Error> {
        Err(serde::ser::Error::custom("tickets stay sealed"))
    }
}

/// Redeems a ticket: a mutation, so its input must be JSON to be keyed.
#[tool(domain = Forms, category = execute, permission = "forms.book")]
async fn redeem(_ctx: &ToolContext, input: OpaqueTicket) -> Result<String, ToolError> {
    Ok(input.ticket)
}

#[tokio::test]
async fn a_panicking_tool_is_reported_audited_and_its_domain_keeps_serving() {
    let registry = start(RegistryConfig::default()).await;
    let actor_before = actor_id(&registry, "faulty");

    let error = invoke(&registry, "faulty_blow_fuse", "panic-1")
        .await
        .expect_err("the tool panics");
    assert_eq!(error.kind(), ErrorKind::ToolPanicked);
    match &error {
        InvokeError::ToolPanicked { tool, message } => {
            assert_eq!(tool, "faulty_blow_fuse");
            assert_eq!(message, "the fuse blew at 13 amps");
        }
        other => panic!("expected tool_panicked, got {other:?}"),
    }
    assert!(
        error.to_string().contains("the fuse blew at 13 amps"),
        "{error}"
    );

    let record = only_record_of(&registry, "panic-1").await;
    assert_eq!(record.outcome, Outcome::Error(ErrorKind::ToolPanicked));
    assert_eq!(&*record.tool, "faulty_blow_fuse");
    assert_eq!(record.domain.as_deref(), Some("faulty"));
    assert_eq!(record.output_hash, None);

    // The same domain, with the same actor, serves the next call.
    let answer = invoke(&registry, "faulty_answer", "panic-2")
        .await
        .expect("the domain keeps serving after a tool panicked");
    assert_eq!(answer, json!("fine"));
    assert_eq!(
        only_record_of(&registry, "panic-2").await.outcome,
        Outcome::Ok
    );

    let status = domain_status(&registry, "faulty");
    assert_eq!(status.panics, 1, "{status:?}");
    assert_eq!(
        status.restarts, 0,
        "a tool panic is not an actor failure: {status:?}"
    );
    assert!(status.running, "{status:?}");
    assert_eq!(
        status.in_flight, 0,
        "the panicked call released its permit: {status:?}"
    );
    let actor_after = actor_id(&registry, "faulty");
    assert_eq!(
        actor_before, actor_after,
        "the domain actor was not replaced"
    );

    // A second panic counts too; other domains count none.
    let _ = invoke(&registry, "faulty_blow_fuse", "panic-3").await;
    assert_eq!(domain_status(&registry, "faulty").panics, 2);
    assert_eq!(domain_status(&registry, "slow").panics, 0);
    registry.shutdown().await;
}

/// The call reads only a monotonic clock; the writer turns its start into wall-clock time.
#[tokio::test]
async fn a_record_is_stamped_with_the_wall_clock_time_its_call_started() {
    let registry = start(RegistryConfig::default()).await;
    let before = jiff::Timestamp::now();
    invoke(&registry, "faulty_answer", "stamp-1")
        .await
        .expect("the tool answers");
    let after = jiff::Timestamp::now();
    let record = only_record_of(&registry, "stamp-1").await;
    // A millisecond of slack each side: the wall clock and the monotonic clock are read apart.
    let slack = jiff::SignedDuration::from_millis(1);
    assert!(
        before - slack <= record.timestamp && record.timestamp <= after + slack,
        "{} is not within the call ({before} to {after})",
        record.timestamp
    );
    registry.shutdown().await;
}

#[tokio::test]
async fn a_tool_past_its_own_timeout_is_stopped_and_audited() {
    let registry = start(RegistryConfig::default()).await;
    let error = invoke(&registry, "slow_nap_briefly", "timeout-1")
        .await
        .expect_err("the tool sleeps far longer than its timeout");
    match &error {
        InvokeError::Timeout { tool, after } => {
            assert_eq!(tool, "slow_nap_briefly");
            assert_eq!(
                *after,
                Duration::from_millis(50),
                "the tool's own timeout applies"
            );
        }
        other => panic!("expected a timeout, got {other:?}"),
    }
    assert_eq!(error.kind(), ErrorKind::Timeout);
    assert_eq!(
        only_record_of(&registry, "timeout-1").await.outcome,
        Outcome::Error(ErrorKind::Timeout)
    );
    let status = domain_status(&registry, "slow");
    assert_eq!(
        status.in_flight, 0,
        "the timed-out call released its permit: {status:?}"
    );
    registry.shutdown().await;
}

/// The timeout runs from the start of the tool's run, not from its first await: a tool that
/// spends its whole timeout before it first suspends is stopped when it does, whether it reads
/// or mutates.
#[tokio::test]
async fn the_timeout_counts_the_time_a_tool_spends_before_its_first_await() {
    let registry = start(RegistryConfig::default()).await;
    for (tool, correlation) in [
        ("slow_block_then_sleep", "timeout-first-poll-1"),
        ("slow_block_then_sleep_mutating", "timeout-first-poll-2"),
    ] {
        let error = invoke(&registry, tool, correlation)
            .await
            .expect_err("the tool is past its timeout when it first suspends");
        assert_eq!(error.kind(), ErrorKind::Timeout, "{tool}: {error:?}");
        assert_eq!(
            only_record_of(&registry, correlation).await.outcome,
            Outcome::Error(ErrorKind::Timeout)
        );
    }
    assert_eq!(domain_status(&registry, "slow").in_flight, 0);
    registry.shutdown().await;
}

#[tokio::test]
async fn the_configured_default_timeout_applies_only_to_tools_without_their_own() {
    let registry = start(RegistryConfig {
        default_timeout: Duration::from_millis(50),
        ..RegistryConfig::default()
    })
    .await;

    // No timeout of its own: the configured default stops it.
    let error = invoke(&registry, "slow_nap", "default-timeout-1")
        .await
        .expect_err("the tool sleeps far longer than the default timeout");
    match &error {
        InvokeError::Timeout { tool, after } => {
            assert_eq!(tool, "slow_nap");
            assert_eq!(
                *after,
                Duration::from_millis(50),
                "the configured default applies"
            );
        }
        other => panic!("expected a timeout, got {other:?}"),
    }
    assert_eq!(
        only_record_of(&registry, "default-timeout-1").await.outcome,
        Outcome::Error(ErrorKind::Timeout)
    );

    // A tool's own timeout beats the default, when it is longer...
    let rested = invoke(&registry, "slow_doze", "default-timeout-2")
        .await
        .expect("the tool's own 10 s timeout, not the 50 ms default, applies");
    assert_eq!(rested, json!("rested"));

    // ...and when it is shorter than the default.
    let registry_with_long_default = start(RegistryConfig {
        default_timeout: Duration::from_secs(60),
        ..RegistryConfig::default()
    })
    .await;
    let error = invoke(
        &registry_with_long_default,
        "slow_nap_briefly",
        "default-timeout-3",
    )
    .await
    .expect_err("the tool's own 50 ms timeout applies");
    assert!(
        matches!(error, InvokeError::Timeout { after, .. } if after == Duration::from_millis(50)),
        "{error:?}"
    );

    // The descriptors say which tools carry their own timeout.
    let own_timeout = |name: &str| {
        registry
            .find(name)
            .unwrap_or_else(|| panic!("`{name}` is registered"))
            .timeout
    };
    assert_eq!(own_timeout("slow_nap"), None);
    assert_eq!(
        own_timeout("slow_nap_briefly"),
        Some(Duration::from_millis(50))
    );
    assert_eq!(own_timeout("slow_doze"), Some(Duration::from_secs(10)));
    registry.shutdown().await;
    registry_with_long_default.shutdown().await;
}

/// Callers spawn calls onto other tasks and threads, so both call futures must be `Send`. This
/// is checked at compile time: the test fails to build if either future stops being `Send`.
#[test]
fn the_call_futures_are_send() {
    fn assert_send<T: Send>(_: &T) {}
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    runtime.block_on(async {
        let registry = start(RegistryConfig::default()).await;
        let ctx = admin_context("send-check");
        let json_call = registry.invoke("faulty_answer", json!({}), &ctx);
        assert_send(&json_call);
        let typed_call = registry.call::<Answer>(NoInput {}, &ctx);
        assert_send(&typed_call);
        assert_eq!(json_call.await.expect("answers"), json!("fine"));
        assert_eq!(typed_call.await.expect("answers"), "fine");
        registry.shutdown().await;
    });
}

#[tokio::test]
async fn a_call_dropped_by_its_caller_is_audited_once_as_cancelled() {
    let registry = start(RegistryConfig::default()).await;
    let ctx = admin_context("cancel-select");
    let started = LINGER_STARTED.notified();
    tokio::pin!(started);
    // Boxed, so that dropping it below really drops the future (a `tokio::pin!`ned future
    // lives until the end of its scope).
    let mut call = Box::pin(registry.invoke("slow_linger", json!({}), &ctx));

    // Poll the call until the tool body is running, then stop polling it and drop it.
    tokio::select! {
        result = &mut call => panic!("the call finished before it was dropped: {result:?}"),
        () = &mut started => {}
        () = tokio::time::sleep(PATIENCE) => panic!("the tool never started"),
    }
    assert_eq!(domain_status(&registry, "slow").in_flight, 1);
    drop(call);

    let record = only_record_of(&registry, "cancel-select").await;
    assert_eq!(record.outcome, Outcome::Error(ErrorKind::Cancelled));
    assert_eq!(&*record.tool, "slow_linger");
    assert_eq!(record.domain.as_deref(), Some("slow"));
    assert_eq!(
        domain_status(&registry, "slow").in_flight,
        0,
        "the dropped call released its bulkhead permit"
    );
    // Nothing else is written later for the same call.
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(records_of(&registry, "cancel-select").await.len(), 1);
    registry.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_aborted_call_task_is_audited_once_as_cancelled() {
    let registry = start(RegistryConfig::default()).await;
    let started = DAWDLE_STARTED.notified();
    let task = {
        let registry = registry.clone();
        tokio::spawn(async move {
            let ctx = admin_context("cancel-abort");
            registry.invoke("slow_dawdle", json!({}), &ctx).await
        })
    };
    tokio::time::timeout(PATIENCE, started)
        .await
        .expect("the tool starts");
    task.abort();
    let joined = task.await;
    assert!(
        joined.as_ref().is_err_and(|error| error.is_cancelled()),
        "the task was aborted, not finished: {joined:?}"
    );

    // The record is written when the call's future is dropped; wait for it (bounded).
    let mut records = Vec::new();
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while records.is_empty() && tokio::time::Instant::now() < deadline {
        records = records_of(&registry, "cancel-abort").await;
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    let record = only_record_of(&registry, "cancel-abort").await;
    assert_eq!(record.outcome, Outcome::Error(ErrorKind::Cancelled));
    assert_eq!(&*record.tool, "slow_dawdle");
    assert_eq!(domain_status(&registry, "slow").in_flight, 0);
    registry.shutdown().await;
}

fn invalid_booking() -> Booking {
    Booking {
        name: String::new(),
        seats: 0,
        contact: Contact {
            email: "not an email".to_owned(),
        },
    }
}

fn paths(errors: &[FieldError]) -> Vec<&str> {
    errors.iter().map(|error| error.path.as_str()).collect()
}

#[tokio::test]
async fn a_typed_call_reports_every_validation_error_sorted_with_json_pointers() {
    let registry = start(RegistryConfig::default()).await;
    let error = registry
        .call::<Book>(invalid_booking(), &admin_context("typed-invalid"))
        .await
        .expect_err("every field breaks a rule");
    let InvokeError::InvalidInput { tool, errors } = &error else {
        panic!("expected invalid_input, got {error:?}");
    };
    assert_eq!(tool, "forms_book");
    assert_eq!(
        paths(errors),
        ["/contact/email", "/name", "/seats"],
        "{errors:#?}"
    );
    assert!(
        errors.windows(2).all(|pair| pair[0].path <= pair[1].path),
        "sorted by path: {errors:#?}"
    );
    assert!(errors.iter().all(|error| !error.reason.is_empty()));

    let record = only_record_of(&registry, "typed-invalid").await;
    assert_eq!(record.outcome, Outcome::Error(ErrorKind::InvalidInput));
    assert_eq!(&*record.tool, "forms_book");
    assert_eq!(record.domain.as_deref(), Some("forms"));
    assert_eq!(
        record.input_hash,
        switchboard_audit::digest_of(&invalid_booking()).ok(),
        "a typed call hashes its typed input"
    );

    // A valid typed call goes through, and its output is hashed.
    let seats = registry
        .call::<Book>(
            Booking {
                name: "ada".to_owned(),
                seats: 3,
                contact: Contact {
                    email: "ada@example.com".to_owned(),
                },
            },
            &admin_context("typed-valid"),
        )
        .await
        .expect("a valid booking");
    assert_eq!(seats, 3);
    let record = only_record_of(&registry, "typed-valid").await;
    assert_eq!(record.outcome, Outcome::Ok);
    assert_eq!(
        record.output_hash,
        switchboard_audit::digest_of(&3_u32).ok()
    );
    registry.shutdown().await;
}

#[tokio::test]
async fn the_json_call_of_the_same_tool_reports_the_same_paths() {
    let registry = start(RegistryConfig::default()).await;
    let params = serde_json::to_value(invalid_booking()).expect("a booking serializes");
    let error = registry
        .invoke("forms_book", params, &admin_context("json-invalid"))
        .await
        .expect_err("every field breaks a rule");
    let InvokeError::InvalidInput { errors, .. } = &error else {
        panic!("expected invalid_input, got {error:?}");
    };
    let mut unique_paths = paths(errors);
    unique_paths.dedup();
    assert_eq!(
        unique_paths,
        ["/contact/email", "/name", "/seats"],
        "{errors:#?}"
    );
    assert_eq!(
        only_record_of(&registry, "json-invalid").await.outcome,
        Outcome::Error(ErrorKind::InvalidInput)
    );
    registry.shutdown().await;
}

#[tokio::test]
async fn a_typed_call_is_refused_before_validation_when_the_caller_lacks_the_permission() {
    let registry = start(RegistryConfig::default()).await;
    let mut ctx = admin_context("typed-denied");
    ctx.roles = vec!["intern".into()].into();
    let error = registry
        .call::<Book>(invalid_booking(), &ctx)
        .await
        .expect_err("an intern holds no permission");
    assert_eq!(error.kind(), ErrorKind::PermissionDenied, "{error:?}");
    assert_eq!(
        only_record_of(&registry, "typed-denied").await.outcome,
        Outcome::Error(ErrorKind::PermissionDenied)
    );
    registry.shutdown().await;
}

#[tokio::test]
async fn a_typed_output_that_cannot_be_serialized_is_audited_without_a_digest() {
    let registry = start(RegistryConfig::default()).await;
    let booking = Booking {
        name: "ada".to_owned(),
        seats: 2,
        contact: Contact {
            email: "ada@example.com".to_owned(),
        },
    };
    let output = registry
        .call::<BookOpaquely>(booking.clone(), &admin_context("typed-opaque"))
        .await
        .expect("the call's result does not depend on its audit digest");
    assert_eq!(output, Opaque { seats: 2 });
    let record = only_record_of(&registry, "typed-opaque").await;
    assert_eq!(record.outcome, Outcome::Ok);
    assert_eq!(
        record.input_hash,
        switchboard_audit::digest_of(&booking).ok()
    );
    assert!(record.input_hash.is_some());
    assert_eq!(record.output_hash, None, "never the digest of `null`");
    assert_eq!(
        record.digest_error.as_deref(),
        Some("output: the value cannot be serialized as JSON: opaque values stay opaque")
    );
    registry.shutdown().await;
}

#[tokio::test]
async fn a_typed_mutation_whose_input_cannot_be_serialized_is_refused_not_keyed_by_null() {
    let registry = start(RegistryConfig::default()).await;
    let ticket = || OpaqueTicket {
        ticket: "t-1".to_owned(),
    };
    let error = registry
        .call::<Redeem>(ticket(), &admin_context("typed-sealed"))
        .await
        .expect_err("without JSON params there is no idempotency key");
    assert_eq!(error.kind(), ErrorKind::InvalidInput, "{error:?}");
    assert!(error.to_string().contains("tickets stay sealed"), "{error}");
    let record = only_record_of(&registry, "typed-sealed").await;
    assert_eq!(record.outcome, Outcome::Error(ErrorKind::InvalidInput));
    assert_eq!(record.input_hash, None, "never the digest of `null`");
    assert_eq!(
        record.digest_error.as_deref(),
        Some("input: the value cannot be serialized as JSON: tickets stay sealed")
    );

    // The JSON face of the same tool takes JSON params, and runs.
    let redeemed = registry
        .invoke(
            "forms_redeem",
            json!({"ticket": "t-2"}),
            &admin_context("json-sealed"),
        )
        .await
        .expect("JSON params are keyed by their own digest");
    assert_eq!(redeemed, json!("t-2"));
    registry.shutdown().await;
}
