//! Digests of call inputs and outputs: what audit records and idempotency fingerprints hold.
//!
//! A digest must be something a third party can recompute from the value alone, so it uses
//! published standards only: it is BLAKE3 of the RFC 8785 (JSON Canonicalization Scheme, JCS)
//! serialization of the value, after every object member whose value is `null` is removed.
//! Removing `null` members makes an omitted optional field and an explicit `null` (which is how
//! a typed value serializes `None`) hash alike, so a typed call and the equivalent JSON call
//! leave the same digest. `null`s inside arrays are kept: there, position is meaning.
//!
//! To recompute a digest in Python: drop the `null` object members recursively, then
//! `blake3.blake3(rfc8785.dumps(value)).hexdigest()` (packages `rfc8785` and `blake3`).

use std::fmt;

use serde::{Serialize, Serializer};
use serde_json::Value;

/// A BLAKE3 digest of a value's canonical JSON (see the [module docs](self)).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Digest(pub [u8; 32]);

impl Digest {
    /// Lower-case hex, 64 characters.
    pub fn to_hex(&self) -> String {
        blake3::Hash::from_bytes(self.0).to_hex().to_string()
    }
}

impl fmt::Debug for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Digest({})", self.to_hex())
    }
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_hex())
    }
}

impl Serialize for Digest {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.to_hex())
    }
}

/// Why a value has no digest.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DigestError {
    /// The value's `Serialize` impl failed, or it produced what JSON cannot hold (a map with
    /// non-string keys, a NaN).
    #[error("the value cannot be serialized as JSON: {0}")]
    Serialize(String),
    /// The value's `Serialize` impl panicked (reported by callers that catch the panic).
    #[error("the value's Serialize impl panicked")]
    Panicked,
}

/// The digest of a JSON value.
pub fn digest_json(value: &Value) -> Digest {
    let canonical = if has_null_members(value) {
        canonical_bytes(&without_null_members(value))
    } else {
        canonical_bytes(value)
    };
    match canonical {
        Ok(bytes) => Digest(*blake3::hash(&bytes).as_bytes()),
        // A `serde_json::Value` holds neither NaN nor non-string keys, and is written into memory.
        Err(error) => unreachable!("a serde_json::Value is not JCS-serializable: {error}"),
    }
}

/// The digest of any serializable value: [`digest_json`] of its JSON value.
pub fn digest_of<T: Serialize + ?Sized>(value: &T) -> Result<Digest, DigestError> {
    let value =
        serde_json::to_value(value).map_err(|error| DigestError::Serialize(error.to_string()))?;
    Ok(digest_json(&value))
}

fn canonical_bytes(value: &Value) -> Result<Vec<u8>, serde_json::Error> {
    serde_json_canonicalizer::to_vec(value)
}

fn has_null_members(value: &Value) -> bool {
    match value {
        Value::Object(members) => members
            .values()
            .any(|member| member.is_null() || has_null_members(member)),
        Value::Array(items) => items.iter().any(has_null_members),
        _ => false,
    }
}

fn without_null_members(value: &Value) -> Value {
    match value {
        Value::Object(members) => Value::Object(
            members
                .iter()
                .filter(|(_, member)| !member.is_null())
                .map(|(key, member)| (key.clone(), without_null_members(member)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_null_members).collect()),
        scalar => scalar.clone(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// Pins the canonical form: a third party's recomputation must give this digest.
    #[test]
    fn a_known_value_has_a_known_digest() {
        let value = json!({"to": "2026-11-29", "from": "2026-11-23", "assignee": null, "n": [1, null, 2.5]});
        let canonical = canonical_bytes(&without_null_members(&value)).expect("canonical");
        assert_eq!(
            std::str::from_utf8(&canonical).expect("utf-8"),
            r#"{"from":"2026-11-23","n":[1,null,2.5],"to":"2026-11-29"}"#
        );
        assert_eq!(
            digest_json(&value).to_hex(),
            blake3::hash(br#"{"from":"2026-11-23","n":[1,null,2.5],"to":"2026-11-29"}"#)
                .to_hex()
                .to_string()
        );
        assert_eq!(
            digest_json(&value).to_hex(),
            "7c80c191449cdea926de756a1719d8f22502b692322d6c3b91c85a63b9f7087a"
        );
    }

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
            assignee: Option<&'static str>,
        }
        let typed = Input {
            to: "2026-11-29",
            from: "2026-11-23",
            assignee: None,
        };
        let json = json!({"from": "2026-11-23", "to": "2026-11-29"});
        assert_eq!(digest_of(&typed), Ok(digest_json(&json)));
    }

    #[test]
    fn absent_and_null_members_hash_alike_but_array_nulls_count() {
        assert_eq!(
            digest_json(&json!({"from": "a", "assignee": null})),
            digest_json(&json!({"from": "a"}))
        );
        assert_ne!(digest_json(&json!([null])), digest_json(&json!([])));
    }

    #[test]
    fn a_value_that_cannot_become_json_has_no_digest() {
        let keyed_by_pairs: std::collections::BTreeMap<(u8, u8), u8> =
            [((1, 2), 3)].into_iter().collect();
        let error = digest_of(&keyed_by_pairs).expect_err("JSON keys are strings");
        assert!(
            error
                .to_string()
                .starts_with("the value cannot be serialized as JSON: "),
            "{error}"
        );
    }

    #[test]
    fn different_values_differ() {
        assert_ne!(digest_json(&json!({"a": 1})), digest_json(&json!({"a": 2})));
        assert_eq!(digest_json(&json!(null)).to_hex().len(), 64);
    }
}
