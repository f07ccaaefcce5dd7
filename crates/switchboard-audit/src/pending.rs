//! A record on its way to the store, with its digests still to compute.
//!
//! Hashing a call's input and output (canonical JSON, then BLAKE3) costs more than the rest of
//! a typed call's bookkeeping together, so a typed call does not do it: it hands the values
//! themselves to the [`AuditLog`](crate::AuditLog), and the writer thread computes the digests
//! just before the batch is stored. A [`Payload`] is that value, owned: a JSON value, a typed
//! value behind a box (free for zero-sized inputs such as `NoInput`), a [`Tape`] of a value
//! (what [`Payload::of`] records: no allocation per call), or a digest already known.

use std::{sync::Arc, time::Instant};

use jiff::Timestamp;
use serde::Serialize;
use serde_json::Value;
use switchboard_core::{Category, CorrelationId, Initiator, OrgId, SessionId, UserId};

use crate::{
    action::AuditAction,
    hash::{digest_json, digest_of, digest_tape},
    record::{AuditRecord, Digest, Outcome},
    tape::Tape,
};

/// A value whose digest goes into a record.
pub enum Payload {
    /// A JSON value (params and results of JSON calls), shared with the call that uses it.
    Json(Arc<Value>),
    /// A typed value (inputs and outputs of typed calls).
    Typed(Box<dyn Digestible>),
    /// A value's JSON shape, recorded on the caller's thread ([`Payload::of`]).
    Tape(Tape),
    /// A digest computed already.
    Digest(Digest),
}

impl Payload {
    /// A typed value, boxed. Boxing a zero-sized value does not allocate.
    pub fn typed<T: Serialize + Send + 'static>(value: T) -> Self {
        Payload::Typed(Box::new(value))
    }

    /// What the writer digests for `value`, which the caller keeps: a [`Tape`] of it, or a
    /// copy where the tape does not take its shape (see [`Tape::record`]). A zero-sized value
    /// is copied: that is free.
    ///
    /// `value`'s `Serialize` impl runs here, on the caller's thread; if it panics, the panic is
    /// caught and the value digests as JSON `null`, as it does when the audit writer digests a
    /// typed value whose `Serialize` impl panics there.
    pub fn of<T: Serialize + Clone + Send + 'static>(value: &T) -> Self {
        if size_of::<T>() == 0 {
            return Payload::typed(value.clone());
        }
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| Tape::record(value))) {
            Ok(Some(tape)) => Payload::Tape(tape),
            Ok(None) => Payload::typed(value.clone()),
            Err(_) => {
                tracing::error!(
                    "serializing a call's input or output for its audit digest panicked; the \
                     record is written with the digest of JSON null"
                );
                Payload::Digest(digest_json(&Value::Null))
            }
        }
    }

    /// The digest of the canonical JSON of the value: the same for a typed value and for its
    /// JSON form.
    pub fn digest(&self) -> Digest {
        match self {
            Payload::Json(value) => digest_json(value),
            Payload::Typed(value) => value.digest(),
            Payload::Tape(tape) => digest_tape(tape),
            Payload::Digest(digest) => *digest,
        }
    }
}

impl std::fmt::Debug for Payload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Payload::Json(value) => f.debug_tuple("Json").field(value).finish(),
            Payload::Typed(_) => f.write_str("Typed(..)"),
            Payload::Tape(tape) => f.debug_tuple("Tape").field(tape).finish(),
            Payload::Digest(digest) => f.debug_tuple("Digest").field(digest).finish(),
        }
    }
}

/// A value that can be digested on another thread.
pub trait Digestible: Send + 'static {
    /// The digest of the value's canonical JSON.
    fn digest(&self) -> Digest;
}

impl<T: Serialize + Send + 'static> Digestible for T {
    fn digest(&self) -> Digest {
        digest_of(self)
    }
}

/// A record whose digests the writer computes: `record.input_hash` and `record.output_hash`
/// are overwritten from `input` and `output` before the record is stored.
#[derive(Debug)]
pub struct PendingRecord {
    /// The record, complete but for its id and digests.
    pub record: AuditRecord,
    /// The call's input.
    pub input: Payload,
    /// The call's output, on success.
    pub output: Option<Payload>,
}

