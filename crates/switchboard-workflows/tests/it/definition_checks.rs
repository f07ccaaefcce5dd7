//! Every validation check, each reported with its path; and a whole report, all problems at
//! once, as a snapshot.

use switchboard_workflows::load_str;

use crate::definition_support::{lines, tools};

/// The problems of a YAML definition (which must be invalid).
fn problems(yaml: &str) -> Vec<String> {
    let errors = load_str(yaml, &tools()).expect_err("the definition is invalid");
    lines(&errors)
}

/// Asserts one of the problems is `expected` exactly.
#[track_caller]
fn assert_problem(yaml: &str, expected: &str) {
    let problems = problems(yaml);
    assert!(
        problems.iter().any(|problem| problem == expected),
        "expected `{expected}` among:\n{}",
        problems.join("\n")
    );
}

#[test]
fn names_and_ids_have_a_shape_and_ids_are_unique() {
    assert_problem(
        "workflow: Bad-Name\nnodes: [{id: a, end: {}}]",
        "workflow: the name `Bad-Name` must be 1 to 64 of `a-z`, `0-9` and `_`",
    );
    assert_problem(
        "workflow: w\nnodes: [{id: A, end: {}}]",
        "nodes[0].id: the node id `A` must be 1 to 64 of `a-z`, `0-9` and `_`",
    );
    assert_problem(
        "workflow: w\nnodes: [{id: a, wait: 1s}, {id: a, end: {}}]",
        "nodes[1].id: the node id `a` is used twice in this block",
    );
    assert_problem(
        "workflow: w\nexpressions: jq\nnodes: [{id: a, end: {}}]",
        "expressions: unknown expression language `jq`: only `cel` is supported",
    );
}

#[test]
fn a_node_has_exactly_one_kind_and_only_its_keys() {
    assert_problem(
        "workflow: w\nnodes: [{id: a, wait: 1s, end: {}}]",
        "nodes[0]: a node needs exactly one kind key (tool, condition, foreach, parallel, \
         approval, wait, workflow, end); it has wait, end",
    );
    assert_problem(
        "workflow: w\nnodes: [{id: a, wait: 1s, max_items: 3}, {id: b, end: {}}]",
        "nodes[0].max_items: a `wait` node does not take `max_items`",
    );
    assert_problem(
        "workflow: w\nnodes: [{id: a, end: {}, next: a}]",
        "nodes[0].next: a `end` node does not take `next`: an `end` node ends the run",
    );
}

#[test]
fn unknown_tools_are_refused_with_a_suggestion() {
    assert_problem(
        "workflow: w\nnodes: [{id: a, tool: roster_assign_shfit, params: {}}]",
        "nodes[0].tool: no tool `roster_assign_shfit` is registered (did you mean \
         `roster_assign_shift`?)",
    );
}

#[test]
fn targets_must_exist_in_the_same_block() {
    assert_problem(
        "workflow: w\nnodes: [{id: a, wait: 1s, next: b}, {id: c, end: {}}]",
        "nodes[0].next: no node `b` in this block; targets must be in the same block",
    );
    assert_problem(
        "workflow: w\nnodes:\n  - {id: a, condition: [{when: 'true', next: zz}], otherwise: c}\n  - {id: c, end: {}}",
        "nodes[0].condition[0].next: no node `zz` in this block; targets must be in the same block",
    );
    assert_problem(
        "workflow: w\nnodes:\n  - {id: a, tool: core_get_current_user, on_failure: {fallback: donne}}\n  - {id: done, end: {}}",
        "nodes[0].on_failure.fallback: no node `donne` in this block (did you mean `done`?); \
         targets must be in the same block",
    );
}

#[test]
fn unreachable_nodes_and_cycles_are_refused() {
    assert_problem(
        "workflow: w\nnodes: [{id: a, end: {}}, {id: b, end: {}}]",
        "nodes[1]: the node `b` is never reached: no `next`, branch or fallback leads to it \
         from the block's first node",
    );
    assert_problem(
        "workflow: w\nnodes: [{id: a, wait: 1s}, {id: b, wait: 1s, next: a}]",
        "nodes[0]: the nodes form a cycle (a -> b -> a): a workflow never loops back; repeat \
         work with a bounded `foreach`",
    );
    assert_problem(
        "workflow: w\nnodes: [{id: a, wait: 1s, next: a}]",
        "nodes[0]: the nodes form a cycle (a -> a): a workflow never loops back; repeat work \
         with a bounded `foreach`",
    );
}

