//! The swap saga as a watcher sees it: both reads, `assign_a` completing, `assign_b` timing
//! out twice and failing, `assign_a` undone, the run failed.

use indicatif::ProgressDrawTarget;
use jiff::{SignedDuration, Timestamp};
use switchboard_workflows::{
    CompensationCause, EventRecord, NodeEvent, NodePath, NodeState, RunEvent, RunId, RunState,
    WorkflowEvent,
};

use super::*;

const FAILURE: &str = "node `assign_b` failed: roster_assign timed out after 5s";

struct Saga {
    run: RunId,
    start: Timestamp,
    events: Vec<EventRecord>,
}

impl Saga {
    fn new() -> Self {
        Self {
            run: "0192f0c4-5a1e-7000-8000-00000000c0de"
                .parse()
                .expect("a valid run id"),
            start: Timestamp::from_second(1_795_000_000).expect("a valid timestamp"),
            events: Vec::new(),
        }
    }

    fn at(&self, millis: i64) -> Timestamp {
        self.start
            .checked_add(SignedDuration::from_millis(millis))
            .expect("a timestamp in range")
    }

    fn push(&mut self, millis: i64, event: WorkflowEvent) -> &mut Self {
        let seq = self.events.len() as u64 + 1;
        self.events.push(EventRecord {
            run: self.run,
            seq,
            at: self.at(millis),
            event,
        });
        self
    }

    fn run(&mut self, millis: i64, event: RunEvent, state: RunState) -> &mut Self {
        self.push(millis, WorkflowEvent::Run { event, state })
    }

    fn node(&mut self, millis: i64, path: &str, event: NodeEvent, state: NodeState) -> &mut Self {
        self.node_retry(millis, path, event, state, None)
    }

    fn node_retry(
        &mut self,
        millis: i64,
        path: &str,
        event: NodeEvent,
        state: NodeState,
        retry_at: Option<i64>,
    ) -> &mut Self {
        let retry_at = retry_at.map(|millis| self.at(millis));
        self.push(
            millis,
            WorkflowEvent::Node {
                path: NodePath::new(path),
                iteration: 0,
                event,
                state,
                retry_at,
            },
        )
    }
}

fn running(attempt: u32) -> NodeState {
    NodeState::Running { attempt }
}

fn timeout() -> String {
    "roster_assign timed out after 5s".to_owned()
}

/// The events of the saga, as the engine writes them.
fn swap_saga() -> Vec<EventRecord> {
    let mut saga = Saga::new();
    let retrying = |attempt| NodeState::Retrying {
        attempt,
        error: timeout(),
    };
    let retry = || NodeEvent::Retry { error: timeout() };
    let cause = CompensationCause::Failed {
        error: FAILURE.to_owned(),
    };
    saga.run(0, RunEvent::Start, RunState::Initializing)
        .run(2, RunEvent::Initialized, RunState::Running)
        .node(3, "read_a", NodeEvent::Start, running(1))
        .node(3, "read_b", NodeEvent::Start, running(1))
        .node(12, "read_a", NodeEvent::Complete, NodeState::Completed)
        .node(15, "read_b", NodeEvent::Complete, NodeState::Completed)
        .node(16, "assign_a", NodeEvent::Start, running(1))
        .node(40, "assign_a", NodeEvent::Complete, NodeState::Completed)
        .node(41, "assign_b", NodeEvent::Start, running(1))
        .node_retry(5_041, "assign_b", retry(), retrying(2), Some(6_041))
        .node(6_042, "assign_b", NodeEvent::Start, running(2))
        .node_retry(11_042, "assign_b", retry(), retrying(3), Some(13_042))
        .node(13_043, "assign_b", NodeEvent::Start, running(3))
        .node(
            18_043,
            "assign_b",
            NodeEvent::Fail {
                // What a tool returned may hold anything, a terminal's escape codes included.
                error: "roster_assign timed out after 5s\n\u{1b}[2J(attempt 3 of 3)".to_owned(),
            },
            NodeState::Failed { error: timeout() },
        )
        .run(
            18_044,
            RunEvent::Compensate {
                cause: cause.clone(),
            },
            RunState::Compensating { cause },
        )
        .node(
            18_045,
            "assign_a",
            NodeEvent::Compensate,
            NodeState::Compensating,
        )
        .node(
            18_070,
            "assign_a",
            NodeEvent::Compensated,
            NodeState::Compensated,
        )
        .run(
            18_071,
            RunEvent::CompensationsDone,
            RunState::Failed {
                error: FAILURE.to_owned(),
                compensation_failure: None,
            },
        );
    saga.events
}

#[test]
fn the_swap_saga_in_plain_lines() {
    let lines = plain_lines(&swap_saga());
    insta::assert_snapshot!(lines.join("\n"));
}

#[test]
fn plain_lines_escape_what_a_tool_returned() {
    let lines = plain_lines(&swap_saga());
    assert!(
        lines.iter().all(|line| !line.contains('\u{1b}')),
        "{lines:#?}"
    );
    assert!(
        lines
            .iter()
            .any(|line| line.contains(r"\u{1b}[2J(attempt 3 of 3)")),
        "{lines:#?}"
    );
}

#[test]
fn the_swap_saga_on_a_terminal() {
    let mut watch = TerminalWatch::with_target(
        "shift_swap run 0192f0c4",
        ProgressDrawTarget::hidden(),
        false,
    );
    let events = swap_saga();
    // Halfway: `assign_b` waits for its second retry.
    for record in &events[..12] {
        watch.event(record);
    }
    let halfway = watch.messages();
    let assign_b = halfway
        .iter()
        .find(|line| line.starts_with("assign_b#0"))
        .expect("a line for assign_b");
    assert!(
        assign_b.contains("attempt 3, 2 retries, next at 2026-11-18T11:06:53.042Z"),
        "{halfway:#?}"
    );
    for record in &events[12..] {
        watch.event(record);
    }
    insta::assert_snapshot!(watch.messages().join("\n"));
    watch.finish();
}

#[test]
fn the_terminal_is_for_people_only() {
    assert_eq!(WatchMode::choose(false, true), WatchMode::Terminal);
    assert_eq!(WatchMode::choose(true, true), WatchMode::Plain);
    assert_eq!(WatchMode::choose(false, false), WatchMode::Plain);
    assert_eq!(WatchMode::choose(true, false), WatchMode::Plain);
}

#[test]
fn the_line_templates_are_valid() {
    for template in ["{spinner} {msg} {elapsed}", "{msg}"] {
        assert!(ProgressStyle::with_template(template).is_ok(), "{template}");
    }
}

#[test]
fn seconds_keep_milliseconds_and_never_go_negative() {
    assert_eq!(seconds(SignedDuration::from_millis(12)), "0.012s");
    assert_eq!(seconds(SignedDuration::from_millis(18_071)), "18.071s");
    assert_eq!(seconds(SignedDuration::from_millis(-5)), "0.000s");
}

#[test]
fn json_output_always_watches_in_plain_lines() {
    assert_eq!(WatchMode::detect(true), WatchMode::Plain);
}

#[test]
fn a_terminal_watch_on_standard_error_starts_and_finishes() {
    let mut watch = TerminalWatch::new("shift_swap run 0192f0c4");
    for record in &swap_saga() {
        watch.event(record);
    }
    watch.finish();
}