/// A [`PendingRecord`] as it waits in the audit queue: the record less its id (the store's to
/// give) and its digests (the writer's to compute from the payloads), and with the call's start
/// in place of its timestamp when the writer is to fill that in.
///
/// Every record is written into the queue on one core and read out on another, a cache line
/// at a time, so the queue's slots are kept small: with its acknowledgement sender, a queued
/// record fills 256 bytes (four lines), where the whole pending record and its start took 384
/// (six).
pub(crate) struct QueuedRecord {
    when: When,
    tool: Arc<str>,
    domain: Option<Arc<str>>,
    category: Option<Category>,
    org_id: Option<OrgId>,
    user_id: Option<UserId>,
    session_id: Option<SessionId>,
    correlation_id: Option<CorrelationId>,
    initiator: Initiator,
    duration_us: u64,
    outcome: Outcome,
    action: Option<AuditAction>,
    input: Payload,
    output: Option<Payload>,
}

/// When a queued call happened: its timestamp, or its start for the writer to turn into one.
enum When {
    At(Timestamp),
    Started(Instant),
}

impl QueuedRecord {
    /// `pending` for the queue; with `started`, the writer sets the timestamp from it.
    pub(crate) fn new(pending: PendingRecord, started: Option<Instant>) -> Self {
        let PendingRecord {
            record,
            input,
            output,
        } = pending;
        let AuditRecord {
            id: _,
            timestamp,
            tool,
            domain,
            category,
            org_id,
            user_id,
            session_id,
            correlation_id,
            initiator,
            input_hash: _,
            output_hash: _,
            digest_error: _,
            duration_us,
            outcome,
            action,
        } = record;
        Self {
            when: started.map_or(When::At(timestamp), When::Started),
            tool,
            domain,
            category,
            org_id,
            user_id,
            session_id,
            correlation_id,
            initiator,
            duration_us,
            outcome,
            action,
            input,
            output,
        }
    }

    /// The finished record: its digests computed, and its timestamp `wall_time` of the call's
    /// start if the queue has that instead.
    ///
    /// A typed value's `Serialize` impl is user code, run here on the audit writer's thread: if
    /// it panics, the panic is caught and the value digests as JSON `null` (as a value that
    /// cannot become JSON does), with an error logged. The record is still written, and the
    /// writer thread lives on for every other call.
    pub(crate) fn into_record(self, wall_time: impl FnOnce(Instant) -> Timestamp) -> AuditRecord {
        let input_hash = guarded_digest(&self.input, &self.tool);
        let output_hash = self
            .output
            .as_ref()
            .map(|output| guarded_digest(output, &self.tool));
        AuditRecord {
            id: 0,
            timestamp: match self.when {
                When::At(timestamp) => timestamp,
                When::Started(started) => wall_time(started),
            },
            tool: self.tool,
            domain: self.domain,
            category: self.category,
            org_id: self.org_id,
            user_id: self.user_id,
            session_id: self.session_id,
            correlation_id: self.correlation_id,
            initiator: self.initiator,
            input_hash: Some(input_hash),
            output_hash,
            digest_error: None,
            duration_us: self.duration_us,
            outcome: self.outcome,
            action: self.action,
        }
    }
}

