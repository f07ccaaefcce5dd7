//! Resources that read tools serve: a URI, or an RFC 6570 level-1 URI template, whose contents
//! are the output of a registered read tool.
//!
//! A resource is declared beside the tool that reads it, with [`resource!`](crate::resource!),
//! and collected at link time like tools and pages. Reading it *is* a call of that tool, with
//! the template's variables as its input, so it passes the registry's checks as the caller
//! (permission, organisation, input) and leaves the tool's audit record; a domain left out of
//! the registry takes its resources with it. The macro refuses, at compile time, a tool that is
//! not a read tool.
//!
//! Pages ([`Page`](crate::Page)) are the other resources an MCP server offers: markdown with
//! actions, for navigating. Resources declared here are documents for a client to fetch as
//! they are: a report, a schema, a picture. The tool's output becomes the contents: a tool
//! returning [`ToolContent`](crate::ToolContent) gives one entry per block (text, or a base64
//! blob for images, audio and binary resources); any other tool gives its JSON as text.

use std::collections::BTreeMap;

use crate::SourceLocation;

/// A resource served by a read tool, as [`resource!`](crate::resource!) declares it.
#[derive(Debug, Clone, Copy)]
pub struct ResourceSpec {
    /// Its URI (`reports://weekly`), or a URI template with `{name}` variables
    /// (`reports://weeks/{week}`), each of which is a field of the tool's input.
    pub uri: &'static str,
    /// A short name, as MCP's `Resource.name`.
    pub name: &'static str,
    /// A title for people.
    pub title: &'static str,
    /// What it holds, for the model.
    pub description: &'static str,
    /// The media type of its contents (of a text block; binary blocks carry their own).
    pub mime_type: &'static str,
    /// The read tool whose output is its contents.
    pub tool: &'static str,
    /// Where it is declared.
    pub location: SourceLocation,
}

inventory::collect!(ResourceSpec);

/// Every resource linked into this binary, in unspecified order.
pub fn linked_resources() -> impl Iterator<Item = &'static ResourceSpec> {
    inventory::iter::<ResourceSpec>.into_iter()
}

impl ResourceSpec {
    /// Whether its URI is a template (has `{variables}`).
    pub fn is_template(&self) -> bool {
        self.uri.contains('{')
    }

    /// The names of its URI template's variables, in order.
    pub fn variables(&self) -> impl Iterator<Item = &'static str> {
        self.uri
            .split('{')
            .skip(1)
            .filter_map(|rest| rest.split_once('}').map(|(name, _)| name))
    }

    /// The variables' values when `uri` is this resource (its URI, or an expansion of its
    /// template); `None` when it is not. A variable takes a non-empty run of characters
    /// without `/`, `?` or `#`, as level-1 expansion produces for a simple value.
    pub fn match_uri(&self, uri: &str) -> Option<BTreeMap<String, String>> {
        let mut values = BTreeMap::new();
        let mut rest = uri;
        let mut template = self.uri;
        loop {
            let Some(open) = template.find('{') else {
                return (rest == template).then_some(values);
            };
            rest = rest.strip_prefix(&template[..open])?;
            let after_open = &template[open + 1..];
            let close = after_open.find('}')?;
            let name = &after_open[..close];
            template = &after_open[close + 1..];
            let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
            // The literal after the variable bounds it when it comes before the next `/`.
            let end = match template
                .split('{')
                .next()
                .filter(|literal| !literal.is_empty())
            {
                Some(literal) => rest[..end].find(literal).unwrap_or(end),
                None => end,
            };
            if end == 0 {
                return None;
            }
            values.insert(name.to_owned(), rest[..end].to_owned());
            rest = &rest[end..];
        }
    }
}

/// Declares a resource served by a read tool, as `#[tool]` declares a tool.
///
/// ```ignore
/// switchboard_core::resource!(WeeklyReport {
///     uri: "reports://weeks/{week}",
///     name: "weekly-report",
///     title: "Weekly report",
///     description: "The week's hours by person, as CSV.",
///     mime_type: "text/csv",
/// });
/// ```
///
/// The tool must be a read tool, or the crate does not compile; each `{variable}` of the URI
/// must be a field of its input (the architecture tests check it).
#[macro_export]
macro_rules! resource {
    ($tool:ty {
        uri: $uri:expr,
        name: $name:expr,
        title: $title:expr,
        description: $description:expr,
        mime_type: $mime_type:expr $(,)?
    }) => {
        const _: () = ::core::assert!(
            ::core::matches!(
                <$tool as $crate::Tool>::SPEC.category,
                $crate::Category::Read
            ),
            "a resource is served by a read tool"
        );
        $crate::__private::inventory::submit! {
            $crate::ResourceSpec {
                uri: $uri,
                name: $name,
                title: $title,
                description: $description,
                mime_type: $mime_type,
                tool: <$tool as $crate::Tool>::SPEC.name,
                location: $crate::SourceLocation {
                    file: file!(),
                    line: line!(),
                },
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(uri: &'static str) -> ResourceSpec {
        ResourceSpec {
            uri,
            name: "r",
            title: "R",
            description: "d",
            mime_type: "text/plain",
            tool: "t",
            location: SourceLocation {
                file: file!(),
                line: line!(),
            },
        }
    }

    fn values(pairs: &[(&str, &str)]) -> Option<BTreeMap<String, String>> {
        Some(
            pairs
                .iter()
                .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
                .collect(),
        )
    }

    #[test]
    fn a_fixed_uri_matches_only_itself() {
        let fixed = spec("test://static-text");
        assert!(!fixed.is_template());
        assert_eq!(fixed.match_uri("test://static-text"), values(&[]));
        assert_eq!(fixed.match_uri("test://static-text/"), None);
        assert_eq!(fixed.match_uri("test://static"), None);
    }

    #[test]
    fn a_template_binds_its_variables() {
        let template = spec("test://template/{id}/data");
        assert!(template.is_template());
        assert_eq!(template.variables().collect::<Vec<_>>(), ["id"]);
        assert_eq!(
            template.match_uri("test://template/123/data"),
            values(&[("id", "123")])
        );
        assert_eq!(template.match_uri("test://template//data"), None);
        assert_eq!(template.match_uri("test://template/1/2/data"), None);
        assert_eq!(template.match_uri("test://template/123/other"), None);
        assert_eq!(template.match_uri("test://template/123"), None);
    }

    #[test]
    fn a_literal_after_a_variable_bounds_it() {
        let template = spec("reports://{week}.{format}");
        assert_eq!(template.variables().collect::<Vec<_>>(), ["week", "format"]);
        assert_eq!(
            template.match_uri("reports://2026-W48.csv"),
            values(&[("week", "2026-W48"), ("format", "csv")])
        );
        assert_eq!(template.match_uri("reports://2026-W48"), None);
    }
}
