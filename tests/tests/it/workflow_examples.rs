//! The example workflows of `docs/examples/workflows/`, run as they are against the sample
//! domains: every file validates against the linked tools, and runs with the input and as the
//! identity its header documents (the `switchboard workflow run` command in its top comments)
//! to the outcome the header states: completed with its output, or paused where a person
//! decides. The commands `docs/workflows.md` and `README.md` show for an example give the same
//! input. Then, in detail: the shift swap swaps two people's shifts; onboarding waits for a
//! manager's approval of the welcome notice, then completes, and a rejection undoes the week.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use switchboard::{CallContext, Initiator, ProposalId, ToolRegistry};
use switchboard_integration_tests::{boot, ctx};
use switchboard_workflows::{
    Definition, MemoryRunStore, NodeState, RunId, RunRecord, RunState, RunStore, load, validate,
};
use switchboard_workflows_engine::{Engine, EngineOptions};

const SHIFT_A: &str = "acme-2026-11-23-am"; // sam works it
const SHIFT_B: &str = "acme-2026-11-23-pm"; // mark works it

/// How long a documented run may take to reach its outcome; reaching it means a hang.
const PATIENCE: Duration = Duration::from_secs(20);

/// What a header must hold, as the failure of a file without one says.
const HEADER_HELP: &str = "document how to run it in comments at the top of the file, after the \
    `yaml-language-server` line, as the other examples do:\n\
    # Run on the sample domains (the workflow_examples test runs it so and checks its outcome):\n\
    #   switchboard workflow run docs/examples/workflows/NAME.yaml \\\n\
    #     --input '{...the run's input, one line of JSON...}' \\\n\
    #     --org acme --user mark --role manager\n\
    # outcome: completed                 (or: paused at NODE, or: paused at NODE > CHILD_NODE)\n\
    # output: {...the run's output, one line of JSON...}   (for a completed run with an output)\n\
    (a JSON example, which has no comments, keeps these lines in NAME.json.run beside it)";

/// How an example is run, and what it comes to, as its header documents it.
#[derive(Debug)]
struct Documented {
    input: Value,
    org: String,
    user: String,
    role: String,
    outcome: DocumentedOutcome,
}

#[derive(Debug, PartialEq)]
enum DocumentedOutcome {
    /// The run completes, with this output (`None`: no `output:` line, the run has none).
    Completed { output: Option<Value> },
    /// The run pauses where a person decides: a node of the run, or of a sub-workflow's run
    /// (`week > ask_manager`: the run's node `week` runs a child run paused at `ask_manager`).
    PausedAt { nodes: Vec<String> },
}

/// The header lines of an example: its leading comments (YAML), or its `.run` file (JSON).
fn header_of(path: &Path) -> Result<String, String> {
    let is_json = path
        .extension()
        .is_some_and(|extension| extension == "json");
    if is_json {
        let sidecar = PathBuf::from(format!("{}.run", path.display()));
        return std::fs::read_to_string(&sidecar)
            .map_err(|error| format!("{} cannot be read ({error})", sidecar.display()));
    }
    let text = std::fs::read_to_string(path)
        .map_err(|error| format!("{} cannot be read ({error})", path.display()))?;
    Ok(text
        .lines()
        .take_while(|line| line.starts_with('#'))
        .collect::<Vec<_>>()
        .join("\n"))
}

/// The value of `--flag VALUE` in `text` (a quoted value up to its closing quote).
fn flag<'t>(text: &'t str, flag: &str) -> Option<&'t str> {
    let rest = text.split(&format!("{flag} ")).nth(1)?.trim_start();
    match rest.strip_prefix('\'') {
        Some(quoted) => quoted.split('\'').next(),
        None => rest.split_whitespace().next(),
    }
}

/// The text after `# key:` on a line of `header`.
fn header_line<'t>(header: &'t str, key: &str) -> Option<&'t str> {
    header
        .lines()
        .find_map(|line| line.strip_prefix(&format!("# {key}:")))
        .map(str::trim)
}

