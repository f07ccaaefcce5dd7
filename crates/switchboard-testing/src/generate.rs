//! Test inputs derived from a tool's input schema: values it accepts, values it refuses (each
//! broken at one known place), and params that smuggle an org id.
//!
//! The schemas are what schemars 1.x emits (JSON Schema 2020-12), so the generator knows the
//! keywords schemars writes and treats the rest as constraints it cannot see: an unknown
//! keyword or type widens what it generates instead of failing. A value it calls valid can then
//! be refused by a schema with such keywords; the kit's checks only need the common keywords
//! to be exact.
//!
//! Everything is a proptest strategy built once from the schema, so failures shrink: toward
//! absent optional properties, empty strings and arrays, and 0.

mod invalid;
mod schema;
mod smuggle;
mod valid;

#[cfg(test)]
mod tests;

use proptest::prelude::{Just, Strategy};
use proptest::strategy::BoxedStrategy;
use serde_json::Value;

use schema::Node;

/// The inputs a tool's input schema describes, as proptest strategies.
#[derive(Debug, Clone)]
pub(crate) struct InputSpace {
    /// The schema read into a finite tree: `$ref`s resolved against its `$defs` /
    /// `definitions` (recursive ones expanded a few times), `allOf` merged.
    root: Node,
}

impl InputSpace {
    /// Never panics, whatever the schema: a keyword it does not know widens what it generates
    /// (treated as "any JSON value" where a type is unknown) rather than failing.
    pub(crate) fn new(schema: &Value) -> Self {
        InputSpace {
            root: schema::read(schema, schema),
        }
    }

    /// Values the schema accepts. Shrinks toward small values (empty strings/arrays, 0,
    /// optional properties absent).
    ///
    /// A schema that accepts nothing the generator can make (`false`, a recursion with no way
    /// out) yields `null`, which it refuses.
    pub(crate) fn valid(&self) -> BoxedStrategy<Value> {
        valid::valid(&self.root).unwrap_or_else(|| Just(Value::Null).boxed())
    }

    /// One case per way the schema can be broken at a reachable place: each value the schema
    /// refuses, and valid everywhere else.
    pub(crate) fn invalid(&self) -> Vec<InvalidCase> {
        invalid::cases(&self.root)
            .into_iter()
            .map(|found| InvalidCase {
                kind: found.kind,
                path: found.path,
                strategy: found.strategy,
            })
            .collect()
    }

    /// Params that carry `org_id` (value `org`) at every place the schema lets an object have
    /// a key (the top level, nested object properties, objects in arrays), each also under the
    /// other spellings the runtime treats as an org id: `orgId`, `org-id`, `OrgID`, `ORG_ID`.
    /// The rest of each value is a small valid value. There are always the top-level cases,
    /// even for a schema with no properties.
    pub(crate) fn org_id_smuggled(&self, org: &str) -> Vec<Smuggled> {
        smuggle::smuggled(&self.root, org)
    }
}

/// A value the schema refuses, broken at one place.
pub(crate) struct InvalidCase {
    pub(crate) kind: Invalid,
    /// JSON Pointer (RFC 6901, `~0`/`~1` escaped) of the place that is broken, e.g.
    /// `/range/from`; "" for the params as a whole. For a missing or unknown field it is the
    /// field's own pointer (the object holding it is what a validator reports).
    pub(crate) path: String,
    pub(crate) strategy: BoxedStrategy<Value>,
}

impl std::fmt::Debug for InvalidCase {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("InvalidCase")
            .field("kind", &self.kind)
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

/// How an invalid case breaks the schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum Invalid {
    /// A value of a JSON type the place does not allow.
    WrongType,
    /// A `required` property left out.
    MissingField,
    /// A key an object with `additionalProperties: false` does not list.
    UnknownField,
    /// Outside a bound: `minimum`/`maximum` (and exclusive), `minLength`/`maxLength`,
    /// `minItems`/`maxItems`, `enum`/`const`.
    OutOfRange,
}

impl Invalid {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Invalid::WrongType => "wrong type",
            Invalid::MissingField => "missing field",
            Invalid::UnknownField => "unknown field",
            Invalid::OutOfRange => "out of range",
        }
    }
}

/// Params carrying an org id where the schema lets an object have a key.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Smuggled {
    /// Where and how it is spelled, e.g. "top level, spelled orgId", "in /filter",
    /// "in /items/0".
    pub(crate) label: String,
    pub(crate) params: Value,
    /// JSON Pointer of the smuggled key.
    pub(crate) path: String,
}

/// `key` as a segment of a JSON Pointer (RFC 6901: `~` as `~0`, then `/` as `~1`).
pub(crate) fn pointer_segment(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}
