//! The `probe` test domain: tools that fail on purpose, count their runs, and measure how many
//! of them run at once, keyed by a name each test picks, so tests in one process never share
//! a count.

use std::collections::HashMap;
use std::sync::{LazyLock, Mutex};
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use switchboard_core::{ToolContext, ToolError, ToolInput, tool};
use tokio::time::Instant;
use validator::Validate;

/// The probe's state (the counts live in statics, keyed per test).
#[derive(Debug, Clone, Default)]
pub(crate) struct ProbeState;

switchboard_core::domain! {
    /// Tools that misbehave on purpose, for the engine's tests.
    pub(crate) Probe { name: "probe", state: ProbeState = ProbeState::default }
}

#[derive(Default)]
struct Counts {
    calls: HashMap<String, Vec<Instant>>,
    in_flight: HashMap<String, u32>,
    most_in_flight: HashMap<String, u32>,
}

static COUNTS: LazyLock<Mutex<Counts>> = LazyLock::new(Mutex::default);

fn counts() -> std::sync::MutexGuard<'static, Counts> {
    COUNTS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// When each call of `key` started.
pub(crate) fn calls(key: &str) -> Vec<Instant> {
    counts().calls.get(key).cloned().unwrap_or_default()
}

/// The most calls of `key` that ran at once.
pub(crate) fn most_in_flight(key: &str) -> u32 {
    counts().most_in_flight.get(key).copied().unwrap_or(0)
}

/// A call of a probe tool.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, Validate, ToolInput)]
#[serde(deny_unknown_fields)]
pub(crate) struct ProbeInput {
    /// The test's key.
    pub(crate) key: String,
    /// Fail (retryably) this many times before succeeding.
    #[serde(default)]
    pub(crate) failures: u32,
    /// Those failures are in doubt (the change may have been made) rather than retryable.
    #[serde(default)]
    pub(crate) in_doubt: bool,
    /// Sleep this long before answering.
    #[serde(default)]
    pub(crate) sleep_ms: u64,
    /// Echoed back.
    #[serde(default)]
    pub(crate) value: Value,
}

/// What a probe answers.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub(crate) struct ProbeOutput {
    /// How many calls of the key so far.
    pub(crate) calls: usize,
    /// The input's `value`.
    pub(crate) value: Value,
}

async fn probe(input: ProbeInput) -> Result<ProbeOutput, ToolError> {
    let calls = {
        let mut counts = counts();
        let calls = counts.calls.entry(input.key.clone()).or_default();
        calls.push(Instant::now());
        let calls = calls.len();
        let in_flight = counts.in_flight.entry(input.key.clone()).or_default();
        *in_flight += 1;
        let now = *in_flight;
        let most = counts.most_in_flight.entry(input.key.clone()).or_default();
        *most = (*most).max(now);
        calls
    };
    if input.sleep_ms > 0 {
        tokio::time::sleep(Duration::from_millis(input.sleep_ms)).await;
    }
    if let Some(in_flight) = counts().in_flight.get_mut(&input.key) {
        *in_flight -= 1;
    }
    if calls <= input.failures as usize && input.in_doubt {
        return Err(ToolError::new(
            "answer_lost",
            format!("the answer to call {calls} of `{}` was lost", input.key),
        )
        .in_doubt());
    }
    if calls <= input.failures as usize {
        return Err(ToolError::new(
            "busy",
            format!("call {calls} of `{}` is refused", input.key),
        )
        .retryable());
    }
    Ok(ProbeOutput {
        calls,
        value: input.value,
    })
}

/// Reads nothing; fails retryably `failures` times, sleeps, and counts.
#[tool(domain = Probe, category = read, permission = "probe.read")]
pub(crate) async fn look(
    _ctx: &ToolContext<ProbeState>,
    input: ProbeInput,
) -> Result<ProbeOutput, ToolError> {
    probe(input).await
}

/// Changes something (nothing, in fact); fails retryably `failures` times, sleeps, and counts.
#[tool(domain = Probe, category = execute, permission = "probe.write")]
pub(crate) async fn touch(
    _ctx: &ToolContext<ProbeState>,
    input: ProbeInput,
) -> Result<ProbeOutput, ToolError> {
    probe(input).await
}

/// Always fails, not retryably.
#[tool(domain = Probe, category = read, permission = "probe.read")]
pub(crate) async fn broken(
    _ctx: &ToolContext<ProbeState>,
    input: ProbeInput,
) -> Result<ProbeOutput, ToolError> {
    let _ = json!(input.key);
    Err(ToolError::new("broken", "this probe always fails"))
}

/// The form [`confirm`] asks for.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct GoAhead {
    /// Whether to go ahead.
    pub(crate) go: bool,
}

/// Asks whether to go ahead (a form), then makes its change (counted) only if the answer is
/// yes; answers what it was told.
#[tool(domain = Probe, category = execute, permission = "probe.write")]
pub(crate) async fn confirm(
    ctx: &ToolContext<ProbeState>,
    input: ProbeInput,
) -> Result<Value, ToolError> {
    let answer = ctx.elicit::<GoAhead>("Go ahead?").await?;
    Ok(match answer {
        switchboard_core::ask::Answer::Accepted(GoAhead { go: true }) => {
            let made = probe(input).await?;
            json!({ "answer": "yes", "calls": made.calls })
        }
        switchboard_core::ask::Answer::Accepted(GoAhead { go: false }) => json!({ "answer": "no" }),
        switchboard_core::ask::Answer::Declined => json!({ "answer": "declined" }),
        switchboard_core::ask::Answer::Cancelled => json!({ "answer": "cancelled" }),
    })
}

/// Asks the client's model to summarise the input's `value`, and answers the summary.
#[tool(domain = Probe, category = read, permission = "probe.read")]
pub(crate) async fn summarise(
    ctx: &ToolContext<ProbeState>,
    input: ProbeInput,
) -> Result<Value, ToolError> {
    let request =
        switchboard_core::ask::SampleRequest::new(format!("Summarise: {}", input.value), 100);
    let sampled = ctx.sample(&request).await?;
    Ok(json!({ "summary": sampled.text(), "model": sampled.model }))
}
