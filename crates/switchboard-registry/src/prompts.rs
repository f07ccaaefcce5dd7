//! The prompts a registry serves: those linked into the binary whose domain it hosts, and the
//! run-time ones given to its builder ([`RuntimePrompt`]).
//!
//! The table is built once, at start, from every linked [`PromptEntry`]: a prompt whose
//! domain is excluded from the registry is left out with it, and a prompt that cannot be served
//! (a bad or duplicate name, an unknown domain, arguments that are not strings) stops the boot
//! with a message naming it. A run-time prompt is checked the same way when the registry
//! starts (its name valid and unique among all prompts); it renders from the verified caller and
//! its string arguments, not from a domain's state. The table never changes after the start.
//!
//! Rendering is a read of the domain's state, checked like a read tool's call, in this order:
//! prompt exists → call context complete (the organisation comes from it only) → no `org_id`
//! among the arguments → permission → every argument known → every required argument given
//! → the arguments valid against their schema → the body, under the registry's default call
//! timeout, a panic caught. Each render runs in a `prompt` span. Rendering changes nothing, so
//! it writes no audit record.

use std::{collections::BTreeMap, panic::AssertUnwindSafe, sync::Arc};

use futures::FutureExt;
use serde_json::{Map, Value};
use switchboard_core::{
    BoxFuture, CallContext, Caller, ErasedCell, PromptDescriptor, PromptEntry, PromptError,
    PromptMessage, RenderedPrompt, Role, ToolError, linked_prompts, prompt_scope,
    schema::find_org_id,
};
use tracing::Instrument;

use crate::{
    domain::DomainRuntime, error::RegistryError, invoke::panic_message,
    permissions::PermissionMatrix, registry::ToolRegistry,
};

/// At most this many completion values are returned (MCP's limit).
pub const MAX_COMPLETIONS: usize = 100;

/// A prompt built at run time rather than linked: its messages come from the verified caller
/// and its (checked) string arguments. Give it to
/// [`RegistryBuilder::prompt`](crate::RegistryBuilder::prompt) with its descriptor.
pub trait RuntimePrompt: Send + Sync + 'static {
    /// The messages for `caller` with `arguments` (every one declared, every required one
    /// given, all strings). A failure reaches the caller as a render failure with this error.
    fn render<'a>(
        &'a self,
        caller: &'a Caller,
        arguments: &'a Map<String, Value>,
    ) -> BoxFuture<'a, Result<Vec<PromptMessage>, ToolError>>;

    /// Suggested values for `argument` that fit what the caller typed so far (`value`), best
    /// first. None by default.
    fn complete(&self, caller: &Caller, argument: &str, value: &str) -> Vec<String> {
        let _ = (caller, argument, value);
        Vec::new()
    }
}

/// How a servable prompt renders.
enum Body {
    /// Linked with `prompt!`, rendered from its domain's state.
    Linked {
        entry: &'static PromptEntry,
        cell: ErasedCell,
    },
    /// Given at run time.
    Runtime(Arc<dyn RuntimePrompt>),
}

/// One servable prompt.
struct RegisteredPrompt {
    body: Body,
    descriptor: Arc<PromptDescriptor>,
    validator: jsonschema::Validator,
    granted_roles: Box<[Role]>,
}

impl RegisteredPrompt {
    /// Where it comes from, for messages.
    fn location(&self) -> String {
        match &self.body {
            Body::Linked { entry, .. } => entry.spec.location.to_string(),
            Body::Runtime(_) => "given at run time".to_owned(),
        }
    }

    fn granted_to(&self, roles: &[Role]) -> bool {
        roles.iter().any(|role| self.granted_roles.contains(role))
    }
}

/// The prompts of a registry, by name.
#[derive(Default)]
pub(crate) struct PromptTable {
    prompts: BTreeMap<Arc<str>, RegisteredPrompt>,
}

