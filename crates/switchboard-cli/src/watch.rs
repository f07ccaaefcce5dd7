//! `workflow run --watch`: a run's events as they arrive, drawn for a person.
//!
//! Two renderings of the same events ([`EventRecord`]s, one at a time, in the order the store
//! numbered them):
//! - on a terminal ([`TerminalWatch`]), indicatif lines: a header with the run's state, and one
//!   spinner per running node execution with its path, iteration, attempt, elapsed time,
//!   retries and next retry time; when the node ends its line stays, finished with `✓`
//!   (completed), `✗` (failed) or `↷` (skipped, compensated) and how long it took;
//! - anywhere else ([`PlainWatch`]), one stable line per event, its time relative to the run's
//!   first event (`+0.012s  assign_a#0  started (attempt 1)`), so a log or a CI job reads the
//!   same text every time and a snapshot test pins it.
//!
//! [`WatchMode::detect`] picks the terminal only when standard error (where both draw) is a
//! terminal and `--json` is not set: a script gets the plain lines on standard error and its
//! JSON on standard output. Every text from the run (paths, errors, reasons) goes through
//! [`escape_controls`] first: an error a tool returned cannot repaint the terminal.

use std::collections::HashMap;
use std::time::Duration;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use jiff::{SignedDuration, Timestamp};
use switchboard_workflows::{
    EventRecord, NodeEvent, NodePath, NodeState, RunEvent, RunState, WorkflowEvent,
};

use crate::escape::escape_controls;

/// The longest error or reason a line shows.
const TEXT_CHARS: usize = 120;

/// Which rendering `--watch` uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WatchMode {
    /// Live lines that redraw in place.
    Terminal,
    /// One line per event, appended.
    Plain,
}

impl WatchMode {
    /// The terminal when standard error is one and `--json` is not set, else plain lines.
    pub(crate) fn detect(json: bool) -> Self {
        use std::io::IsTerminal as _;
        Self::choose(json, std::io::stderr().is_terminal())
    }

    fn choose(json: bool, stderr_is_terminal: bool) -> Self {
        if stderr_is_terminal && !json {
            WatchMode::Terminal
        } else {
            WatchMode::Plain
        }
    }
}

/// Which execution of which node: an event's subject.
type Execution = (NodePath, u32);

/// An execution's line on a terminal: its work, or its compensation (a line of its own, drawn
/// when the run is undone).
type LineKey = (NodePath, u32, bool);

/// The plain rendering: one line per event. A pure function of the events seen so far.
#[derive(Debug, Default)]
pub(crate) struct PlainWatch {
    /// The first event's time: every line's time is relative to it.
    origin: Option<Timestamp>,
    /// When each execution first started, for the duration its end reports.
    started: HashMap<Execution, Timestamp>,
}

impl PlainWatch {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// The line for `record`, without a newline.
    pub(crate) fn line(&mut self, record: &EventRecord) -> String {
        let origin = *self.origin.get_or_insert(record.at);
        let time = format!("+{}", seconds(record.at.duration_since(origin)));
        let (subject, text) = match &record.event {
            WorkflowEvent::Run { event, state } => ("run".to_owned(), run_text(event, state)),
            WorkflowEvent::Node {
                path,
                iteration,
                event,
                state,
                retry_at,
            } => {
                let execution = (path.clone(), *iteration);
                if matches!(event, NodeEvent::Start) {
                    self.started.entry(execution.clone()).or_insert(record.at);
                }
                let took = self
                    .started
                    .get(&execution)
                    .map(|started| record.at.duration_since(*started));
                let text = node_text(event, state, record.at, *retry_at, took);
                (subject(path, *iteration), text)
            }
        };
        format!("{time:>9}  {subject}  {text}")
    }
}

/// Every line of `events`, in order: the plain rendering of a whole run.
#[cfg(test)]
pub(crate) fn plain_lines(events: &[EventRecord]) -> Vec<String> {
    let mut watch = PlainWatch::new();
    events.iter().map(|record| watch.line(record)).collect()
}

fn subject(path: &NodePath, iteration: u32) -> String {
    format!("{}#{iteration}", escape_controls(path.as_str()))
}

