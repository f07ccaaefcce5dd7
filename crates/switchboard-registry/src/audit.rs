//! The audit record of one call, from its first check to its outcome.
//!
//! An [`AuditDraft`] is opened before any check runs, with room for its record already reserved
//! in the [`AuditLog`], and closed with the outcome, so every attempt — refused at any step,
//! failed, panicked, timed out, or successful — is written exactly once. If the caller stops
//! waiting (the invoke future is dropped), the draft's `Drop` hands the record over with the
//! outcome `cancelled`: the reserved room means that never has to wait, so exactly once still
//! holds.
//!
//! The digests of input and output are computed here, on the caller's task, so the record is
//! complete when it is sent. A value that cannot be serialized (its `Serialize` impl fails or
//! panics) gets no digest: the record says why in `digest_error`, and the call goes on.
//!
//! The draft only borrows what the record will say (the context, the tool) and builds the
//! record once, when it closes. Its ids are the context's, present or not: a call refused for
//! `missing_context` is recorded with what it did give.
//!
//! A strict record the store does not take in time ([`AuditError::NotWrittenYet`]) makes the
//! call `audit_failed` although it has run, and its record is kept by the audit writer, to be
//! written once the store is back. [`Closed::acknowledged`] says so in the error's reason,
//! with what became of the call: that it ran, its action and where its result is kept, so a
//! caller knows a retry under the same idempotency key replays rather than runs again.

use std::{panic::AssertUnwindSafe, sync::Arc, time::Instant};

use jiff::Timestamp;
use serde::Serialize;
use switchboard_audit::{
    ActionEvent, AuditAction, AuditError, AuditLog, AuditRecord, Digest, DigestError, Outcome,
    Reservation, Submitted, clamp_tool_name,
};
use switchboard_core::{CallContext, ErrorKind, ask::ClientLink};

/// A value's digest for the record, or why it has none.
pub(crate) type Digested = Result<Digest, DigestError>;

/// The digest of a typed value. Its `Serialize` impl is user code: a panic there is caught and
/// recorded as the reason the digest is missing, and the call goes on.
pub(crate) fn digest_value<T: Serialize + ?Sized>(value: &T) -> Digested {
    std::panic::catch_unwind(AssertUnwindSafe(|| switchboard_audit::digest_of(value)))
        .unwrap_or(Err(DigestError::Panicked))
}

use crate::table::RegisteredTool;

pub(crate) struct AuditDraft<'a> {
    /// `None` once the record is handed over.
    reservation: Option<Reservation>,
    started: Instant,
    timestamp: Timestamp,
    /// The name asked for, and the tool it resolved to, if any.
    name: &'a str,
    found: Option<&'a RegisteredTool>,
    context: &'a CallContext,
    input: Digested,
    action: Option<AuditAction>,
    /// Where the tool's questions to the client go: the record lists them.
    asks: ClientLink,
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
        input: Digested,
    ) -> Result<Self, AuditError> {
        let started = Instant::now();
        let timestamp = Timestamp::now();
        let reservation = log.reserve().await?;
        Ok(Self {
            reservation: Some(reservation),
            started,
            timestamp,
            name,
            found: found.map(|tool| &**tool),
            context,
            input,
            action: None,
            asks: ClientLink::none(),
        })
    }

    /// Links the record to a mutation (its action id and what this call did to it).
    /// The digest of the call's input: what its record keeps, and what a mutation's idempotency
    /// key is derived from and its retries are compared by.
    pub(crate) fn input(&self) -> &Digested {
        &self.input
    }

    /// Lists in the record the questions asked through `link`, the caller's.
    pub(crate) fn note_asks(&mut self, link: &ClientLink) {
        if link.is_active() {
            self.asks = link.clone();
        }
    }

    pub(crate) fn set_action(&mut self, action: AuditAction) {
        self.action = Some(action);
    }

    /// Hands the record over with its outcome; await the result's
    /// [`acknowledged`](Closed::acknowledged) as the log's durability asks.
    pub(crate) fn close(mut self, outcome: Outcome, output: Option<Digested>) -> Closed<'a> {
        let action = self.action.clone();
        Closed {
            submitted: self.submit(outcome, output),
            tool: clamp_tool_name(self.name),
            outcome,
            action,
        }
    }

    fn submit(&mut self, outcome: Outcome, output: Option<Digested>) -> Submitted {
        let Some(reservation) = self.reservation.take() else {
            return Submitted::Queued;
        };
        let duration_us = elapsed_us(self.started);
        let context = self.context;
        let found = self.found;
        let mut digest_errors = Vec::new();
        let input_hash = match &self.input {
            Ok(digest) => Some(*digest),
            Err(error) => {
                digest_errors.push(format!("input: {error}"));
                None
            }
        };
        let output_hash = match output {
            Some(Ok(digest)) => Some(digest),
            Some(Err(error)) => {
                digest_errors.push(format!("output: {error}"));
                None
            }
            None => None,
        };
        let record = AuditRecord {
            asks: self.asks.asked(),
            switch: None,
            node: None,
            id: 0,
            timestamp: self.timestamp,
            // A found tool's name is shared; only an unknown name is copied.
            tool: found.map_or_else(
                || clamp_tool_name(self.name).into(),
                |tool| Arc::clone(&tool.name),
            ),
            domain: found.map(|tool| Arc::clone(&tool.domain.name)),
            category: found.map(RegisteredTool::category),
            org_id: context.org_id.clone(),
            user_id: context.user_id.clone(),
            session_id: context.session_id.clone(),
            correlation_id: context.correlation_id.clone(),
            initiator: context.initiator,
            input_hash,
            output_hash,
            digest_error: (!digest_errors.is_empty()).then(|| digest_errors.join("; ")),
            duration_us,
            outcome,
            action: self.action.take(),
        };
        crate::call_metrics::record_call(found.map(|tool| &tool.name), outcome, duration_us);
        reservation.submit(record)
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
        drop(self.submit(Outcome::Error(ErrorKind::Cancelled), None));
    }
}