#[test]
fn loops_are_bounded_and_concurrency_positive() {
    let foreach = |extra: &str| {
        format!(
            "workflow: w\nnodes:\n  - {{id: each, foreach: 'input.days', {extra} do: [{{id: x, wait: 1s}}]}}"
        )
    };
    assert_problem(
        &foreach(""),
        "nodes[0].max_items: a foreach must declare `max_items` (at most 1000): loops are bounded",
    );
    assert_problem(
        &foreach("max_items: 5000,"),
        "nodes[0].max_items: max_items is 5000; the most allowed is 1000",
    );
    assert_problem(
        &foreach("max_items: 3, concurrency: 0,"),
        "nodes[0].concurrency: concurrency must be at least 1",
    );
    assert_problem(
        "workflow: w\nnodes:\n  - {id: p, parallel: {a: [{id: x, wait: 1s}]}, concurrency: 0}",
        "nodes[0].concurrency: concurrency must be at least 1",
    );
}

#[test]
fn retries_must_be_able_to_succeed() {
    let node = |retry: &str| {
        format!("workflow: w\nnodes:\n  - {{id: a, tool: core_get_current_user, retry: [{retry}]}}")
    };
    assert_problem(
        &node("{max_attempts: 0}"),
        "nodes[0].retry[0].max_attempts: max_attempts counts the first attempt: at least 1",
    );
    assert_problem(
        &node("{backoff_rate: 0.5}"),
        "nodes[0].retry[0].backoff_rate: backoff_rate is 0.5; it must be at least 1 (waits never shrink)",
    );
    let refused = problems(&node(
        "{errors: [permission_denied, invalid_input, category_denied]}",
    ));
    for (index, kind) in ["permission_denied", "invalid_input", "category_denied"]
        .iter()
        .enumerate()
    {
        assert!(
            refused.iter().any(|problem| problem.starts_with(&format!(
                "nodes[0].retry[0].errors[{index}]: `{kind}` is a refusal"
            ))),
            "{refused:?}"
        );
    }
    let bad_interval = problems(&node("{interval: soon}"));
    assert!(
        bad_interval[0].starts_with(
            "nodes[0].retry[0].interval: `soon` is not a duration such as `30s`, `500ms` or `1h 30m`: "
        ),
        "{bad_interval:?}"
    );
}

#[test]
fn compensations_and_approvals_need_mutating_tools() {
    assert_problem(
        "workflow: w\nnodes:\n  - {id: a, tool: roster_assign_shift, params: {shift_id: s, user_id: u}, compensate: {tool: roster_get_shift, params: {shift_id: s}}}",
        "nodes[0].compensate.tool: the compensation `roster_get_shift` is a read tool: an undo \
         must be a mutating (execute or restricted) tool",
    );
    assert_problem(
        "workflow: w\nnodes:\n  - {id: a, tool: roster_get_shift, params: {shift_id: s}, compensate: {tool: roster_assign_shift, params: {shift_id: s, user_id: u}}}",
        "nodes[0].compensate: `roster_get_shift` is a read tool and changes nothing, so there \
         is nothing to compensate",
    );
    assert_problem(
        "workflow: w\nnodes:\n  - {id: a, approval: {tool: roster_propose_shift_swap, params: {shift_id: s, with_user: u}}}",
        "nodes[0].approval.tool: `roster_propose_shift_swap` is a propose tool: an approval \
         asks a person before a change, so it needs an execute or restricted tool",
    );
    assert_problem(
        "workflow: w\nnodes:\n  - {id: a, tool: core_get_current_user, on_failure: compensate}",
        "nodes: `on_failure: compensate` undoes completed nodes, but no node declares a \
         `compensate`: add one, or use `on_failure: fail`",
    );
}

