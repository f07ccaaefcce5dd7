//! The orchestrator: turns what a person or a model says into a tool call.
//!
//! Tools declare intents, short phrases such as `"who am i"` or parameterised ones such as
//! `"shifts from {from} to {to}"`. An [`IntentTable`] built from those declarations routes an
//! utterance to the one tool whose intent matches the whole utterance and hands back the
//! captured parameters; when nothing matches, [`NoMatch`] lists the closest intents so the
//! caller can rephrase.
//!
//! The matching core ([`IntentTable`]) is pure (no actors, no I/O) so that it can be tested
//! and benchmarked on its own. The [`Orchestrator`] actor builds the table from the registry's
//! tools, rebuilds it when they change, and `ask` routes and calls in the caller's task.
//!
//! ```
//! use switchboard_orchestrator::IntentTable;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let table = IntentTable::build([
//!     ("core_get_current_user", "who am i"),
//!     ("core_get_current_user", "me"),
//!     ("roster_list_shifts", "shifts from {from} to {to}"),
//! ])?;
//!
//! let matched = table.route("Who am I?")?;
//! assert_eq!(&*matched.tool, "core_get_current_user");
//!
//! let matched = table.route("Shifts from 2026-11-23 to 2026-11-29?")?;
//! assert_eq!(matched.params["from"], "2026-11-23");
//! assert_eq!(matched.params["to"], "2026-11-29");
//!
//! // Only whole utterances match: "me" is an intent, "assign me a shift" is not.
//! assert!(table.route("assign me a shift").is_err());
//! # Ok(())
//! # }
//! ```

mod error;
mod intent;
mod orchestrator;
mod resume;
mod route;

pub use error::{AskError, OrchestratorError};
pub use intent::{
    BuildError, ClosestIntent, IntentMatch, IntentPattern, IntentTable, NoMatch, PatternError,
    normalize,
};
pub use orchestrator::{Answer, Orchestrator, OrchestratorMsg};
pub use resume::{ResumeDecision, Resumed};
pub use route::{Route, RouteFallback};