fn run_text(event: &RunEvent, state: &RunState) -> String {
    match event {
        RunEvent::Start => "started".to_owned(),
        RunEvent::Initialized => "initialized".to_owned(),
        RunEvent::Pause { reason } => format!("paused: {}", one_line(reason)),
        RunEvent::Resume => "resumed".to_owned(),
        RunEvent::Complete => "completed".to_owned(),
        RunEvent::Fail { error } => format!("failed: {}", one_line(error)),
        RunEvent::Cancel => "cancelled".to_owned(),
        RunEvent::Compensate { cause } => {
            format!("compensating {}", one_line(&cause.to_string()))
        }
        RunEvent::CompensationsDone | RunEvent::CompensationFailed { .. } => {
            format!("compensations done, run {}", one_line(&state.to_string()))
        }
    }
}

fn node_text(
    event: &NodeEvent,
    state: &NodeState,
    at: Timestamp,
    retry_at: Option<Timestamp>,
    took: Option<SignedDuration>,
) -> String {
    let took = |verb: &str| match took {
        Some(took) => format!("{verb} in {}", seconds(took)),
        None => verb.to_owned(),
    };
    match event {
        NodeEvent::Start => match state {
            NodeState::Running { attempt } => format!("started (attempt {attempt})"),
            _ => "started".to_owned(),
        },
        NodeEvent::Retry { error } => {
            let next = match state {
                NodeState::Retrying { attempt, .. } => format!(", attempt {attempt} next"),
                _ => String::new(),
            };
            match retry_at {
                Some(retry_at) => format!(
                    "retrying in {}{next}: {}",
                    seconds(retry_at.duration_since(at)),
                    one_line(error)
                ),
                None => format!("retrying{next}: {}", one_line(error)),
            }
        }
        NodeEvent::AwaitApproval { proposal_id } => {
            format!("waiting for approval of proposal {}", one_line(proposal_id))
        }
        NodeEvent::AwaitTimer { until } => format!("waiting until {until}"),
        NodeEvent::AwaitInput { keys } => {
            format!("waiting for an answer to {}", one_line(&keys.join(", ")))
        }
        NodeEvent::Answer { key, by } => {
            format!("{} answered by {}", one_line(key), one_line(by))
        }
        NodeEvent::Complete => took("completed"),
        NodeEvent::Fail { error } => format!("{}: {}", took("failed"), one_line(error)),
        NodeEvent::Skip { reason } => format!("skipped: {}", one_line(reason)),
        NodeEvent::Compensate => "compensating".to_owned(),
        NodeEvent::Compensated => "compensated".to_owned(),
        NodeEvent::CompensationFailed { error } => {
            format!("compensation failed: {}", one_line(error))
        }
    }
}

/// `2.041s`: seconds with milliseconds, never negative (a clock that stepped back reads 0).
fn seconds(duration: SignedDuration) -> String {
    let millis = duration.as_millis().max(0);
    format!("{}.{:03}s", millis / 1000, millis % 1000)
}

/// `text` on one printable line of at most [`TEXT_CHARS`] characters, `…` where it was cut.
fn one_line(text: &str) -> String {
    let joined = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let printable = escape_controls(&joined);
    if printable.chars().count() <= TEXT_CHARS {
        return printable.into_owned();
    }
    let mut cut: String = printable.chars().take(TEXT_CHARS - 1).collect();
    cut.push('…');
    cut
}

/// The terminal rendering: a header line and one live line per running node execution.
#[derive(Debug)]
pub(crate) struct TerminalWatch {
    progress: MultiProgress,
    header: ProgressBar,
    title: String,
    lines: HashMap<LineKey, NodeLine>,
    /// Whether lines tick on their own (not when drawing nowhere, as in tests).
    ticking: bool,
}

/// One node execution's line.
#[derive(Debug)]
struct NodeLine {
    /// Its place: lines are added in the order their executions first appear.
    #[cfg_attr(
        not(test),
        expect(dead_code, reason = "read by the tests, which list the lines in order")
    )]
    order: usize,
    bar: ProgressBar,
    started: Timestamp,
    attempt: u32,
    retries: u32,
    next_retry: Option<Timestamp>,
}

/// How often a spinner turns.
const TICK: Duration = Duration::from_millis(120);

impl TerminalWatch {
    /// Draws on standard error; `title` names the run (`shift_swap run 0192…`).
    pub(crate) fn new(title: &str) -> Self {
        Self::with_target(title, ProgressDrawTarget::stderr(), true)
    }

