//! Definition files: the examples validate, YAML, JSON and the builder give the same
//! document, a document validates again to the same definition, sub-workflow files are
//! inlined and their cycles refused, and syntax errors carry their line.

use serde_json::json;
use switchboard_workflows::file::{FailureAction, RetrierFile};
use switchboard_workflows::{
    Format, Mapping, NodeBuilder, NodeKind, WorkflowBuilder, load, load_str, parse, validate,
};

use crate::definition_support::{example, lines, tools};

#[test]
fn the_examples_validate() {
    let tools = tools();
    for name in ["shift_swap.yaml", "assign_week.yaml", "week_then_swap.yaml"] {
        let definition = load(&example(name), &tools)
            .unwrap_or_else(|errors| panic!("{name} is valid, but:\n{errors}"));
        assert!(!definition.body.nodes.is_empty(), "{name}");
    }
}

#[test]
fn the_shift_swap_definition_is_what_the_file_says() {
    let definition = load(&example("shift_swap.yaml"), &tools()).expect("valid");
    assert_eq!(&*definition.name, "shift_swap");
    assert_eq!(definition.max_steps, 100);
    let ids: Vec<&str> = definition
        .body
        .nodes
        .iter()
        .map(|node| node.id.as_str())
        .collect();
    assert_eq!(
        ids,
        [
            "read_a",
            "read_b",
            "check",
            "assign_a",
            "assign_b",
            "nothing_to_do",
            "done"
        ]
    );
    let assign_a = &definition.body.nodes[3];
    assert_eq!(
        assign_a.next.as_ref().map(|next| next.as_str()),
        Some("assign_b")
    );
    assert_eq!(assign_a.retry.len(), 1);
    assert_eq!(assign_a.retry[0].max_attempts, 3);
    assert_eq!(
        assign_a.retry[0].max_delay,
        Some(jiff::SignedDuration::from_secs(30))
    );
    let NodeKind::Tool { params, .. } = &assign_a.kind else {
        panic!("assign_a is a tool node");
    };
    let Mapping::Object(fields) = params else {
        panic!("params are an object");
    };
    assert!(matches!(fields["user_id"], Mapping::Expression(_)));
    // A tool node without `retry` gets the default retrier.
    assert_eq!(
        definition.body.nodes[0].retry,
        vec![switchboard_workflows::Retrier::default()]
    );
    // A condition chooses its next itself.
    assert!(definition.body.nodes[2].next.is_none());
}

#[test]
fn a_definition_s_document_validates_again_to_the_same_definition() {
    let tools = tools();
    let definition = load(&example("week_then_swap.yaml"), &tools).expect("valid");
    let document = &*definition.document;
    assert!(
        document["nodes"][0]["workflow"].is_object(),
        "sub-workflows are inline: {document}"
    );
    let again = validate(document, &tools).expect("the document is self-contained");
    assert_eq!(again.document, definition.document);
    let NodeKind::Workflow {
        definition: child, ..
    } = &again.body.nodes[1].kind
    else {
        panic!("swap is a sub-workflow");
    };
    assert_eq!(&*child.name, "shift_swap");
}

#[test]
fn yaml_json_and_the_builder_give_the_same_document() {
    let yaml = r#"
workflow: small
description: Reads and assigns.
input: { type: object, properties: { shift: { type: string } } }
nodes:
  - id: read
    tool: roster_get_shift
    params: { shift_id: "${ input.shift }" }
    retry: [{ errors: [timeout], max_attempts: 2 }]
  - id: assign
    tool: roster_assign_shift
    params: { shift_id: "${ input.shift }", user_id: ana }
    on_failure: { fallback: done }
  - id: done
    end: {}
"#;
    let json = r#"{"workflow": "small", "description": "Reads and assigns.",
        "input": {"type": "object", "properties": {"shift": {"type": "string"}}},
        "nodes": [
          {"id": "read", "tool": "roster_get_shift", "params": {"shift_id": "${ input.shift }"},
           "retry": [{"errors": ["timeout"], "max_attempts": 2}]},
          {"id": "assign", "tool": "roster_assign_shift",
           "params": {"shift_id": "${ input.shift }", "user_id": "ana"},
           "on_failure": {"fallback": "done"}},
          {"id": "done", "end": {}}]}"#;
    let built = WorkflowBuilder::new("small")
        .description("Reads and assigns.")
        .input_schema(json!({"type": "object", "properties": {"shift": {"type": "string"}}}))
        .node(
            NodeBuilder::tool("read", "roster_get_shift")
                .params(json!({"shift_id": "${ input.shift }"}))
                .retry(RetrierFile {
                    errors: Some(vec!["timeout".into()]),
                    max_attempts: Some(2),
                    ..RetrierFile::default()
                }),
        )
        .node(
            NodeBuilder::tool("assign", "roster_assign_shift")
                .params(json!({"shift_id": "${ input.shift }", "user_id": "ana"}))
                .fallback("done"),
        )
        .node(NodeBuilder::end("done"));
    let tools = tools();
    let from_yaml = load_str(yaml, &tools).expect("valid YAML");
    let from_json = load_str(json, &tools).expect("valid JSON");
    let from_builder = built.build(&tools).expect("valid builder");
    assert_eq!(from_yaml.document, from_json.document);
    assert_eq!(from_yaml.document, from_builder.document);
    assert_eq!(
        parse(yaml, Format::Yaml).expect("parses"),
        parse(json, Format::Json).expect("parses")
    );
}

