//! The tool table: an immutable snapshot of every registered tool, published by the registry
//! actor and read by callers without taking a lock.
//!
//! Everything a call needs is resolved here, once, when the table is built: the compiled input
//! validator, the roles that grant the tool's permission, the domain runtime and the timeout.
//! The per-call path then does a hash lookup and a few comparisons.

use std::{any::TypeId, collections::HashMap, sync::Arc, time::Duration};

use jsonschema::{
    JsonType, ValidationError,
    error::{TypeKind, ValidationErrorKind},
};
use serde_json::Value;
use switchboard_core::{
    BoxFuture, Category, FieldError, Role, ToolContext, ToolDescriptor, ToolEntry, ToolError,
    ToolPolicyEntry,
};

use crate::{
    domain::{DomainRuntime, Placement},
    error::RegistryError,
    permissions::PermissionMatrix,
    registry::Exposure,
};

/// A tool registered at run time, whose schema is only known then (a tool of a remote MCP
/// server, say). It gets the same validation, categories, permissions and audit as a linked
/// tool; its params arrive already validated against its input schema. Its domain has no
/// state: the registry refuses to add it to a domain that has.
pub trait RuntimeTool: Send + Sync + 'static {
    /// Runs the tool.
    fn call<'a>(
        &'a self,
        ctx: &'a ToolContext,
        params: Value,
    ) -> BoxFuture<'a, Result<Value, ToolError>>;
}

/// How a registered tool is run.
pub(crate) enum Handler {
    Linked(&'static ToolEntry),
    Runtime(Arc<dyn RuntimeTool>),
}

/// One tool, with everything a call needs resolved.
pub(crate) struct RegisteredTool {
    pub(crate) name: Arc<str>,
    pub(crate) descriptor: Arc<ToolDescriptor>,
    pub(crate) handler: Handler,
    pub(crate) validator: jsonschema::Validator,
    /// The compiled output schema of a tool whose domain is linked, which checks the JSON
    /// answers that come back from the registry serving it; `None` for every other tool, and
    /// for a tool that declares no output schema or answers with content blocks.
    pub(crate) output_validator: Option<jsonschema::Validator>,
    pub(crate) granted_roles: Box<[Role]>,
    pub(crate) domain: Arc<DomainRuntime>,
    pub(crate) timeout: Duration,
    /// The domain's declared policy (scope ids, gate); linked tools only.
    pub(crate) policy: Option<&'static ToolPolicyEntry>,
    /// Whether it is listed; linked tools always are.
    pub(crate) exposure: Exposure,
}

impl RegisteredTool {
    pub(crate) fn new(
        descriptor: ToolDescriptor,
        handler: Handler,
        domain: Arc<DomainRuntime>,
        permissions: &PermissionMatrix,
        default_timeout: Duration,
    ) -> Result<Self, RegistryError> {
        let name = descriptor.name.to_string();
        let valid_name = (1..=128).contains(&name.len())
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'));
        if !valid_name {
            return Err(RegistryError::InvalidToolName(name));
        }
        let schema = &*descriptor.input_schema;
        if schema.get("type").and_then(Value::as_str) != Some("object") {
            return Err(RegistryError::InvalidSchema {
                tool: name,
                reason: "the input schema must describe a JSON object (`\"type\": \"object\"`)"
                    .to_owned(),
            });
        }
        if let Some(tag) = descriptor
            .tags
            .iter()
            .find(|tag| !switchboard_core::is_valid_tag(tag))
        {
            return Err(RegistryError::InvalidTag {
                tool: name,
                tag: tag.to_string(),
            });
        }
        if let Some(path) = switchboard_core::schema::find_org_id_property(schema) {
            return Err(RegistryError::OrgIdInSchema { tool: name, path });
        }
        if let Err(reason) = switchboard_core::schema::header_parameters(schema) {
            return Err(RegistryError::InvalidSchema { tool: name, reason });
        }
        let validator = jsonschema::options()
            .should_validate_formats(true)
            .build(schema)
            .map_err(|error| RegistryError::InvalidSchema {
                tool: name.clone(),
                reason: error.to_string(),
            })?;
        let output_validator = match (&domain.placement, &descriptor.output_schema) {
            (Placement::Linked(_), Some(output)) if !descriptor.returns_content() => Some(
                jsonschema::options()
                    .should_validate_formats(true)
                    .build(output)
                    .map_err(|error| RegistryError::InvalidSchema {
                        tool: name.clone(),
                        reason: format!("its output schema does not compile: {error}"),
                    })?,
            ),
            _ => None,
        };
        Ok(Self {
            name: name.into(),
            output_validator,
            granted_roles: permissions
                .roles_granting(&descriptor.permission)
                .into_boxed_slice(),
            timeout: descriptor.timeout.unwrap_or(default_timeout),
            descriptor: Arc::new(descriptor),
            handler,
            validator,
            domain,
            policy: None,
            exposure: Exposure::Listed,
        })
    }

