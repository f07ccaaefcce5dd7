//! The conformance kit: Switchboard's promises checked on any service's tools, from that
//! service's own tests.
//!
//! Switchboard promises that the organisation a call acts for comes from the call context
//! only, that every call leaves one audit record, that read tools change nothing, that an
//! agent never runs a mutation alone, that a retried key runs a mutation once, and that no
//! organisation sees another's data. The registry enforces most of that, but a tool can still
//! break it: a read tool that writes to its own store, a tool that reads the organisation from
//! a field of its input, a query that forgets its `WHERE org_id`. [`ToolChecks`] calls every
//! tool a registry lists, with cases derived from each tool's own input schema, category and
//! permission, and reports every broken promise with the tool, the input (shrunk by proptest)
//! and the audit records:
//!
//! ```no_run
//! # async fn example(registry: switchboard_registry::ToolRegistry) {
//! use switchboard_testing::ToolChecks;
//!
//! ToolChecks::new(&registry)
//!     .orgs("acme", "globex")
//!     .run()
//!     .await
//!     .assert_passed();
//! # }
//! ```
//!
//! Nothing is listed by hand: a tool is checked the moment it is linked. The options add what
//! a registry cannot know: how to read a domain's state ([`ToolChecks::state`]), which strings
//! are one organisation's data ([`ToolChecks::marker`]), calls that put data in place
//! ([`ToolChecks::seed`]), inputs that reach states generated ones cannot
//! ([`ToolChecks::example`]), and skips with a written reason. The promises are listed in
//! [`Invariant`]; `docs/embed.md` shows the kit in a service's test.

mod cases;
mod checks;
mod generate;
mod report;
mod run;
mod session;

pub use checks::{DEFAULT_CASES, Org, ToolChecks};
pub use report::{Invariant, Report, Skipped, Violation};
