//! The audit record of one call, from its first check to its outcome.
//!
//! An [`AuditDraft`] is opened before any check runs, with room for its record already reserved
//! in the [`AuditLog`], and closed with the outcome, so every attempt — refused at any step,
//! failed, panicked, timed out, or successful — is written exactly once. If the caller stops
//! waiting (the invoke future is dropped), the draft's `Drop` hands the record over with the
//! outcome `cancelled`: the reserved room means that never has to wait, so exactly once still
//! holds. The digests of input and output are computed by the log's writer, not here.

use std::{sync::Arc, time::Instant};

use jiff::Timestamp;
use switchboard_audit::{
    AuditAction, AuditError, AuditLog, AuditRecord, Digest, Outcome, Payload, PendingRecord,
    Reservation, Submitted, clamp_tool_name,
};
use switchboard_core::{CallContext, ErrorKind};

use crate::table::RegisteredTool;

pub(crate) struct AuditDraft {
    open: Option<(Reservation, PendingRecord)>,
    started: Instant,
}

impl AuditDraft {
    /// Reserves room for the record of a call of `tool` and starts its clock. Fails when the
    /// log refuses (shut down, or full under the fail policy): the call must not run then.
    /// `found` is the tool `name` resolved to, if any.
    pub(crate) async fn open(
        log: &AuditLog,
        name: &str,
        found: Option<&Arc<RegisteredTool>>,
        context: &CallContext,
        input: Payload,
    ) -> Result<Self, AuditError> {
        let started = Instant::now();
        let reservation = match log.try_reserve()? {
            Some(reservation) => reservation,
            // Boxed: the wait for room is rare, and its future would bloat every call's.
            None => Box::pin(log.reserve()).await?,
        };
        let record = AuditRecord {
            id: 0,
            timestamp: Timestamp::now(),
            // A found tool's name is shared; only an unknown name is copied.
            tool: found.map_or_else(
                || clamp_tool_name(name).into(),
                |tool| Arc::clone(&tool.name),
            ),
            domain: found.map(|tool| Arc::clone(&tool.domain.name)),
            category: found.map(|tool| tool.category()),
            org_id: context.org_id.clone(),
            user_id: context.user_id.clone(),
            session_id: context.session_id.clone(),
            correlation_id: context.correlation_id.clone(),
            initiator: context.initiator,
            // Computed by the writer from `input` and the output.
            input_hash: Digest([0; 32]),
            output_hash: None,
            duration_us: 0,
            outcome: Outcome::Error(ErrorKind::Cancelled),
            action: None,
        };
        let pending = PendingRecord {
            record,
            input,
            output: None,
        };
        Ok(Self {
            open: Some((reservation, pending)),
            started,
        })
    }

    /// Links the record to a mutation (its action id and what this call did to it).
    pub(crate) fn set_action(&mut self, action: AuditAction) {
        if let Some((_, pending)) = &mut self.open {
            pending.record.action = Some(action);
        }
    }

    /// Hands the record over with its outcome; await the result's
    /// [`acknowledged`](Submitted::acknowledged) as the log's durability asks.
    pub(crate) fn close(mut self, outcome: Outcome, output: Option<Payload>) -> Submitted {
        let Some((reservation, mut pending)) = self.open.take() else {
            return Submitted::Queued;
        };
        pending.record.outcome = outcome;
        pending.record.duration_us = elapsed_us(self.started);
        pending.output = output;
        reservation.submit(pending)
    }
}

impl Drop for AuditDraft {
    fn drop(&mut self) {
        let Some((reservation, mut pending)) = self.open.take() else {
            return;
        };
        pending.record.duration_us = elapsed_us(self.started);
        tracing::debug!(tool = %pending.record.tool, "call cancelled by its caller");
        // Nobody waits for the acknowledgement: the caller is gone. The record is queued either
        // way; a strict store's failure is logged and counted by the writer.
        drop(reservation.submit(pending));
    }
}

fn elapsed_us(started: Instant) -> u64 {
    u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX)
}
