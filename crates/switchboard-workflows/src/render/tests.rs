//! Snapshots of the three pictures of one run that has every node kind and every family of
//! state, and checks that hostile text cannot break out of a label.

use std::collections::BTreeMap;
use std::sync::Arc;

use jiff::{SignedDuration, Timestamp};
use serde_json::{Value, json};
use switchboard_core::CallContext;

use super::*;
use crate::definition::{
    Block, Branch, Compensation, Definition, Mapping, Node, NodeId, NodeKind, NodePath, OnFailure,
    Retrier, WaitFor,
};
use crate::expression::Expression;
use crate::node::NodeState;
use crate::run::{CompensationFailure, RunState};
use crate::store::{RunId, RunRecord, StepKey, StepRecord};

fn expression(source: &str) -> Expression {
    Expression::parse(source).expect("the test's expressions parse")
}

fn node(id: &str, kind: NodeKind) -> Node {
    Node {
        id: NodeId::new(id),
        description: None,
        kind,
        next: None,
        retry: Vec::new(),
        on_failure: OnFailure::default(),
        compensate: None,
    }
}

fn tool(id: &str, tool: &str) -> Node {
    node(
        id,
        NodeKind::Tool {
            tool: tool.into(),
            params: Mapping::Object(BTreeMap::new()),
        },
    )
}

/// Links each node of `nodes` to the one after it, as validation does.
fn block(mut nodes: Vec<Node>) -> Block {
    let ids: Vec<NodeId> = nodes.iter().map(|node| node.id.clone()).collect();
    for (index, node) in nodes.iter_mut().enumerate() {
        let linked = !matches!(node.kind, NodeKind::Condition { .. } | NodeKind::End { .. });
        if node.next.is_none() && linked {
            node.next = ids.get(index + 1).cloned();
        }
    }
    Block { nodes }
}

fn definition(name: &str, description: &str, body: Block) -> Definition {
    Definition {
        name: name.into(),
        description: description.to_owned(),
        input_schema: None,
        output: None,
        max_steps: 100,
        body,
        document: Arc::new(Value::Null),
    }
}

/// The swap saga, with one node of every kind around it.
fn kitchen_sink() -> Definition {
    let mut read_a = tool("read_a", "roster_get_shift");
    read_a.description = Some("Read the first shift".to_owned());
    let check = node(
        "check",
        NodeKind::Condition {
            branches: vec![Branch {
                when: expression("steps.read_a.output.assignee != null"),
                next: NodeId::new("assign_a"),
            }],
            otherwise: Some(NodeId::new("done")),
        },
    );
    let undo = |tool: &str| Compensation {
        tool: tool.into(),
        params: Mapping::Literal(json!({})),
    };
    let mut assign_a = tool("assign_a", "roster_assign");
    assign_a.compensate = Some(undo("roster_unassign"));
    let mut assign_b = tool("assign_b", "roster_assign");
    assign_b.retry = vec![Retrier::default()];
    assign_b.compensate = Some(undo("roster_unassign"));
    let mut hold = tool("hold", "roster_hold");
    hold.compensate = Some(undo("roster_release"));
    let mut send = tool("send", "roster_post_notice");
    send.on_failure = OnFailure::Skip;
    let notify = node(
        "notify",
        NodeKind::Foreach {
            items: expression("input.people"),
            item: "person".into(),
            max_items: 10,
            concurrency: 2,
            body: block(vec![send]),
        },
    );
    let child = definition(
        "onboarding",
        "",
        block(vec![tool("create", "core_add_member")]),
    );
    let fan_out = node(
        "fan_out",
        NodeKind::Parallel {
            branches: vec![
                (
                    "left".into(),
                    block(vec![tool("list", "roster_list_shifts")]),
                ),
                (
                    "right".into(),
                    block(vec![
                        node(
                            "cool_down",
                            NodeKind::Wait(WaitFor::Duration(SignedDuration::from_hours(1))),
                        ),
                        node(
                            "onboard",
                            NodeKind::Workflow {
                                definition: Arc::new(child),
                                input: Mapping::Literal(json!({})),
                            },
                        ),
                    ]),
                ),
            ],
            concurrency: 2,
        },
    );
    let approve = node(
        "approve",
        NodeKind::Approval {
            tool: "roster_assign".into(),
            params: Mapping::Literal(json!({})),
            summary: Some(expression("'assign ' + input.a")),
        },
    );
    let mut recover = tool("recover", "roster_post_notice");
    recover.on_failure = OnFailure::Fallback(NodeId::new("done"));
    let until = node(
        "until_deadline",
        NodeKind::Wait(WaitFor::Until(expression("input.deadline"))),
    );
    let done = node("done", NodeKind::End { output: None });
    definition(
        "shift_swap",
        "Swap the shifts of two people; undo the first if the second fails.",
        block(vec![
            read_a,
            tool("read_b", "roster_get_shift"),
            check,
            assign_a,
            assign_b,
            hold,
            notify,
            fan_out,
            approve,
            recover,
            until,
            done,
        ]),
    )
}

