//! The audit record of one call, from its first check to its outcome.
//!
//! An [`AuditDraft`] is opened before any check runs and closed with the outcome, so every
//! attempt — refused at any step, failed, panicked, timed out, or successful — is written
//! exactly once. If the caller stops waiting (the invoke future is dropped), the draft's `Drop`
//! writes the record with the outcome `cancelled`: exactly once still holds.

use std::{sync::Arc, time::Instant};

use jiff::Timestamp;
use switchboard_audit::{Appended, AuditRecord, AuditStore, Digest, Outcome, clamp_tool_name};
use switchboard_core::{CallContext, ErrorKind};

use crate::table::RegisteredTool;

pub(crate) struct AuditDraft<'a> {
    store: &'a Arc<dyn AuditStore>,
    record: Option<AuditRecord>,
    started: Instant,
}

impl<'a> AuditDraft<'a> {
    pub(crate) fn open(
        store: &'a Arc<dyn AuditStore>,
        tool: &str,
        context: &CallContext,
        input_hash: Digest,
    ) -> Self {
        let record = AuditRecord {
            id: 0,
            timestamp: Timestamp::now(),
            tool: clamp_tool_name(tool).into(),
            domain: None,
            category: None,
            org_id: context.org_id.clone(),
            user_id: context.user_id.clone(),
            session_id: context.session_id.clone(),
            correlation_id: context.correlation_id.clone(),
            initiator: context.initiator,
            input_hash,
            output_hash: None,
            duration_us: 0,
            outcome: Outcome::Error(ErrorKind::Cancelled),
        };
        Self {
            store,
            record: Some(record),
            started: Instant::now(),
        }
    }

    /// Records which tool the name resolved to.
    pub(crate) fn resolved(&mut self, tool: &RegisteredTool) {
        if let Some(record) = &mut self.record {
            record.tool = Arc::clone(&tool.name);
            record.domain = Some(Arc::clone(&tool.domain.name));
            record.category = Some(tool.category());
        }
    }

    /// Writes the record with its outcome and waits until the store acknowledges it.
    pub(crate) async fn close(
        mut self,
        outcome: Outcome,
        output_hash: Option<Digest>,
    ) -> Result<(), switchboard_audit::AuditError> {
        let Some(mut record) = self.record.take() else {
            return Ok(());
        };
        record.outcome = outcome;
        record.output_hash = output_hash;
        record.duration_us = elapsed_us(self.started);
        self.store.append(record).acknowledged().await.map(drop)
    }
}

impl Drop for AuditDraft<'_> {
    fn drop(&mut self) {
        let Some(mut record) = self.record.take() else {
            return;
        };
        record.duration_us = elapsed_us(self.started);
        tracing::debug!(tool = %record.tool, "call cancelled by its caller");
        match self.store.append(record) {
            Appended::Done(Ok(_)) => {}
            Appended::Done(Err(error)) => {
                tracing::error!(%error, "audit record of a cancelled call was not written");
            }
            // The store needs to wait; the caller is gone, so the wait moves to a task.
            Appended::Pending(pending) => match tokio::runtime::Handle::try_current() {
                Ok(runtime) => {
                    runtime.spawn(async move {
                        if let Err(error) = pending.await {
                            tracing::error!(%error, "audit record of a cancelled call was not written");
                        }
                    });
                }
                Err(_) => {
                    tracing::error!(
                        "audit record of a cancelled call may be lost: no runtime to finish it on"
                    );
                }
            },
        }
    }
}

fn elapsed_us(started: Instant) -> u64 {
    u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX)
}
