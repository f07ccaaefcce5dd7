//! How the pages authenticate, and which hosts and origins they answer.

use switchboard_workflows_engine::Engine;
use tokio_util::sync::CancellationToken;

use crate::{person::SignIn, workflows::WorkflowsConfig};

/// How to serve the pages: who people are, and the hosts and origins besides loopback ones.
#[derive(Debug, Clone)]
pub struct WebConfig {
    pub(crate) sign_in: SignIn,
    pub(crate) extra_hosts: Vec<String>,
    pub(crate) extra_origins: Vec<String>,
    pub(crate) workflows: Option<WorkflowsConfig>,
}

impl WebConfig {
    /// Pages signed in as `sign_in` says, answering loopback hosts and origins only.
    pub fn new(sign_in: SignIn) -> Self {
        Self {
            sign_in,
            extra_hosts: Vec::new(),
            extra_origins: Vec::new(),
            workflows: None,
        }
    }

    /// Also serves the events of `engine`'s runs at
    /// [`RUN_EVENTS_PATH`](crate::RUN_EVENTS_PATH), to the people of each run's organisation;
    /// every stream ends when `stop` is cancelled (cancel it before stopping the server).
    #[must_use]
    pub fn workflows(mut self, engine: Engine, stop: CancellationToken) -> Self {
        self.workflows = Some(WorkflowsConfig { engine, stop });
        self
    }

    /// Whether people sign in (with tokens), rather than every request acting as the operator.
    pub(crate) fn signs_in(&self) -> bool {
        matches!(self.sign_in, SignIn::Tokens(_))
    }

    /// Also answers `Host: host` without sign-in (a name or address, optionally with
    /// `:port`, as `--allow-host` takes it). With tokens every host is answered: the session
    /// cookie is what a request needs.
    #[must_use]
    pub fn allow_host(mut self, host: impl Into<String>) -> Self {
        self.extra_hosts
            .push(host.into().trim().to_ascii_lowercase());
        self
    }

    /// Also accepts form posts from pages at `origin` (`scheme://host[:port]`, as
    /// `--allow-origin` takes it), besides the page's own origin.
    #[must_use]
    pub fn allow_origin(mut self, origin: impl Into<String>) -> Self {
        let origin = origin.into();
        self.extra_origins
            .push(origin.trim().trim_end_matches('/').to_ascii_lowercase());
        self
    }
}
