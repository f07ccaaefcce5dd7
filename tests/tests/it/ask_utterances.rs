//! What people type, and where it goes: a table of utterances against the real sample tools,
//! each with the route and params it must produce or `no_route`.
//!
//! The orchestrator is started with a fixed today (Thursday 2026-11-26), so relative dates are
//! deterministic, and routes as `sam` of `acme`, whose colleagues (alice, mark, sam) come from
//! the real `core_list_users` tool. Every utterance is routed twice, to pin that routing is
//! deterministic.

use serde_json::{Value, json};
use switchboard::{AskError, Initiator, Orchestrator, orchestrator::OrchestratorConfig};
use switchboard_integration_tests::{boot, ctx};

/// Where an utterance must go: a tool and its params, or nowhere.
enum Expect {
    Route(&'static str, Value),
    NoRoute,
}

use Expect::{NoRoute, Route};

const LIST: &str = "roster_list_shifts";
const SWAP: &str = "roster_propose_shift_swap";
const ASSIGN: &str = "roster_assign_shift";
const WHO: &str = "core_get_current_user";
const USERS: &str = "core_list_users";

fn range(from: &str, to: &str) -> Value {
    json!({"from": from, "to": to})
}

fn range_for(from: &str, to: &str, assignee: &str) -> Value {
    json!({"from": from, "to": to, "assignee": assignee})
}

fn open_range(from: &str, to: &str) -> Value {
    json!({"from": from, "to": to, "open_only": true})
}

/// This week, Monday to Sunday, around Thursday 2026-11-26.
const MON: &str = "2026-11-23";
const SUN: &str = "2026-11-29";

fn table() -> Vec<(&'static str, Expect)> {
    vec![
        // Who am I, in the ways people ask it.
        ("who am I?", Route(WHO, json!({}))),
        ("Who am i", Route(WHO, json!({}))),
        ("whoami", Route(WHO, json!({}))),
        ("can you tell me who am i", Route(WHO, json!({}))),
        ("who am i please", Route(WHO, json!({}))),
        // Listing shifts: defaults, fillers, noise words, typos.
        ("list shifts", Route(LIST, range(MON, SUN))),
        ("shifts", Route(LIST, range(MON, SUN))),
        ("show shifts", Route(LIST, range(MON, SUN))),
        ("please list the shifts", Route(LIST, range(MON, SUN))),
        ("can you show me all shifts?", Route(LIST, range(MON, SUN))),
        ("show me the shifts, thanks", Route(LIST, range(MON, SUN))),
        ("I want to see shifts", Route(LIST, range(MON, SUN))),
        ("lsit shifts", Route(LIST, range(MON, SUN))),
        ("list shfits", Route(LIST, range(MON, SUN))),
        ("List Shifts!", Route(LIST, range(MON, SUN))),
        // Week and day phrases.
        ("list shifts this week", Route(LIST, range(MON, SUN))),
        (
            "list shifts next week",
            Route(LIST, range("2026-11-30", "2026-12-06")),
        ),
        (
            "shifts for next week",
            Route(LIST, range("2026-11-30", "2026-12-06")),
        ),
        (
            "shifts last week",
            Route(LIST, range("2026-11-16", "2026-11-22")),
        ),
        (
            "list shifts today",
            Route(LIST, range("2026-11-26", "2026-11-26")),
        ),
        (
            "shifts tomorrow",
            Route(LIST, range("2026-11-27", "2026-11-27")),
        ),
        (
            "show shifts on friday",
            Route(LIST, range("2026-11-27", "2026-11-27")),
        ),
        (
            "shifts on next monday",
            Route(LIST, range("2026-11-30", "2026-11-30")),
        ),
        // Ranges in several date formats.
        (
            "shifts from 2026-11-23 to 2026-11-25",
            Route(LIST, range(MON, "2026-11-25")),
        ),
        (
            "list shifts from monday to friday",
            Route(LIST, range(MON, "2026-11-27")),
        ),
        (
            "shifts from mon to wed",
            Route(LIST, range(MON, "2026-11-25")),
        ),
        (
            "show shifts between 23/11/2026 and 25/11/2026",
            Route(LIST, range(MON, "2026-11-25")),
        ),
        (
            "shifts from 23.11.2026 to 29.11.2026",
            Route(LIST, range(MON, SUN)),
        ),
        (
            "shifts from Nov 23 to November 25, 2026",
            Route(LIST, range(MON, "2026-11-25")),
        ),
        (
            "shifts from 23 nov 2026 until 24 nov 2026",
            Route(LIST, range(MON, "2026-11-24")),
        ),
        (
            "shifts from today to sunday",
            Route(LIST, range("2026-11-26", SUN)),
        ),
        // People: ids and names, and the words after a capture stay out of it.
        (
            "shifts from 2026-11-23 to 2026-11-29 for sam",
            Route(LIST, range_for(MON, SUN, "sam")),
        ),
        (
            "list shifts for sam",
            Route(LIST, range_for(MON, SUN, "sam")),
        ),
        (
            "shifts for Mark Mendez",
            Route(LIST, range_for(MON, SUN, "mark")),
        ),
        (
            "list shifts next week for alice",
            Route(LIST, range_for("2026-11-30", "2026-12-06", "alice")),
        ),
        (
            "swap shift acme-2026-11-24-am with Mark",
            Route(
                SWAP,
                json!({"shift_id": "acme-2026-11-24-am", "with_user": "mark"}),
            ),
        ),
        (
            "swap shift acme-2026-11-24-am with mark because I am ill",
            Route(
                SWAP,
                json!({"shift_id": "acme-2026-11-24-am", "with_user": "mark", "reason": "I am ill"}),
            ),
        ),
        (
            "assign shift acme-2026-11-24-pm to Sam Stone",
            Route(
                ASSIGN,
                json!({"shift_id": "acme-2026-11-24-pm", "user_id": "sam"}),
            ),
        ),
        (
            "please give shift acme-2026-11-24-pm to alice",
            Route(
                ASSIGN,
                json!({"shift_id": "acme-2026-11-24-pm", "user_id": "alice"}),
            ),
        ),
        // Open shifts: the intent fixes `open_only`, whatever the dates.
        ("list open shifts", Route(LIST, open_range(MON, SUN))),
        (
            "show me the unassigned shifts",
            Route(LIST, open_range(MON, SUN)),
        ),
        (
            "open shifts next week",
            Route(LIST, open_range("2026-11-30", "2026-12-06")),
        ),
        (
            "list open shifts from monday to wednesday",
            Route(LIST, open_range(MON, "2026-11-25")),
        ),
        ("shifts open, list", Route(LIST, open_range(MON, SUN))),
        ("list users", Route(USERS, json!({}))),
        ("show me the people", Route(USERS, json!({}))),
        // Nowhere: other organisations' people, non-dates, unrelated requests.
        ("list shifts for gina", NoRoute),
        // An open shift has no assignee, so no open-shifts intent takes one.
        ("list open shifts for sam", NoRoute),
        ("swap shift acme-2026-11-24-am with nobody", NoRoute),
        ("shifts from soon to later", NoRoute),
        ("shifts from 31/02/2026 to 2026-03-04", NoRoute),
        ("what shifts are there", NoRoute),
        ("please fire everyone", NoRoute),
        ("who are you", NoRoute),
        ("", NoRoute),
    ]
}

async fn orchestrator() -> (switchboard::Switchboard, Orchestrator) {
    let runtime = boot().await;
    let config = OrchestratorConfig {
        today: Some(jiff::civil::date(2026, 11, 26)),
        ..OrchestratorConfig::default()
    };
    let orchestrator = Orchestrator::start_with(runtime.registry.clone(), config)
        .await
        .expect("the orchestrator starts");
    (runtime, orchestrator)
}

#[tokio::test]
async fn utterances_route_where_a_person_means_them() {
    let (_runtime, orchestrator) = orchestrator().await;
    let context = ctx("acme", "sam", &["staff"], Initiator::Human);
    let table = table();
    assert!(table.len() >= 40, "the table covers at least 40 utterances");
    let mut wrong = Vec::new();
    for (utterance, expected) in &table {
        let first = orchestrator.route(utterance, &context).await;
        let again = orchestrator.route(utterance, &context).await;
        assert_eq!(
            format!("{first:?}"),
            format!("{again:?}"),
            "{utterance:?} routes the same way twice"
        );
        let outcome = match &first {
            Ok(route) => Some((route.tool.as_str(), &route.params)),
            Err(AskError::NoRoute { .. }) => None,
            Err(other) => panic!("{utterance:?}: routing cannot fail otherwise: {other}"),
        };
        let matches = match (expected, outcome) {
            (Route(tool, params), Some((routed, routed_params))) => {
                *tool == routed && params == routed_params
            }
            (NoRoute, None) => true,
            _ => false,
        };
        if !matches {
            wrong.push(format!("{utterance:?}: got {first:?}"));
        }
    }
    assert!(wrong.is_empty(), "misrouted:\n{}", wrong.join("\n"));
}

#[tokio::test]
async fn a_clearly_best_suggestion_is_named() {
    let (_runtime, orchestrator) = orchestrator().await;
    let context = ctx("acme", "sam", &["staff"], Initiator::Human);
    let Err(error) = orchestrator.route("what shifts are there", &context).await else {
        panic!("a question is not an intent")
    };
    let AskError::NoRoute {
        closest,
        clear_best,
        ..
    } = &error
    else {
        panic!("expected no_route, got {error}")
    };
    assert_eq!(closest[0].tool.as_ref(), LIST, "{closest:?}");
    assert_eq!(closest[0].example, "list shifts this week");
    assert!(clear_best, "{closest:?}");
    assert!(
        error
            .to_string()
            .ends_with("did you mean: list shifts this week?"),
        "{error}"
    );
}
