//! What of a mounted server's tools is exposed, decided before any model sees them.
//!
//! A mounted server is a party we do not trust: its tool descriptions reach the model as they
//! are, so a description can carry instructions to the model, and a server can change a tool
//! after a person agreed to it. Every listing of a server's tools, at start and after each
//! `tools/list_changed` or restart, passes the [`Gate`], which admits each tool or withholds
//! it with a reason, or refuses the whole server.
//!
//! A withheld tool stays registered, unlisted, with a body that answers every call with why
//! (`mounted_tool_withheld`), so a caller who knows its name gets a clear error rather than
//! `tool_not_found`.

use rmcp::{RoleClient, ServiceError, model::Tool, service::Peer};

use crate::config::ServerConfig;

/// What a server offers: its tools, and the `instructions` it gave at the handshake.
#[derive(Debug, Clone, Default)]
pub(crate) struct Listing {
    pub(crate) tools: Vec<Tool>,
    pub(crate) instructions: Option<String>,
}

impl Listing {
    /// What the server behind `peer` offers now.
    pub(crate) async fn of(peer: &Peer<RoleClient>) -> Result<Self, ServiceError> {
        let tools = peer.list_all_tools().await?;
        let instructions = peer.peer_info().and_then(|info| info.instructions.clone());
        Ok(Self {
            tools,
            instructions,
        })
    }
}

/// Whether one tool is exposed.
#[derive(Debug, Clone, PartialEq, Eq)]
#[expect(
    dead_code,
    reason = "the checks that withhold tools are not written yet"
)]
pub(crate) enum Admission {
    /// Registered, and listed unless its server is lazy.
    Exposed,
    /// Registered unlisted, answering every call with `reason`.
    Withheld {
        /// Why, and what a person can do about it.
        reason: String,
    },
}

/// A server none of whose tools may be exposed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Refused {
    /// Why, and what a person can do about it.
    pub(crate) reason: String,
}

/// Decides, for each listing of a server's tools, which are exposed.
#[derive(Debug, Clone, Default)]
pub(crate) struct Gate {}

impl Gate {
    /// Each of `listing`'s tools with its admission, or the refusal of the whole server.
    pub(crate) fn admit(
        &self,
        server: &ServerConfig,
        listing: &Listing,
    ) -> Result<Vec<(Tool, Admission)>, Refused> {
        let _ = server;
        Ok(listing
            .tools
            .iter()
            .map(|tool| (tool.clone(), Admission::Exposed))
            .collect())
    }
}