    /// The gate its domain declared, if any.
    pub(crate) fn gate(&self) -> Option<switchboard_core::GateFn> {
        self.policy.and_then(|policy| policy.gate)
    }

    pub(crate) fn category(&self) -> Category {
        self.descriptor.category
    }

    /// Whether one of `roles` grants this tool's permission.
    pub(crate) fn granted_to(&self, roles: &[Role]) -> bool {
        roles.iter().any(|role| self.granted_roles.contains(role))
    }

    /// Every violation of the input schema, or nothing.
    pub(crate) fn schema_errors(&self, params: &Value) -> Result<(), Vec<FieldError>> {
        if self.validator.is_valid(params) {
            return Ok(());
        }
        let schema = &*self.descriptor.input_schema;
        let mut errors: Vec<FieldError> = self
            .validator
            .iter_errors(params)
            .flat_map(|error| field_errors(schema, params, &error))
            .collect();
        errors.sort_by(|a, b| a.path.cmp(&b.path).then_with(|| a.reason.cmp(&b.reason)));
        errors.dedup();
        Err(errors)
    }

    /// The marker type of a linked tool.
    pub(crate) fn type_id(&self) -> Option<TypeId> {
        match &self.handler {
            Handler::Linked(entry) => Some((entry.type_id)()),
            Handler::Runtime(_) => None,
        }
    }
}

/// The field errors one violation of an input schema stands for.
///
/// Derived schemas describe a nullable field as `anyOf: [{type: T, …}, {type: "null"}]`
/// (`switchboard_core::schema::schema_of`). When such a field's value is neither, the typed
/// branch's errors say what is wrong with it ("is shorter than 1 character"), where the
/// `anyOf` error would only say that no branch matched; a value of another type reads
/// `5 is not of types "null", "string"`.
///
/// A property the schema does not allow (`additionalProperties: false`) is one error per
/// property, at the property itself, naming the field probably meant (from the `properties`
/// of the subschema that refused it, in `schema`). An object that takes no properties at all
/// is refused by the validator as a whole (`false` schema, one of its values): each of its
/// properties in `params` is an error of its own too.
fn field_errors(schema: &Value, params: &Value, error: &ValidationError<'_>) -> Vec<FieldError> {
    let unknown = |fields: &mut dyn Iterator<Item = &str>| -> Vec<FieldError> {
        let object_path = error.instance_path().to_string();
        let known = known_properties(schema, error.schema_path().as_str());
        fields
            .map(|field| FieldError::unknown_field(&object_path, field, known.iter().copied()))
            .collect()
    };
    match error.kind() {
        ValidationErrorKind::AdditionalProperties { unexpected }
        | ValidationErrorKind::UnevaluatedProperties { unexpected } => {
            return unknown(&mut unexpected.iter().map(String::as_str));
        }
        ValidationErrorKind::FalseSchema
            if is_property_keyword(error.schema_path().as_str())
                && let Some(object) = params
                    .pointer(error.instance_path().as_str())
                    .and_then(Value::as_object) =>
        {
            return unknown(&mut object.keys().map(String::as_str));
        }
        _ => {}
    }
    if let ValidationErrorKind::AnyOf { context } = error.kind()
        && let [first, second] = context.as_slice()
        && let Some(typed) = match (is_null_branch(first), is_null_branch(second)) {
            (false, true) => Some(first),
            (true, false) => Some(second),
            _ => None,
        }
    {
        if let [only] = typed.as_slice()
            && let ValidationErrorKind::Type {
                kind: TypeKind::Single(expected),
            } = only.kind()
        {
            let mut names = [expected.to_string(), JsonType::Null.to_string()];
            names.sort_unstable();
            let reason = format!(
                "{} is not of types \"{}\", \"{}\"",
                error.instance(),
                names[0],
                names[1]
            );
            return vec![FieldError::new(error.instance_path().to_string(), reason)];
        }
        return typed
            .iter()
            .flat_map(|error| field_errors(schema, params, error))
            .collect();
    }
    vec![FieldError::new(
        error.instance_path().to_string(),
        error.to_string(),
    )]
}

/// The property names of the subschema whose keyword sits at `keyword_path` (a JSON Pointer
/// into `schema`, `/$defs/Line/additionalProperties`, as the validator reports it without
/// `$ref` hops); none if the pointer leads nowhere.
fn known_properties<'s>(schema: &'s Value, keyword_path: &str) -> Vec<&'s str> {
    let subschema_path = keyword_path
        .rsplit_once('/')
        .map_or("", |(parent, _keyword)| parent);
    schema
        .pointer(subschema_path)
        .and_then(|subschema| subschema.get("properties"))
        .and_then(Value::as_object)
        .map(|properties| properties.keys().map(String::as_str).collect())
        .unwrap_or_default()
}

