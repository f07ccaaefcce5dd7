//! A tool's input schema read into a tree the generators walk: `$ref` resolved, `allOf` merged,
//! the siblings of `anyOf`/`oneOf` merged into each alternative.
//!
//! Reading never fails. A keyword the reader does not know is ignored, which only widens what
//! the generators produce; a `$ref` it cannot resolve accepts anything. Recursive `$ref`s are
//! expanded a few times along each path and then cut ([`Node::Cut`]), so the tree is finite.

use std::collections::BTreeSet;

use serde_json::{Map, Value};

/// How many times one `$ref` may be expanded along a single path before the tree is cut there.
const REF_EXPANSIONS: usize = 3;
/// The deepest nesting read, whatever the refs: past it the tree is cut.
const MAX_DEPTH: usize = 32;
/// At most this many alternatives come from merging two `anyOf`s (their cross product).
const MAX_MERGED_ALTERNATIVES: usize = 64;

/// The JSON types, in the order the generators try them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(super) enum JsonType {
    Null,
    Boolean,
    Integer,
    Number,
    String,
    Array,
    Object,
}

impl JsonType {
    pub(super) const ALL: [JsonType; 7] = [
        JsonType::Null,
        JsonType::Boolean,
        JsonType::Integer,
        JsonType::Number,
        JsonType::String,
        JsonType::Array,
        JsonType::Object,
    ];

    fn from_name(name: &str) -> Option<JsonType> {
        Some(match name {
            "null" => JsonType::Null,
            "boolean" => JsonType::Boolean,
            "integer" => JsonType::Integer,
            "number" => JsonType::Number,
            "string" => JsonType::String,
            "array" => JsonType::Array,
            "object" => JsonType::Object,
            _ => return None,
        })
    }

    /// The type of a value; a number with no fractional part counts as an integer.
    pub(super) fn of(value: &Value) -> JsonType {
        match value {
            Value::Null => JsonType::Null,
            Value::Bool(_) => JsonType::Boolean,
            Value::Number(number) if number.is_i64() || number.is_u64() => JsonType::Integer,
            Value::Number(number) => match number.as_f64() {
                Some(float) if float.fract() == 0.0 => JsonType::Integer,
                _ => JsonType::Number,
            },
            Value::String(_) => JsonType::String,
            Value::Array(_) => JsonType::Array,
            Value::Object(_) => JsonType::Object,
        }
    }
}

/// A set of JSON types where `number` also accepts integers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Types(BTreeSet<JsonType>);

impl Types {
    pub(super) fn all() -> Types {
        Types(JsonType::ALL.into_iter().collect())
    }

    pub(super) fn accepts(&self, json_type: JsonType) -> bool {
        self.0.contains(&json_type)
            || (json_type == JsonType::Integer && self.0.contains(&JsonType::Number))
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = JsonType> + '_ {
        self.0.iter().copied()
    }

    pub(super) fn insert(&mut self, json_type: JsonType) {
        self.0.insert(json_type);
    }

