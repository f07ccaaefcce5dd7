//! `switchboard workflow ACTION`: workflows of tool calls.
//!
//! `validate FILE` loads a definition file with the sub-workflow files it names and checks it
//! against the tools linked into this binary (the registry's descriptors are the
//! `ToolSignatures` validation reads), so a file that passes here names only tools that exist,
//! with params their schemas accept. Every problem is printed, one per line with its file,
//! line when known, and path, so a file is fixed in one pass.
//!
//! `run`, `resume`, `answer` and `cancel` drive a run in this process until it ends or pauses, over the
//! store `crate::workflows_setup` opens (by default a SQLite file in the state directory): a
//! run that pauses for a person or a long timer, or whose process dies, is continued later by
//! `workflow resume` from another process. A pause exits with its own code (4) and prints what
//! the run waits for and the exact commands that continue it. A timer due within
//! [`IN_PROCESS_WAIT`] is waited for in the foreground instead, so that a short `wait` node
//! does not turn every run into two commands.

use std::{path::Path, sync::Arc, time::Duration};

use futures::StreamExt as _;
use jiff::{SignedDuration, Timestamp};
use serde::Serialize;
use serde_json::{Value, json};
use switchboard::{CallContext, ToolRegistry};
use switchboard_workflows::{
    Block, Definition, EventRecord, GraphFormat, NodeKind, NodeState, RunId, RunRecord, RunState,
    RunStore, StepRecord, ValidationError, WorkflowEvent, load, render_definition, render_run,
};
use switchboard_workflows_engine::{Engine, EngineError, StartError};

mod answer;

use crate::{
    app::{Exit, UsageError},
    args::{
        WorkflowAction, WorkflowArgs, WorkflowListArgs, WorkflowRunArgs, WorkflowRunIdArgs,
        WorkflowShowArgs, WorkflowValidateArgs,
    },
    config_file::StoreChoice,
    escape::escape_controls,
    output, params,
    table::{self, Cell},
    watch::{PlainWatch, TerminalWatch, WatchMode},
    workflows_setup::{self, Workflows},
};

/// The longest timer `run` and `resume` wait for in the foreground; a run paused until later
/// than this exits paused (code 4) with the time to resume it.
pub(crate) const IN_PROCESS_WAIT: Duration = Duration::from_secs(120);

/// How often a followed run's record is read again when no event came: a drive that ended
/// without an event (a resume that found nothing new) still ends the command.
const RECHECK: Duration = Duration::from_secs(2);

/// A run is reported as possibly left by a stopped process when it has made no checkpoint for
/// this long while running, or its timer is this much overdue.
const ABANDONED_AFTER: SignedDuration = SignedDuration::from_secs(60);

/// What `workflow validate --json` prints.
#[derive(Debug, Serialize)]
#[serde(untagged)]
enum ValidateReport<'a> {
    Valid {
        valid: bool,
        workflow: &'a str,
        nodes: usize,
    },
    Invalid {
        valid: bool,
        problems: &'a [ValidationError],
    },
}

/// Runs a workflow action; `approvals` is the approvals store in use, named in the commands a
/// paused run prints.
pub(super) async fn run(
    registry: &ToolRegistry,
    workflows: &Workflows,
    args: WorkflowArgs,
    approvals: &StoreChoice,
) -> anyhow::Result<Exit> {
    let session = || Session::new(workflows, approvals);
    match args.action {
        WorkflowAction::Validate(args) => validate(registry, &args),
        WorkflowAction::Run(args) => start(registry, &session(), args).await,
        WorkflowAction::List(args) => list(&workflows.engine, args),
        WorkflowAction::Show(args) => show(registry, workflows, args),
        WorkflowAction::Cancel(args) => cancel(&session(), args).await,
        WorkflowAction::Resume(args) => resume(&session(), args.run).await,
        WorkflowAction::Answer(args) => answer::answer(&session(), *args).await,
    }
}

