//! Navigation: pages at URLs, with the actions available *there*, for agents and people alike.
//!
//! An agent given every tool at once must work out which apply to what it is looking at. Here
//! it moves the way a person does: [`Navigator::navigate`] opens a URL and returns the page
//! (markdown and data) with the actions offered on it to this caller, in this state;
//! [`Navigator::execute_action`] runs one and returns the page to look at next. A person given
//! the same URL sees the same page.
//!
//! Domains declare pages beside their tools ([`switchboard_core::Page`] and
//! [`switchboard_core::page!`]). A page reads through read tools and acts through registered
//! tools, so the registry's checks, approvals and audit apply unchanged; this crate only
//! matches URLs, decides what is offered (the caller's permissions, the tool's category, the
//! page's availability predicates) and merges the URL-bound parameters into an action's
//! input.

mod error;
mod navigator;
mod proposals;
mod url;
mod version;
mod view;

pub use error::NavError;
pub use navigator::{ActionOutcome, NAVIGATE, Navigator, NavigatorError};
pub use proposals::{PROPOSAL_ROUTE, PROPOSALS_ROUTE};
pub use url::{MAX_SEGMENT_LEN, MAX_URL_LEN, Route, RouteError, truncated};
pub use view::{ActionMode, ActionView, EXECUTE_ACTION_HINT, PageView, ParamView};