impl PromptTable {
    /// Every linked prompt whose domain is in `domains` (the registry's, excluded ones left
    /// out), checked, then every run-time prompt of `runtime`. The prompts of a domain served
    /// by another registry are left out: they render from state this registry does not hold.
    pub(crate) fn build(
        domains: &BTreeMap<Arc<str>, Arc<DomainRuntime>>,
        permissions: &PermissionMatrix,
        excluded: &dyn Fn(&str) -> bool,
        runtime: Vec<(PromptDescriptor, Arc<dyn RuntimePrompt>)>,
    ) -> Result<Self, RegistryError> {
        let mut prompts: BTreeMap<Arc<str>, RegisteredPrompt> = BTreeMap::new();
        let linked = linked_prompts()
            .filter(|entry| !excluded(entry.spec.domain))
            .filter(|entry| {
                domains
                    .get(entry.spec.domain)
                    .is_none_or(|domain| domain.local().is_some())
            })
            .map(|entry| register(entry, domains, permissions));
        let given = runtime
            .into_iter()
            .map(|(descriptor, body)| register_runtime(descriptor, body, permissions));
        for prompt in linked.chain(given) {
            let prompt = prompt?;
            let name: Arc<str> = Arc::from(prompt.descriptor.name.as_str());
            let location = prompt.location();
            if let Some(first) = prompts.insert(name, prompt) {
                return Err(RegistryError::DuplicatePrompt {
                    name: first.descriptor.name.clone(),
                    first: first.location(),
                    second: location,
                });
            }
        }
        Ok(Self { prompts })
    }

    fn get(&self, name: &str) -> Result<&RegisteredPrompt, PromptError> {
        self.prompts.get(name).ok_or_else(|| PromptError::NotFound {
            name: name.to_owned(),
            similar: self.similar_names(name),
        })
    }

    /// Up to three prompt names that look like `name`.
    fn similar_names(&self, name: &str) -> Vec<String> {
        let mut scored: Vec<(f64, &str)> = self
            .prompts
            .keys()
            .map(|known| (strsim::jaro_winkler(name, known), &**known))
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

fn register(
    entry: &'static PromptEntry,
    domains: &BTreeMap<Arc<str>, Arc<DomainRuntime>>,
    permissions: &PermissionMatrix,
) -> Result<RegisteredPrompt, RegistryError> {
    let invalid = |reason: String| RegistryError::InvalidPrompt {
        prompt: entry.spec.name.to_owned(),
        location: entry.spec.location.to_string(),
        reason,
    };
    if !valid_prompt_name(entry.spec.name) {
        return Err(invalid(
            "a prompt name has 1 to 64 characters from `[a-zA-Z0-9_-]`".to_owned(),
        ));
    }
    let domain = domains.get(entry.spec.domain).ok_or_else(|| {
        invalid(format!(
            "it names the domain `{}`, which no linked crate declares",
            entry.spec.domain
        ))
    })?;
    let local = domain.local().ok_or_else(|| {
        invalid(format!(
            "it renders from the state of the `{}` domain, which another registry serves",
            entry.spec.domain
        ))
    })?;
    if (*local.cell).type_id() != (entry.cell_type)() {
        return Err(invalid(format!(
            "it expects another state than the one the `{}` domain declares",
            entry.spec.domain
        )));
    }
    let descriptor = entry.descriptor().map_err(invalid)?;
    let schema = (entry.args_schema)().to_value();
    if let Some(path) = switchboard_core::schema::find_org_id_property(&schema) {
        return Err(invalid(format!(
            "its arguments have an organisation id at `{path}`; the organisation comes from the call context only"
        )));
    }
    let validator = jsonschema::options()
        .should_validate_formats(true)
        .build(&schema)
        .map_err(|error| invalid(format!("its arguments' schema does not compile: {error}")))?;
    Ok(RegisteredPrompt {
        body: Body::Linked {
            entry,
            cell: Arc::clone(&local.cell),
        },
        granted_roles: permissions
            .roles_granting(&descriptor.permission)
            .into_boxed_slice(),
        descriptor: Arc::new(descriptor),
        validator,
    })
}

/// Checks a run-time prompt: its name as for linked prompts, its arguments strings by
/// construction (their schema is built from the descriptor).
fn register_runtime(
    descriptor: PromptDescriptor,
    body: Arc<dyn RuntimePrompt>,
    permissions: &PermissionMatrix,
) -> Result<RegisteredPrompt, RegistryError> {
    let invalid = |reason: String| RegistryError::InvalidPrompt {
        prompt: descriptor.name.clone(),
        location: "given at run time".to_owned(),
        reason,
    };
    if !valid_prompt_name(&descriptor.name) {
        return Err(invalid(
            "a prompt name has 1 to 64 characters from `[a-zA-Z0-9_-]`".to_owned(),
        ));
    }
    if descriptor
        .arguments
        .iter()
        .any(|argument| argument.name == "org_id")
    {
        return Err(invalid(
            "it has an `org_id` argument; the organisation comes from the call context only"
                .to_owned(),
        ));
    }
    let properties: Map<String, Value> = descriptor
        .arguments
        .iter()
        .map(|argument| {
            let schema = if argument.values.is_empty() {
                serde_json::json!({ "type": "string" })
            } else {
                serde_json::json!({ "type": "string", "enum": argument.values })
            };
            (argument.name.clone(), schema)
        })
        .collect();
    let schema = serde_json::json!({ "type": "object", "properties": properties });
    let validator = jsonschema::options()
        .build(&schema)
        .map_err(|error| invalid(format!("its arguments' schema does not compile: {error}")))?;
    Ok(RegisteredPrompt {
        granted_roles: permissions
            .roles_granting(&descriptor.permission)
            .into_boxed_slice(),
        descriptor: Arc::new(descriptor),
        validator,
        body: Body::Runtime(body),
    })
}

fn valid_prompt_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-'))
}

impl ToolRegistry {
    /// Every prompt this registry serves, sorted by name.
    pub fn prompts(&self) -> Vec<Arc<PromptDescriptor>> {
        self.shared()
            .prompts
            .prompts
            .values()
            .map(|prompt| Arc::clone(&prompt.descriptor))
            .collect()
    }