/// [`Payload::digest`], with a panic turned into the digest of JSON `null`.
fn guarded_digest(payload: &Payload, tool: &str) -> Digest {
    // Most records (every JSON call's) come with their digests: no user code to guard.
    if let Payload::Digest(digest) = payload {
        return *digest;
    }
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| payload.digest())).unwrap_or_else(
        |_| {
            tracing::error!(
                tool,
                "serializing a call's input or output for its audit digest panicked; the \
                 record is written with the digest of JSON null"
            );
            digest_json(&serde_json::Value::Null)
        },
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[derive(Serialize)]
    struct Range {
        to: &'static str,
        from: &'static str,
        note: Option<&'static str>,
    }

    /// A value whose `Serialize` impl panics, as user code may.
    struct Explodes;

    impl Serialize for Explodes {
        fn serialize<S: serde::Serializer>(&self, _serializer: S) -> Result<S::Ok, S::Error> {
            panic!("a user's Serialize impl panicked");
        }
    }

    #[test]
    fn a_panicking_serialize_impl_digests_as_null() {
        let record = crate::AuditRecord {
            id: 0,
            timestamp: jiff::Timestamp::UNIX_EPOCH,
            tool: "t".into(),
            domain: None,
            category: None,
            org_id: None,
            user_id: None,
            session_id: None,
            correlation_id: None,
            initiator: switchboard_core::Initiator::Agent,
            input_hash: Some(Digest([0; 32])),
            output_hash: None,
            digest_error: None,
            duration_us: 0,
            outcome: crate::Outcome::Ok,
            action: None,
        };
        let pending = PendingRecord {
            record,
            input: Payload::typed(Explodes),
            output: Some(Payload::Json(Arc::new(json!({"ok": true})))),
        };
        let finished = QueuedRecord::new(pending, None).into_record(|_| unreachable!());
        assert_eq!(
            finished.input_hash,
            Some(digest_json(&serde_json::Value::Null))
        );
        assert_eq!(
            finished.output_hash,
            Some(digest_json(&json!({"ok": true})))
        );
    }

    #[test]
    fn a_queued_record_comes_out_as_it_went_in_with_its_digests() {
        let record = crate::AuditRecord {
            id: 0,
            timestamp: jiff::Timestamp::UNIX_EPOCH,
            tool: "roster_list_shifts".into(),
            domain: Some("roster".into()),
            category: Some(switchboard_core::Category::Read),
            org_id: Some("acme".into()),
            user_id: Some("alice".into()),
            session_id: Some("s-1".into()),
            correlation_id: Some("c-1".into()),
            initiator: switchboard_core::Initiator::Human,
            input_hash: Some(Digest([7; 32])),
            output_hash: None,
            digest_error: None,
            duration_us: 42,
            outcome: crate::Outcome::Error(switchboard_core::ErrorKind::Timeout),
            action: None,
        };
        let input = json!({"from": "2026-11-23"});
        let output = json!([]);
        let pending = |record| PendingRecord {
            record,
            input: Payload::Json(Arc::new(input.clone())),
            output: Some(Payload::Json(Arc::new(output.clone()))),
        };
        let mut expected = record.clone();
        expected.input_hash = Some(digest_json(&input));
        expected.output_hash = Some(digest_json(&output));

        let kept = QueuedRecord::new(pending(record.clone()), None).into_record(|_| unreachable!());
        assert_eq!(kept, expected);

        // Handed over with its start: the writer's wall time of that start is its timestamp.
        let started = std::time::Instant::now();
        let at = jiff::Timestamp::from_second(1_795_000_000).expect("in range");
        let stamped = QueuedRecord::new(pending(record), Some(started)).into_record(|instant| {
            assert_eq!(instant, started);
            at
        });
        expected.timestamp = at;
        assert_eq!(stamped, expected);
    }

    #[test]
    fn a_serialize_impl_panicking_on_the_callers_thread_digests_as_null() {
        #[derive(Clone)]
        struct ExplodesToo {
            _not_zero_sized: u8,
        }
        impl Serialize for ExplodesToo {
            fn serialize<S: serde::Serializer>(&self, _serializer: S) -> Result<S::Ok, S::Error> {
                panic!("a user's Serialize impl panicked");
            }
        }
        let payload = Payload::of(&ExplodesToo { _not_zero_sized: 1 });
        assert!(matches!(payload, Payload::Digest(_)), "{payload:?}");
        assert_eq!(payload.digest(), digest_json(&serde_json::Value::Null));
    }

    #[test]
    fn payloads_of_values_are_taped_or_copied_and_digest_alike() {
        #[derive(Clone, Serialize)]
        enum Odd {
            Pair(u8, u8),
        }
        let range = Range {
            to: "2026-11-29",
            from: "2026-11-23",
            note: None,
        };
        let json = json!({"from": "2026-11-23", "to": "2026-11-29"});
        let taped = Payload::of(&json);
        assert!(matches!(taped, Payload::Tape(_)), "{taped:?}");
        assert_eq!(taped.digest(), digest_json(&json));
        assert_eq!(Payload::typed(range).digest(), taped.digest());
        let copied = Payload::of(&Odd::Pair(1, 2));
        assert!(matches!(copied, Payload::Typed(_)), "{copied:?}");
        assert_eq!(copied.digest(), digest_json(&json!({"Pair": [1, 2]})));
    }

    #[test]
    fn typed_and_json_payloads_of_the_same_value_digest_alike() {
        let typed = Payload::typed(Range {
            to: "2026-11-29",
            from: "2026-11-23",
            note: None,
        });
        let json = Payload::Json(Arc::new(json!({"from": "2026-11-23", "to": "2026-11-29"})));
        assert_eq!(typed.digest(), json.digest());
        assert_eq!(Payload::Digest(json.digest()).digest(), json.digest());
    }
}
