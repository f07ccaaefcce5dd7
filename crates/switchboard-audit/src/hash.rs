//! Digests of inputs and outputs.
//!
//! The digest is BLAKE3 over the value's canonical JSON: object keys in sorted order, and object
//! members whose value is `null` left out. So the same params hash the same whichever order a
//! client sent the keys in, and a typed call (where an absent optional field serializes as
//! `null`) hashes the same as the equivalent JSON call (where it is simply absent).

use serde::{Serialize, Serializer, ser::SerializeMap, ser::SerializeSeq};
use serde_json::Value;

use crate::{record::Digest, tape::Tape};

/// The digest of a JSON value.
pub fn digest_json(value: &Value) -> Digest {
    match digest_json_within(value, usize::MAX) {
        Some(digest) => digest,
        // Writing a `Value` into memory cannot fail: no I/O, its keys are strings, no limit.
        None => unreachable!("serializing a serde_json::Value into memory failed"),
    }
}

/// The digest of a JSON value whose canonical JSON is at most `limit` bytes long; `None`, after
/// writing at most `limit` bytes, for a longer one. For a caller that digests small values
/// itself and hands large ones on, without measuring them first.
pub fn digest_json_within(value: &Value, limit: usize) -> Option<Digest> {
    // `serde_json::Map` keeps keys sorted (the workspace never enables `preserve_order`; a test
    // below fails if something does), so writing the value out is already canonical.
    written_digest(|buffer| serde_json::to_writer(Bounded { buffer, limit }, &Canonical(value)))
}

/// A buffer that refuses to grow past `limit` bytes.
struct Bounded<'a> {
    buffer: &'a mut Vec<u8>,
    limit: usize,
}

impl std::io::Write for Bounded<'_> {
    #[inline]
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.write_all(bytes).map(|()| bytes.len())
    }

    // `serde_json` writes through `write_all`, a piece at a time: this is its whole cost.
    #[inline]
    fn write_all(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        if bytes.len() > self.limit - self.buffer.len().min(self.limit) {
            return Err(over_the_limit());
        }
        self.buffer.extend_from_slice(bytes);
        Ok(())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cold]
fn over_the_limit() -> std::io::Error {
    std::io::Error::other("the value is longer than the limit")
}

/// A JSON value written canonically: object members with `null` values are skipped.
struct Canonical<'a>(&'a Value);

impl Serialize for Canonical<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Value::Object(map) => {
                let mut out = serializer.serialize_map(None)?;
                for (key, value) in map.iter().filter(|(_, value)| !value.is_null()) {
                    out.serialize_entry(key, &Canonical(value))?;
                }
                out.end()
            }
            Value::Array(items) => {
                let mut out = serializer.serialize_seq(Some(items.len()))?;
                for item in items {
                    out.serialize_element(&Canonical(item))?;
                }
                out.end()
            }
            scalar => scalar.serialize(serializer),
        }
    }
}

/// The digest of any serializable value: the same as [`digest_json`] of its JSON value, without
/// building that value. Values that cannot become JSON hash as JSON `null`.
pub fn digest_of<T: Serialize + ?Sized>(value: &T) -> Digest {
    written_digest(|buffer| crate::canonical::write_canonical(value, buffer))
        .unwrap_or_else(|| digest_json(&serde_json::to_value(value).unwrap_or(Value::Null)))
}

/// The digest of a taped value: the same as [`digest_of`] the value itself. A corrupt tape (a
/// bug in this crate) digests as JSON `null`, like a value that cannot become JSON.
pub(crate) fn digest_tape(tape: &Tape) -> Digest {
    written_digest(|buffer| tape.write_canonical(buffer))
        .unwrap_or_else(|| digest_json(&Value::Null))
}

