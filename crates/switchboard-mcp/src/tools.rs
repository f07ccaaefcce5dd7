//! `tools/list`: the tools an identity may call, as MCP `Tool` objects, one page at a time.
//!
//! The shape comes from [`ToolDescriptor::mcp`] in `switchboard-core`, so the CLI's
//! `schema --format mcp` and this server can never disagree; it reaches rmcp's [`Tool`]
//! through a serde round trip. Pages are cut from the name-sorted list; the cursor is the
//! offset of the next page, opaque to clients, and any cursor we did not hand out is a
//! JSON-RPC invalid-params error.

use std::sync::Arc;

use rmcp::{
    ErrorData,
    model::{ListToolsResult, Tool},
};
use switchboard_core::ToolDescriptor;

/// How many tools one `tools/list` page holds.
pub(crate) const PAGE_SIZE: usize = 100;

/// Prefix of every cursor, so a stray number is not mistaken for one of ours.
const CURSOR_PREFIX: &str = "offset:";

/// One descriptor as rmcp's [`Tool`], or `None` (logged) if rmcp rejects the shape.
pub(crate) fn to_mcp_tool(descriptor: &ToolDescriptor) -> Option<Tool> {
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
        .filter_map(|descriptor| to_mcp_tool(descriptor))
        .collect();
    let mut result = ListToolsResult::with_all_items(tools);
    result.next_cursor = (end < descriptors.len()).then(|| format!("{CURSOR_PREFIX}{end}"));
    Ok(result)
}

fn parse_cursor(cursor: &str) -> Option<usize> {
    cursor.strip_prefix(CURSOR_PREFIX)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_strangers_are_refused() {
        assert_eq!(parse_cursor("offset:100"), Some(100));
        assert_eq!(parse_cursor("100"), None);
        assert_eq!(parse_cursor("offset:-1"), None);
        let refused = page(Vec::new(), Some("offset:0")).expect_err("nothing to page through");
        assert_eq!(refused.code, rmcp::model::ErrorCode::INVALID_PARAMS);
    }

    #[test]
    fn the_first_page_of_nothing_is_empty_and_final() {
        let result = page(Vec::new(), None).expect("first page");
        assert!(result.tools.is_empty());
        assert_eq!(result.next_cursor, None);
    }
}