fn at(second: i64) -> Timestamp {
    Timestamp::from_second(1_795_000_000 + second).expect("a valid timestamp")
}

fn run_id() -> RunId {
    "0192f0c4-5a1e-7000-8000-00000000c0de"
        .parse()
        .expect("a valid run id")
}

fn step(path: &str, iteration: u32, state: NodeState) -> StepRecord {
    StepRecord {
        key: StepKey {
            run: run_id(),
            path: NodePath::new(path),
            iteration,
        },
        state,
        params: None,
        output: None,
        error: None,
        completed_seq: None,
        questions: Vec::new(),
        started_at: at(1),
        updated_at: at(2),
    }
}

fn failed(error: &str) -> NodeState {
    NodeState::Failed {
        error: error.to_owned(),
    }
}

fn run_record() -> RunRecord {
    RunRecord {
        id: run_id(),
        org_id: "acme".into(),
        workflow: "shift_swap".to_owned(),
        definition: Arc::new(Value::Null),
        input: json!({"a": "shift_1", "b": "shift_2", "people": ["ana", "bo", "cy", "di", "ed"]}),
        caller: CallContext::builder().org("acme").user("ana").build(),
        parent: None,
        state: RunState::Failed {
            error: "node `assign_b` failed: timeout".to_owned(),
            compensation_failure: Some(CompensationFailure {
                node: "hold".to_owned(),
                error: "release refused".to_owned(),
            }),
        },
        output: None,
        wake_at: None,
        steps_taken: 17,
        created_at: at(0),
        updated_at: at(9),
    }
}

fn steps() -> Vec<StepRecord> {
    let mut read_a = step("read_a", 0, NodeState::Completed);
    read_a.output = Some(json!({"id": "shift_1", "assignee": "ana"}));
    let mut notify = step("notify", 0, NodeState::Running { attempt: 1 });
    notify.params = Some(json!(["ana", "bo", "cy", "di", "ed"]));
    let mut assign_b = step(
        "assign_b",
        0,
        failed("the tool `roster_assign` timed out after 30s (attempt 3 of 3)"),
    );
    assign_b.error = Some(json!({"kind": "timeout", "message": "timed out"}));
    vec![
        read_a,
        step("read_b", 0, NodeState::Completed),
        step("check", 0, NodeState::Completed),
        step("assign_a", 0, NodeState::Compensated),
        assign_b,
        step(
            "hold",
            0,
            NodeState::CompensationFailed {
                error: "release refused:\n\u{1b}[31mlocked\u{1b}[0m".to_owned(),
            },
        ),
        notify,
        step("notify/send", 0, NodeState::Completed),
        step("notify/send", 1, NodeState::Completed),
        step("notify/send", 2, NodeState::Completed),
        step("notify/send", 3, failed("mailbox full")),
        step("notify/send", 4, NodeState::Running { attempt: 2 }),
        step("fan_out", 0, NodeState::Running { attempt: 1 }),
        step("fan_out/left/list", 0, NodeState::Completed),
        step(
            "fan_out/right/cool_down",
            0,
            NodeState::WaitingTimer { until: at(3600) },
        ),
        step(
            "approve",
            0,
            NodeState::WaitingApproval {
                proposal_id: "prop_42".to_owned(),
            },
        ),
        step(
            "recover",
            0,
            NodeState::Skipped {
                reason: "branch not taken".to_owned(),
            },
        ),
    ]
}

