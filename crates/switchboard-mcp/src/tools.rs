//! `tools/list`: the tools an identity may call, as MCP `Tool` objects, one page at a time.
//!
//! The shape comes from [`ToolDescriptor::mcp`] in `switchboard-core`, so the CLI's
//! `schema --format mcp` and this server can never disagree; it reaches rmcp's [`Tool`]
//! through a serde round trip. That round trip copies both schemas twice, so a [`ToolCatalog`]
//! keeps each descriptor's conversion: `tools/list` and rmcp's own lookups (on 2026-07-28 it
//! looks a tool's input schema up on every HTTP `tools/call` to check the `Mcp-Param-*`
//! headers) clone a converted tool instead of converting again.
//!
//! Pages are cut from the name-sorted list; the cursor is the offset of the next page, opaque
//! to clients, and any cursor we did not hand out is a JSON-RPC invalid-params error.

use std::{
    collections::HashMap,
    sync::{Arc, PoisonError, RwLock},
};

use rmcp::{
    ErrorData,
    model::{ListToolsResult, Tool},
};
use switchboard_core::ToolDescriptor;

/// How many tools one `tools/list` page holds.
pub(crate) const PAGE_SIZE: usize = 100;

/// Prefix of every cursor, so a stray number is not mistaken for one of ours.
pub(crate) const CURSOR_PREFIX: &str = "offset:";

/// Each tool's MCP form, converted once per descriptor and shared by every handler instance
/// of a server (one per HTTP session or request).
///
/// Entries are keyed by name and hold the descriptor they were made from: a tool registered
/// again at run time has a new descriptor, which misses and is converted anew. A miss also
/// forgets the entries whose descriptor nobody but the catalog holds any more (the registry
/// dropped the tool), so the catalog stays the size of the registry.
#[derive(Default)]
pub(crate) struct ToolCatalog {
    converted: RwLock<HashMap<Box<str>, Converted>>,
    /// The tasks (MCP tasks extension) of long-running calls, shared like the catalog so that
    /// `tasks/get` finds a task whichever instance started it.
    pub(crate) tasks: crate::tasks::Tasks,
}

impl std::fmt::Debug for ToolCatalog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolCatalog")
            .field("converted", &self.converted)
            .finish_non_exhaustive()
    }
}

#[derive(Debug)]
struct Converted {
    descriptor: Arc<ToolDescriptor>,
    /// `None`: rmcp rejected the shape (logged once, at the conversion).
    tool: Option<Tool>,
}

impl ToolCatalog {
    /// `descriptor` as rmcp's [`Tool`], or `None` if rmcp rejects its shape.
    pub(crate) fn tool(&self, descriptor: &Arc<ToolDescriptor>) -> Option<Tool> {
        {
            // A panic while the lock was held cannot leave a half-made entry: entries are
            // inserted whole.
            let converted = self
                .converted
                .read()
                .unwrap_or_else(PoisonError::into_inner);
            if let Some(hit) = converted
                .get(&*descriptor.name)
                .filter(|hit| Arc::ptr_eq(&hit.descriptor, descriptor))
            {
                return hit.tool.clone();
            }
        }
        let tool = to_mcp_tool(descriptor);
        let mut converted = self
            .converted
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        converted.retain(|_, entry| Arc::strong_count(&entry.descriptor) > 1);
        converted.insert(
            descriptor.name.as_ref().into(),
            Converted {
                descriptor: Arc::clone(descriptor),
                tool: tool.clone(),
            },
        );
        tool
    }
}

/// One descriptor as rmcp's [`Tool`], or `None` (logged) if rmcp rejects the shape.
fn to_mcp_tool(descriptor: &ToolDescriptor) -> Option<Tool> {
    match serde_json::from_value::<Tool>(descriptor.mcp()) {
        Ok(tool) => Some(tool),
        Err(error) => {
            tracing::error!(
                tool = %descriptor.name,
                %error,
                "a tool descriptor does not convert to an MCP tool; it is left out of tools/list"
            );
            None
        }
    }
}