    pub(super) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// One place of the schema.
#[derive(Debug, Clone)]
pub(super) enum Node {
    /// The `true` schema, or one whose constraints the reader does not understand.
    Any,
    /// The `false` schema: nothing is accepted.
    Never,
    /// A recursive `$ref` past the expansion cap: generators avoid it (optional properties
    /// absent, arrays empty, another alternative).
    Cut,
    /// `anyOf` or `oneOf`, each alternative already merged with its siblings. `oneOf` is read
    /// as `anyOf`: the generators do not avoid a value two alternatives accept (schemars's
    /// `oneOf`s, over tags and consts, have none).
    Choice { alternatives: Vec<Node> },
    /// Everything else: the types and the rules for each.
    Typed(Box<Typed>),
}

/// A schema with no combinator left: which types it accepts and what it asks of each.
#[derive(Debug, Clone, Default)]
pub(super) struct Typed {
    pub(super) types: Types,
    /// Whether values of other types are refused (a `type` keyword, `enum` or `const`), as
    /// opposed to types inferred from keywords such as `properties`.
    pub(super) declared: bool,
    /// `enum` (or `const`, a single member): the only values accepted.
    pub(super) members: Option<Vec<Value>>,
    pub(super) number: NumberRules,
    pub(super) string: StringRules,
    pub(super) array: ArrayRules,
    pub(super) object: ObjectRules,
}

#[derive(Debug, Clone, Default)]
pub(super) struct NumberRules {
    pub(super) minimum: Option<f64>,
    pub(super) maximum: Option<f64>,
    pub(super) exclusive_minimum: Option<f64>,
    pub(super) exclusive_maximum: Option<f64>,
    pub(super) multiple_of: Option<f64>,
}

#[derive(Debug, Clone, Default)]
pub(super) struct StringRules {
    pub(super) min_length: usize,
    pub(super) max_length: Option<usize>,
    pub(super) pattern: Option<String>,
    pub(super) format: Option<String>,
}

#[derive(Debug, Clone, Default)]
pub(super) struct ArrayRules {
    pub(super) prefix: Vec<Node>,
    /// The schema of the items past `prefix`; `None` when `items` is `false`.
    pub(super) items: Option<Box<Node>>,
    pub(super) min_items: usize,
    pub(super) max_items: Option<usize>,
    pub(super) unique: bool,
}

#[derive(Debug, Clone, Default)]
pub(super) struct ObjectRules {
    pub(super) properties: Vec<(String, Node)>,
    pub(super) required: BTreeSet<String>,
    pub(super) additional: Additional,
}

/// What `additionalProperties` says about keys outside `properties`.
#[derive(Debug, Clone, Default)]
pub(super) enum Additional {
    #[default]
    Allowed,
    Forbidden,
    Schema(Box<Node>),
}

impl ObjectRules {
    pub(super) fn property(&self, name: &str) -> Option<&Node> {
        self.properties
            .iter()
            .find(|(property, _)| property == name)
            .map(|(_, node)| node)
    }
}

impl Node {
    /// Whether a value can be made without going through a [`Node::Cut`] or [`Node::Never`].
    pub(super) fn producible(&self) -> bool {
        match self {
            Node::Any => true,
            Node::Never | Node::Cut => false,
            Node::Choice { alternatives, .. } => alternatives.iter().any(Node::producible),
            Node::Typed(typed) => typed.producible_types().next().is_some(),
        }
    }

    /// The types of the values this place accepts, or `None` when it accepts any type.
    pub(super) fn accepted_types(&self) -> Option<Types> {
        match self {
            Node::Any | Node::Cut => None,
            Node::Never => Some(Types::default()),
            Node::Choice { alternatives, .. } => {
                let mut union = Types::default();
                for alternative in alternatives {
                    for json_type in alternative.accepted_types()?.iter() {
                        union.insert(json_type);
                    }
                }
                Some(union)
            }
            Node::Typed(typed) => typed.declared.then(|| typed.types.clone()),
        }
    }

    pub(super) fn typed(&self) -> Option<&Typed> {
        match self {
            Node::Typed(typed) => Some(typed),
            _ => None,
        }
    }
}

impl Typed {
    /// The types a value can be made of, in [`JsonType`] order.
    pub(super) fn producible_types(&self) -> impl Iterator<Item = JsonType> + '_ {
        self.types.iter().filter(|json_type| match json_type {
            JsonType::Array => {
                let rules = &self.array;
                let needed_prefix = rules.prefix.iter().take(rules.min_items);
                let prefix_ok = needed_prefix.clone().all(Node::producible);
                let rest_needed = rules.min_items > rules.prefix.len();
                let items_ok = rules.items.as_deref().is_some_and(Node::producible);
                prefix_ok && (!rest_needed || items_ok)
            }
            JsonType::Object => {
                self.object
                    .required
                    .iter()
                    .all(|name| match self.object.property(name) {
                        Some(node) => node.producible(),
                        None => !matches!(self.object.additional, Additional::Forbidden),
                    })
            }
            _ => true,
        })
    }
}

/// Reads `schema`, resolving `$ref`s against `root`.
pub(super) fn read(root: &Value, schema: &Value) -> Node {
    Reader { root }.node(schema, &[], 0)
}

