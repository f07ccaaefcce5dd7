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

use serde::{Deserialize, Deserializer, Serialize, Serializer, de::Error as _};
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

/// Reads the 64 hex digits [`Serialize`] writes.
impl<'de> Deserialize<'de> for Digest {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let hex = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        blake3::Hash::from_hex(hex.as_bytes())
            .map(|hash| Self(*hash.as_bytes()))
            .map_err(|error| D::Error::custom(format!("not a digest ({error}): {hex}")))
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
///
/// Fails only if the canonicalizer refuses the value, which a `serde_json::Value` (no NaN, no
/// non-string keys) does not give it cause to.
pub fn digest_json(value: &Value) -> Result<Digest, DigestError> {
    let stripped;
    let value = if has_null_members(value) {
        stripped = without_null_members(value);
        &stripped
    } else {
        value
    };
    let bytes =
        canonical_bytes(value).map_err(|error| DigestError::Serialize(error.to_string()))?;
    Ok(Digest(*blake3::hash(&bytes).as_bytes()))
}

/// The digest of any serializable value: [`digest_json`] of its JSON value.
pub fn digest_of<T: Serialize + ?Sized>(value: &T) -> Result<Digest, DigestError> {
    let value =
        serde_json::to_value(value).map_err(|error| DigestError::Serialize(error.to_string()))?;
    digest_json(&value)
}

/// The RFC 8785 form of `value`.
///
/// For most values serde_json's own output already is that form, and it costs a fraction of the
/// general canonicalizer's: see [`written_canonically_by_serde_json`].
fn canonical_bytes(value: &Value) -> Result<Vec<u8>, serde_json::Error> {
    if written_canonically_by_serde_json(value) {
        serde_json::to_vec(value)
    } else {
        serde_json_canonicalizer::to_vec(value)
    }
}

/// Whether serde_json writes `value` exactly as RFC 8785 does. Both write strings and integers
/// of at most 2^53 - 1 in magnitude alike, and serde_json's `Map` keeps its keys sorted by bytes
/// (the workspace never enables serde_json's `preserve_order`), which for ASCII keys is the
/// UTF-16 order RFC 8785 asks for. Other numbers (written as the nearest ECMAScript double) and
/// non-ASCII keys need the canonicalizer. A property test below checks the two agree on every
/// value this accepts.
fn written_canonically_by_serde_json(value: &Value) -> bool {
    /// JavaScript's `Number.MAX_SAFE_INTEGER`: larger integers are not all exact doubles.
    const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;
    match value {
        Value::Number(number) => number
            .as_i64()
            .map(i64::unsigned_abs)
            .or(number.as_u64())
            .is_some_and(|magnitude| magnitude <= MAX_SAFE_INTEGER),
        Value::Array(items) => items.iter().all(written_canonically_by_serde_json),
        Value::Object(members) => members
            .iter()
            .all(|(key, member)| key.is_ascii() && written_canonically_by_serde_json(member)),
        Value::Null | Value::Bool(_) | Value::String(_) => true,
    }
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
        let canonical =
            serde_json_canonicalizer::to_vec(&without_null_members(&value)).expect("canonical");
        assert_eq!(
            std::str::from_utf8(&canonical).expect("utf-8"),
            r#"{"from":"2026-11-23","n":[1,null,2.5],"to":"2026-11-29"}"#
        );
        assert_eq!(
            digest_json(&value).expect("a digest").to_hex(),
            blake3::hash(br#"{"from":"2026-11-23","n":[1,null,2.5],"to":"2026-11-29"}"#)
                .to_hex()
                .to_string()
        );
        assert_eq!(
            digest_json(&value).expect("a digest").to_hex(),
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
        assert_eq!(digest_of(&typed), digest_json(&json));
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
        assert_eq!(
            digest_json(&json!(null)).expect("a digest").to_hex().len(),
            64
        );
    }

    fn arbitrary_json() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            any::<f64>().prop_map(Value::from),
            "[a-z]{0,3}".prop_map(Value::from),
            ".{0,8}".prop_map(Value::from),
        ];
        leaf.prop_recursive(4, 32, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
                // Keys inserted in the order generated, not sorted: a `Map` that kept insertion
                // order (serde_json's `preserve_order`) would show here.
                prop::collection::vec(("[a-zA-Z_]{0,4}|.{0,3}", inner), 0..5)
                    .prop_map(|members| Value::Object(members.into_iter().collect())),
            ]
        })
    }

    proptest::proptest! {
        /// Where serde_json's output is taken as the canonical form, it is RFC 8785's.
        #[test]
        fn serde_json_output_is_taken_only_where_it_is_canonical(value in arbitrary_json()) {
            if written_canonically_by_serde_json(&value) {
                proptest::prop_assert_eq!(
                    String::from_utf8(serde_json::to_vec(&value).expect("writes")),
                    String::from_utf8(serde_json_canonicalizer::to_vec(&value).expect("writes"))
                );
            }
        }

        /// Every digest is BLAKE3 of the canonicalizer's output for the value less its `null`
        /// members.
        #[test]
        fn every_digest_is_of_the_jcs_form(value in arbitrary_json()) {
            let jcs = serde_json_canonicalizer::to_vec(&without_null_members(&value)).expect("writes");
            proptest::prop_assert_eq!(digest_json(&value), Ok(Digest(*blake3::hash(&jcs).as_bytes())));
        }
    }
}
