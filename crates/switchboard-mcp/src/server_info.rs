//! [`ServerInfo`]: what the server says about itself in `initialize` (`serverInfo` and the
//! opening paragraph of `instructions`), so that an application serving its tools through
//! Switchboard answers with its own name and version rather than Switchboard's.

use std::borrow::Cow;

/// The name a server gives in `initialize` unless told otherwise.
const DEFAULT_NAME: &str = "switchboard";

/// The opening paragraph of `instructions` unless [`ServerInfo::with_instructions`] replaces
/// it.
pub(crate) const DEFAULT_INSTRUCTIONS: &str = "Business tools of one organisation. Every call \
     is checked (context, category, permission, input) and audited; a refused call answers \
     isError with a stable kind.";

/// The name, version and opening instructions a server answers `initialize` with.
///
/// [`ServerInfo::default`] is `switchboard` with this crate's version and the default
/// instructions. Set it with [`McpServer::with_server_info`](crate::McpServer::with_server_info)
/// (stdio) or [`HttpConfig::with_server_info`](crate::HttpConfig::with_server_info) (HTTP).
///
/// ```
/// use switchboard_mcp::ServerInfo;
///
/// let info = ServerInfo::new("rota-service", "1.4.2")
///     .with_instructions("Shift rosters of Acme's warehouses.");
/// assert_eq!(info.name(), "rota-service");
/// assert_eq!(info.version(), "1.4.2");
/// assert_eq!(info.instructions(), Some("Shift rosters of Acme's warehouses."));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerInfo {
    name: Cow<'static, str>,
    version: Cow<'static, str>,
    instructions: Option<String>,
}

impl ServerInfo {
    /// A server called `name` at `version` (`serverInfo.name` and `serverInfo.version`), with
    /// the default opening instructions.
    pub fn new(name: impl Into<Cow<'static, str>>, version: impl Into<Cow<'static, str>>) -> Self {
        Self {
            name: name.into(),
            version: version.into(),
            instructions: None,
        }
    }

    /// The same, opening `instructions` with `text` instead of the default paragraph. The
    /// paragraphs that follow it stay: navigation's, when it is on, and those added with
    /// [`McpServer::with_instructions`](crate::McpServer::with_instructions).
    #[must_use]
    pub fn with_instructions(mut self, text: impl Into<String>) -> Self {
        self.instructions = Some(text.into());
        self
    }

    /// `serverInfo.name`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// `serverInfo.version`.
    pub fn version(&self) -> &str {
        &self.version
    }

    /// The opening paragraph of `instructions`, if set; `None` means the default one.
    pub fn instructions(&self) -> Option<&str> {
        self.instructions.as_deref()
    }

    /// The opening paragraph `instructions` start with.
    pub(crate) fn opening_instructions(&self) -> &str {
        self.instructions.as_deref().unwrap_or(DEFAULT_INSTRUCTIONS)
    }
}

impl Default for ServerInfo {
    /// `switchboard`, with this crate's version and the default instructions.
    fn default() -> Self {
        Self::new(DEFAULT_NAME, env!("CARGO_PKG_VERSION"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_is_switchboard_at_this_crates_version_with_the_default_paragraph() {
        let info = ServerInfo::default();
        assert_eq!(info.name(), "switchboard");
        assert_eq!(info.version(), env!("CARGO_PKG_VERSION"));
        assert_eq!(info.instructions(), None);
        assert_eq!(info.opening_instructions(), DEFAULT_INSTRUCTIONS);
    }

    #[test]
    fn instructions_replace_the_opening_paragraph() {
        let info = ServerInfo::new("rota", String::from("2.0.0")).with_instructions("Rotas.");
        assert_eq!(info.opening_instructions(), "Rotas.");
        assert_eq!(info.version(), "2.0.0");
    }
}
