//! The audit record of one call, from its first check to its outcome.
//!
//! An [`AuditDraft`] is opened before any check runs, with room for its record already reserved
//! in the [`AuditLog`], and closed with the outcome, so every attempt — refused at any step,
//! failed, panicked, timed out, or successful — is written exactly once. If the caller stops
//! waiting (the invoke future is dropped), the draft's `Drop` hands the record over with the
//! outcome `cancelled`: the reserved room means that never has to wait, so exactly once still
//! holds. The digests of input and output are computed by the log's writer, not here.
//!
//! The draft only borrows what the record will say (the context, the tool) and builds the
//! record once, when it closes: a call that got as far as running its tool hands its verified
//! [`Caller`] back, and the record takes the ids out of it instead of copying them from the
//! context a second time. The call reads the monotonic clock when it opens and when it closes;
//! the record's wall-clock timestamp is filled in by the writer from the start instant
//! ([`Reservation::submit_started_at`]).

use std::{sync::Arc, time::Instant};

use jiff::Timestamp;
use switchboard_audit::{
    AuditAction, AuditError, AuditLog, AuditRecord, Digest, Outcome, Payload, PendingRecord,
    Reservation, Submitted, clamp_tool_name,
};
use switchboard_core::{CallContext, Caller, ErrorKind};

use crate::table::RegisteredTool;

pub(crate) struct AuditDraft<'a> {
    /// `None` once the record is handed over.
    reservation: Option<Reservation<'a>>,
    started: Instant,
    /// The name asked for, and the tool it resolved to, if any.
    name: &'a str,
    found: Option<&'a RegisteredTool>,
    context: &'a CallContext,
    input: Option<Payload>,
    action: Option<AuditAction>,
}

impl<'a> AuditDraft<'a> {
    /// Reserves room for the record of a call of `tool` and starts its clock. Fails when the
    /// log refuses (shut down, or full under the fail policy): the call must not run then.
    /// `found` is the tool `name` resolved to, if any.
    pub(crate) async fn open(
        log: &'a AuditLog,
        name: &'a str,
        found: Option<&'a Arc<RegisteredTool>>,
        context: &'a CallContext,
        input: Payload,
    ) -> Result<Self, AuditError> {
        let started = Instant::now();
        let reservation = reserve(log).await?;
        Ok(Self::new(reservation, started, name, found, context, input))
    }

    /// The draft of a call that started at `started` and has room for its record.
    pub(crate) fn new(
        reservation: Reservation<'a>,
        started: Instant,
        name: &'a str,
        found: Option<&'a Arc<RegisteredTool>>,
        context: &'a CallContext,
        input: Payload,
    ) -> Self {
        Self {
            reservation: Some(reservation),
            started,
            name,
            found: found.map(|tool| &**tool),
            context,
            input: Some(input),
            action: None,
        }
    }

    /// Links the record to a mutation (its action id and what this call did to it).
    pub(crate) fn set_action(&mut self, action: AuditAction) {
        self.action = Some(action);
    }

    /// Hands the record over with its outcome; await the result's
    /// [`acknowledged`](Submitted::acknowledged) as the log's durability asks. `caller` is the
    /// verified caller of a call that got that far: its ids go into the record.
    pub(crate) fn close(
        mut self,
        outcome: Outcome,
        output: Option<Payload>,
        caller: Option<Caller>,
    ) -> Submitted {
        self.submit(outcome, output, caller)
    }

    fn submit(
        &mut self,
        outcome: Outcome,
        output: Option<Payload>,
        caller: Option<Caller>,
    ) -> Submitted {
        let Some(reservation) = self.reservation.take() else {
            return Submitted::Queued;
        };
        let duration_us = elapsed_us(self.started);
        let context = self.context;
        let (org_id, user_id, session_id, correlation_id) = match caller {
            Some(Caller {
                org_id,
                user_id,
                session_id,
                correlation_id,
                ..
            }) => (
                Some(org_id),
                Some(user_id),
                Some(session_id),
                Some(correlation_id),
            ),
            // Refused before the context was verified (or a mutation, whose caller went into
            // its run): the record says what the context said, present or not.
            None => (
                context.org_id.clone(),
                context.user_id.clone(),
                context.session_id.clone(),
                context.correlation_id.clone(),
            ),
        };
        let found = self.found;
        let record = AuditRecord {
            id: 0,
            // Set by the writer from `started`.
            timestamp: Timestamp::UNIX_EPOCH,
            // A found tool's name is shared; only an unknown name is copied.
            tool: found.map_or_else(
                || clamp_tool_name(self.name).into(),
                |tool| Arc::clone(&tool.name),
            ),
            domain: found.map(|tool| Arc::clone(&tool.domain.name)),
            category: found.map(RegisteredTool::category),
            org_id,
            user_id,
            session_id,
            correlation_id,
            initiator: context.initiator,
            // Computed by the writer from `input` and the output.
            input_hash: Some(Digest([0; 32])),
            output_hash: None,
            digest_error: None,
            duration_us,
            outcome,
            action: self.action.take(),
        };
        let pending = PendingRecord {
            record,
            input: self
                .input
                .take()
                .unwrap_or(Payload::Digest(Digest([0; 32]))),
            output,
        };
        reservation.submit_started_at(pending, self.started)
    }
}

impl Drop for AuditDraft<'_> {
    fn drop(&mut self) {
        if self.reservation.is_none() {
            return;
        }
        tracing::debug!(
            tool = clamp_tool_name(self.name),
            "call cancelled by its caller"
        );
        // Nobody waits for the acknowledgement: the caller is gone. The record is queued either
        // way; a strict store's failure is logged and counted by the writer.
        drop(self.submit(Outcome::Error(ErrorKind::Cancelled), None, None));
    }
}

/// Room for a call's record: at once, or after a wait (boxed: the wait is rare, and its future
/// would bloat every call's). Fails when the log refuses: the call must not run then.
pub(crate) async fn reserve(log: &AuditLog) -> Result<Reservation<'_>, AuditError> {
    match log.try_reserve()? {
        Some(reservation) => Ok(reservation),
        None => Box::pin(log.reserve()).await,
    }
}

fn elapsed_us(started: Instant) -> u64 {
    u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX)
}
