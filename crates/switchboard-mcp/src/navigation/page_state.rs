//! The `page_state` token: what a caller saw of a page, handed back with an action so that the
//! action is refused if the page changed since.
//!
//! `navigate` mints it; `execute_action` receives it back from the client, so to the server it
//! is untrusted input. It is sealed with the same codec and key as the approvals' `requestState`
//! ([`StateKey`]), under a domain string of its own, so that neither can stand for the other.
//!
//! - **Sealed** (readable, not secret): the version of the page's data the caller was shown.
//! - **Bound** (associated data, must match to open): the identity (organisation, user,
//!   initiator, agent type, roles) and the URL exactly as navigated. A token opens only for the
//!   caller it was minted for, on the same URL.
//! - **Expiry**: [`PAGE_STATE_TTL`].
//!
//! Nothing is kept on the server: the token carries everything, so it works the same on every
//! handler, replica and protocol revision (2026-07-28 has no sessions).

use std::time::Duration;

use rmcp::model::{RequestStateError, SealOptions};
use serde::{Deserialize, Serialize};

use crate::{
    approval::{StateKey, push_field, push_identity},
    identity::Identity,
};

/// How long a `page_state` stays valid.
pub(crate) const PAGE_STATE_TTL: Duration = Duration::from_secs(10 * 60);

/// Separates this use of the key from any other.
const DOMAIN: &[u8] = b"switchboard.mcp.page-state.v1";

/// The sealed payload.
#[derive(Debug, Serialize, Deserialize)]
struct Payload {
    /// The page version the caller was shown.
    version: String,
}

/// Why a `page_state` was refused. Each message says what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum PageStateRefused {
    /// Its time ran out.
    #[error(
        "the page_state for {url:?} has expired (a page_state is valid for 10 minutes): \
         navigate to {url:?} again and pass the page_state it returns"
    )]
    Expired {
        /// The URL of the action.
        url: String,
    },
    /// It was minted for another URL or another caller, by another server, or altered.
    #[error(
        "the page_state is not valid for {url:?} and you: it was given for another page or \
         another caller, or was altered; navigate to {url:?} and pass the page_state it \
         returns, or leave page_state out"
    )]
    NotForThisPage {
        /// The URL of the action.
        url: String,
    },
}

/// What a token is bound to: the caller and the URL.
fn binding(identity: &Identity, url: &str) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(256);
    push_field(&mut bytes, DOMAIN);
    push_identity(&mut bytes, identity);
    push_field(&mut bytes, url.as_bytes());
    bytes
}

/// Seals `version`, the version of the page at `url` shown to `identity`.
pub(crate) fn seal(
    key: &StateKey,
    identity: &Identity,
    url: &str,
    version: &str,
) -> Result<String, RequestStateError> {
    let payload = Payload {
        version: version.to_owned(),
    };
    key.codec().seal_json_with(
        &payload,
        &SealOptions::new()
            .associated_data(&binding(identity, url))
            .ttl(PAGE_STATE_TTL),
    )
}

/// Opens a token handed back with an action on `url` by `identity`: the page version it holds.
pub(crate) fn open(
    key: &StateKey,
    identity: &Identity,
    url: &str,
    sealed: &str,
) -> Result<String, PageStateRefused> {
    key.codec()
        .open_json_with::<Payload>(sealed, &binding(identity, url))
        .map(|payload| payload.version)
        .map_err(|error| {
            tracing::info!(%error, "refused a page_state");
            match error {
                RequestStateError::Expired => PageStateRefused::Expired {
                    url: url.to_owned(),
                },
                _ => PageStateRefused::NotForThisPage {
                    url: url.to_owned(),
                },
            }
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> StateKey {
        StateKey::from_bytes(vec![7; 32]).expect("a valid key")
    }

    fn sam() -> Identity {
        Identity::agent("acme", "sam").with_role("staff")
    }

    #[test]
    fn opens_for_the_same_caller_and_url_only() {
        let sealed = seal(&key(), &sam(), "/roster", "v1").expect("seals");
        assert_eq!(
            open(&key(), &sam(), "/roster", &sealed).as_deref(),
            Ok("v1")
        );
        let others = [
            (sam(), "/people"),
            (
                Identity::agent("acme", "mark").with_role("staff"),
                "/roster",
            ),
            (
                Identity::agent("globex", "sam").with_role("staff"),
                "/roster",
            ),
            (sam().with_role("manager"), "/roster"),
        ];
        for (identity, url) in others {
            assert_eq!(
                open(&key(), &identity, url, &sealed),
                Err(PageStateRefused::NotForThisPage {
                    url: url.to_owned()
                })
            );
        }
        assert!(open(&StateKey::generate(), &sam(), "/roster", &sealed).is_err());
        assert!(open(&key(), &sam(), "/roster", "garbage").is_err());
    }

    #[test]
    fn an_approval_state_is_not_a_page_state() {
        // The same key seals both; the domain strings keep them apart.
        let sealed = key()
            .codec()
            .seal_json_with(
                &Payload {
                    version: "v1".to_owned(),
                },
                &SealOptions::new().associated_data(b"switchboard.mcp.approval-state.v1"),
            )
            .expect("seals");
        assert!(open(&key(), &sam(), "/roster", &sealed).is_err());
    }
}