struct Reader<'root> {
    root: &'root Value,
}

impl Reader<'_> {
    fn node(&self, schema: &Value, refs: &[String], depth: usize) -> Node {
        if depth > MAX_DEPTH {
            return Node::Cut;
        }
        let mut refs = refs.to_vec();
        let merged = match self.flatten(schema, &mut refs, &mut Vec::new()) {
            Flat::Map(map) => map,
            Flat::Any => return Node::Any,
            Flat::Never => return Node::Never,
            Flat::Cut => return Node::Cut,
        };
        for keyword in ["oneOf", "anyOf"] {
            let Some(Value::Array(alternatives)) = merged.get(keyword) else {
                continue;
            };
            let mut base = merged.clone();
            base.remove(keyword);
            let alternatives = alternatives
                .iter()
                .map(|alternative| {
                    let joined =
                        serde_json::json!({ "allOf": [Value::Object(base.clone()), alternative] });
                    self.node(&joined, &refs, depth + 1)
                })
                .filter(|node| !matches!(node, Node::Never))
                .collect::<Vec<_>>();
            if alternatives.is_empty() {
                return Node::Never;
            }
            return Node::Choice { alternatives };
        }
        Node::Typed(Box::new(self.typed(&merged, &refs, depth)))
    }

    /// `schema` as one keyword map: `$ref` targets and `allOf` members merged in.
    fn flatten(&self, schema: &Value, refs: &mut Vec<String>, chain: &mut Vec<String>) -> Flat {
        let map = match schema {
            Value::Bool(false) => return Flat::Never,
            Value::Object(map) => map,
            _ => return Flat::Any,
        };
        let mut merged = map.clone();
        let mut parts = Vec::new();
        if let Some(Value::String(reference)) = merged.remove("$ref") {
            if chain.contains(&reference) {
                // A ref that leads back to itself with nothing in between constrains nothing.
                return Flat::Any;
            }
            if refs.iter().filter(|seen| **seen == reference).count() >= REF_EXPANSIONS {
                return Flat::Cut;
            }
            let Some(target) = self.resolve(&reference) else {
                return Flat::Any;
            };
            refs.push(reference.clone());
            chain.push(reference);
            parts.push(target.clone());
        }
        if let Some(Value::Array(members)) = merged.remove("allOf") {
            parts.extend(members);
        }
        for part in &parts {
            match self.flatten(part, refs, chain) {
                Flat::Map(part) => merged = merge(merged, part),
                Flat::Any => {}
                other => return other,
            }
        }
        Flat::Map(merged)
    }

    fn resolve(&self, reference: &str) -> Option<&Value> {
        let pointer = reference.strip_prefix('#')?;
        let pointer = percent_decode(pointer);
        if pointer.is_empty() {
            Some(self.root)
        } else {
            self.root.pointer(&pointer)
        }
    }

    fn typed(&self, map: &Map<String, Value>, refs: &[String], depth: usize) -> Typed {
        let child = |schema: &Value| self.node(schema, refs, depth + 1);
        let mut typed = Typed {
            number: NumberRules {
                minimum: number(map, "minimum"),
                maximum: number(map, "maximum"),
                exclusive_minimum: number(map, "exclusiveMinimum"),
                exclusive_maximum: number(map, "exclusiveMaximum"),
                multiple_of: number(map, "multipleOf").filter(|step| *step > 0.0),
            },
            string: StringRules {
                min_length: count(map, "minLength").unwrap_or(0),
                max_length: count(map, "maxLength"),
                pattern: map
                    .get("pattern")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
                format: map.get("format").and_then(Value::as_str).map(str::to_owned),
            },
            ..Typed::default()
        };
        // 2020-12 tuples are `prefixItems` then `items`; older drafts' are `items` as a list
        // then `additionalItems`.
        let (prefix, rest) = match (map.get("prefixItems"), map.get("items")) {
            (Some(Value::Array(prefix)), rest) => (prefix.as_slice(), rest),
            (_, Some(Value::Array(tuple))) => (tuple.as_slice(), map.get("additionalItems")),
            (_, rest) => (&[][..], rest),
        };
        typed.array = ArrayRules {
            prefix: prefix.iter().map(child).collect(),
            items: match rest {
                Some(Value::Bool(false)) => None,
                Some(items @ Value::Object(_)) => Some(Box::new(child(items))),
                _ => Some(Box::new(Node::Any)),
            },
            min_items: count(map, "minItems").unwrap_or(0),
            max_items: count(map, "maxItems"),
            unique: map.get("uniqueItems") == Some(&Value::Bool(true)),
        };
        let properties = map.get("properties").and_then(Value::as_object);
        typed.object = ObjectRules {
            properties: properties
                .into_iter()
                .flatten()
                .map(|(name, schema)| (name.clone(), child(schema)))
                .collect(),
            required: map
                .get("required")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect(),
            additional: match map.get("additionalProperties") {
                Some(Value::Bool(false)) => Additional::Forbidden,
                Some(schema @ Value::Object(_)) => Additional::Schema(Box::new(child(schema))),
                _ => Additional::Allowed,
            },
        };
        let members = match (map.get("const"), map.get("enum")) {
            (Some(constant), _) => Some(vec![constant.clone()]),
            (None, Some(Value::Array(members))) => Some(members.clone()),
            _ => None,
        };
        let declared = declared_types(map);
        typed.declared = declared.is_some() || members.is_some();
        typed.types = match (&declared, &members) {
            (_, Some(members)) => {
                let mut types = Types::default();
                for member in members {
                    if declared
                        .as_ref()
                        .is_none_or(|d| d.accepts(JsonType::of(member)))
                    {
                        types.insert(JsonType::of(member));
                    }
                }
                types
            }
            (Some(types), None) => types.clone(),
            (None, None) => inferred_types(map),
        };
        if map.get("nullable") == Some(&Value::Bool(true)) {
            typed.types.insert(JsonType::Null);
        }
        typed.members = members.map(|mut members| {
            members.retain(|member| typed.types.accepts(JsonType::of(member)));
            members
        });
        typed
    }
}

