//! Why a page could not be shown or an action could not run, and whether the refusal has its
//! audit record yet.

use switchboard_core::{InvokeError, PageError};

/// Why `navigate` or `execute_action` did not succeed. Each message says what to do.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum NavError {
    /// The URL is not one a page could have (not a path, `..`, `//`, too long, ...).
    #[error("the URL {url:?} is refused: {reason}")]
    BadUrl {
        /// The URL, cut to a readable length.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// No page's route matches the URL.
    #[error("no page is at {url:?}{}", nearest_hint(.nearest))]
    NoSuchPage {
        /// The URL.
        url: String,
        /// The routes closest to it, best first.
        nearest: Vec<String>,
    },
    /// The page's resource does not exist for this caller (in another organisation, it does
    /// not exist either).
    #[error("no page is at {url:?}: {what} does not exist")]
    NotFound {
        /// The URL.
        url: String,
        /// What was missing.
        what: String,
    },
    /// The URL matched a route, but a parameter is not valid for it.
    #[error("the URL {url:?} does not name a valid page: {reason}")]
    InvalidParams {
        /// The URL.
        url: String,
        /// What is wrong, from the page.
        reason: String,
    },
    /// The page changed since the caller saw it, so the action was not run.
    #[error(
        "the page at {url:?} changed since you saw it ({} changed): navigate to it again, \
         check its current state, then act",
        .changed.iter().map(|field| format!("`{field}`")).collect::<Vec<_>>().join(", ")
    )]
    Stale {
        /// The URL.
        url: String,
        /// The top-level fields of the page's data that changed.
        changed: Vec<String>,
    },
    /// A call the page or the action made was refused or failed; audited by the registry (or,
    /// for a context that does not verify or a proposal that cannot be read, by the navigator).
    #[error(transparent)]
    Invoke(#[from] InvokeError),
}

fn nearest_hint(nearest: &[String]) -> String {
    if nearest.is_empty() {
        "; start at `/`, which lists the pages you can reach".to_owned()
    } else {
        format!(
            "; the nearest pages are {}, and `/` lists the pages you can reach",
            nearest
                .iter()
                .map(|route| format!("`{route}`"))
                .collect::<Vec<_>>()
                .join(", ")
        )
    }
}

impl NavError {
    /// The stable snake_case kind: the registry's kinds for refused calls, plus `bad_url`,
    /// `no_such_page`, `not_found`, `invalid_params` and `page_changed`.
    pub fn kind(&self) -> &'static str {
        match self {
            NavError::BadUrl { .. } => "bad_url",
            NavError::NoSuchPage { .. } => "no_such_page",
            NavError::NotFound { .. } => "not_found",
            NavError::InvalidParams { .. } => "invalid_params",
            NavError::Stale { .. } => "page_changed",
            NavError::Invoke(error) => error.kind().as_str(),
        }
    }

    /// Whether no audit record covers the error where it is made: the navigator's own checks
    /// (the URL, the page, its parameters, its version) and a context that does not verify,
    /// made before the registry is asked anything. Every other [`NavError::Invoke`] comes from
    /// a call through the registry, which audited it.
    fn has_no_record(&self) -> bool {
        matches!(
            self,
            NavError::BadUrl { .. }
                | NavError::NoSuchPage { .. }
                | NavError::NotFound { .. }
                | NavError::InvalidParams { .. }
                | NavError::Stale { .. }
                | NavError::Invoke(InvokeError::MissingContext { .. })
        )
    }

    pub(crate) fn from_page(url: &str, error: PageError) -> Self {
        match error {
            PageError::NotFound { what } => NavError::NotFound {
                url: url.to_owned(),
                what,
            },
            PageError::InvalidParams { .. } => NavError::InvalidParams {
                url: url.to_owned(),
                reason: error.to_string(),
            },
            PageError::Invoke(error) => NavError::Invoke(error),
            other => NavError::InvalidParams {
                url: url.to_owned(),
                reason: other.to_string(),
            },
        }
    }
}

/// A refusal on its way out of the navigator, and whether an audit record covers it yet.
///
/// [`Navigator::navigate`](crate::Navigator::navigate) and
/// [`Navigator::execute_action`](crate::Navigator::execute_action) write the record of one that
/// has none, so that every refusal of theirs leaves exactly one.
#[derive(Debug)]
pub(crate) struct Refused {
    pub(crate) error: NavError,
    /// Whether a record covers the refusal: the registry's (a call it refused or ran), or the
    /// navigator's (an action it refused through `ToolRegistry::record_refusal`).
    pub(crate) audited: bool,
}

impl Refused {
    /// `error`, which no record covers yet (a read of the proposal store, which the registry
    /// answers without auditing).
    pub(crate) fn unaudited(error: impl Into<NavError>) -> Self {
        Self {
            error: error.into(),
            audited: false,
        }
    }

    /// `error`, covered by a record already (the action that ran before it).
    pub(crate) fn audited(error: NavError) -> Self {
        Self {
            error,
            audited: true,
        }
    }
}

impl From<NavError> for Refused {
    fn from(error: NavError) -> Self {
        let audited = !error.has_no_record();
        Self { error, audited }
    }
}

impl From<InvokeError> for Refused {
    fn from(error: InvokeError) -> Self {
        NavError::from(error).into()
    }
}
