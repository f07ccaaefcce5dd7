//! A record on its way to the store, with its digests still to compute.
//!
//! Hashing a call's input and output (canonical JSON, then BLAKE3) costs more than the rest of
//! a typed call's bookkeeping together, so a typed call does not do it: it hands the values
//! themselves to the [`AuditLog`](crate::AuditLog), and the writer thread computes the digests
//! just before the batch is stored. A [`Payload`] is that value, owned: a JSON value, a typed
//! value behind a box (free for zero-sized inputs such as `NoInput`), a [`Tape`] of a value
//! (what [`Payload::of`] records: no allocation per call), or a digest already known.

use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;

use crate::{
    hash::{digest_json, digest_of, digest_tape},
    record::{AuditRecord, Digest},
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
    /// caught and the value digests as JSON `null` (see [`PendingRecord::into_record`]).
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

impl PendingRecord {
    /// The finished record, digests computed.
    ///
    /// A typed value's `Serialize` impl is user code, run here on the audit writer's thread: if
    /// it panics, the panic is caught and the value digests as JSON `null` (as a value that
    /// cannot become JSON does), with an error logged. The record is still written, and the
    /// writer thread lives on for every other call.
    pub fn into_record(self) -> AuditRecord {
        let mut record = self.record;
        record.input_hash = guarded_digest(&self.input, &record);
        record.output_hash = self
            .output
            .as_ref()
            .map(|output| guarded_digest(output, &record));
        record
    }
}

/// [`Payload::digest`], with a panic turned into the digest of JSON `null`.
fn guarded_digest(payload: &Payload, record: &AuditRecord) -> Digest {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| payload.digest())).unwrap_or_else(
        |_| {
            tracing::error!(
                tool = %record.tool,
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
            input_hash: Digest([0; 32]),
            output_hash: None,
            duration_us: 0,
            outcome: crate::Outcome::Ok,
            action: None,
        };
        let pending = PendingRecord {
            record,
            input: Payload::typed(Explodes),
            output: Some(Payload::Json(Arc::new(json!({"ok": true})))),
        };
        let finished = pending.into_record();
        assert_eq!(finished.input_hash, digest_json(&serde_json::Value::Null));
        assert_eq!(
            finished.output_hash,
            Some(digest_json(&json!({"ok": true})))
        );
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