enum Flat {
    Map(Map<String, Value>),
    Any,
    Never,
    Cut,
}

/// The `type` keyword, when it names at least one type the reader knows.
fn declared_types(map: &Map<String, Value>) -> Option<Types> {
    let names: Vec<&str> = match map.get("type")? {
        Value::String(name) => vec![name.as_str()],
        Value::Array(names) => names.iter().filter_map(Value::as_str).collect(),
        _ => return None,
    };
    if names.is_empty() {
        // `"type": []` (what merging disjoint types leaves) accepts nothing.
        return Some(Types::default());
    }
    let mut types = Types::default();
    for json_type in names.into_iter().filter_map(JsonType::from_name) {
        types.insert(json_type);
    }
    (!types.is_empty()).then_some(types)
}

/// With no `type`, the types the keywords speak of; all of them when none do.
fn inferred_types(map: &Map<String, Value>) -> Types {
    let mut types = Types::default();
    let has = |keywords: &[&str]| keywords.iter().any(|keyword| map.contains_key(*keyword));
    if has(&["properties", "required", "additionalProperties"]) {
        types.insert(JsonType::Object);
    }
    if has(&[
        "items",
        "prefixItems",
        "minItems",
        "maxItems",
        "uniqueItems",
    ]) {
        types.insert(JsonType::Array);
    }
    if has(&["minLength", "maxLength", "pattern", "format"]) {
        types.insert(JsonType::String);
    }
    if has(&[
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
    ]) {
        types.insert(JsonType::Number);
    }
    if types.is_empty() {
        Types::all()
    } else {
        types
    }
}

fn number(map: &Map<String, Value>, keyword: &str) -> Option<f64> {
    map.get(keyword)
        .and_then(Value::as_f64)
        .filter(|float| float.is_finite())
}

fn count(map: &Map<String, Value>, keyword: &str) -> Option<usize> {
    map.get(keyword)
        .and_then(Value::as_u64)
        .map(|count| usize::try_from(count).unwrap_or(usize::MAX))
}