/// Whether a keyword's path ends at a keyword that refuses unknown properties.
fn is_property_keyword(keyword_path: &str) -> bool {
    keyword_path.ends_with("/additionalProperties")
        || keyword_path.ends_with("/unevaluatedProperties")
}

/// Whether an `anyOf` branch failed only because the value is not `null`.
fn is_null_branch(errors: &[ValidationError<'_>]) -> bool {
    matches!(
        errors,
        [only] if matches!(
            only.kind(),
            ValidationErrorKind::Type { kind: TypeKind::Single(JsonType::Null) }
        )
    )
}

/// An immutable snapshot of the registered tools.
#[derive(Default)]
pub(crate) struct ToolTable {
    by_name: HashMap<Arc<str>, Arc<RegisteredTool>>,
    sorted: Vec<Arc<RegisteredTool>>,
}

impl ToolTable {
    /// Builds a table, refusing duplicate names.
    pub(crate) fn build(tools: Vec<Arc<RegisteredTool>>) -> Result<Self, RegistryError> {
        let mut by_name: HashMap<Arc<str>, Arc<RegisteredTool>> =
            HashMap::with_capacity(tools.len());
        for tool in tools {
            if let Some(existing) = by_name.get(&*tool.name) {
                return Err(RegistryError::DuplicateTool {
                    name: tool.name.to_string(),
                    first: origin(&existing.descriptor),
                    second: origin(&tool.descriptor),
                });
            }
            by_name.insert(Arc::clone(&tool.name), tool);
        }
        let mut sorted: Vec<_> = by_name.values().cloned().collect();
        sorted.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(Self { by_name, sorted })
    }

    /// The table of the tools `keep` keeps (a subset has no duplicates to refuse).
    pub(crate) fn subset(&self, keep: impl Fn(&RegisteredTool) -> bool) -> ToolTable {
        let sorted: Vec<Arc<RegisteredTool>> = self
            .sorted
            .iter()
            .filter(|tool| keep(tool))
            .cloned()
            .collect();
        let by_name = sorted
            .iter()
            .map(|tool| (Arc::clone(&tool.name), Arc::clone(tool)))
            .collect();
        ToolTable { by_name, sorted }
    }

    pub(crate) fn get(&self, name: &str) -> Option<&Arc<RegisteredTool>> {
        self.by_name.get(name)
    }

    /// Every tool, sorted by name.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &Arc<RegisteredTool>> {
        self.sorted.iter()
    }

    /// Up to three registered names that look like `name`.
    pub(crate) fn similar_names(&self, name: &str) -> Vec<String> {
        let mut scored: Vec<(f64, &str)> = self
            .sorted
            .iter()
            .map(|tool| (strsim::jaro_winkler(name, &tool.name), &*tool.name))
            .filter(|(score, _)| *score >= 0.8)
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(b.1)));
        scored
            .into_iter()
            .take(3)
            .map(|(_, name)| name.to_owned())
            .collect()
    }
}

