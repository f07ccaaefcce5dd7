//! `switchboard workflow validate FILE`: the real binary checks the example definitions
//! against the tools linked into it, and reports every problem of a bad file with its path.

use std::path::PathBuf;
use std::process::Output;

use assert_cmd::cargo::cargo_bin_cmd;
use serde_json::{Value, json};

fn example(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../docs/examples/workflows")
        .join(name)
        .display()
        .to_string()
}

fn validate(args: &[&str], code: i32) -> Output {
    let output = cargo_bin_cmd!("switchboard")
        .args(["workflow", "validate"])
        .args(args)
        .output()
        .expect("the binary runs");
    assert_eq!(
        output.status.code(),
        Some(code),
        "stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
    );
    output
}

#[test]
fn the_examples_are_valid() {
    let output = validate(&[&example("shift_swap.yaml")], 0);
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        "ok: shift_swap, 7 nodes\n"
    );
    let output = validate(&[&example("assign_week.yaml"), "--json"], 0);
    let report: Value = serde_json::from_slice(&output.stdout).expect("JSON");
    assert_eq!(
        report,
        json!({"valid": true, "workflow": "assign_week", "nodes": 7})
    );
    validate(&[&example("week_then_swap.yaml")], 0);
}

#[test]
fn every_problem_is_printed_with_its_path() {
    let directory = std::env::temp_dir().join(format!("sb-cli-wf-{}", std::process::id()));
    std::fs::create_dir_all(&directory).expect("a temp dir");
    let file = directory.join("bad.yaml");
    std::fs::write(
        &file,
        "workflow: bad\nnodes:\n  - id: read\n    tool: roster_get_shfit\n  - {id: assign, tool: roster_assign_shift, params: {shift_id: s}, next: read}\n",
    )
    .expect("write");
    let path = file.display().to_string();
    let output = validate(&[&path], 1);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        lines,
        [
            format!(
                "{path}: nodes[0].tool: no tool `roster_get_shfit` is registered (did you mean `roster_get_shift`?)"
            ),
            format!("{path}: nodes[1].params: the required field `user_id` is missing"),
            format!(
                "{path}: nodes[0]: the nodes form a cycle (read -> assign -> read): a workflow never loops back; repeat work with a bounded `foreach`"
            ),
        ]
    );
    let output = validate(&[&path, "--json"], 1);
    let report: Value = serde_json::from_slice(&output.stdout).expect("JSON");
    assert_eq!(report["valid"], json!(false));
    assert_eq!(report["problems"][1]["path"], json!("nodes[1].params"));
    assert_eq!(report["problems"].as_array().map(Vec::len), Some(3));

    std::fs::write(&file, "workflow: bad\nnodes:\n  - id: read\n    tol: x\n").expect("write");
    let output = validate(&[&path], 1);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.starts_with(&format!(
            "{path}:4:5: not a workflow definition: unknown field `tol`"
        )),
        "{stdout}"
    );
    std::fs::remove_dir_all(&directory).ok();
}
