//! Strict audit over a store that fails and comes back: a call that ran while the store went
//! away is `audit_failed`, says that it ran, and its record is written once the store is back
//! (its retry replays it); while the audit writer is retrying, calls are refused with
//! `audit_unavailable` before they run, and nothing they would have done happens.
//!
//! Uses the `ledger` tools of `writes.rs`.

use std::sync::{
    Arc,
    atomic::{AtomicBool, Ordering},
};

use serde_json::json;
use switchboard_audit::{
    ActionEvent, AuditConfig, AuditError, AuditRecord, AuditStore, Durability, MemoryAuditStore,
};
use switchboard_core::{ErrorKind, InvokeError};
use switchboard_registry::ToolRegistry;

use crate::common::{invoke, records_of, wait_until};

/// A memory table that refuses every append while `down` is set.
#[derive(Default)]
struct Switchable {
    inner: MemoryAuditStore,
    down: AtomicBool,
}

impl switchboard_audit::conformance::WrappedStore for Switchable {
    fn inner(&self) -> &dyn AuditStore {
        &self.inner
    }

    fn append_batch(&self, records: &mut [AuditRecord]) -> Result<(), AuditError> {
        if self.down.load(Ordering::SeqCst) {
            return Err(AuditError::Unavailable("connection refused".to_owned()));
        }
        self.inner.append_batch(records)
    }
}

async fn strict_registry(store: &Arc<Switchable>) -> ToolRegistry {
    ToolRegistry::builder()
        .audit_store(Arc::clone(store) as Arc<dyn AuditStore>)
        .audit_config(AuditConfig::default().durability(Durability::Strict))
        .start()
        .await
        .expect("the registry starts")
}

fn events(records: &[AuditRecord]) -> Vec<ActionEvent> {
    records
        .iter()
        .filter_map(|record| record.action.as_ref().map(|action| action.event))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_audit_store_refuses_calls_before_they_run_and_loses_no_record() {
    let store = Arc::new(Switchable::default());
    let registry = strict_registry(&store).await;
    assert_eq!(
        invoke(&registry, "ledger_add", "before")
            .await
            .expect("runs"),
        json!(1)
    );

    // The store goes away while a mutation runs: it ran, and says so.
    store.down.store(true, Ordering::SeqCst);
    let error = invoke(&registry, "ledger_add", "during")
        .await
        .expect_err("not acknowledged without its record");
    assert_eq!(error.kind(), ErrorKind::AuditFailed, "{error}");
    let message = error.to_string();
    for said in ["ran as action", "idempotency key", "keeps it"] {
        assert!(message.contains(said), "`{said}` in: {message}");
    }
    assert!(registry.audit().is_failing());

    // While the writer retries, calls are refused before they run.
    let refused = invoke(&registry, "ledger_add", "refused")
        .await
        .expect_err("refused while the audit store fails");
    assert!(
        matches!(refused, InvokeError::AuditUnavailable { .. }),
        "{refused:?}"
    );
    assert!(refused.to_string().contains("was not run"), "{refused}");
    let read = invoke(&registry, "ledger_count", "read-refused")
        .await
        .expect_err("reads too");
    assert_eq!(read.kind(), ErrorKind::AuditUnavailable);

    // The store comes back: the writer writes what it kept, and calls run again.
    store.down.store(false, Ordering::SeqCst);
    wait_until("the audit writer recovers", || {
        !registry.audit().is_failing()
    })
    .await;
    assert_eq!(
        invoke(&registry, "ledger_count", "after")
            .await
            .expect("runs"),
        json!(2),
        "the refused mutation did not run"
    );
    let during = records_of(&registry, "during").await;
    assert_eq!(events(&during), [ActionEvent::Executed], "{during:?}");
    assert!(records_of(&registry, "refused").await.is_empty());
    assert!(records_of(&registry, "read-refused").await.is_empty());

    // The retry of the mutation that ran replays it; the refused one runs now.
    assert_eq!(
        invoke(&registry, "ledger_add", "during")
            .await
            .expect("replays"),
        json!(2)
    );
    assert_eq!(
        invoke(&registry, "ledger_add", "refused")
            .await
            .expect("runs"),
        json!(3)
    );
    let mut during = events(&records_of(&registry, "during").await);
    during.sort_by_key(|event| event.as_str());
    assert_eq!(during, [ActionEvent::Executed, ActionEvent::Replayed]);
    assert_eq!(
        events(&records_of(&registry, "refused").await),
        [ActionEvent::Executed]
    );
    let stats = registry.audit().stats();
    assert_eq!((stats.lost, stats.rejected), (0, 2), "{stats:?}");
}