fn origin(descriptor: &ToolDescriptor) -> String {
    match &descriptor.origin {
        switchboard_core::ToolOrigin::Linked { location } => location.clone(),
        switchboard_core::ToolOrigin::Runtime { source } => {
            format!("run-time registration by {source}")
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn errors_of(params: Value) -> Vec<(String, String)> {
        let schema = json!({
            "type": "object",
            "properties": {
                "assignee": {"anyOf": [{"type": "string", "minLength": 1}, {"type": "null"}]},
                "either": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
            },
        });
        errors_under(&schema, &params)
    }

    /// The field errors of `params` under `schema`, sorted by path.
    fn errors_under(schema: &Value, params: &Value) -> Vec<(String, String)> {
        let validator = jsonschema::validator_for(schema).expect("a valid schema");
        let mut errors: Vec<(String, String)> = validator
            .iter_errors(params)
            .flat_map(|error| field_errors(schema, params, &error))
            .map(|error| (error.path, error.reason))
            .collect();
        errors.sort();
        errors
    }

    #[test]
    fn every_unknown_property_is_an_error_at_the_property_itself() {
        // Inline subschemas, as a run-time tool's hand-written schema has them.
        let schema = json!({
            "type": "object",
            "additionalProperties": false,
            "properties": {
                "title": {"type": "string"},
                "items": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "additionalProperties": false,
                        "properties": {"name": {"type": "string"}},
                    },
                },
                "empty": {"type": "object", "additionalProperties": false},
            },
        });
        let params = json!({
            "titel": "x",
            "colour": "red",
            "items": [{"name": "a"}, {"nmae": "b"}],
            "empty": {"a/b~c": 1},
        });
        assert_eq!(
            errors_under(&schema, &params),
            [
                (
                    "/colour".to_owned(),
                    "unknown field `colour`; the fields here are `empty`, `items`, `title`"
                        .to_owned()
                ),
                (
                    "/empty/a~1b~0c".to_owned(),
                    "unknown field `a/b~c`; this object takes no fields".to_owned()
                ),
                (
                    "/items/1/nmae".to_owned(),
                    "unknown field `nmae`; did you mean `name`?".to_owned()
                ),
                (
                    "/titel".to_owned(),
                    "unknown field `titel`; did you mean `title`?".to_owned()
                ),
            ]
        );
    }

    #[test]
    fn a_nullable_field_reports_what_is_wrong_with_its_value() {
        assert_eq!(errors_of(json!({"assignee": null})), []);
        assert_eq!(
            errors_of(json!({"assignee": ""})),
            [(
                "/assignee".to_owned(),
                "\"\" is shorter than 1 character".to_owned()
            )]
        );
        assert_eq!(
            errors_of(json!({"assignee": 5})),
            [(
                "/assignee".to_owned(),
                "5 is not of types \"null\", \"string\"".to_owned()
            )]
        );
        // Any other `anyOf` keeps its own message.
        let other = errors_of(json!({"either": true}));
        assert_eq!(other.len(), 1, "{other:?}");
        assert!(other[0].1.contains("anyOf"), "{other:?}");
    }
}