/// A closed draft's record, on its way to the store.
pub(crate) struct Closed<'a> {
    submitted: Submitted,
    tool: &'a str,
    outcome: Outcome,
    action: Option<AuditAction>,
}

impl Closed<'_> {
    /// Waits for the acknowledgement the log's durability asks for. A record not written in
    /// time comes back as [`AuditError::NotWrittenYet`] whose reason starts with what became
    /// of the call.
    pub(crate) async fn acknowledged(self) -> Result<(), AuditError> {
        match self.submitted.acknowledged().await {
            Err(AuditError::NotWrittenYet(reason)) => Err(AuditError::NotWrittenYet(format!(
                "{}; {reason}",
                what_happened(self.tool, self.outcome, self.action.as_ref())
            ))),
            acknowledged => acknowledged,
        }
    }
}

/// What became of a call whose record is not written yet, for its `audit_failed` answer.
fn what_happened(tool: &str, outcome: Outcome, action: Option<&AuditAction>) -> String {
    let ended = match outcome {
        Outcome::Ok => String::new(),
        Outcome::Error(kind) => format!(" and ended with `{kind}`"),
    };
    match action {
        Some(action) => match action.event {
            ActionEvent::Executed | ActionEvent::Approved => format!(
                "`{tool}` ran as action `{}`{ended}, and that result is kept under its \
                 idempotency key: a retry with the same key gets it back without running again",
                action.id
            ),
            ActionEvent::Replayed => format!(
                "`{tool}` did not run again: it was answered with the result of action `{}`, \
                 which ran before",
                action.id
            ),
            ActionEvent::Proposed => format!(
                "`{tool}` did not run: it is stored as proposal `{}`",
                action.id
            ),
            ActionEvent::Rejected | ActionEvent::Expired | ActionEvent::Withdrawn => format!(
                "`{tool}` did not run: its proposal `{}` is {}",
                action.id,
                action.event.as_str()
            ),
        },
        None if outcome == Outcome::Ok => format!("`{tool}` ran"),
        None => format!("`{tool}` ended with `{}`", outcome.as_str()),
    }
}

fn elapsed_us(started: Instant) -> u64 {
    u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A value whose `Serialize` impl panics, as a user's may.
    struct Explodes;

    impl Serialize for Explodes {
        fn serialize<S: serde::Serializer>(&self, _serializer: S) -> Result<S::Ok, S::Error> {
            panic!("a user's Serialize impl panicked");
        }
    }

    #[test]
    fn a_panicking_serialize_impl_leaves_no_digest_and_says_why() {
        assert_eq!(digest_value(&Explodes), Err(DigestError::Panicked));
        assert_eq!(
            digest_value(&[1, 2]),
            Ok(switchboard_audit::digest_json(&serde_json::json!([1, 2]))
                .expect("JSON has a digest"))
        );
    }
}
