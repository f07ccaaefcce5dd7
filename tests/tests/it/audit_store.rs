//! The audit store as a dependency of every call under strict durability: a call whose record
//! cannot be written is not acknowledged, and the caller is told which tool's record was lost
//! and why.
//!
//! The store here refuses every append, standing in for a full disk or a closed database.

use std::sync::{
    Arc,
    atomic::{AtomicU64, Ordering},
};

use serde_json::json;
use switchboard::{
    AuditQuery, AuditRecord, ErrorKind, Initiator, InvokeError, ToolRegistry,
    audit::{AuditConfig, AuditError, AuditStats, AuditStore, Durability},
};
use switchboard_integration_tests::{boot_with, ctx};

/// Refuses every record, and counts the attempts.
#[derive(Default)]
struct FullDisk {
    attempts: AtomicU64,
}

impl AuditStore for FullDisk {
    fn append_batch(&self, _: &mut [AuditRecord]) -> Result<(), AuditError> {
        self.attempts.fetch_add(1, Ordering::Relaxed);
        Err(AuditError::Unavailable("disk full".to_owned()))
    }

    fn query(&self, _: &AuditQuery) -> Result<Vec<AuditRecord>, AuditError> {
        Ok(Vec::new())
    }

    fn delete_before(&self, _: jiff::Timestamp, _: usize) -> Result<u64, AuditError> {
        Ok(0)
    }

    fn stats(&self) -> AuditStats {
        AuditStats::default()
    }
}

/// A registry that acknowledges a call only once its record is stored.
fn strict(store: Arc<FullDisk>) -> switchboard::RegistryBuilder {
    ToolRegistry::builder()
        .audit_store(store)
        .audit_config(AuditConfig::default().durability(Durability::Strict))
}

#[tokio::test]
async fn a_call_whose_record_cannot_be_written_fails_naming_the_tool() {
    let store = Arc::new(FullDisk::default());
    let runtime = boot_with(strict(store.clone())).await;
    let context = ctx("acme", "alice", &["admin"], Initiator::Human);

    let error = runtime
        .registry
        .invoke("core_get_current_user", json!({}), &context)
        .await
        .expect_err("an unaudited call is not acknowledged");

    assert_eq!(error.kind(), ErrorKind::AuditFailed);
    let InvokeError::AuditFailed { tool, reason } = &error else {
        panic!("expected audit_failed, got {error:?}");
    };
    assert!(reason.contains("disk full"), "{reason}");
    assert_eq!(
        tool, "core_get_current_user",
        "the error names the tool whose record was lost: {error}"
    );
    assert!(
        store.attempts.load(Ordering::Relaxed) >= 3,
        "the writer keeps trying the record rather than drop it"
    );
    // The writer knows its store is failing: the next call is refused before it runs.
    let refused = runtime
        .registry
        .invoke("core_get_current_user", json!({}), &context)
        .await
        .expect_err("no call runs unaudited");
    assert_eq!(refused.kind(), ErrorKind::AuditUnavailable, "{refused}");
    runtime.shutdown().await;
}

#[tokio::test]
async fn a_refused_call_whose_record_cannot_be_written_also_fails_naming_the_tool() {
    let store = Arc::new(FullDisk::default());
    let runtime = boot_with(strict(store.clone())).await;
    // Staff may not assign: the refusal itself must be audited, and that fails too.
    let context = ctx("acme", "sam", &["staff"], Initiator::Human);

    let error = runtime
        .registry
        .invoke(
            "roster_assign_shift",
            json!({"shift_id": "acme-2026-11-28-am", "user_id": "sam"}),
            &context,
        )
        .await
        .expect_err("refused, and the refusal is not recorded");

    assert!(
        matches!(&error, InvokeError::AuditFailed { tool, .. } if tool == "roster_assign_shift"),
        "{error:?}"
    );
    assert!(store.attempts.load(Ordering::Relaxed) >= 3);
    runtime.shutdown().await;
}
