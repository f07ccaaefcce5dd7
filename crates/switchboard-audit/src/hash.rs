//! Digests of inputs and outputs.
//!
//! The digest is BLAKE3 over the value's canonical JSON: object keys in sorted order, and object
//! members whose value is `null` left out. So the same params hash the same whichever order a
//! client sent the keys in, and a typed call (where an absent optional field serializes as
//! `null`) hashes the same as the equivalent JSON call (where it is simply absent).

use serde::{Serialize, Serializer, ser::SerializeMap, ser::SerializeSeq};
use serde_json::Value;

use crate::record::Digest;

/// The digest of a JSON value.
pub fn digest_json(value: &Value) -> Digest {
    let mut hasher = blake3::Hasher::new();
    // `serde_json::Map` keeps keys sorted (the workspace never enables `preserve_order`; a test
    // below fails if something does), so writing the value out is already canonical.
    if serde_json::to_writer(&mut hasher, &Canonical(value)).is_err() {
        // Writing a `Value` into a hasher cannot fail: it has no I/O and no non-string keys.
        unreachable!("serializing a serde_json::Value into a hasher failed");
    }
    Digest(*hasher.finalize().as_bytes())
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

/// The digest of any serializable value, as if it were first turned into JSON.
/// Values that cannot become JSON hash as JSON `null`.
pub fn digest_of<T: Serialize + ?Sized>(value: &T) -> Digest {
    digest_json(&serde_json::to_value(value).unwrap_or(Value::Null))
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

    #[test]
    fn different_values_differ() {
        assert_ne!(digest_json(&json!({"a": 1})), digest_json(&json!({"a": 2})));
        assert_eq!(digest_json(&json!(null)).to_hex().len(), 64);
    }
}