fn validate(registry: &ToolRegistry, args: &WorkflowValidateArgs) -> anyhow::Result<Exit> {
    let tools = registry.list();
    match load(&args.file, &tools) {
        Ok(definition) => {
            let nodes = count_nodes(&definition.body);
            if args.json {
                output::write_stdout(&output::to_json(&ValidateReport::Valid {
                    valid: true,
                    workflow: &definition.name,
                    nodes,
                })?);
            } else {
                output::write_stdout(&format!("ok: {}, {nodes} nodes\n", definition.name));
            }
            Ok(Exit::Success)
        }
        Err(errors) => {
            if args.json {
                output::write_stdout(&output::to_json(&ValidateReport::Invalid {
                    valid: false,
                    problems: &errors.errors,
                })?);
            } else {
                output::write_stdout(&format!("{errors}\n"));
            }
            Ok(Exit::Refused)
        }
    }
}

/// The nodes of a block and of the blocks nested in it (a sub-workflow's own are not counted).
fn count_nodes(block: &Block) -> usize {
    block
        .nodes
        .iter()
        .map(|node| {
            1 + match &node.kind {
                NodeKind::Foreach { body, .. } => count_nodes(body),
                NodeKind::Parallel { branches, .. } => {
                    branches.iter().map(|(_, body)| count_nodes(body)).sum()
                }
                _ => 0,
            }
        })
        .sum()
}

/// What a command needs to talk about a run: the engine, its store, and the stores' names for
/// the commands it prints.
struct Session {
    engine: Engine,
    store: Arc<dyn RunStore>,
    workflows: StoreChoice,
    approvals: StoreChoice,
}

impl Session {
    fn new(workflows: &Workflows, approvals: &StoreChoice) -> Self {
        Self {
            engine: workflows.engine.clone(),
            store: Arc::clone(&workflows.store),
            workflows: absolute(workflows.choice.clone()),
            approvals: absolute(approvals.clone()),
        }
    }
}

/// The store with an absolute path, so a printed command works from any directory.
fn absolute(choice: StoreChoice) -> StoreChoice {
    match choice {
        StoreChoice::Sqlite(path) => {
            StoreChoice::Sqlite(std::path::absolute(&path).unwrap_or(path))
        }
        other => other,
    }
}

fn store_flag(choice: &StoreChoice) -> String {
    match choice {
        StoreChoice::Memory => "memory".to_owned(),
        StoreChoice::Sqlite(path) => format!("sqlite:{}", path.display()),
        StoreChoice::Postgres(url) => url.to_string(),
    }
}

fn parse_run_id(text: &str) -> Result<RunId, UsageError> {
    text.trim().parse().map_err(|_| {
        UsageError::new(format!(
            "`{}` is not a run id (a UUID, as `workflow list` shows)",
            escape_controls(text)
        ))
    })
}

fn read_input(args: &WorkflowRunArgs) -> Result<Value, UsageError> {
    match (&args.input, &args.input_file) {
        (Some(text), _) => params::parse(text, "--input"),
        (None, Some(path)) if path.as_os_str() == params::FROM_STDIN => {
            params::read(params::FROM_STDIN)
        }
        (None, Some(path)) => {
            let text = std::fs::read_to_string(path).map_err(|error| {
                UsageError::new(format!(
                    "cannot read the input file {} (given with --input-file): {error}",
                    path.display()
                ))
            })?;
            params::parse(&text, &path.display().to_string())
        }
        (None, None) => Ok(json!({})),
    }
}

fn start_error(error: StartError) -> anyhow::Error {
    match error {
        StartError::Store(error) => anyhow::Error::new(error),
        other => UsageError::new(other.to_string()).into(),
    }
}

fn engine_error(error: EngineError) -> anyhow::Error {
    match error {
        EngineError::Store(error) => anyhow::Error::new(error),
        EngineError::Start(error) => start_error(error),
        other => UsageError::new(other.to_string()).into(),
    }
}