/// The digest of what `write` writes, or `None` if it fails. It writes into an empty, reused
/// per-thread buffer: feeding a hasher token by token costs several times more than the
/// hashing itself, so values are written out first.
fn written_digest<E>(write: impl FnOnce(&mut Vec<u8>) -> Result<(), E>) -> Option<Digest> {
    let write_and_hash = |buffer: &mut Vec<u8>| {
        write(buffer)
            .ok()
            .map(|()| Digest(*blake3::hash(buffer).as_bytes()))
    };
    thread_local! {
        static BUFFER: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    BUFFER.with(|buffer| match buffer.try_borrow_mut() {
        Ok(mut buffer) => {
            buffer.clear();
            let result = write_and_hash(&mut buffer);
            // Keep the buffer from staying huge after one huge value.
            if buffer.capacity() > 64 * 1024 {
                *buffer = Vec::new();
            }
            result
        }
        // Only a re-entrant call (a `Serialize` impl that hashes) gets here.
        Err(_) => write_and_hash(&mut Vec::new()),
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn key_order_does_not_change_the_digest() {
        let a: Value = serde_json::from_str(r#"{"b": 1, "a": {"y": 2, "x": 3}}"#).expect("json");
        let b: Value = serde_json::from_str(r#"{"a": {"x": 3, "y": 2}, "b": 1}"#).expect("json");
        assert_eq!(digest_json(&a), digest_json(&b));
    }

    #[test]
    fn typed_values_hash_like_their_json() {
        #[derive(Serialize)]
        struct Input {
            to: &'static str,
            from: &'static str,
        }
        let typed = Input {
            to: "2026-11-29",
            from: "2026-11-23",
        };
        let json = json!({"from": "2026-11-23", "to": "2026-11-29"});
        assert_eq!(digest_of(&typed), digest_json(&json));
    }

    #[test]
    fn absent_and_null_members_hash_alike() {
        assert_eq!(
            digest_json(&json!({"from": "a", "assignee": null})),
            digest_json(&json!({"from": "a"}))
        );
        assert_ne!(digest_json(&json!([null])), digest_json(&json!([])));
    }

    #[derive(Serialize)]
    enum Shape {
        Dot,
        Circle(f32),
        Rect { w: u8, h: u8 },
    }

    #[derive(Serialize)]
    struct Everything {
        zeta: Option<u32>,
        alpha: Vec<Option<i64>>,
        nested: std::collections::HashMap<u16, &'static str>,
        unit: (),
        shapes: Vec<Shape>,
        text: &'static str,
        bytes: Vec<u8>,
    }

    #[test]
    fn streamed_digest_matches_the_value_route_for_typed_values() {
        let value = Everything {
            zeta: None,
            alpha: vec![Some(-3), None],
            nested: [(2, "two"), (10, "ten")].into_iter().collect(),
            unit: (),
            shapes: vec![Shape::Dot, Shape::Circle(0.1)],
            text: "quote \" and \u{1F600}",
            bytes: vec![0, 255],
        };
        let json = serde_json::to_value(&value).expect("serializable");
        let mut streamed = Vec::new();
        crate::canonical::write_canonical(&value, &mut streamed).expect("streams");
        let mut via_value = Vec::new();
        serde_json::to_writer(&mut via_value, &Canonical(&json)).expect("writes");
        assert_eq!(
            String::from_utf8_lossy(&streamed),
            String::from_utf8_lossy(&via_value)
        );
        assert_eq!(digest_of(&value), digest_json(&json));
        let tape = crate::Tape::record(&value).expect("taped");
        assert_eq!(digest_of(&tape), digest_json(&json));
        assert_eq!(digest_tape(&tape), digest_json(&json));
    }

    #[test]
    fn struct_variants_fall_back_to_the_value_route() {
        let rect = Shape::Rect { w: 1, h: 2 };
        assert!(crate::canonical::write_canonical(&rect, &mut Vec::new()).is_err());
        let json = serde_json::to_value(&rect).expect("serializable");
        assert_eq!(digest_of(&rect), digest_json(&json));
    }

    fn arbitrary_json() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            any::<f64>().prop_map(Value::from),
            ".{0,8}".prop_map(Value::from),
        ];
        leaf.prop_recursive(4, 32, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
                prop::collection::btree_map(".{0,6}", inner, 0..5)
                    .prop_map(|map| Value::Object(map.into_iter().collect())),
            ]
        })
    }

    proptest::proptest! {
        /// Streaming any JSON value canonically gives the same digest as the `Value` route.
        #[test]
        fn streamed_and_value_digests_agree(value in arbitrary_json()) {
            proptest::prop_assert_eq!(digest_of(&value), digest_json(&value));
        }

        /// A tape of any JSON value digests as the value does.
        #[test]
        fn taped_and_value_digests_agree(value in arbitrary_json()) {
            let tape = crate::Tape::record(&value).expect("every JSON value is taped");
            proptest::prop_assert_eq!(digest_of(&tape), digest_json(&value));
            proptest::prop_assert_eq!(digest_tape(&tape), digest_json(&value));
        }
    }

    #[test]
    fn a_bounded_digest_is_the_digest_or_nothing() {
        let value = json!({"b": [1, null], "a": "x", "gone": null});
        let exact = br#"{"a":"x","b":[1,null]}"#.len();
        assert_eq!(digest_json_within(&value, exact), Some(digest_json(&value)));
        assert_eq!(digest_json_within(&value, exact - 1), None);
        assert_eq!(digest_json_within(&json!("x".repeat(10_000)), 4096), None);
    }

    #[test]
    fn different_values_differ() {
        assert_ne!(digest_json(&json!({"a": 1})), digest_json(&json!({"a": 2})));
        assert_eq!(digest_json(&json!(null)).to_hex().len(), 64);
    }
}
