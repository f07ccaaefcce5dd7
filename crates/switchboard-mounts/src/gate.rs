//! What of a mounted server's tools is exposed, decided before any model sees them.
//!
//! A mounted server is a party we do not trust: its tool descriptions reach the model as they
//! are, so a description can carry instructions to the model, and a server can change a tool
//! after a person agreed to it. Every listing of a server's tools, at start and after each
//! `tools/list_changed` or restart, passes the [`Gate`], which admits each tool or withholds
//! it with a reason, or refuses the whole server. Its first step is the prompt-injection
//! verifier ([`crate::verifier`]), which refuses a server by its `verify` policy.
//!
//! A withheld tool stays registered, unlisted, with a body that answers every call with why
//! (`mounted_tool_withheld`), so a caller who knows its name gets a clear error rather than
//! `tool_not_found`.

use rmcp::{RoleClient, ServiceError, model::Tool, service::Peer};

use crate::{
    config::ServerConfig,
    pins::Pins,
    verifier::{Finding, Screen},
};

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
pub(crate) struct Gate {
    /// The prompt-injection verifier ([`crate::verifier`]).
    screen: Screen,
    /// What a person accepted of each server ([`crate::pins`]); nothing is pinned without.
    pins: Option<Pins>,
}

impl Gate {
    /// The gate, checking each listing against `pins`.
    pub(crate) fn with_pins(mut self, pins: Pins) -> Self {
        self.pins = Some(pins);
        self
    }

    /// The pins it checks against.
    pub(crate) fn pins(&self) -> Option<&Pins> {
        self.pins.as_ref()
    }

    /// Each of `listing`'s tools with its admission, or the refusal of the whole server.
    pub(crate) fn admit(
        &self,
        server: &ServerConfig,
        listing: &Listing,
    ) -> Result<Vec<(Tool, Admission)>, Refused> {
        // The verifier first: a server it refuses is not pinned on first use.
        self.screen
            .screen(server, listing)
            .map_err(|reason| Refused { reason })?;
        let pinned = match &self.pins {
            Some(pins) => pins.admit(&server.id, listing).map_err(|error| Refused {
                reason: error.to_string(),
            })?,
            None => vec![Admission::Exposed; listing.tools.len()],
        };
        Ok(listing.tools.iter().cloned().zip(pinned).collect())
    }
}

impl Gate {
    /// A gate whose prompt-injection verifier is `screen`.
    pub(crate) fn with_screen(mut self, screen: Screen) -> Self {
        self.screen = screen;
        self
    }

    /// Its prompt-injection verifier.
    pub(crate) fn screen(&self) -> &Screen {
        &self.screen
    }

    /// The verifier's findings in `server`'s latest listing.
    pub(crate) fn findings(&self, server: &str) -> Vec<Finding> {
        self.screen.findings(server)
    }
}