/// Merges two keyword maps as `allOf` does, best-effort: properties and `required` joined,
/// types intersected, bounds tightened; for any other keyword the first map's value stays.
fn merge(mut first: Map<String, Value>, second: Map<String, Value>) -> Map<String, Value> {
    for (keyword, value) in second {
        let Some(existing) = first.get(&keyword).cloned() else {
            first.insert(keyword, value);
            continue;
        };
        let joined = match keyword.as_str() {
            "properties" => match (existing, value) {
                (Value::Object(mut mine), Value::Object(theirs)) => {
                    for (name, schema) in theirs {
                        let both = match mine.remove(&name) {
                            Some(previous) => serde_json::json!({ "allOf": [previous, schema] }),
                            None => schema,
                        };
                        mine.insert(name, both);
                    }
                    Value::Object(mine)
                }
                (mine, _) => mine,
            },
            "required" => {
                let mut names: Vec<Value> = existing.as_array().cloned().unwrap_or_default();
                for name in value.as_array().into_iter().flatten() {
                    if !names.contains(name) {
                        names.push(name.clone());
                    }
                }
                Value::Array(names)
            }
            "type" => intersect_types(&existing, &value),
            "minimum" | "exclusiveMinimum" | "minLength" | "minItems" => {
                pick(existing, value, |mine, theirs| theirs > mine)
            }
            "maximum" | "exclusiveMaximum" | "maxLength" | "maxItems" => {
                pick(existing, value, |mine, theirs| theirs < mine)
            }
            "additionalProperties" if value == Value::Bool(false) => value,
            "enum" => match (existing, value) {
                (Value::Array(mine), Value::Array(theirs)) => {
                    Value::Array(mine.into_iter().filter(|m| theirs.contains(m)).collect())
                }
                (mine, _) => mine,
            },
            "anyOf" | "oneOf" => match (existing, value) {
                (Value::Array(mine), Value::Array(theirs)) => Value::Array(
                    mine.iter()
                        .flat_map(|m| {
                            theirs
                                .iter()
                                .map(move |t| serde_json::json!({ "allOf": [m, t] }))
                        })
                        .take(MAX_MERGED_ALTERNATIVES)
                        .collect(),
                ),
                (mine, _) => mine,
            },
            _ => existing,
        };
        first.insert(keyword, joined);
    }
    first
}

fn pick(mine: Value, theirs: Value, theirs_is_tighter: impl Fn(f64, f64) -> bool) -> Value {
    match (mine.as_f64(), theirs.as_f64()) {
        (Some(m), Some(t)) if theirs_is_tighter(m, t) => theirs,
        _ => mine,
    }
}

fn intersect_types(mine: &Value, theirs: &Value) -> Value {
    let names = |value: &Value| -> Vec<String> {
        match value {
            Value::String(name) => vec![name.clone()],
            Value::Array(names) => names
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect(),
            _ => Vec::new(),
        }
    };
    let (mine, theirs) = (names(mine), names(theirs));
    let mut both = Vec::new();
    for name in &mine {
        if theirs.contains(name) {
            both.push(name.clone());
        } else if let Some(narrower) = integer_within_number(name, &theirs) {
            both.push(narrower);
        }
    }
    Value::Array(both.into_iter().map(Value::String).collect())
}

/// `integer` when one side says `number` and the other `integer`: the integers are numbers.
fn integer_within_number(mine: &str, theirs: &[String]) -> Option<String> {
    let other = match mine {
        "number" => "integer",
        "integer" => "number",
        _ => return None,
    };
    theirs
        .iter()
        .any(|name| name == other)
        .then(|| "integer".to_owned())
}

/// Undoes the percent-encoding of a `$ref` fragment (`%24defs` is `$defs`).
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        let hex = bytes
            .get(index + 1..index + 3)
            .and_then(|pair| std::str::from_utf8(pair).ok());
        match (
            bytes[index],
            hex.and_then(|pair| u8::from_str_radix(pair, 16).ok()),
        ) {
            (b'%', Some(byte)) => {
                decoded.push(byte);
                index += 3;
            }
            (byte, _) => {
                decoded.push(byte);
                index += 1;
            }
        }
    }
    String::from_utf8_lossy(&decoded).into_owned()
}