#[test]
fn expressions_parse_and_read_only_what_is_in_scope() {
    let problems = problems(
        "workflow: w\nnodes:\n  - {id: a, tool: roster_get_shift, params: {shift_id: '${ input.( }'}}",
    );
    assert!(
        problems[0]
            .starts_with("nodes[0].params.shift_id: the expression `input.(` does not parse: "),
        "{problems:?}"
    );
    assert_problem(
        "workflow: w\nnodes:\n  - {id: a, tool: roster_get_shift, params: {shift_id: '${ inpt.x }'}}",
        "nodes[0].params.shift_id: `inpt` is not in scope in `inpt.x` (did you mean `input`?); \
         in scope here: input, steps, run",
    );
    assert_problem(
        "workflow: w\nnodes:\n  - {id: a, tool: roster_get_shift, params: {shift_id: '${ params.x }'}}",
        "nodes[0].params.shift_id: `params` is not in scope in `params.x`; in scope here: \
         input, steps, run",
    );
    assert_problem(
        "workflow: w\nnodes:\n  - {id: a, tool: roster_get_shift, params: {shift_id: '${ steps.nope.output.id }'}}",
        "nodes[0].params.shift_id: `steps.nope` names no node this expression can see",
    );
    assert_problem(
        "workflow: w\nnodes:\n  - {id: a, tool: roster_get_shift, params: {shift_id: '${ steps.b.output.id }'}}\n  - {id: b, tool: roster_get_shift, params: {shift_id: s}}",
        "nodes[0].params.shift_id: `steps.b` cannot have run yet here: no path runs the node \
         `b` before this one",
    );
    // A macro's variable and a foreach's item and index are in scope.
    load_str(
        "workflow: w\nnodes:\n  - id: each\n    foreach: input.days.map(d, d + 'x')\n    as: day\n    max_items: 7\n    do:\n      - {id: read, tool: roster_get_shift, params: {shift_id: '${ day + string(index) }'}}",
        &tools(),
    )
    .expect("valid");
    // Outside its foreach, the item is not.
    assert_problem(
        "workflow: w\nnodes:\n  - {id: each, foreach: input.days, max_items: 7, do: [{id: x, wait: 1s}]}\n  - {id: read, tool: roster_get_shift, params: {shift_id: '${ item }'}}",
        "nodes[1].params.shift_id: `item` is not in scope in `item`; in scope here: input, steps, run",
    );
}

#[test]
fn params_are_checked_against_the_tool_s_input_schema() {
    assert_problem(
        "workflow: w\nnodes:\n  - {id: a, tool: roster_assign_shift, params: {shift_id: s}}",
        "nodes[0].params: the required field `user_id` is missing",
    );
    assert_problem(
        "workflow: w\nnodes:\n  - {id: a, tool: roster_assign_shift, params: {shift_id: s, user_id: u, usr: x}}",
        "nodes[0].params.usr: the field `usr` is not in the schema (did you mean `user_id`?)",
    );
    assert_problem(
        "workflow: w\nnodes:\n  - {id: a, tool: roster_assign_shift, params: {shift_id: 7, user_id: u}}",
        "nodes[0].params.shift_id: the value is integer, but the schema expects string",
    );
    assert_problem(
        "workflow: w\ninput: {type: object, properties: {n: {type: integer}}}\nnodes:\n  - {id: a, tool: roster_get_shift, params: {shift_id: '${ input.n }'}}",
        "nodes[0].params.shift_id: the expression gives integer, but the schema expects string",
    );
    assert_problem(
        "workflow: w\nnodes:\n  - {id: who, tool: core_get_current_user}\n  - {id: a, tool: roster_get_shift, params: {shift_id: '${ steps.who.output.roles }'}}",
        "nodes[1].params.shift_id: the expression gives array, but the schema expects string",
    );
}

#[test]
fn every_problem_is_reported_at_once() {
    let yaml = r#"
workflow: report
nodes:
  - id: read
    tool: roster_get_shfit
    params: { shift_id: "${ input.shift }" }
  - id: assign
    tool: roster_assign_shift
    params: { shift_id: 7, user: "${ steps.reed.output.assignee }" }
    retry: [{ errors: [permission_denied], max_attempts: 0 }]
    next: nowhere
  - id: each
    foreach: "${ input.days }"
    do: [{ id: x, wait: 1 minute }]
  - id: orphan
    end: {}
"#;
    insta::assert_snapshot!(problems(yaml).join("\n"));
}
