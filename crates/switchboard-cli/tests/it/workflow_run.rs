//! `switchboard workflow run | list | show | cancel | resume | answer` through the real binary,
//! each test in a state directory of its own: a swap completes, a failing swap is undone, an
//! agent's run pauses for a person who approves in another process (and refuses an answer, as
//! it waits for no question), and the renderings of a
//! run (text, dot, mermaid, the plain `--watch` lines) are pinned.

use serde_json::Value;

use crate::workflow_support::{MARK, TempDir, example, json, run_in, text, with};

const SHIFT_A: &str = "acme-2026-11-23-am"; // sam works it
const SHIFT_B: &str = "acme-2026-11-23-pm"; // mark works it

fn swap_input() -> String {
    format!(r#"{{"shift_a": "{SHIFT_A}", "shift_b": "{SHIFT_B}"}}"#)
}

/// Assigns shift A to `input.user_a` (undone by giving it back to its assignee) and shift B to
/// `input.user_b`.
const ASSIGN_TWO: &str = r#"
workflow: assign_two
expressions: cel
input:
  type: object
  required: [user_a, user_b]
  properties:
    user_a: { type: string }
    user_b: { type: string }
nodes:
  - id: read_a
    tool: roster_get_shift
    params: { shift_id: "acme-2026-11-23-am" }
  - id: assign_a
    tool: roster_assign_shift
    params: { shift_id: "acme-2026-11-23-am", user_id: "${ input.user_a }" }
    compensate:
      tool: roster_assign_shift
      params: { shift_id: "${ params.shift_id }", user_id: "${ steps.read_a.output.assignee }" }
  - id: assign_b
    tool: roster_assign_shift
    params: { shift_id: "acme-2026-11-23-pm", user_id: "${ input.user_b }" }
    on_failure: compensate
"#;

/// One execute step: an agent's run proposes it.
const ONE_ASSIGNMENT: &str = r#"
workflow: one_assignment
nodes:
  - id: assign
    tool: roster_assign_shift
    params: { shift_id: "acme-2026-11-23-am", user_id: "mark" }
"#;

/// A notice, then a wait far longer than `run` waits in the foreground.
const LONG_WAIT: &str = r#"
workflow: long_wait
nodes:
  - id: notice
    tool: roster_post_notice
    params: { text: "before the long wait" }
  - id: later
    wait: 2h
  - id: after
    tool: roster_post_notice
    params: { text: "after the long wait" }
"#;

#[tokio::test]
async fn the_swap_example_completes_and_is_listed_and_drawn() {
    let dir = TempDir::new();
    let file = example("shift_swap.yaml");
    let input = swap_input();
    let output = run_in(
        &dir,
        &with(
            &["workflow", "run", &file, "--input", &input, "--watch"],
            &MARK,
        ),
        0,
    )
    .await;
    let stdout = text(&output.stdout);
    assert!(stdout.contains(": completed\n"), "{stdout}");
    assert!(
        stdout.contains(&format!(
            r#"output: {{"swapped":["{SHIFT_A}","{SHIFT_B}"]}}"#
        )),
        "{stdout}"
    );
    // Not a terminal: one plain line per event on standard error.
    insta::assert_snapshot!("workflow_run_watch_plain", redact(&text(&output.stderr)));
    assert!(
        dir.path().join("state/workflows.db").exists(),
        "the default store is in the state directory"
    );
    assert!(dir.path().join("state/approvals.db").exists());

    let listed = json(
        &run_in(&dir, &with(&["workflow", "list", "--json"], &MARK), 0)
            .await
            .stdout,
    );
    let runs = listed["runs"].as_array().expect("runs");
    assert_eq!(runs.len(), 1, "{listed}");
    assert_eq!(runs[0]["workflow"], "shift_swap");
    assert_eq!(runs[0]["state"]["state"], "completed");
    let run = runs[0]["id"].as_str().expect("an id").to_owned();

    let table = text(
        &run_in(&dir, &with(&["workflow", "list"], &MARK), 0)
            .await
            .stdout,
    );
    assert!(table.starts_with("RUN "), "{table}");
    assert!(
        table.contains(&run) && table.contains("completed"),
        "{table}"
    );
    // Another organisation sees none of acme's runs.
    let globex = ["--org", "globex", "--user", "hank", "--role", "manager"];
    let other = text(
        &run_in(&dir, &with(&["workflow", "list"], &globex), 0)
            .await
            .stdout,
    );
    assert_eq!(other, "no runs\n");
    run_in(&dir, &with(&["workflow", "show", &run], &globex), 2).await;

    let shown = text(
        &run_in(&dir, &with(&["workflow", "show", &run], &MARK), 0)
            .await
            .stdout,
    );
    insta::assert_snapshot!("workflow_show_run_text", redact(&shown));
    let mermaid = text(
        &run_in(
            &dir,
            &with(&["workflow", "show", &run, "--format", "mermaid"], &MARK),
            0,
        )
        .await
        .stdout,
    );
    assert!(mermaid.starts_with("flowchart TD"), "{mermaid}");
    assert!(mermaid.contains("completed"), "{mermaid}");
    let dot = text(
        &run_in(
            &dir,
            &with(&["workflow", "show", &run, "--format", "dot"], &MARK),
            0,
        )
        .await
        .stdout,
    );
    assert!(dot.starts_with("digraph"), "{dot}");
    let shown = json(
        &run_in(&dir, &with(&["workflow", "show", &run, "--json"], &MARK), 0)
            .await
            .stdout,
    );
    assert_eq!(shown["run"]["id"], run.as_str());
    assert!(
        shown["events"]
            .as_array()
            .is_some_and(|events| events.len() > 4)
    );
}

#[tokio::test]
async fn a_definition_file_is_drawn_without_a_run() {
    let dir = TempDir::new();
    let output = run_in(&dir, &["workflow", "show", &example("shift_swap.yaml")], 0).await;
    insta::assert_snapshot!("workflow_show_file_text", text(&output.stdout));
    let output = run_in(&dir, &["workflow", "show", "no-such-run-or-file.yaml"], 2).await;
    assert!(
        text(&output.stderr).contains("neither a run id nor a definition file"),
        "{}",
        text(&output.stderr)
    );
}

#[tokio::test]
async fn a_failing_swap_is_undone_and_exits_1() {
    let dir = TempDir::new();
    let file = dir.write("assign_two.yaml", ASSIGN_TWO);
    // gina is a member of globex, not of acme: the second assignment fails.
    let input = r#"{"user_a": "mark", "user_b": "gina"}"#;
    let output = run_in(
        &dir,
        &with(
            &["workflow", "run", &file, "--input", input, "--json"],
            &MARK,
        ),
        1,
    )
    .await;
    let report = json(&output.stdout);
    assert_eq!(report["state"], "failed", "{report}");
    let step = |node: &str| -> Value {
        report["steps"]
            .as_array()
            .expect("steps")
            .iter()
            .find(|step| step["node"] == node)
            .cloned()
            .unwrap_or_else(|| panic!("no step {node}: {report}"))
    };
    assert_eq!(step("assign_b")["state"], "failed", "{report}");
    assert!(
        step("assign_b").to_string().contains("unknown_member"),
        "{report}"
    );
    assert_eq!(step("assign_a")["state"], "compensated", "{report}");

    let output = run_in(
        &dir,
        &with(&["workflow", "run", &file, "--input", input], &MARK),
        1,
    )
    .await;
    let stdout = text(&output.stdout);
    assert!(stdout.contains(": failed"), "{stdout}");
    assert!(stdout.contains("failed step: assign_b#0"), "{stdout}");
    assert!(
        stdout.contains("compensation: assign_a#0 undone"),
        "{stdout}"
    );
}

#[tokio::test]
async fn an_agents_run_pauses_until_a_person_approves_in_another_process() {
    let dir = TempDir::new();
    let file = dir.write("one_assignment.yaml", ONE_ASSIGNMENT);
    let output = run_in(
        &dir,
        &with(&["workflow", "run", &file, "--initiator", "agent"], &MARK),
        4,
    )
    .await;
    let stdout = text(&output.stdout);
    assert!(stdout.contains(": paused: node `assign` waits"), "{stdout}");
    let approvals = format!("--approvals sqlite:{}", dir.join("state/approvals.db"));
    assert!(stdout.contains(&approvals), "{stdout}");
    let proposal = stdout
        .split_whitespace()
        .skip_while(|word| *word != "approve")
        .nth(1)
        .expect("the approve command names the proposal")
        .to_owned();
    assert!(proposal.starts_with("prop-"), "{stdout}");
    let run = stdout
        .split_whitespace()
        .skip_while(|word| *word != "resume")
        .nth(1)
        .expect("the resume command names the run")
        .to_owned();

    // `approve` defaults to the in-memory store: it is given the file the run printed.
    let store = format!("sqlite:{}", dir.join("state/approvals.db"));
    run_in(
        &dir,
        &with(&["approve", &proposal, "--approvals", &store], &MARK),
        0,
    )
    .await;
    let output = run_in(
        &dir,
        &with(&["workflow", "resume", &run, "--json"], &MARK),
        0,
    )
    .await;
    let report = json(&output.stdout);
    assert_eq!(report["state"], "completed", "{report}");
    assert_eq!(report["steps"][0]["state"], "completed", "{report}");
    // Finished: a second resume is refused.
    run_in(&dir, &with(&["workflow", "resume", &run], &MARK), 2).await;
}

#[tokio::test]
async fn an_answer_to_a_run_that_waits_for_no_question_is_refused() {
    let dir = TempDir::new();
    let file = dir.write("one_assignment.yaml", ONE_ASSIGNMENT);
    let output = run_in(
        &dir,
        &with(&["workflow", "run", &file, "--initiator", "agent"], &MARK),
        4,
    )
    .await;
    let stdout = text(&output.stdout);
    let run = stdout
        .split_whitespace()
        .skip_while(|word| *word != "resume")
        .nth(1)
        .expect("the resume command names the run")
        .to_owned();
    let output = run_in(
        &dir,
        &with(&["workflow", "answer", &run, "--decline"], &MARK),
        2,
    )
    .await;
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains(&format!("run {run} is not waiting for an answer")),
        "{stderr}"
    );
    assert!(stderr.contains("waits for a person to decide"), "{stderr}");
    let output = run_in(
        &dir,
        &with(&["workflow", "answer", &run, "--accept", "[1]"], &MARK),
        2,
    )
    .await;
    assert!(
        text(&output.stderr).contains("--accept takes a JSON object"),
        "{}",
        text(&output.stderr)
    );
}

