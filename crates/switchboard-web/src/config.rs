//! How the pages authenticate, and which hosts and origins they answer.

use crate::person::SignIn;

/// How to serve the pages: who people are, and the hosts and origins besides loopback ones.
#[derive(Debug, Clone)]
pub struct WebConfig {
    pub(crate) sign_in: SignIn,
    pub(crate) extra_hosts: Vec<String>,
    pub(crate) extra_origins: Vec<String>,
}

impl WebConfig {
    /// Pages signed in as `sign_in` says, answering loopback hosts and origins only.
    pub fn new(sign_in: SignIn) -> Self {
        Self {
            sign_in,
            extra_hosts: Vec::new(),
            extra_origins: Vec::new(),
        }
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