/// `workflow run FILE`.
async fn start(
    registry: &ToolRegistry,
    session: &Session,
    args: WorkflowRunArgs,
) -> anyhow::Result<Exit> {
    let definition = match load(&args.file, &registry.list()) {
        Ok(definition) => Arc::new(definition),
        Err(errors) => {
            return Err(UsageError::new(format!(
                "{} is not a valid workflow (see `switchboard workflow validate`):\n{errors}",
                args.file.display()
            ))
            .into());
        }
    };
    let input = read_input(&args)?;
    let caller = args.session.identity.into_identity().context;
    note_abandoned_runs(session, &caller);
    let run = session
        .engine
        .start(definition, input, &caller)
        .await
        .map_err(start_error)?;
    follow(session, run, &caller, 0, args.watch, args.json).await
}

/// `workflow resume RUN`.
async fn resume(session: &Session, args: WorkflowRunIdArgs) -> anyhow::Result<Exit> {
    let run = parse_run_id(&args.run)?;
    let caller = args.session.identity.into_identity().context;
    let seen = last_seq(session, run)?;
    session
        .engine
        .resume(run, &caller)
        .await
        .map_err(engine_error)?;
    follow(session, run, &caller, seen, args.watch, args.json).await
}

/// `workflow cancel RUN`: follows the run until its compensations are done.
async fn cancel(session: &Session, args: WorkflowRunIdArgs) -> anyhow::Result<Exit> {
    let run = parse_run_id(&args.run)?;
    let caller = args.session.identity.into_identity().context;
    let seen = last_seq(session, run)?;
    session
        .engine
        .cancel(run, &caller)
        .await
        .map_err(engine_error)?;
    follow(session, run, &caller, seen, args.watch, args.json).await
}

fn last_seq(session: &Session, run: RunId) -> anyhow::Result<u64> {
    let mut seen = 0;
    loop {
        let page = session.store.events(run, seen, 1000)?;
        match page.last() {
            Some(last) => seen = last.seq,
            None => return Ok(seen),
        }
    }
}

/// Says once, on standard error, that the caller's organisation has runs no process seems to
/// drive, and how to continue one. `workflow run` does not continue them itself.
fn note_abandoned_runs(session: &Session, caller: &CallContext) {
    let Ok(runs) = session.engine.runs(caller, None, true, 100) else {
        return;
    };
    let now = Timestamp::now();
    let abandoned: Vec<&RunRecord> = runs
        .iter()
        .filter(|run| match &run.state {
            RunState::Paused { .. } => run
                .wake_at
                .is_some_and(|at| now.duration_since(at) > ABANDONED_AFTER),
            _ => now.duration_since(run.updated_at) > ABANDONED_AFTER,
        })
        .collect();
    if let Some(first) = abandoned.first() {
        output::write_stderr(&format!(
            "note: {} unfinished run(s) of your organisation have not moved for over a minute \
             (their process may have stopped), e.g. {} ({}); continue one with `switchboard \
             workflow resume RUN --workflows {}`, list them with `switchboard workflow list \
             --unfinished`\n",
            abandoned.len(),
            first.id,
            escape_controls(&first.workflow),
            store_flag(&session.workflows),
        ));
    }
}

/// Draws the run's events on standard error for `--watch`.
enum Watcher {
    Plain(PlainWatch),
    Terminal(TerminalWatch),
}

impl Watcher {
    fn new(json: bool, title: &str) -> Self {
        match WatchMode::detect(json) {
            WatchMode::Terminal => Watcher::Terminal(TerminalWatch::new(title)),
            WatchMode::Plain => Watcher::Plain(PlainWatch::new()),
        }
    }

    fn event(&mut self, record: &EventRecord) {
        match self {
            Watcher::Plain(watch) => output::write_stderr(&format!("{}\n", watch.line(record))),
            Watcher::Terminal(watch) => watch.event(record),
        }
    }

    fn finish(self) {
        if let Watcher::Terminal(watch) = self {
            watch.finish();
        }
    }
}

