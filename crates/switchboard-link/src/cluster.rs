//! The cluster link (feature `cluster`): a domain served by a registry on another process,
//! reached through `ractor_cluster`, so that each call goes whole to the domain's own actor on
//! that node ([`DomainMsg::Call`](switchboard_registry::DomainMsg)).
//!
//! - [`ClusterNode`] runs this process's `ractor_cluster::NodeServer` in
//!   `NodeConnectionMode::Isolated` (it connects to the peers it is given, never to their
//!   peers), authenticated by a shared [`Cookie`] read from a file. It connects to each
//!   configured peer and connects again, with a backoff, whenever the session ends:
//!   `ractor_cluster` itself calls its reconnection semantics best-effort.
//! - [`ClusterNode::link`] gives a [`ClusterDomainLink`] per linked domain, whose breaker opens
//!   when the peer's session is down, when the peer serves no actor of the domain, or when a
//!   ping misses its deadline, and half-opens when they come back.
//! - The serving node builds its registry with `join_domain_groups` and a
//!   [`StatementVerifier`](crate::StatementVerifier) as its `statement_verifier`; the sending
//!   node signs each call with its [`StatementSigner`](crate::StatementSigner). A
//!   `ractor_cluster` message does not say which node sent it, so the serving node takes the
//!   sender to be the peer whose key verified the statement
//!   ([`StatementVerifier::verify_by_key`](crate::StatementVerifier::verify_by_key)).

mod cookie;
mod link;
mod node;
mod statements;

pub use cookie::{Cookie, CookieError, MIN_COOKIE_BYTES};
pub use link::ClusterDomainLink;
pub use node::{ClusterError, ClusterNode, ClusterNodeConfig, ClusterPeer, Reconnect};
pub use statements::PeerIssuer;
