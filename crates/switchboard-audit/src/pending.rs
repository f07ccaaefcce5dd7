//! A record on its way to the store, with its digests still to compute.
//!
//! Hashing a call's input and output (canonical JSON, then BLAKE3) costs more than the rest of
//! a typed call's bookkeeping together, so the caller does not do it: it hands the values
//! themselves to the [`AuditLog`](crate::AuditLog), and the writer thread computes the digests
//! just before the batch is stored. A [`Payload`] is that value, owned: a JSON value, a typed
//! value behind a box (free for zero-sized inputs such as `NoInput`), or a digest already known.

use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;

use crate::{
    hash::{digest_json, digest_of},
    record::{AuditRecord, Digest},
};

/// A value whose digest goes into a record.
pub enum Payload {
    /// A JSON value (params and results of JSON calls), shared with the call that uses it.
    Json(Arc<Value>),
    /// A typed value (inputs and outputs of typed calls).
    Typed(Box<dyn Digestible>),
    /// A digest computed already.
    Digest(Digest),
}

impl Payload {
    /// A typed value, boxed. Boxing a zero-sized value does not allocate.
    pub fn typed<T: Serialize + Send + 'static>(value: T) -> Self {
        Payload::Typed(Box::new(value))
    }

    /// The digest of the canonical JSON of the value: the same for a typed value and for its
    /// JSON form.
    pub fn digest(&self) -> Digest {
        match self {
            Payload::Json(value) => digest_json(value),
            Payload::Typed(value) => value.digest(),
            Payload::Digest(digest) => *digest,
        }
    }
}

impl std::fmt::Debug for Payload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Payload::Json(value) => f.debug_tuple("Json").field(value).finish(),
            Payload::Typed(_) => f.write_str("Typed(..)"),
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
    pub fn into_record(self) -> AuditRecord {
        let mut record = self.record;
        record.input_hash = self.input.digest();
        record.output_hash = self.output.as_ref().map(Payload::digest);
        record
    }
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
