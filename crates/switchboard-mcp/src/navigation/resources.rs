//! The pages as MCP resources: `resources/list`, `resources/templates/list` and
//! `resources/read`.
//!
//! A page's URI is its path under the `switchboard` scheme with an empty authority:
//! `switchboard:///roster` for `/roster`, as `file:///` names a local path. MCP requires
//! resource URIs to be absolute RFC 3986 URIs (a bare path is not one) and allows custom
//! schemes; the route's `{name}` parameters are RFC 6570 level-1 variables, so
//! `switchboard:///roster/shifts/{shift_id}` is the route's URI template as it is. A read
//! also accepts the bare path.
//!
//! The lists are the pages' declarations, the same for every caller: the home page `/` and
//! every page without parameters, and a template for each page with parameters. Nothing in
//! them depends on the connection or the session. A read is `navigate` for the caller, as
//! markdown.

use rmcp::{
    ErrorData,
    model::{
        ListResourceTemplatesResult, ListResourcesResult, ReadResourceResult, Resource,
        ResourceContents, ResourceTemplate,
    },
};
use serde_json::json;
use switchboard_core::CallContext;
use switchboard_navigation::{NavError, Navigator};

use super::nav_error_json;

/// The scheme and empty authority before a page's path.
const URI_PREFIX: &str = "switchboard://";

/// The MIME type of a page read as a resource.
pub(crate) const MARKDOWN: &str = "text/markdown";

/// The URI of the page at `path` (`/roster` → `switchboard:///roster`).
pub(crate) fn uri_of(path: &str) -> String {
    format!("{URI_PREFIX}{path}")
}

/// The path a resource URI names: after `switchboard://`, or the URI itself if it is a path.
fn path_of(uri: &str) -> Option<&str> {
    uri.strip_prefix(URI_PREFIX)
        .or(Some(uri))
        .filter(|path| path.starts_with('/'))
}

/// Whether `route` has no parameters.
fn is_fixed(route: &str) -> bool {
    !route.contains('{')
}

/// The home page and every page without parameters.
pub(crate) fn list(navigator: &Navigator) -> ListResourcesResult {
    let home = (!navigator.routes().any(|route| route == "/")).then(|| {
        Resource::new(uri_of("/"), "/")
            .with_title("Home")
            .with_description("The pages you can open.")
            .with_mime_type(MARKDOWN)
    });
    let mut pages: Vec<_> = navigator
        .pages()
        .filter(|entry| is_fixed(entry.spec.route))
        .map(|entry| {
            Resource::new(uri_of(entry.spec.route), entry.spec.route)
                .with_title(entry.spec.title)
                .with_description(entry.spec.description)
                .with_mime_type(MARKDOWN)
        })
        .collect();
    pages.sort_by(|left, right| left.uri.cmp(&right.uri));
    ListResourcesResult::with_all_items(home.into_iter().chain(pages).collect())
}

/// A template for every page with parameters.
pub(crate) fn templates(navigator: &Navigator) -> ListResourceTemplatesResult {
    let mut templates: Vec<_> = navigator
        .pages()
        .filter(|entry| !is_fixed(entry.spec.route))
        .map(|entry| {
            ResourceTemplate::new(uri_of(entry.spec.route), entry.spec.route)
                .with_title(entry.spec.title)
                .with_description(entry.spec.description)
                .with_mime_type(MARKDOWN)
        })
        .collect();
    templates.sort_by(|left, right| left.uri_template.cmp(&right.uri_template));
    ListResourceTemplatesResult::with_all_items(templates)
}

/// The page at `uri` for the caller of `context`, as markdown. A URI that names no page, or a
/// resource that does not exist for this caller, is `-32002` (resource not found); another
/// refusal is `-32602` with the error's JSON.
pub(crate) async fn read(
    navigator: &Navigator,
    uri: &str,
    context: &CallContext,
) -> Result<ReadResourceResult, ErrorData> {
    let Some(path) = path_of(uri) else {
        return Err(ErrorData::invalid_params(
            format!(
                "the resource URI {uri:?} is not a page: pages are `switchboard:///<path>`, \
                 such as `switchboard:///`; resources/list and resources/templates/list name \
                 them"
            ),
            None,
        ));
    };
    match navigator.navigate(path, context).await {
        Ok(view) => Ok(ReadResourceResult::new(vec![
            ResourceContents::text(view.markdown(), uri).with_mime_type(MARKDOWN),
        ])),
        Err(
            error @ (NavError::BadUrl { .. }
            | NavError::NoSuchPage { .. }
            | NavError::NotFound { .. }),
        ) => Err(ErrorData::resource_not_found(
            error.to_string(),
            Some(json!({"uri": uri, "error": nav_error_json(&error)})),
        )),
        Err(error) => Err(ErrorData::invalid_params(
            error.to_string(),
            Some(json!({"uri": uri, "error": nav_error_json(&error)})),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_and_paths_round_trip() {
        assert_eq!(uri_of("/roster"), "switchboard:///roster");
        assert_eq!(path_of("switchboard:///roster"), Some("/roster"));
        assert_eq!(path_of("switchboard:///"), Some("/"));
        assert_eq!(path_of("/me"), Some("/me"));
        assert_eq!(path_of("switchboard://host/roster"), None);
        assert_eq!(path_of("https://example.com/"), None);
    }
}