    /// The prompts one of `roles` grants the permission of, sorted by name.
    pub fn prompts_permitted(&self, roles: &[Role]) -> Vec<Arc<PromptDescriptor>> {
        self.shared()
            .prompts
            .prompts
            .values()
            .filter(|prompt| prompt.granted_to(roles))
            .map(|prompt| Arc::clone(&prompt.descriptor))
            .collect()
    }

    /// Prompt `name`, rendered for the caller of `context` with `arguments` (strings, by
    /// argument name). See the module's documentation for the checks, in order.
    pub async fn render_prompt(
        &self,
        name: &str,
        arguments: &Map<String, Value>,
        context: &CallContext,
    ) -> Result<RenderedPrompt, PromptError> {
        let span = tracing::info_span!(
            "prompt",
            prompt = name,
            org_id = context.org_id.as_ref().map(|id| id.as_str()),
            user_id = context.user_id.as_ref().map(|id| id.as_str()),
            correlation_id = context.correlation_id.as_ref().map(|id| id.as_str()),
            outcome = tracing::field::Empty,
        );
        let rendering = self.render_checked(name, arguments, context);
        let rendered = rendering.instrument(span.clone()).await;
        let outcome = match &rendered {
            Ok(_) => "ok",
            Err(error) => error.kind(),
        };
        span.record("outcome", outcome);
        rendered
    }

    async fn render_checked(
        &self,
        name: &str,
        arguments: &Map<String, Value>,
        context: &CallContext,
    ) -> Result<RenderedPrompt, PromptError> {
        let shared = self.shared();
        let prompt = shared.prompts.get(name)?;
        let mut caller = admit(prompt, context)?;
        // A body that asks the client asks the one the caller brings, else the registry's own
        // handler, as a tool does.
        if let (false, Some(handler)) = (caller.client.is_active(), &shared.client) {
            caller.client = switchboard_core::ask::ClientLink::new(Arc::clone(handler));
        }
        let args = Value::Object(arguments.clone());
        if let Some(path) = find_org_id(&args) {
            return Err(PromptError::InvalidArgument {
                prompt: name.to_owned(),
                argument: path.trim_start_matches('/').to_owned(),
                reason: "the organisation comes from the call context only".to_owned(),
            });
        }
        check_arguments(prompt, arguments)?;
        let rendering = match &prompt.body {
            Body::Linked { entry, cell } => {
                (entry.render)(prompt_scope(caller, name, Arc::clone(cell)), args)
            }
            Body::Runtime(body) => {
                let body = Arc::clone(body);
                let arguments = arguments.clone();
                let prompt_name = name.to_owned();
                Box::pin(async move {
                    body.render(&caller, &arguments).await.map_err(|error| {
                        PromptError::RenderFailed {
                            prompt: prompt_name,
                            error,
                        }
                    })
                })
            }
        };
        let timeout = shared.config.default_timeout;
        let failed = |error: ToolError| PromptError::RenderFailed {
            prompt: name.to_owned(),
            error,
        };
        let messages =
            match tokio::time::timeout(timeout, AssertUnwindSafe(rendering).catch_unwind()).await {
                Err(_) => {
                    return Err(failed(ToolError::new(
                        "timeout",
                        format!("rendering took longer than {timeout:?}"),
                    )));
                }
                Ok(Err(panic)) => {
                    return Err(failed(ToolError::new(
                        "render_panicked",
                        format!("its body panicked: {}", panic_message(&*panic)),
                    )));
                }
                Ok(Ok(rendered)) => rendered?,
            };
        Ok(RenderedPrompt {
            description: Some(prompt.descriptor.description.clone()),
            messages,
        })
    }