#[tokio::test]
async fn a_long_wait_exits_paused_and_cancel_ends_the_run() {
    let dir = TempDir::new();
    let file = dir.write("long_wait.yaml", LONG_WAIT);
    let output = run_in(&dir, &with(&["workflow", "run", &file, "--json"], &MARK), 4).await;
    let report = json(&output.stdout);
    assert_eq!(report["state"], "paused", "{report}");
    assert!(report["waiting"]["resume_after"].is_string(), "{report}");
    let run = report["run"].as_str().expect("the run").to_owned();
    let unfinished = json(
        &run_in(
            &dir,
            &with(&["workflow", "list", "--unfinished", "--json"], &MARK),
            0,
        )
        .await
        .stdout,
    );
    assert_eq!(unfinished["runs"][0]["id"], run.as_str(), "{unfinished}");

    let output = run_in(&dir, &with(&["workflow", "cancel", &run], &MARK), 1).await;
    assert!(
        text(&output.stdout).contains(": cancelled"),
        "{}",
        text(&output.stdout)
    );
    let unfinished = json(
        &run_in(
            &dir,
            &with(&["workflow", "list", "--unfinished", "--json"], &MARK),
            0,
        )
        .await
        .stdout,
    );
    assert_eq!(unfinished["runs"], serde_json::json!([]));
    run_in(&dir, &with(&["workflow", "cancel", &run], &MARK), 2).await;
}