/// Follows `run` until it ends, or pauses for longer than [`IN_PROCESS_WAIT`]; events numbered
/// up to `seen` happened before this command and do not count as its pause. Prints the result.
async fn follow(
    session: &Session,
    run: RunId,
    caller: &CallContext,
    seen: u64,
    watch: bool,
    json: bool,
) -> anyhow::Result<Exit> {
    let record = session.engine.run(run, caller).map_err(engine_error)?;
    let mut watcher = watch.then(|| Watcher::new(json, &format!("{} run {run}", record.workflow)));
    let mut events = Box::pin(session.engine.events(run, caller).map_err(engine_error)?);
    let paused = loop {
        let next = tokio::time::timeout(RECHECK, events.next()).await;
        let check = match next {
            Ok(Some(event)) => {
                if let Some(watcher) = &mut watcher {
                    watcher.event(&event);
                }
                event.seq > seen
                    && matches!(
                        event.event,
                        WorkflowEvent::Run {
                            state: RunState::Paused { .. },
                            ..
                        }
                    )
            }
            Ok(None) => break false,
            Err(_) => true,
        };
        if check {
            let record = session.engine.run(run, caller).map_err(engine_error)?;
            if record.state.is_terminal() {
                continue;
            }
            if let RunState::Paused { .. } = record.state {
                let steps = session.engine.steps(run, caller).map_err(engine_error)?;
                if !waits_in_process(&record, &steps) {
                    break true;
                }
            }
        }
    };
    if let Some(watcher) = watcher {
        watcher.finish();
    }
    let record = session.engine.run(run, caller).map_err(engine_error)?;
    let steps = session.engine.steps(run, caller).map_err(engine_error)?;
    let report = Report::new(session, &record, &steps, paused);
    if json {
        output::write_stdout(&output::to_json(&report)?);
    } else {
        output::write_stdout(&report.text());
    }
    Ok(report.exit())
}

/// Whether a paused run is worth waiting for here: nobody needs to decide anything, and its
/// timer is due within [`IN_PROCESS_WAIT`].
fn waits_in_process(record: &RunRecord, steps: &[StepRecord]) -> bool {
    let deciding = steps
        .iter()
        .any(|step| matches!(step.state, NodeState::WaitingApproval { .. }));
    let soon = record.wake_at.is_some_and(|at| {
        at.duration_since(Timestamp::now())
            <= SignedDuration::try_from(IN_PROCESS_WAIT).unwrap_or(SignedDuration::MAX)
    });
    !deciding && soon
}

/// One step, as a result reports it.
#[derive(Debug, Serialize)]
struct StepLine {
    node: String,
    iteration: u32,
    #[serde(flatten)]
    state: NodeState,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<Value>,
}

/// What a paused run waits for, and the commands that continue it.
#[derive(Debug, Serialize)]
struct Waiting {
    reason: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    proposals: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    questions: Vec<answer::WaitingQuestion>,
    #[serde(skip_serializing_if = "Option::is_none")]
    resume_after: Option<Timestamp>,
    commands: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    warning: Option<String>,
}

/// What `run`, `resume` and `cancel` print (`--json`: this object).
#[derive(Debug, Serialize)]
struct Report {
    run: RunId,
    workflow: String,
    #[serde(flatten)]
    state: RunState,
    output: Option<Value>,
    steps: Vec<StepLine>,
    #[serde(skip_serializing_if = "Option::is_none")]
    waiting: Option<Waiting>,
}

impl Report {
    fn new(session: &Session, record: &RunRecord, steps: &[StepRecord], paused: bool) -> Self {
        let lines = steps
            .iter()
            .map(|step| StepLine {
                node: step.key.path.as_str().to_owned(),
                iteration: step.key.iteration,
                state: step.state.clone(),
                error: step.error.clone(),
            })
            .collect();
        let waiting = match (&record.state, paused) {
            (RunState::Paused { reason }, true) => Some(waiting(session, record, steps, reason)),
            _ => None,
        };
        Self {
            run: record.id,
            workflow: record.workflow.clone(),
            state: record.state.clone(),
            output: record.output.clone(),
            steps: lines,
            waiting,
        }
    }