/// How the example at `path` is documented to run; an error says what is missing.
fn documented(path: &Path) -> Result<Documented, String> {
    let header = header_of(path)?;
    let name = path
        .file_name()
        .map_or_else(String::new, |name| name.to_string_lossy().into());
    let command = format!("workflow run docs/examples/workflows/{name}");
    if !header.contains(&command) {
        return Err(format!("its header has no `switchboard {command}` command"));
    }
    let input = flag(&header, "--input").ok_or("its command has no `--input '{...}'`")?;
    let input: Value = serde_json::from_str(input)
        .map_err(|error| format!("its `--input` is not JSON: {error}"))?;
    let identity = |name: &str| {
        flag(&header, name)
            .map(str::to_owned)
            .ok_or(format!("its command has no `{name}`"))
    };
    let outcome = match header_line(&header, "outcome") {
        Some("completed") => DocumentedOutcome::Completed {
            output: header_line(&header, "output")
                .map(|output| {
                    serde_json::from_str(output)
                        .map_err(|error| format!("its `# output:` is not JSON: {error}"))
                })
                .transpose()?,
        },
        Some(paused) if paused.starts_with("paused at ") => DocumentedOutcome::PausedAt {
            nodes: paused["paused at ".len()..]
                .split('>')
                .map(|node| node.trim().to_owned())
                .collect(),
        },
        Some(other) => {
            return Err(format!(
                "its `# outcome: {other}` is neither `completed` nor `paused at NODE`"
            ));
        }
        None => return Err("its header has no `# outcome:` line".to_owned()),
    };
    Ok(Documented {
        input,
        org: identity("--org")?,
        user: identity("--user")?,
        role: identity("--role")?,
        outcome,
    })
}

/// The documented run of an example, or a failure naming the file and what to add.
fn documented_run(name: &str) -> Documented {
    let path = examples().join(name);
    documented(&path).unwrap_or_else(|problem| {
        panic!("docs/examples/workflows/{name} documents no run to test: {problem}; {HEADER_HELP}")
    })
}

/// The caller a documented run acts as: a person typing the command (`workflow run`'s
/// default initiator).
fn caller_of(documented: &Documented) -> CallContext {
    ctx(
        &documented.org,
        &documented.user,
        &[documented.role.as_str()],
        Initiator::Human,
    )
}

/// The example files, sorted.
fn example_names() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(examples())
        .expect("the examples directory exists")
        .map(|entry| {
            entry
                .expect("readable")
                .file_name()
                .to_string_lossy()
                .into()
        })
        .filter(|name: &String| name.ends_with(".yaml") || name.ends_with(".json"))
        .collect();
    names.sort();
    names
}

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/examples/workflows")
}

fn example(registry: &ToolRegistry, name: &str) -> Arc<Definition> {
    let path = examples().join(name);
    Arc::new(
        load(&path, &registry.list())
            .unwrap_or_else(|errors| panic!("{} is valid, but:\n{errors}", path.display())),
    )
}

/// An engine whose loader validates a stored document against the registry's tools, as the
/// binary's does.
fn engine(registry: &ToolRegistry) -> Engine {
    let tools = registry.clone();
    let loader = Arc::new(move |document: &Value| {
        validate(document, &tools.list())
            .map(Arc::new)
            .map_err(|errors| errors.to_string())
    });
    let store: Arc<dyn RunStore> = Arc::new(MemoryRunStore::new());
    Engine::new(
        registry.clone(),
        store,
        EngineOptions {
            loader: Some(loader),
            ..EngineOptions::default()
        },
    )
}

fn manager() -> CallContext {
    ctx("acme", "mark", &["manager"], Initiator::Human)
}

async fn assignee(registry: &ToolRegistry, shift_id: &str) -> Option<String> {
    let shift = registry
        .invoke(
            "roster_get_shift",
            json!({ "shift_id": shift_id }),
            &ctx("acme", "sam", &["staff"], Initiator::Human),
        )
        .await
        .expect("the shift is readable");
    shift["assignee"].as_str().map(str::to_owned)
}

