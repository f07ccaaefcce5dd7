//! Workflows a domain offers as tools: a definition file, a tool name, a category and a
//! permission, declared with [`workflow!`](crate::workflow!) and collected at link time like
//! tools, pages and resources.
//!
//! This crate only collects the declarations: the workflow engine validates each one against
//! the registry's tools when it registers them (an invalid one stops the boot) and runs a call
//! of the tool as a run of the workflow, as the caller. The definition is the file's text,
//! included at compile time, so the binary carries it and the file stays the one copy.

use crate::{Category, SourceLocation};

/// A workflow exported as a tool, as [`workflow!`](crate::workflow!) declares it.
#[derive(Debug, Clone, Copy)]
pub struct WorkflowSpec {
    /// The tool's name.
    pub name: &'static str,
    /// The domain that declares it: the workflow is offered only when this domain is in the
    /// registry.
    pub domain: &'static str,
    /// What the tool does, for the model.
    pub description: &'static str,
    /// The tool's category. `None` takes the strictest category of the workflow's steps; a
    /// declared one may not be laxer than any of them.
    pub category: Option<Category>,
    /// The permission a caller needs to start it.
    pub permission: &'static str,
    /// The definition file's path, as the declaration names it (for messages).
    pub file: &'static str,
    /// The definition file's text (YAML or JSON).
    pub source: &'static str,
    /// Where it is declared.
    pub location: SourceLocation,
}

inventory::collect!(WorkflowSpec);

/// Every workflow exported as a tool and linked into this binary, in unspecified order.
pub fn linked_workflows() -> impl Iterator<Item = &'static WorkflowSpec> {
    inventory::iter::<WorkflowSpec>.into_iter()
}

/// Declares a workflow that a domain offers as a tool.
///
/// ```ignore
/// switchboard_core::workflow!({
///     name: "roster_swap_shifts",
///     domain: "roster",
///     description: "Swap two people's shifts.",
///     category: Execute,
///     permission: "roster.write",
///     file: "../../../docs/examples/workflows/shift_swap.yaml",
/// });
/// ```
///
/// `file` is relative to the declaring source file, as for `include_str!`. `category` may be
/// left out: the tool then takes the strictest category of its steps.
#[macro_export]
macro_rules! workflow {
    ({
        name: $name:expr,
        domain: $domain:expr,
        description: $description:expr,
        $(category: $category:ident,)?
        permission: $permission:expr,
        file: $file:literal $(,)?
    }) => {
        $crate::__private::inventory::submit! {
            $crate::WorkflowSpec {
                name: $name,
                domain: $domain,
                description: $description,
                category: $crate::__workflow_category!($($category)?),
                permission: $permission,
                file: $file,
                source: ::core::include_str!($file),
                location: $crate::SourceLocation {
                    file: file!(),
                    line: line!(),
                },
            }
        }
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __workflow_category {
    () => {
        ::core::option::Option::None
    };
    ($category:ident) => {
        ::core::option::Option::Some($crate::Category::$category)
    };
}