/// `text` with what changes from run to run replaced: ids, timestamps and durations. A line
/// keeps its indentation; runs of spaces within it become one.
fn redact(text: &str) -> String {
    text.lines()
        .map(|line| {
            let indent = &line[..line.len() - line.trim_start().len()];
            let words = line
                .split_whitespace()
                .map(redact_word)
                .collect::<Vec<_>>()
                .join(" ");
            format!("{indent}{words}")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn redact_word(word: &str) -> String {
    let word = replace_uuids(word);
    let is_duration = |text: &str| {
        text.strip_suffix('s').is_some_and(|number| {
            !number.is_empty() && number.chars().all(|c| c.is_ascii_digit() || c == '.')
        })
    };
    if word.starts_with('+') && is_duration(&word[1..]) {
        return "+[t]".to_owned();
    }
    if is_duration(&word) {
        return "[d]".to_owned();
    }
    if word.len() >= 20 && word.starts_with("20") && word.contains('T') && word.ends_with('Z') {
        return "[time]".to_owned();
    }
    word
}

fn replace_uuids(word: &str) -> String {
    let shape = |window: &str| {
        window.bytes().enumerate().all(|(index, byte)| match index {
            8 | 13 | 18 | 23 => byte == b'-',
            _ => byte.is_ascii_hexdigit(),
        })
    };
    let mut out = String::new();
    let mut rest = word;
    while let Some(first) = rest.chars().next() {
        match rest.get(..36) {
            Some(window) if shape(window) => {
                out.push_str("[id]");
                rest = &rest[36..];
            }
            _ => {
                out.push(first);
                rest = &rest[first.len_utf8()..];
            }
        }
    }
    out
}