#[test]
fn the_builder_is_checked_like_a_file() {
    let built = WorkflowBuilder::new("bad").node(
        NodeBuilder::tool("read", "roster_get_shif")
            .params(json!({}))
            .on_failure(FailureAction::Skip),
    );
    let errors = built.build(&tools()).expect_err("unknown tool");
    assert_eq!(
        lines(&errors),
        [
            "nodes[0].tool: no tool `roster_get_shif` is registered (did you mean `roster_get_shift`?)"
        ]
    );
}

#[test]
fn sub_workflow_files_in_a_cycle_are_refused_with_the_chain() {
    let directory = std::env::temp_dir().join(format!("sb-wf-cycle-{}", std::process::id()));
    std::fs::create_dir_all(&directory).expect("a temp dir");
    let node = |child: &str| format!("workflow: w\nnodes:\n  - id: sub\n    workflow: {child}\n");
    std::fs::write(directory.join("a.yaml"), node("b.yaml")).expect("write");
    std::fs::write(directory.join("b.yaml"), node("./a.yaml")).expect("write");
    let errors = load(&directory.join("a.yaml"), &tools()).expect_err("a cycle");
    let message = errors.to_string();
    assert!(message.contains("sub-workflows form a cycle"), "{message}");
    assert!(
        message.contains("a.yaml -> ") && message.contains("b.yaml -> "),
        "{message}"
    );
    std::fs::remove_dir_all(&directory).ok();
}

#[test]
fn a_missing_sub_workflow_file_is_reported_with_its_path() {
    let directory = std::env::temp_dir().join(format!("sb-wf-missing-{}", std::process::id()));
    std::fs::create_dir_all(&directory).expect("a temp dir");
    std::fs::write(
        directory.join("top.yaml"),
        "workflow: top\nnodes:\n  - id: sub\n    workflow: nowhere.yaml\n",
    )
    .expect("write");
    let errors = load(&directory.join("top.yaml"), &tools()).expect_err("missing");
    assert!(errors.to_string().contains("nowhere.yaml"), "{errors}");
    std::fs::remove_dir_all(&directory).ok();
}

#[test]
fn yaml_syntax_and_shape_errors_carry_their_line() {
    let errors = load_str(
        "workflow: x\nnodes:\n  - id: a\n    tool: [unclosed\n",
        &tools(),
    )
    .expect_err("bad YAML");
    assert!(errors.errors[0].line.is_some(), "{errors:?}");
    let errors = load_str(
        "workflow: x\nnodes:\n  - id: a\n    toll: roster_get_shift\n",
        &tools(),
    )
    .expect_err("unknown field");
    assert_eq!(errors.errors[0].line, Some(4), "{errors:?}");
    assert!(errors.to_string().contains("toll"), "{errors}");
    let errors = load_str("{\"workflow\": \"x\", \"nodes\": 3}", &tools()).expect_err("bad JSON");
    assert_eq!(errors.errors[0].line, Some(1), "{errors:?}");
}

#[test]
fn the_published_schema_accepts_the_examples_and_refuses_a_node_of_two_kinds() {
    let path =
        crate::definition_support::workspace_root().join("docs/reference/workflow.schema.json");
    let text = std::fs::read_to_string(&path).expect("the schema is committed");
    let schema: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    assert_eq!(
        schema,
        switchboard_workflows::json_schema(),
        "run `cargo xtask catalog`"
    );
    let validator = jsonschema::validator_for(&schema).expect("a valid JSON Schema");
    let tools = tools();
    for name in ["shift_swap.yaml", "assign_week.yaml", "week_then_swap.yaml"] {
        let definition = load(&example(name), &tools).expect("valid");
        let problems: Vec<String> = validator
            .iter_errors(&definition.document)
            .map(|error| format!("{}: {error}", error.instance_path()))
            .collect();
        assert!(problems.is_empty(), "{name}: {problems:?}");
    }
    let two_kinds = json!({"workflow": "w", "nodes": [{"id": "a", "wait": "1s", "end": {}}]});
    assert!(!validator.is_valid(&two_kinds));
    let misspelt = json!({"workflow": "w", "nodes": [{"id": "a", "toll": "x"}]});
    assert!(!validator.is_valid(&misspelt));
}