    /// Values for argument `argument` of prompt `name` that fit `value`, the text typed so far,
    /// for the caller of `context` (who must be granted the prompt): the enum values that
    /// start with it (ignoring case), or else what the prompt's own completer suggests; at
    /// most [`MAX_COMPLETIONS`].
    pub fn complete_prompt_argument(
        &self,
        name: &str,
        argument: &str,
        value: &str,
        context: &CallContext,
    ) -> Result<Vec<String>, PromptError> {
        let prompt = self.shared().prompts.get(name)?;
        let caller = admit(prompt, context)?;
        let Some(declared) = prompt
            .descriptor
            .arguments
            .iter()
            .find(|known| known.name == argument)
        else {
            return Err(unknown_argument(prompt, argument));
        };
        let mut values = if declared.values.is_empty() {
            match &prompt.body {
                Body::Linked { entry, cell } => (entry.complete)(
                    prompt_scope(caller, name, Arc::clone(cell)),
                    argument,
                    value,
                )
                .map_err(|error| PromptError::RenderFailed {
                    prompt: name.to_owned(),
                    error,
                })?,
                Body::Runtime(body) => body.complete(&caller, argument, value),
            }
        } else {
            let typed = value.to_lowercase();
            declared
                .values
                .iter()
                .filter(|candidate| candidate.to_lowercase().starts_with(&typed))
                .cloned()
                .collect()
        };
        values.truncate(MAX_COMPLETIONS);
        Ok(values)
    }
}

/// The verified caller of `context`, if it is granted `prompt`.
fn admit(prompt: &RegisteredPrompt, context: &CallContext) -> Result<Caller, PromptError> {
    let caller = context
        .verify()
        .map_err(|fields| PromptError::MissingContext { fields })?;
    if !prompt.granted_to(&caller.roles) {
        return Err(PromptError::PermissionDenied {
            prompt: prompt.descriptor.name.clone(),
            permission: prompt.descriptor.permission.clone(),
            roles: caller.roles.to_vec(),
        });
    }
    Ok(caller)
}

fn unknown_argument(prompt: &RegisteredPrompt, argument: &str) -> PromptError {
    let known: Vec<&str> = prompt
        .descriptor
        .arguments
        .iter()
        .map(|known| known.name.as_str())
        .collect();
    PromptError::InvalidArgument {
        prompt: prompt.descriptor.name.clone(),
        argument: argument.to_owned(),
        reason: if known.is_empty() {
            "the prompt takes no arguments".to_owned()
        } else {
            format!("no such argument; it takes `{}`", known.join("`, `"))
        },
    }
}

/// Every argument known, every required one given, and the whole valid against the schema.
fn check_arguments(
    prompt: &RegisteredPrompt,
    arguments: &Map<String, Value>,
) -> Result<(), PromptError> {
    let declared = &prompt.descriptor.arguments;
    if let Some(unknown) = arguments
        .keys()
        .find(|given| !declared.iter().any(|known| &known.name == *given))
    {
        return Err(unknown_argument(prompt, unknown));
    }
    if let Some(missing) = declared
        .iter()
        .find(|known| known.required && !arguments.contains_key(&known.name))
    {
        return Err(PromptError::MissingArgument {
            prompt: prompt.descriptor.name.clone(),
            argument: missing.name.clone(),
        });
    }
    let instance = Value::Object(arguments.clone());
    if let Some(error) = prompt.validator.iter_errors(&instance).next() {
        let path = error.instance_path().to_string();
        let argument = path
            .trim_start_matches('/')
            .split('/')
            .next()
            .unwrap_or_default()
            .to_owned();
        let value = instance.pointer(&path).cloned().unwrap_or(Value::Null);
        let reason = if value.is_string() {
            format!("{value} does not fit: {error}")
        } else {
            format!("prompt arguments are strings, and {value} is not one")
        };
        return Err(PromptError::InvalidArgument {
            prompt: prompt.descriptor.name.clone(),
            argument,
            reason,
        });
    }
    Ok(())
}