/// The proposal the run's waiting step waits on.
fn waiting_proposal(engine: &Engine, run: RunId, caller: &CallContext) -> ProposalId {
    engine
        .steps(run, caller)
        .expect("the run is the caller's")
        .into_iter()
        .find_map(|step| match step.state {
            NodeState::WaitingApproval { proposal_id } => Some(ProposalId::new(proposal_id)),
            _ => None,
        })
        .expect("a step waits for a decision")
}

/// Waits until the run pauses (its task has ended and it waits for a decision).
async fn until_paused(engine: &Engine, run: RunId, caller: &CallContext) {
    for _ in 0..500 {
        let state = engine.run(run, caller).expect("readable").state;
        if matches!(state, RunState::Paused { .. }) {
            return;
        }
        assert!(!state.is_terminal(), "the run ended instead: {state:?}");
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    panic!("the run did not pause");
}

/// Starts onboarding nina for the seeded week (the documented input), and waits until it waits for the welcome
/// notice's approval: the run and the proposal.
async fn onboard_until_the_welcome(
    registry: &ToolRegistry,
    engine: &Engine,
    caller: &CallContext,
) -> (RunId, ProposalId) {
    let run = engine
        .start(
            example(registry, "onboarding.yaml"),
            documented_run("onboarding.yaml").input,
            caller,
        )
        .await
        .expect("the run is accepted");
    until_paused(engine, run, caller).await;
    (run, waiting_proposal(engine, run, caller))
}

#[tokio::test]
async fn every_example_validates_against_the_sample_tools() {
    let runtime = boot().await;
    let names = example_names();
    assert!(names.contains(&"shift_swap.yaml".to_owned()), "{names:?}");
    assert!(names.contains(&"onboarding.yaml".to_owned()), "{names:?}");
    for name in &names {
        example(&runtime.registry, name);
    }
}

/// The run of `run`'s node path `nodes` leads to: `[node]` is `run` itself, `[node, more..]` the
/// child run that `run`'s node `node` started, followed down `more`; `None` while that child
/// run does not exist yet.
fn run_holding(
    engine: &Engine,
    run: &RunRecord,
    nodes: &[String],
    caller: &CallContext,
) -> Option<RunId> {
    let [node, more @ ..] = nodes else {
        return Some(run.id);
    };
    if more.is_empty() {
        return Some(run.id);
    }
    let child = engine
        .runs(caller, None, false, 1000)
        .expect("the caller's runs are readable")
        .into_iter()
        .find(|child| {
            child
                .parent
                .as_ref()
                .is_some_and(|parent| parent.run == run.id && parent.path.as_str() == node)
        })?;
    run_holding(engine, &child, more, caller)
}

/// Whether `nodes` (as [`run_holding`] follows them) end at a step waiting for a person's
/// decision in a paused run.
fn paused_at(engine: &Engine, run: &RunRecord, nodes: &[String], caller: &CallContext) -> bool {
    let Some(holder) = run_holding(engine, run, nodes, caller) else {
        return false;
    };
    let waiting = nodes.last().map_or("", String::as_str);
    let holder_paused = matches!(
        engine.run(holder, caller).expect("readable").state,
        RunState::Paused { .. }
    );
    holder_paused
        && engine
            .steps(holder, caller)
            .expect("readable")
            .into_iter()
            .any(|step| {
                step.key.path.as_str() == waiting
                    && matches!(step.state, NodeState::WaitingApproval { .. })
            })
}

/// Runs an example as its header documents, and checks the outcome the header states.
async fn run_as_documented(name: &str) {
    let documented = documented_run(name);
    let runtime = boot().await;
    let engine = engine(&runtime.registry);
    let caller = caller_of(&documented);
    let run = engine
        .start(
            example(&runtime.registry, name),
            documented.input.clone(),
            &caller,
        )
        .await
        .unwrap_or_else(|error| panic!("{name}: its documented input is refused: {error}"));
    match &documented.outcome {
        DocumentedOutcome::Completed { output } => {
            let outcome = tokio::time::timeout(PATIENCE, engine.wait(run, &caller))
                .await
                .unwrap_or_else(|_| panic!("{name}: the run did not end"))
                .expect("the run is the caller's");
            let steps = engine.steps(run, &caller).expect("readable");
            assert_eq!(outcome.run, run);
            assert_eq!(outcome.state, RunState::Completed, "{name}: {steps:#?}");
            assert_eq!(&outcome.output, output, "{name}: the documented output");
            for step in &steps {
                assert!(
                    matches!(step.state, NodeState::Completed | NodeState::Skipped { .. }),
                    "{name}: every step of a completed run completed or was skipped: {step:#?}"
                );
            }
        }
        DocumentedOutcome::PausedAt { nodes } => {
            let deadline = tokio::time::Instant::now() + PATIENCE;
            loop {
                let record = engine.run(run, &caller).expect("readable");
                assert!(
                    !record.state.is_terminal(),
                    "{name}: the run ended instead of pausing at {nodes:?}: {:?}",
                    record.state
                );
                if matches!(record.state, RunState::Paused { .. })
                    && paused_at(&engine, &record, nodes, &caller)
                {
                    assert_eq!(record.id, run);
                    assert_eq!(
                        record.output, None,
                        "{name}: a paused run has no output yet"
                    );
                    break;
                }
                assert!(
                    tokio::time::Instant::now() < deadline,
                    "{name}: the run did not pause at {nodes:?}: {:?}",
                    record.state
                );
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    }
}

#[tokio::test]
async fn every_example_runs_with_its_documented_input_to_its_documented_outcome() {
    for name in example_names() {
        run_as_documented(&name).await;
    }
}

#[test]
fn an_example_without_a_documented_run_fails_saying_what_to_add() {
    let directory = tempfile::tempdir().expect("a temporary directory");
    let path = directory.path().join("new.yaml");
    std::fs::write(
        &path,
        "# yaml-language-server: $schema=../../reference/workflow.schema.json\nworkflow: new\nnodes: []\n",
    )
    .expect("written");
    let problem = documented(&path).expect_err("nothing is documented");
    assert_eq!(
        problem,
        "its header has no `switchboard workflow run docs/examples/workflows/new.yaml` command"
    );
    let failure = std::panic::catch_unwind(|| documented_run("no_such_example.yaml"))
        .expect_err("an example without a documented run fails the test");
    let message = failure
        .downcast_ref::<String>()
        .expect("a formatted message");
    assert!(message.contains("# outcome: completed"), "{message}");
    assert!(message.contains("--input '{"), "{message}");
}

#[test]
fn the_guides_commands_give_each_example_its_documented_input() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut checked = 0;
    for guide in ["docs/workflows.md", "README.md"] {
        let text = std::fs::read_to_string(root.join(guide)).expect("the guide is readable");
        for (index, _) in text.match_indices("workflow run docs/examples/workflows/") {
            let command: String = text[index..]
                .lines()
                .scan(true, |more, line| {
                    let take = *more;
                    *more = line.trim_end().ends_with('\\');
                    take.then_some(line)
                })
                .collect::<Vec<_>>()
                .join(" ");
            let name = command["workflow run docs/examples/workflows/".len()..]
                .split_whitespace()
                .next()
                .expect("a file name");
            let documented = documented_run(name);
            let input: Value = serde_json::from_str(
                flag(&command, "--input")
                    .unwrap_or_else(|| panic!("{guide}: `{command}` has no --input")),
            )
            .unwrap_or_else(|error| panic!("{guide}: `{command}`: {error}"));
            assert_eq!(
                input, documented.input,
                "{guide} runs {name} with another input than its header documents"
            );
            for (flag_name, value) in [
                ("--org", &documented.org),
                ("--user", &documented.user),
                ("--role", &documented.role),
            ] {
                assert_eq!(
                    flag(&command, flag_name),
                    Some(value.as_str()),
                    "{guide} runs {name} with another {flag_name} than its header documents"
                );
            }
            checked += 1;
        }
    }
    assert!(
        checked >= 3,
        "the guides run the examples: {checked} commands found"
    );
}

#[tokio::test]
async fn the_shift_swap_swaps_two_peoples_shifts() {
    let runtime = boot().await;
    let engine = engine(&runtime.registry);
    let outcome = engine
        .run_to_end(
            example(&runtime.registry, "shift_swap.yaml"),
            documented_run("shift_swap.yaml").input,
            &manager(),
        )
        .await
        .expect("the run is accepted");
    assert_eq!(outcome.state, RunState::Completed);
    assert_eq!(
        outcome.output,
        Some(json!({ "swapped": [SHIFT_A, SHIFT_B] }))
    );
    assert_eq!(
        assignee(&runtime.registry, SHIFT_A).await.as_deref(),
        Some("mark")
    );
    assert_eq!(
        assignee(&runtime.registry, SHIFT_B).await.as_deref(),
        Some("sam")
    );
}

#[tokio::test]
async fn onboarding_waits_for_the_managers_approval_then_completes() {
    let runtime = boot().await;
    let engine = engine(&runtime.registry);
    let caller = manager();
    let (run, proposal) = onboard_until_the_welcome(&runtime.registry, &engine, &caller).await;

    runtime
        .registry
        .approve(&proposal, &ctx("acme", "ada", &["admin"], Initiator::Human))
        .await
        .expect("an admin approves the notice");
    let outcome = engine.wait(run, &caller).await.expect("the run ends");
    assert_eq!(outcome.state, RunState::Completed, "{outcome:?}");
    let output = outcome.output.expect("a completed run has its output");
    assert_eq!(output["user_id"], "nina");
    let shifts = output["shifts"]
        .as_array()
        .expect("the first week's shifts");
    assert!(!shifts.is_empty(), "the seeded week has open shifts");
    for shift in shifts {
        let shift = shift.as_str().expect("a shift id");
        assert_eq!(
            assignee(&runtime.registry, shift).await.as_deref(),
            Some("nina")
        );
    }
    let notices = runtime
        .registry
        .invoke("roster_list_notices", json!({}), &manager())
        .await
        .expect("notices are readable");
    assert_eq!(notices["notices"][0]["id"], output["notice"]);
    assert_eq!(
        notices["notices"][0]["author"], "ada",
        "the approver posted it"
    );
}

#[tokio::test]
async fn a_rejected_welcome_undoes_the_first_week() {
    let runtime = boot().await;
    let engine = engine(&runtime.registry);
    let caller = manager();
    let open_before = runtime
        .registry
        .invoke(
            "roster_list_shifts",
            json!({ "from": "2026-11-23", "to": "2026-11-29", "open_only": true }),
            &caller,
        )
        .await
        .expect("shifts are readable");
    let (run, proposal) = onboard_until_the_welcome(&runtime.registry, &engine, &caller).await;

    runtime
        .registry
        .reject(
            &proposal,
            "not this week",
            &ctx("acme", "ada", &["admin"], Initiator::Human),
        )
        .await
        .expect("an admin rejects the notice");
    let outcome = engine.wait(run, &caller).await.expect("the run ends");
    assert!(
        matches!(
            outcome.state,
            RunState::Failed {
                compensation_failure: None,
                ..
            }
        ),
        "{outcome:?}"
    );
    let open_after = runtime
        .registry
        .invoke(
            "roster_list_shifts",
            json!({ "from": "2026-11-23", "to": "2026-11-29", "open_only": true }),
            &caller,
        )
        .await
        .expect("shifts are readable");
    let steps = engine.steps(run, &caller).expect("readable");
    assert_eq!(
        open_after, open_before,
        "every assignment of the week was undone: {outcome:?} {steps:#?}"
    );
}