    fn with_target(title: &str, target: ProgressDrawTarget, ticking: bool) -> Self {
        let progress = MultiProgress::with_draw_target(target);
        let header = progress.add(ProgressBar::new_spinner());
        header.set_style(style("{spinner} {msg} {elapsed}"));
        let title = escape_controls(title).into_owned();
        header.set_message(format!("{title}: pending"));
        if ticking {
            header.enable_steady_tick(TICK);
        }
        Self {
            progress,
            header,
            title,
            lines: HashMap::new(),
            ticking,
        }
    }

    /// Takes one event into the display.
    pub(crate) fn event(&mut self, record: &EventRecord) {
        match &record.event {
            WorkflowEvent::Run { event, state } => {
                let text = run_text(event, state);
                self.header.set_message(format!("{}: {}", self.title, text));
                if state.is_terminal() {
                    self.header.set_style(style("{msg}"));
                    self.header.finish();
                }
            }
            WorkflowEvent::Node {
                path,
                iteration,
                event,
                state,
                retry_at,
            } => self.node_event(record.at, path, *iteration, event, state, *retry_at),
        }
    }

    fn node_event(
        &mut self,
        at: Timestamp,
        path: &NodePath,
        iteration: u32,
        event: &NodeEvent,
        state: &NodeState,
        retry_at: Option<Timestamp>,
    ) {
        let undo = matches!(
            event,
            NodeEvent::Compensate | NodeEvent::Compensated | NodeEvent::CompensationFailed { .. }
        );
        let mut subject = subject(path, iteration);
        if undo {
            subject.insert_str(0, "undo ");
        }
        let order = self.lines.len();
        let line = self
            .lines
            .entry((path.clone(), iteration, undo))
            .or_insert_with(|| {
                let bar = self.progress.add(ProgressBar::new_spinner());
                bar.set_style(style("{spinner} {msg} {elapsed}"));
                if self.ticking {
                    bar.enable_steady_tick(TICK);
                }
                NodeLine {
                    order,
                    bar,
                    started: at,
                    attempt: 1,
                    retries: 0,
                    next_retry: None,
                }
            });
        match state {
            NodeState::Running { attempt } => {
                line.attempt = *attempt;
                line.next_retry = None;
            }
            NodeState::Retrying { attempt, .. } => {
                line.attempt = *attempt;
                line.retries += 1;
                line.next_retry = retry_at;
            }
            _ => {}
        }
        let took = seconds(at.duration_since(line.started));
        let (mark, text) = match event {
            NodeEvent::Complete => (Some('✓'), format!("completed in {took}")),
            NodeEvent::Fail { error } => {
                (Some('✗'), format!("failed in {took}: {}", one_line(error)))
            }
            NodeEvent::Skip { reason } => (Some('↷'), format!("skipped: {}", one_line(reason))),
            NodeEvent::Compensated => (Some('↷'), "compensated".to_owned()),
            NodeEvent::CompensationFailed { error } => (
                Some('✗'),
                format!("compensation failed: {}", one_line(error)),
            ),
            other => (None, node_text(other, state, at, retry_at, None)),
        };
        let mut message = format!("{subject}  {text}");
        if mark.is_none() {
            message.push_str(&format!("  attempt {}", line.attempt));
            if line.retries > 0 {
                message.push_str(&format!(", {} retries", line.retries));
            }
            if let Some(next_retry) = line.next_retry {
                message.push_str(&format!(", next at {next_retry}"));
            }
        }
        match mark {
            Some(mark) => {
                line.bar.set_style(style("{msg}"));
                line.bar.finish_with_message(format!("{mark} {message}"));
            }
            None => line.bar.set_message(message),
        }
    }

    /// Stops the spinners, leaving every line as it was last drawn.
    pub(crate) fn finish(self) {
        for line in self.lines.values() {
            if !line.bar.is_finished() {
                line.bar.abandon();
            }
        }
        if !self.header.is_finished() {
            self.header.abandon();
        }
    }

    /// The lines as last set, header first then in the order nodes first appeared: what a
    /// test reads instead of a terminal.
    #[cfg(test)]
    fn messages(&self) -> Vec<String> {
        let mut lines: Vec<&NodeLine> = self.lines.values().collect();
        lines.sort_by_key(|line| line.order);
        std::iter::once(self.header.message())
            .chain(lines.iter().map(|line| line.bar.message()))
            .collect()
    }
}

/// A template for a line; the templates are constants, so a bad one is a bug caught by the
/// tests, and the default style stands in for it.
fn style(template: &str) -> ProgressStyle {
    ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_spinner())
}

#[cfg(test)]
mod tests;