/// The page of `descriptors` (already filtered) that starts at `cursor`.
pub(crate) fn page(
    catalog: &ToolCatalog,
    mut descriptors: Vec<Arc<ToolDescriptor>>,
    cursor: Option<&str>,
) -> Result<ListToolsResult, ErrorData> {
    descriptors.sort_by(|left, right| left.name.cmp(&right.name));
    let start = match cursor {
        None => 0,
        Some(cursor) => parse_cursor(cursor)
            .filter(|offset| *offset < descriptors.len())
            .ok_or_else(|| {
                ErrorData::invalid_params(
                    format!(
                        "invalid cursor `{cursor}`: pass back a `nextCursor` from an earlier \
                         tools/list answer, or none for the first page"
                    ),
                    None,
                )
            })?,
    };
    let end = start.saturating_add(PAGE_SIZE).min(descriptors.len());
    let tools = descriptors
        .get(start..end)
        .unwrap_or_default()
        .iter()
        .filter_map(|descriptor| catalog.tool(descriptor))
        .collect();
    let mut result = ListToolsResult::with_all_items(tools);
    result.next_cursor = (end < descriptors.len()).then(|| format!("{CURSOR_PREFIX}{end}"));
    Ok(result)
}

pub(crate) fn parse_cursor(cursor: &str) -> Option<usize> {
    cursor.strip_prefix(CURSOR_PREFIX)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use serde_json::json;
    use switchboard_core::{Category, ToolOrigin};

    use super::*;

    fn descriptor(name: &'static str, description: &'static str) -> Arc<ToolDescriptor> {
        Arc::new(ToolDescriptor {
            name: Cow::Borrowed(name),
            title: None,
            domain: Cow::Borrowed("mounted"),
            category: Category::Read,
            permission: Cow::Borrowed("core.users.read"),
            description: Cow::Borrowed(description),
            intents: Vec::new(),
            tags: Vec::new(),
            timeout: None,
            input_schema: Arc::new(json!({"type": "object", "properties": {}})),
            output_schema: None,
            tasks: switchboard_core::TaskSupport::Forbidden,
            asks_before_task: false,
            origin: ToolOrigin::Runtime {
                source: "catalog-test".to_owned(),
            },
        })
    }

    fn entries(catalog: &ToolCatalog) -> usize {
        catalog.converted.read().expect("not poisoned").len()
    }

    #[test]
    fn the_catalog_converts_a_descriptor_once_and_as_the_round_trip_does() {
        let catalog = ToolCatalog::default();
        let first = descriptor("mounted_read", "Reads.");
        let converted = catalog.tool(&first).expect("a valid shape");
        assert_eq!(Some(&converted), to_mcp_tool(&first).as_ref());
        assert_eq!(catalog.tool(&first).as_ref(), Some(&converted));
        assert_eq!(entries(&catalog), 1);
        let entry_made_from = |catalog: &ToolCatalog| {
            let converted = catalog.converted.read().expect("not poisoned");
            Arc::clone(&converted["mounted_read"].descriptor)
        };
        assert!(Arc::ptr_eq(&entry_made_from(&catalog), &first));
    }

    #[test]
    fn a_tool_registered_again_is_converted_anew_and_dropped_ones_are_forgotten() {
        let catalog = ToolCatalog::default();
        let old = descriptor("mounted_read", "Reads.");
        let gone = descriptor("mounted_gone", "Goes away.");
        catalog.tool(&old);
        catalog.tool(&gone);
        assert_eq!(entries(&catalog), 2);
        // The registry replaces one tool and drops the other.
        let new = descriptor("mounted_read", "Reads, differently.");
        drop((old, gone));
        let converted = catalog.tool(&new).expect("a valid shape");
        assert_eq!(
            converted.description.as_deref(),
            Some("Reads, differently.")
        );
        assert_eq!(
            entries(&catalog),
            1,
            "the dropped tool's entry is forgotten"
        );
    }

    #[test]
    fn cursors_round_trip_and_strangers_are_refused() {
        assert_eq!(parse_cursor("offset:100"), Some(100));
        assert_eq!(parse_cursor("100"), None);
        assert_eq!(parse_cursor("offset:-1"), None);
        let refused = page(&ToolCatalog::default(), Vec::new(), Some("offset:0"))
            .expect_err("nothing to page through");
        assert_eq!(refused.code, rmcp::model::ErrorCode::INVALID_PARAMS);
    }

    #[test]
    fn the_first_page_of_nothing_is_empty_and_final() {
        let result = page(&ToolCatalog::default(), Vec::new(), None).expect("first page");
        assert!(result.tools.is_empty());
        assert_eq!(result.next_cursor, None);
    }
}
