//! Procedural macros for Switchboard tools. Each entry point is a thin shim: the logic lives in
//! a module that returns `syn::Result`, and errors become `compile_error!` at the offending
//! token. Users reach these through `switchboard_core` (or the `switchboard` facade), never
//! directly.

use proc_macro::TokenStream;

mod attr;
mod derives;
// One algorithm for doc comments as prose, shared with `switchboard-core`, which re-exports
// this crate and so cannot be its dependency (see the file's module docs).
#[path = "../../switchboard-core/src/doc_text.rs"]
#[allow(dead_code, reason = "core also uses `unwrap`, for schema descriptions")]
mod doc_text;
mod input;
mod paths;
mod tool;

/// Turns an `async fn(ctx: &ToolContext<State>, input: Input) -> Result<Output, E>` into a
/// tool, where `State` is the state of the tool's domain (a plain `&ToolContext` for a domain
/// without state).
///
/// | key          | value                         | required | meaning                                   |
/// |--------------|-------------------------------|----------|-------------------------------------------|
/// | `domain`     | `Directory`                   | yes      | the domain type (`domain!`) whose actor supervises the tool |
/// | `category`   | `read`, `propose`, `execute`, `restricted` | yes | what the tool may do            |
/// | `permission` | `"core.users.read"`           | yes      | what the caller's roles must grant         |
/// | `name`       | `"core_get_current_user"`     | no       | defaults to `<domain name>_<fn name>`       |
/// | `title`      | `"Current user"`              | no       | a short human title                        |
/// | `intents`    | `["who am i", "me"]`          | no       | utterances the orchestrator routes here     |
/// | `tags`       | `["billing", "beta"]`         | no       | labels (`a-z 0-9 _ -`) a running registry disables and enables tools by |
/// | `timeout_ms` | `2000`                        | no       | overrides the runtime's default timeout     |
/// | `tasks`      | `forbidden`, `optional`, `required` | no | whether a call may run as a task the client polls (MCP tasks extension); `forbidden` by default |
/// | `asks_before_task` | (a flag, no value)      | no       | with `tasks = optional` or `required`: the task begins at `ctx.begin_task()`, and the questions before it are asked in `input_required` rounds |
///
/// The doc comment is the description. The macro keeps the function as written and adds a
/// marker type named after it in UpperCamelCase (`get_current_user` → `GetCurrentUser`) that
/// implements `Tool`, and registers the tool at link time.
#[proc_macro_attribute]
pub fn tool(attr: TokenStream, item: TokenStream) -> TokenStream {
    let item = proc_macro2::TokenStream::from(item);
    match tool::expand(attr.into(), item.clone()) {
        Ok(expanded) => expanded.into(),
        // Keep the function as written next to the error, so that the one real error is not
        // buried under "unused import" and "cannot find function" errors that follow from the
        // function vanishing.
        Err(error) => {
            let mut out = error.to_compile_error();
            out.extend(item);
            out.into()
        }
    }
}

/// Marks a struct as a tool input, refusing a field named `org_id` (the organisation only ever
/// comes from the call context). The struct must also derive `Serialize`, `Deserialize`,
/// `JsonSchema` and `Validate`.
#[proc_macro_derive(ToolInput)]
pub fn derive_tool_input(item: TokenStream) -> TokenStream {
    input::expand(item.into())
        .unwrap_or_else(|error| error.to_compile_error())
        .into()
}

/// Derives the named traits with Switchboard's own `serde`, `schemars` and `validator`, so that
/// the crate using it needs none of them as a dependency, and no version of its own can
/// disagree with Switchboard's:
/// `#[switchboard::derives(Serialize, Deserialize, JsonSchema, Validate, ToolInput)]` on a tool
/// input, `#[switchboard::derives(Clone, Serialize, JsonSchema)]` on a tool output.
///
/// `Serialize`, `Deserialize`, `JsonSchema`, `Validate` and `ToolInput` go through the facade
/// (with `#[serde(crate = ...)]`, `#[schemars(crate = ...)]` and `#[validate(crate = ...)]`
/// added); any other name (`Debug`, `Clone`) is derived as written. Field attributes
/// (`#[validate(length(max = 100))]`, `#[serde(default)]`) are written as usual. Put it above
/// any `#[derive]` of the same item.
#[proc_macro_attribute]
pub fn derives(attr: TokenStream, item: TokenStream) -> TokenStream {
    derives::expand(attr.into(), item.into())
        .unwrap_or_else(|error| error.to_compile_error())
        .into()
}
