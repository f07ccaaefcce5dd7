//! The orchestrator: turns what a person or a model says into a tool call.
//!
//! Tools declare intents, short phrases such as `"who am i"` or parameterised ones such as
//! `"[list] shifts from {from:date} to {to:date}"`. An [`IntentTable`] built from those
//! declarations routes an utterance to the one tool whose intent matches the whole utterance
//! (typed captures read dates and colleagues' names as people write them) and hands back the
//! params; when nothing matches, [`NoMatch`] ranks the tools the utterance is most likely
//! about, so the caller can rephrase.
//!
//! The matching core ([`IntentTable`]) is pure (no actors, no I/O) so that it can be tested
//! and benchmarked on its own. The [`Orchestrator`] actor builds the table from the registry's
//! tools, rebuilds it when they change, and `ask` routes and calls in the caller's task.
//!
//! ```
//! use jiff::civil::date;
//! use switchboard_orchestrator::{Facts, IntentTable, People};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let table = IntentTable::build([
//!     ("core_get_current_user", "who am i"),
//!     ("core_get_current_user", "me"),
//!     ("roster_list_shifts", "[list] shifts [{from..to=this week}]"),
//!     ("roster_list_shifts", "[list] shifts from {from:date} to {to:date}"),
//!     ("roster_list_shifts", "[list] open shifts [{from..to=this week}] => open_only=true"),
//! ])?;
//! // Routing is deterministic: today's date comes in, with who the caller's colleagues are.
//! let facts = Facts { today: date(2026, 11, 26), people: People::NoDirectory };
//!
//! let matched = table.route("Who am I?", &facts)?;
//! assert_eq!(&*matched.tool, "core_get_current_user");
//!
//! let matched = table.route("Can you list shifts from monday to friday?", &facts)?;
//! assert_eq!(matched.params["from"], "2026-11-23");
//! assert_eq!(matched.params["to"], "2026-11-27");
//!
//! // An optional part left out takes its default: this week, Monday to Sunday.
//! let matched = table.route("list shifts", &facts)?;
//! assert_eq!(matched.params["to"], "2026-11-29");
//!
//! // An intent's fixed values (after `=>`) are params of every match of it.
//! let matched = table.route("list open shifts next week", &facts)?;
//! assert_eq!(matched.params["open_only"], "true");
//! assert_eq!(matched.params["from"], "2026-11-30");
//!
//! // The words of an intent without captures may come in another order.
//! assert_eq!(&*table.route("tell me who I am", &facts)?.tool, "core_get_current_user");
//!
//! // Only whole utterances match: "me" is an intent, "assign me a shift" is not.
//! assert!(table.route("assign me a shift", &facts).is_err());
//! # Ok(())
//! # }
//! ```

mod error;
mod intent;
mod intent_prompts;
mod model_route;
mod orchestrator;
mod resume;
mod route;

pub use error::{AskError, OrchestratorError};
pub use intent::{
    BuildError, CaptureKind, ClosestIntent, DateSpan, Facts, IntentMatch, IntentPattern,
    IntentTable, MAX_OPTIONAL_PARTS, MAX_UTTERANCE_WORDS, NoMatch, PatternError, People, Person,
    normalize, parse_date_phrase,
};
pub use intent_prompts::{INTENT_PROMPT_PREFIX, IntentPrompt, intent_prompts};
pub use model_route::MODEL_TIER;
pub use orchestrator::{
    Answer, DEFAULT_PEOPLE_TOOL, Orchestrator, OrchestratorConfig, OrchestratorMsg,
};
pub use resume::{ResumeDecision, Resumed};
pub use route::{Route, RouteFallback};