    fn exit(&self) -> Exit {
        match &self.state {
            RunState::Completed => Exit::Success,
            RunState::Failed { .. } | RunState::Cancelled => Exit::Refused,
            _ => Exit::Paused,
        }
    }

    fn text(&self) -> String {
        let mut text = format!(
            "run {} ({}): {}\n",
            self.run,
            escape_controls(&self.workflow),
            escape_controls(&self.state.to_string())
        );
        if let Some(output) = &self.output {
            text.push_str(&format!("output: {output}\n"));
        }
        if let RunState::Failed {
            compensation_failure,
            ..
        } = &self.state
        {
            for step in &self.steps {
                if let NodeState::Failed { error } = &step.state {
                    text.push_str(&format!(
                        "failed step: {}#{}: {}\n",
                        escape_controls(&step.node),
                        step.iteration,
                        escape_controls(error)
                    ));
                }
            }
            if let Some(failure) = compensation_failure {
                text.push_str(&format!(
                    "undo stopped: the compensation of `{}` failed: {}; the steps completed \
                     before it were not undone\n",
                    escape_controls(&failure.node),
                    escape_controls(&failure.error)
                ));
            }
        }
        for step in &self.steps {
            let undo = match step.state {
                NodeState::Compensated => "undone",
                NodeState::CompensationFailed { .. } => "undo failed",
                _ => continue,
            };
            text.push_str(&format!(
                "compensation: {}#{} {undo}\n",
                escape_controls(&step.node),
                step.iteration
            ));
        }
        if let Some(waiting) = &self.waiting {
            if let Some(at) = waiting.resume_after {
                text.push_str(&format!("resume after {at}\n"));
            }
            if let Some(warning) = &waiting.warning {
                text.push_str(&format!("warning: {warning}\n"));
            }
            for question in &waiting.questions {
                text.push_str(&format!("{}\n", question.line()));
            }
            text.push_str("to continue:\n");
            for command in &waiting.commands {
                text.push_str(&format!("  {command}\n"));
            }
        }
        text
    }
}

fn waiting(session: &Session, record: &RunRecord, steps: &[StepRecord], reason: &str) -> Waiting {
    let org = record
        .caller
        .org_id
        .as_ref()
        .map(|org| org.as_str().to_owned())
        .unwrap_or_default();
    let user = record
        .caller
        .user_id
        .as_ref()
        .map(|user| user.as_str().to_owned())
        .unwrap_or_default();
    let approvals = store_flag(&session.approvals);
    let proposals: Vec<String> = steps
        .iter()
        .filter_map(|step| match &step.state {
            NodeState::WaitingApproval { proposal_id } => Some(proposal_id.clone()),
            _ => None,
        })
        .collect();
    let mut commands: Vec<String> = proposals
        .iter()
        .map(|proposal| {
            format!(
                "switchboard approve {proposal} --org {org} --user <approver> --role <their role> \
                 --approvals {approvals}    (or `switchboard reject {proposal} --feedback TEXT …`)"
            )
        })
        .collect();
    let questions = answer::waiting_questions(steps);
    let identity = format!(
        "--org {org} --user <who answers> --workflows {} --approvals {approvals}",
        store_flag(&session.workflows)
    );
    commands.extend(
        questions
            .iter()
            .map(|question| question.command(&record.id.to_string(), &identity)),
    );
    commands.push(format!(
        "switchboard workflow resume {} --org {org} --user {user} --workflows {} --approvals \
         {approvals}",
        record.id,
        store_flag(&session.workflows)
    ));
    if proposals.is_empty() && record.wake_at.is_none() {
        commands.push(format!(
            "switchboard workflow cancel {} --org {org} --user {user} --workflows {}",
            record.id,
            store_flag(&session.workflows)
        ));
    }
    let warning = (!proposals.is_empty() && !session.approvals.is_persistent()).then(|| {
        "the approvals store is in memory: the proposal is gone when this process exits; \
         run with --approvals sqlite:PATH to decide it from another process"
            .to_owned()
    });
    Waiting {
        reason: escape_controls(reason).into_owned(),
        resume_after: if proposals.is_empty() {
            record.wake_at
        } else {
            None
        },
        proposals,
        questions,
        commands,
        warning,
    }
}