#[test]
fn a_run_as_text() {
    let text = render_run(&kitchen_sink(), &run_record(), &steps(), GraphFormat::Text);
    insta::assert_snapshot!(text);
}

#[test]
fn a_run_as_text_with_outputs() {
    let options = RenderOptions { show_outputs: true };
    let text = render_run_with(
        &kitchen_sink(),
        &run_record(),
        &steps(),
        GraphFormat::Text,
        options,
    );
    assert!(
        text.contains(r#"output: {"assignee":"ana","id":"shift_1"}"#),
        "{text}"
    );
}

#[test]
fn a_run_as_dot() {
    let dot = render_run(&kitchen_sink(), &run_record(), &steps(), GraphFormat::Dot);
    assert_parses_as_dot(&dot);
    insta::assert_snapshot!(dot);
}

#[test]
fn a_run_as_mermaid() {
    let mermaid = render_run(
        &kitchen_sink(),
        &run_record(),
        &steps(),
        GraphFormat::Mermaid,
    );
    insta::assert_snapshot!(mermaid);
}

#[test]
fn a_definition_alone() {
    let definition = kitchen_sink();
    let text = render_definition(&definition, GraphFormat::Text);
    assert!(!text.contains("not run"), "{text}");
    insta::assert_snapshot!("definition_text", text);
    let mermaid = render_definition(&definition, GraphFormat::Mermaid);
    assert!(mermaid.contains("class n0,"), "{mermaid}");
    assert_parses_as_dot(&render_definition(&definition, GraphFormat::Dot));
}

#[test]
fn control_characters_in_errors_are_escaped() {
    let text = render_run(&kitchen_sink(), &run_record(), &steps(), GraphFormat::Text);
    assert!(!text.contains('\u{1b}'), "{text}");
    assert!(
        text.contains(r"release refused: \u{1b}[31mlocked\u{1b}[0m"),
        "{text}"
    );
}

#[test]
fn a_step_waiting_for_answers_shows_its_unanswered_questions() {
    use switchboard_core::ask::{Elicitation, Question};

    use crate::store::StepQuestion;

    let asks = definition("asks", "", block(vec![tool("pick", "roster_get_shift")]));
    let mut waiting = step(
        "pick",
        0,
        NodeState::WaitingInput {
            attempt: 1,
            keys: vec!["ask-2".to_owned()],
        },
    );
    let form = |message: &str| {
        Question::Elicit(Elicitation::Form {
            message: message.to_owned(),
            requested_schema: json!({"type": "object"}),
        })
    };
    waiting.questions = vec![
        StepQuestion {
            key: "ask-1".to_owned(),
            question: form("Which week?"),
            answer: None,
        },
        StepQuestion {
            key: "ask-2".to_owned(),
            question: form("Swap with\u{1b}[31m whom?"),
            answer: None,
        },
    ];
    let text = render_run(&asks, &run_record(), &[waiting], GraphFormat::Text);
    assert!(
        text.contains(r"waiting for an answer (ask-2: form: Swap with\u{1b}[31m whom?)"),
        "{text}"
    );
    assert!(!text.contains("Which week?"), "{text}");
}

/// A node whose description and condition try to close their label and start a statement.
fn hostile() -> Definition {
    let text = "say \"hi\" ]\n--> x; <script>alert('#1 & |2|')</script> `md` \\ end";
    let mut first = node(
        "first",
        NodeKind::Condition {
            branches: vec![Branch {
                when: expression(
                    "input.note == \"\\\" ] --> <script>\" ||\n  input.tag == 'a|b#c&d`'",
                ),
                next: NodeId::new("last"),
            }],
            otherwise: None,
        },
    );
    first.description = Some(text.to_owned());
    let mut last = tool("last", "roster_get_shift");
    last.description = Some(text.to_owned());
    definition("hostile", text, block(vec![first, last]))
}

#[test]
fn hostile_text_stays_inside_dot_labels() {
    let dot = render_definition(&hostile(), GraphFormat::Dot);
    assert_parses_as_dot(&dot);
    for line in dot.lines() {
        assert!(!line.contains("<script>"), "{line}");
        let quotes = unescaped_quotes(line);
        assert_eq!(quotes % 2, 0, "an odd number of quotes: {line}");
        let statement_end = line.trim_end().ends_with(';')
            || line.trim_end().ends_with('{')
            || line.trim_end() == "}";
        assert!(
            statement_end,
            "a line that is not a whole statement: {line}"
        );
    }
    assert!(
        dot.contains(r#"input.note == \"\\\" ] --&gt; &lt;script&gt;\" || input.tag"#),
        "{dot}"
    );
    assert!(dot.contains(r#"say \"hi\" ] --&gt; x;"#), "{dot}");
}

#[test]
fn hostile_text_stays_inside_mermaid_labels() {
    let mermaid = render_definition(&hostile(), GraphFormat::Mermaid);
    for line in mermaid.lines().skip(1) {
        let line = line.trim();
        if line.starts_with("%%") || line.starts_with("class") || line == "end" {
            continue;
        }
        let Some((_, quoted)) = line.split_once('"') else {
            panic!("a line with no label: {line}");
        };
        let Some((label, after)) = quoted.rsplit_once('"') else {
            panic!("an unclosed label: {line}");
        };
        assert!(!label.contains('"'), "a quote inside a label: {line}");
        let without_breaks = label.replace("<br/>", "");
        for forbidden in ['<', '>', '|', '`'] {
            assert!(
                !without_breaks.contains(forbidden),
                "`{forbidden}` in: {line}"
            );
        }
        assert!(after == "]" || after.starts_with("| "), "{line}");
    }
    assert!(
        mermaid.contains(
            "input.note == #quot;\\#quot; ] --#gt; #lt;script#gt;#quot; #124;#124; input.tag"
        ),
        "{mermaid}"
    );
}

#[test]
fn dot_labels_escape_quotes_backslashes_newlines_and_markup() {
    assert_eq!(dot_label("plain_id"), "plain_id");
    assert_eq!(dot_label(r#"a "b" \c"#), r#"a \"b\" \\c"#);
    assert_eq!(dot_label("a\nb"), r"a\\nb");
    assert_eq!(dot_label("<b>&</b>"), "&lt;b&gt;&amp;&lt;/b&gt;");
    assert_eq!(dot_label("\u{1b}[2J"), r"\\u{1b}[2J");
}

#[test]
fn mermaid_labels_use_entity_codes() {
    assert_eq!(mermaid_label("plain_id"), "plain_id");
    assert_eq!(mermaid_label(r#"say "hi""#), "say #quot;hi#quot;");
    assert_eq!(mermaid_label("a --> b"), "a --#gt; b");
    assert_eq!(
        mermaid_label("#1 & <i>|`"),
        "#35;1 #amp; #lt;i#gt;#124;#96;"
    );
    assert_eq!(mermaid_label("]\n["), r"]\n[");
}

#[test]
fn printable_escapes_controls_and_keeps_the_rest() {
    assert_eq!(printable("a\tb\u{1b}c\u{202e}"), r"a\tb\u{1b}c\u{202e}");
    assert!(matches!(printable("café \\ 🙂"), Cow::Borrowed(_)));
    assert_eq!(one_line("a\n  b", 10), "a b");
    assert_eq!(one_line("abcdefghij", 5), "abcd…");
}

#[test]
fn graph_formats_parse_by_name() {
    for format in [GraphFormat::Text, GraphFormat::Dot, GraphFormat::Mermaid] {
        assert_eq!(format.as_str().parse::<GraphFormat>(), Ok(format));
    }
    let refused = "svg"
        .parse::<GraphFormat>()
        .expect_err("svg is not a format");
    assert_eq!(
        refused.to_string(),
        "unknown graph format `svg`: use `text`, `dot` or `mermaid`"
    );
}

fn unescaped_quotes(line: &str) -> usize {
    let mut count = 0;
    let mut escaped = false;
    for character in line.chars() {
        match (escaped, character) {
            (true, _) => escaped = false,
            (false, '\\') => escaped = true,
            (false, '"') => count += 1,
            _ => {}
        }
    }
    count
}

/// Graphviz itself reads the picture, when it is installed (`dot -Tcanon`); where it is not,
/// the structural checks above are what holds.
fn assert_parses_as_dot(dot: &str) {
    use std::io::Write as _;
    use std::process::{Command, Stdio};
    let Ok(mut child) = Command::new("dot")
        .arg("-Tcanon")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
    else {
        return;
    };
    if let Some(mut stdin) = child.stdin.take() {
        stdin
            .write_all(dot.as_bytes())
            .expect("dot reads its input");
    }
    let output = child.wait_with_output().expect("dot runs");
    assert!(
        output.status.success(),
        "dot refused the picture: {}\n{dot}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// `outer` iterates over two lists, `inner` over each: the steps of `send` are named per outer
/// item (`outer/inner[1]/send`), and every picture counts them all for `send`.
fn nested_foreach() -> Definition {
    let inner = node(
        "inner",
        NodeKind::Foreach {
            items: expression("list"),
            item: "person".into(),
            max_items: 10,
            concurrency: 1,
            body: block(vec![tool("send", "mail_send")]),
        },
    );
    let outer = node(
        "outer",
        NodeKind::Foreach {
            items: expression("input.lists"),
            item: "list".into(),
            max_items: 10,
            concurrency: 1,
            body: block(vec![inner]),
        },
    );
    definition("nested", "Lists of lists", block(vec![outer]))
}

fn nested_steps() -> Vec<StepRecord> {
    let mut first_inner = step("outer/inner", 0, NodeState::Completed);
    first_inner.output = Some(json!([{}, {}]));
    vec![
        step("outer", 0, NodeState::Running { attempt: 1 }),
        first_inner,
        step("outer/inner", 1, NodeState::Running { attempt: 1 }),
        step("outer/inner[0]/send", 0, NodeState::Completed),
        step("outer/inner[0]/send", 1, NodeState::Completed),
        step("outer/inner[1]/send", 0, failed("mailbox full")),
        step("outer/inner[1]/send", 1, NodeState::Running { attempt: 1 }),
    ]
}

#[test]
fn nested_foreach_paths_name_their_items() {
    let path = NodePath::new("outer")
        .child("inner")
        .for_item(1)
        .child("send");
    assert_eq!(path.as_str(), "outer/inner[1]/send");
    assert_eq!(path.node().as_str(), "outer/inner/send");
    assert_eq!(path.items(), vec![1]);
    let deeper = NodePath::new("a/b[2]/c[3]/d");
    assert_eq!(deeper.node().as_str(), "a/b/c/d");
    assert_eq!(deeper.items(), vec![2, 3]);
    assert_eq!(
        NodePath::new("fan_out/left/list").items(),
        Vec::<u32>::new()
    );
}

#[test]
fn nested_foreach_iterations_show_in_every_picture() {
    let definition = nested_foreach();
    let steps = nested_steps();
    let text = render_run(&definition, &run_record(), &steps, GraphFormat::Text);
    let line = |id: &str| {
        text.lines()
            .find(|line| line.trim_start().starts_with(&format!("{id} ·")))
            .unwrap_or_else(|| panic!("no line for `{id}` in\n{text}"))
            .to_owned()
    };
    assert!(
        line("send").ends_with("2/4 completed, 1 failed (iteration 1.0), 1 running"),
        "{text}"
    );
    assert!(
        line("inner").ends_with("1/2 completed, 1 running"),
        "{text}"
    );
    assert!(
        line("outer")
            .ends_with("running (attempt 1); 1/2 iterations completed, 1 failed (iteration 1)"),
        "{text}"
    );
    assert!(
        text.contains("error: iteration 1.0: mailbox full"),
        "{text}"
    );
    for format in [GraphFormat::Dot, GraphFormat::Mermaid] {
        let picture = render_run(&definition, &run_record(), &steps, format);
        assert!(
            picture.contains("2/4 completed, 1 failed (iteration 1.0), 1 running"),
            "{picture}"
        );
    }
}
