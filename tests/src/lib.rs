//! Helpers shared by the cross-crate integration tests in `tests/tests/it/`.
//!
//! Each test boots its own runtime with [`boot`]: a fresh registry (so fresh seeded domain
//! state), its own in-memory audit store, and an orchestrator on top. Tests therefore run in
//! parallel without seeing each other's writes or audit records. [`ctx`] builds the call
//! context of one seeded user with a fresh correlation id, so that [`audit_records`] finds
//! exactly the records of the calls made with that context.
//!
//! The helpers panic (with a message) instead of returning errors: they are test support, and a
//! runtime that does not boot is a failed test, not a condition to handle.

use std::{
    future::Future,
    sync::atomic::{AtomicU64, Ordering},
    time::Duration,
};

use jiff::civil::{Date, date};
use serde_json::{Value, json};
use switchboard::{
    AuditQuery, AuditRecord, CallContext, Initiator, RegistryBuilder, Switchboard, ToolRegistry,
};

/// The Monday of the week the roster domain is seeded with.
pub const SEED_WEEK_START: Date = date(2026, 11, 23);

/// The Sunday that ends the seeded week.
pub const SEED_WEEK_END: Date = date(2026, 11, 29);

/// Boots a runtime with every linked domain and the defaults (built-in permission matrix,
/// in-memory audit store).
pub async fn boot() -> Switchboard {
    boot_with(ToolRegistry::builder()).await
}

/// Boots a runtime configured by `builder`.
pub async fn boot_with(builder: RegistryBuilder) -> Switchboard {
    Switchboard::start(builder)
        .await
        .expect("the runtime boots with the linked sample domains")
}

/// A correlation id no other call in this process has used.
pub fn fresh_correlation_id() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    format!("it-{}-{n}", std::process::id())
}

/// The context of `user_id` in `org_id` holding `roles`, started by `initiator`, unconfirmed,
/// in the session `session-<user_id>` and with a fresh correlation id.
pub fn ctx(org_id: &str, user_id: &str, roles: &[&str], initiator: Initiator) -> CallContext {
    let mut builder = CallContext::builder()
        .org(org_id)
        .user(user_id)
        .session(format!("session-{user_id}"))
        .correlation(fresh_correlation_id())
        .initiator(initiator);
    for role in roles {
        builder = builder.role(*role);
    }
    builder.build()
}

/// `context`, marked as explicitly confirmed by the human in the session.
pub fn confirmed(mut context: CallContext) -> CallContext {
    context.confirmed = true;
    context
}

/// `context` with a fresh correlation id, for a second call whose records must stay apart.
pub fn recorrelated(mut context: CallContext) -> CallContext {
    context.correlation_id = Some(fresh_correlation_id().into());
    context
}

/// The audit records of `context`'s correlation id, oldest first.
pub async fn audit_records(registry: &ToolRegistry, context: &CallContext) -> Vec<AuditRecord> {
    let correlation_id = context
        .correlation_id
        .clone()
        .expect("the context has a correlation id");
    let mut records = registry
        .audit()
        .query(&AuditQuery::correlation(correlation_id))
        .await
        .expect("the in-memory audit store answers queries");
    records.reverse();
    records
}

/// The only audit record of `context`'s correlation id; fails the test if there is not
/// exactly one.
pub async fn only_audit_record(registry: &ToolRegistry, context: &CallContext) -> AuditRecord {
    let mut records = audit_records(registry, context).await;
    assert_eq!(
        records.len(),
        1,
        "expected exactly one audit record for this correlation id, got {records:#?}"
    );
    records.remove(0)
}

/// Checks `condition` every 10 ms, for at most 2 s, until it holds; returns whether it did.
///
/// For effects the runtime applies asynchronously (an orchestrator rebuilding its routes, a
/// supervisor noticing a stopped actor): the test waits for the effect, never for a duration.
pub async fn eventually<F, Fut>(mut condition: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    for _ in 0..200 {
        if condition().await {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    condition().await
}

/// Whether `text` is a 64-character lower-case hex digest (a BLAKE3 hash).
pub fn is_hex_digest(text: &str) -> bool {
    text.len() == 64
        && text
            .bytes()
            .all(|byte| byte.is_ascii_digit() || (b'a'..=b'f').contains(&byte))
}

/// The params of `roster_list_shifts` for `from..=to`.
pub fn shift_range(from: Date, to: Date) -> Value {
    json!({ "from": from.to_string(), "to": to.to_string() })
}

/// Lists the seeded week as `context` and returns the `shifts` array.
pub async fn seed_week_shifts(registry: &ToolRegistry, context: &CallContext) -> Vec<Value> {
    let listed = registry
        .invoke(
            "roster_list_shifts",
            shift_range(SEED_WEEK_START, SEED_WEEK_END),
            context,
        )
        .await
        .expect("listing the seeded week succeeds");
    shifts_of(&listed)
}

/// The `shifts` array of a `roster_list_shifts` result.
pub fn shifts_of(listed: &Value) -> Vec<Value> {
    listed["shifts"]
        .as_array()
        .cloned()
        .expect("a shift list has a `shifts` array")
}

/// The `assignee` of the shift `shift_id` in `shifts`, or `None` if it is open.
pub fn assignee_of(shifts: &[Value], shift_id: &str) -> Option<String> {
    shifts
        .iter()
        .find(|shift| shift["id"] == shift_id)
        .unwrap_or_else(|| panic!("shift `{shift_id}` is listed"))["assignee"]
        .as_str()
        .map(str::to_owned)
}