/// `workflow list`.
fn list(engine: &Engine, args: WorkflowListArgs) -> anyhow::Result<Exit> {
    let caller = args.session.identity.into_identity().context;
    let runs = engine
        .runs(
            &caller,
            args.workflow.as_deref(),
            args.unfinished,
            args.limit,
        )
        .map_err(engine_error)?;
    if args.json {
        output::write_stdout(&output::to_json(&json!({ "runs": runs }))?);
        return Ok(Exit::Success);
    }
    if runs.is_empty() {
        output::write_stdout("no runs\n");
        return Ok(Exit::Success);
    }
    let rows: Vec<Vec<Cell>> = runs
        .iter()
        .map(|run| {
            vec![
                Cell::plain(run.id.to_string()),
                Cell::plain(run.workflow.clone()),
                Cell::plain(run.state.as_str()),
                Cell::plain(run.created_at.to_string()),
                Cell::plain(run.updated_at.to_string()),
            ]
        })
        .collect();
    output::write_stdout(&table::render(
        &["RUN", "WORKFLOW", "STATE", "STARTED", "UPDATED"],
        &rows,
        "",
        owo_colors::Stream::Stdout,
    ));
    Ok(Exit::Success)
}

/// `workflow show RUN|FILE`.
fn show(
    registry: &ToolRegistry,
    workflows: &Workflows,
    args: WorkflowShowArgs,
) -> anyhow::Result<Exit> {
    let Ok(run) = args.target.trim().parse::<RunId>() else {
        return show_file(registry, Path::new(&args.target), args.format, args.json);
    };
    let caller = args.session.identity.into_identity().context;
    show_run(
        registry,
        &workflows.engine,
        &workflows.store,
        run,
        &caller,
        args.format,
        args.json,
    )
}

fn show_run(
    registry: &ToolRegistry,
    engine: &Engine,
    store: &Arc<dyn RunStore>,
    run: RunId,
    caller: &CallContext,
    format: GraphFormat,
    json: bool,
) -> anyhow::Result<Exit> {
    let record = engine.run(run, caller).map_err(engine_error)?;
    let steps = engine.steps(run, caller).map_err(engine_error)?;
    if json {
        let events = store.events(run, 0, usize::MAX)?;
        output::write_stdout(&output::to_json(
            &json!({ "run": record, "steps": steps, "events": events }),
        )?);
        return Ok(Exit::Success);
    }
    let loader = workflows_setup::definition_loader(registry);
    let definition: Arc<Definition> = loader(&record.definition).map_err(|reason| {
        anyhow::anyhow!(
            "the stored definition of run {run} no longer validates against this binary's \
             tools: {reason}"
        )
    })?;
    output::write_stdout(&ensure_newline(render_run(
        &definition,
        &record,
        &steps,
        format,
    )));
    Ok(Exit::Success)
}

fn show_file(
    registry: &ToolRegistry,
    path: &Path,
    format: GraphFormat,
    json: bool,
) -> anyhow::Result<Exit> {
    if !path.exists() {
        return Err(UsageError::new(format!(
            "`{}` is neither a run id nor a definition file",
            escape_controls(&path.display().to_string())
        ))
        .into());
    }
    let definition = load(path, &registry.list()).map_err(|errors| {
        UsageError::new(format!(
            "{} is not a valid workflow:\n{errors}",
            path.display()
        ))
    })?;
    if json {
        output::write_stdout(&output::to_json(definition.document.as_ref())?);
    } else {
        output::write_stdout(&ensure_newline(render_definition(&definition, format)));
    }
    Ok(Exit::Success)
}

fn ensure_newline(mut text: String) -> String {
    if !text.ends_with('\n') {
        text.push('\n');
    }
    text
}
